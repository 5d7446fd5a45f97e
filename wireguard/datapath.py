"""WireGuard's datapaths: the kernel module, else wireguard-go (userspace, through a TUN device)."""
from __future__ import annotations

import shutil

from testbed import datapath


def probe_kernel() -> tuple[bool, str]:
    """Can this kernel make a wireguard link?"""
    return datapath.in_fresh_netns(["ip", "link", "add", "wgprobe0", "type", "wireguard"])


def wireguard_go() -> str | None:
    return shutil.which("wireguard-go")
