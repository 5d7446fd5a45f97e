"""MACsec's datapath: the kernel's macsec links (Linux has no userspace MACsec), probed for real
in a throw-away namespace on a veth (testbed/datapath.py in_fresh_netns): plain GCM-AES, and the
XPN suites (Linux >= 5.7 and an iproute2 that knows them)."""
from __future__ import annotations

from testbed import datapath

MODULE_HINT = "the kernel has no MACsec: `sudo modprobe macsec` on the host (CONFIG_MACSEC)"


def _probe(cipher: str) -> tuple[bool, str]:
    ok, why = datapath.in_fresh_netns([
        "sh", "-c", "ip link add mprobe0 type veth peer name mprobe1 && "
        f"ip link add link mprobe0 name mprobe2 type macsec cipher {cipher} encrypt on"])
    if not ok and "Unknown device type" in why:
        why = f"{why} ({MODULE_HINT})"
    return ok, why


def probe_kernel() -> tuple[bool, str]:
    """Can this kernel make a macsec link (GCM-AES-128)?"""
    return _probe("gcm-aes-128")


def probe_xpn() -> tuple[bool, str]:
    """Can this kernel and this iproute2 make a GCM-AES-XPN-128 link?"""
    return _probe("gcm-aes-xpn-128")
