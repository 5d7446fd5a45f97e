"""Which datapath this host offers the overlays: kernel or userspace, plus TUN and SCTP.

Every kernel probe runs for real in a throw-away network namespace (`unshare --net`, which
vanishes with the probe process, so nothing is left behind):

- xfrm ESP: `ip xfrm state add ... proto esp ... aead 'rfc4106(gcm(aes))'` (kernel ESP and
  AES-GCM both present, modules autoloaded as the containers would need them);
- kernel WireGuard: `ip link add ... type wireguard`;
- TUN: `ip tuntap add ... mode tun` (needed by wireguard-go and kernel-libipsec);
- SCTP: socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) (NGAP between gNB and AMF).

The userspace fallbacks are looked up as programs/plugins: strongSwan's kernel-libipsec
plugin, wireguard-go. `detect()` returns a JSON-able dict; `python -m testbed datapath`
prints the one-line summary the entrypoints also print.
"""
from __future__ import annotations

import errno
import glob
import os
import platform
import shutil
import socket
import subprocess
from typing import Any

PROBE_TIMEOUT_S = 10
LIBIPSEC_PLUGIN_GLOBS = (
    "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so",
    "/usr/lib/*/ipsec/plugins/libstrongswan-kernel-libipsec.so",
    "/usr/local/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so",
)
# a test key for the AEAD probe: 16 bytes AES key + 4 bytes salt (never used for traffic)
_PROBE_AEAD_KEY = "0x" + "11" * 20


def _in_fresh_netns(cmd: list[str]) -> tuple[bool, str]:
    """Run cmd in a new, empty network namespace; (succeeded, reason)."""
    if shutil.which("unshare") is None or shutil.which(cmd[0]) is None:
        return False, f"cannot probe: {'unshare' if shutil.which('unshare') is None else cmd[0]} not found"
    flags = ["--net"] if os.geteuid() == 0 else ["--map-root-user", "--net"]
    try:
        res = subprocess.run(["unshare", *flags, *cmd], capture_output=True, text=True,
                             timeout=PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False, f"probe timed out after {PROBE_TIMEOUT_S}s: {' '.join(cmd)}"
    if res.returncode == 0:
        return True, "ok"
    return False, (res.stderr.strip() or res.stdout.strip() or f"exit {res.returncode}").splitlines()[-1]


def probe_xfrm_esp() -> tuple[bool, str]:
    return _in_fresh_netns(["ip", "xfrm", "state", "add", "src", "192.0.2.1", "dst", "192.0.2.2",
                            "proto", "esp", "spi", "0x100", "mode", "tunnel",
                            "aead", "rfc4106(gcm(aes))", _PROBE_AEAD_KEY, "128"])


def probe_wireguard_kernel() -> tuple[bool, str]:
    return _in_fresh_netns(["ip", "link", "add", "wgprobe0", "type", "wireguard"])


def probe_tun() -> tuple[bool, str]:
    if not os.path.exists("/dev/net/tun"):
        return False, "/dev/net/tun does not exist"
    return _in_fresh_netns(["ip", "tuntap", "add", "dev", "tunprobe0", "mode", "tun"])


def probe_sctp() -> tuple[bool, str]:
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
    except OSError as exc:
        return False, f"{errno.errorcode.get(exc.errno or 0, exc.errno)}: {exc.strerror}"
    sock.close()
    return True, "ok"


def libipsec_plugin() -> str | None:
    """Path of strongSwan's kernel-libipsec plugin, or None."""
    for pattern in LIBIPSEC_PLUGIN_GLOBS:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[0]
    return None


def detect() -> dict[str, Any]:
    """Host facts and the datapath each overlay will use (JSON-able)."""
    esp, esp_why = probe_xfrm_esp()
    wgk, wgk_why = probe_wireguard_kernel()
    tun, tun_why = probe_tun()
    sctp, sctp_why = probe_sctp()
    plugin = libipsec_plugin()
    wg_go = shutil.which("wireguard-go")
    if esp:
        ipsec = "kernel"
    elif plugin and tun:
        ipsec = "libipsec"
    else:
        ipsec = "unavailable"
    if wgk:
        wireguard = "kernel"
    elif wg_go and tun:
        wireguard = "wireguard-go"
    else:
        wireguard = "unavailable"
    return {
        "ipsec": ipsec,
        "wireguard": wireguard,
        "xfrm_esp": esp,
        "wireguard_kernel": wgk,
        "kernel_libipsec": plugin,
        "wireguard_go": wg_go,
        "tun": tun,
        "sctp": sctp,
        "kernel": platform.release(),
        "reasons": {"xfrm_esp": esp_why, "wireguard_kernel": wgk_why, "tun": tun_why, "sctp": sctp_why},
    }


def manifest_entry(protocol: str, facts: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `datapath` object for a run of `protocol` on a host with these facts."""
    ipsec = facts["ipsec"] if protocol == "ipsec" and facts["ipsec"] != "unavailable" else None
    wg = facts["wireguard"] if protocol == "wireguard" and facts["wireguard"] != "unavailable" else None
    return {"ipsec": ipsec, "wireguard": wg,
            "userspace": ipsec == "libipsec" or wg == "wireguard-go"}


def summary(facts: dict[str, Any]) -> str:
    """`datapath: ipsec=... wireguard=... tun=yes|no sctp=yes|no` (one line)."""
    yn = {True: "yes", False: "no"}
    return (f"datapath: ipsec={facts['ipsec']} wireguard={facts['wireguard']} "
            f"tun={yn[bool(facts['tun'])]} sctp={yn[bool(facts['sctp'])]} "
            f"xfrm_esp={yn[bool(facts['xfrm_esp'])]} wireguard_kernel={yn[bool(facts['wireguard_kernel'])]}")
