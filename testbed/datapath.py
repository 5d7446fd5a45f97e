"""Which datapath this host offers each overlay: kernel or userspace, plus TUN and SCTP.

Every kernel probe runs for real in a throw-away network namespace (`unshare --net`, which
vanishes with the probe process, so nothing is left behind): each overlay plug-in's own
(`kernel_datapath`, e.g. an xfrm ESP state, a wireguard link), TUN (`ip tuntap add ... mode
tun`, needed by every userspace fallback) and SCTP (socket(AF_INET, SOCK_STREAM,
IPPROTO_SCTP): NGAP between gNB and AMF). The userspace fallbacks are looked up by the plug-ins
(`userspace_datapath`). `detect()` returns a JSON-able dict; `python -m testbed datapath`
prints the one-line summary.
"""
from __future__ import annotations

import errno
import os
import platform
import shutil
import socket
import subprocess
from typing import Any

PROBE_TIMEOUT_S = 10


def in_fresh_netns(cmd: list[str]) -> tuple[bool, str]:
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


def probe_tun() -> tuple[bool, str]:
    if not os.path.exists("/dev/net/tun"):
        return False, "/dev/net/tun does not exist"
    return in_fresh_netns(["ip", "tuntap", "add", "dev", "tunprobe0", "mode", "tun"])


def probe_sctp() -> tuple[bool, str]:
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
    except OSError as exc:
        return False, f"{errno.errorcode.get(exc.errno or 0, exc.errno)}: {exc.strerror}"
    sock.close()
    return True, "ok"


def detect() -> dict[str, Any]:
    """Host facts and the datapath each overlay will use (JSON-able): per overlay plug-in with
    datapaths, `<name>` (its datapath here, or "unavailable"), `<name>_kernel` (the kernel probe)
    and `<name>_userspace` (the fallback found, or None); `tun`, `sctp`, `kernel`, and `reasons`
    ({probe: why it failed, or "ok"})."""
    from testbed import registry
    tun, tun_why = probe_tun()
    sctp, sctp_why = probe_sctp()
    facts: dict[str, Any] = {"tun": tun, "sctp": sctp, "kernel": platform.release()}
    reasons = {"tun": tun_why, "sctp": sctp_why}
    for ov in registry.overlays():
        if not ov.datapaths:
            continue
        kernel, why = ov.kernel_datapath()
        userspace = ov.userspace_datapath() if tun else None
        facts[ov.name] = ov.datapath(kernel, userspace) or "unavailable"
        facts[f"{ov.name}_kernel"] = kernel
        facts[f"{ov.name}_userspace"] = userspace
        reasons[f"{ov.name}_kernel"] = why
    facts["reasons"] = reasons
    return facts


def manifest_entry(protocol: str, facts: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `datapath` object for a run of `protocol` on a host with these facts:
    `<protocol>` its datapath (None when the protocol has none, or none is available here) and
    `userspace` (a run on a userspace datapath is never pooled with kernel runs)."""
    from testbed import registry
    ov = registry.overlay(protocol)
    value = facts.get(protocol) if ov.datapaths else None
    value = value if value in ov.datapaths else None
    return {protocol: value, "userspace": value in ov.userspace_datapaths} if ov.datapaths else {"userspace": False}


def summary(facts: dict[str, Any]) -> str:
    """`datapath: ipsec=... wireguard=... tun=yes|no sctp=yes|no <name>_kernel=yes|no ...` (one line)."""
    yn = {True: "yes", False: "no"}
    kernels = sorted(k for k in facts if k.endswith("_kernel") and isinstance(facts[k], bool))
    chosen = [k for k in facts if f"{k}_kernel" in facts]
    return ("datapath: " + " ".join(f"{k}={facts[k]}" for k in chosen)
            + f" tun={yn[bool(facts['tun'])]} sctp={yn[bool(facts['sctp'])]} "
            + " ".join(f"{k}={yn[bool(facts[k])]}" for k in kernels))
