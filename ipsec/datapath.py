"""IPsec's datapaths: the kernel's xfrm ESP, else strongSwan's kernel-libipsec plugin (userspace
ESP through a TUN device), probed on this host (testbed/datapath.py runs the probes)."""
from __future__ import annotations

import glob

from testbed import datapath

LIBIPSEC_PLUGIN_GLOBS = (
    "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so",
    "/usr/lib/*/ipsec/plugins/libstrongswan-kernel-libipsec.so",
    "/usr/local/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so",
)
# a test key for the AEAD probe: 16 bytes AES key + 4 bytes salt (never used for traffic)
_PROBE_AEAD_KEY = "0x" + "11" * 20


def probe_xfrm_esp() -> tuple[bool, str]:
    """Can this kernel hold an ESP state (xfrm ESP with AES-GCM)?"""
    return datapath.in_fresh_netns(["ip", "xfrm", "state", "add", "src", "192.0.2.1", "dst", "192.0.2.2",
                                    "proto", "esp", "spi", "0x100", "mode", "tunnel",
                                    "aead", "rfc4106(gcm(aes))", _PROBE_AEAD_KEY, "128"])


def libipsec_plugin() -> str | None:
    """Path of strongSwan's kernel-libipsec plugin, or None."""
    for pattern in LIBIPSEC_PLUGIN_GLOBS:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[0]
    return None
