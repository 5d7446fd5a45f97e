"""Builds a small results tree in the layout of docs/contracts.md ("Results") from REAL data
in tests/data (RWTH ping RTTs, RWTH F1-C/E1 captures with full Open5GS NGAP, real iperf3
output), for the figure and report tests, until the drivers produce real run directories.

What is synthetic: the manifests, the assignment of the real values to our profile ids, the
ping line framing (timestamps, sequence numbers) and the CPU accounting numbers (a linear model
with real jitter taken from RWTH E1 procedure times).
"""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from analysis.parse.rwth_txt import parse_rwth

RWTH = "rwth-internal-ran-security"


@dataclass
class Tree:
    root: Path
    expected: dict[str, Any] = field(default_factory=dict)


def _manifest(experiment: str, profile: str, protocol: str, run: str, files: list[dict], *,
              state: str = "complete", valid: bool | None = True, userspace: bool | None = False,
              params: dict | None = None, plane: str = "n3", **extra: Any) -> dict:
    dp = {"ipsec": None, "wireguard": None, "userspace": userspace}
    if protocol == "ipsec":
        dp["ipsec"] = "libipsec" if userspace else "kernel"
    if protocol == "wireguard":
        dp["wireguard"] = "wireguard-go" if userspace else "kernel"
    return {
        "schema_version": 1, "experiment": experiment, "profile": profile, "plane": plane,
        "protocol": protocol, "campaign": "fixture", "run": run, "state": state, "valid": valid,
        "validity": {"protected_packets": 100 if valid else 0, "plaintext_packets": 0 if valid else 7,
                     "details": "fixture" if valid else "7 plaintext GTP-U packets on N3"},
        "datapath": dp, "parameters": {"count": 2000}, "profile_params": params or {},
        "host": {"kernel": "6.1.0-fixture", "cpu_model": "fixture CPU", "aes_ni": True,
                 "hostname": "fixture-host", "nproc": 2},
        "versions": {"testbed_commit": "0123456789abcdef", "testbed_dirty": False, "tshark": "4.0.17"},
        "started": "2026-11-21T23:00:00Z", "finished": "2026-11-21T23:30:00Z",
        "commands": ["LC_ALL=C ping -D -n -c 2000 -i 0.2 -s 64 10.45.0.1"], "files": files, **extra,
    }


def _write_run(root: Path, manifest: dict) -> Path:
    d = root / manifest["campaign"] / manifest["experiment"] / manifest["profile"] / manifest["run"]
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return d


def ping_text(values: np.ndarray, size: int, t0: float, drop: set[int] = frozenset()) -> str:
    lines = [f"PING 10.45.0.1 (10.45.0.1) {size}({size + 28}) bytes of data."]
    for i, v in enumerate(values, start=1):
        if i in drop:
            continue
        lines.append(f"[{t0 + 0.2 * i:.6f}] {size + 8} bytes from 10.45.0.1: icmp_seq={i} ttl=64 time={v:g} ms")
    got = len(values) - len(drop)
    loss = 100.0 * len(drop) / len(values)
    lines += ["", "--- 10.45.0.1 ping statistics ---",
              f"{len(values)} packets transmitted, {got} received, {loss:g}% packet loss, time 400000ms", ""]
    return "\n".join(lines)


def _ping_runs(root: Path, profile: str, protocol: str, sources: dict[int, np.ndarray], runs: int,
               sets: int, userspace: bool | None, prefix: str, drop_first: set[int] = frozenset(),
               **kw: Any) -> list[Path]:
    dirs = []
    for r in range(runs):
        run_id = f"20261121T23{r:02d}00Z-{prefix}{r}"
        files: list[dict] = []
        d = _write_run(root, _manifest("n3", profile, protocol, run_id, files, userspace=userspace, **kw))
        warm = np.full(50, 50.0)
        (d / "ping-warmup.txt").write_text(ping_text(warm, 64, 1.75e9))
        files.append({"path": "ping-warmup.txt", "kind": "ping", "size": 64, "set": 0, "warmup": True})
        for size, values in sources.items():
            chunks = np.array_split(values, runs * sets)
            for s in range(sets):
                chunk = chunks[r * sets + s]
                drop = drop_first if (r == 0 and s == 0) else set()
                name = f"ping-{size}-{s + 1}.txt"
                (d / name).write_text(ping_text(chunk, size, 1.75e9 + 1000 * s, drop))
                files.append({"path": name, "kind": "ping", "size": size, "set": s + 1, "warmup": False})
        m = json.loads((d / "manifest.json").read_text())
        m["files"] = files
        (d / "manifest.json").write_text(json.dumps(m, indent=2))
        dirs.append(d)
    return dirs


def _iperf3(out: Path, transport: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cmd = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-J"]
        cmd += ["-u", "-b", "200M", "-n", "4M"] if transport == "udp" else ["-n", "64M"]
        deadline = time.monotonic() + 20     # the server needs a moment to listen: poll, bounded
        while True:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            if proc.returncode == 0 and '"error"' not in proc.stdout:
                out.write_text(proc.stdout)
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"iperf3 client on port {port} failed for 20 s: "
                                   f"{proc.stdout[-400:]} {proc.stderr[-400:]}")
            time.sleep(0.1)
    finally:
        server.kill()
        server.wait(timeout=10)


def build(root: Path, shared: Path, iperf: bool = True) -> Tree:
    rw = shared / RWTH
    tree = Tree(root)
    base64 = parse_rwth(rw / "end-to-end" / "monolithic_no_security.txt").values["value"].to_numpy()
    ipsec64 = parse_rwth(rw / "end-to-end" / "monolithic_encryption_integrity.txt").values["value"].to_numpy()
    base1024 = parse_rwth(rw / "f1u-ping" / "noenc_2025-08-20-T02-45-02.txt").values["value"].to_numpy()
    ipsec1024 = parse_rwth(rw / "f1u-ping" / "ipsec_2025-08-20-T04-03-31.txt").values["value"].to_numpy()
    # n3: baseline and aes128gcm from the real RWTH values (2 runs x 5 sets), 3 pings lost
    drop = {5, 6, 7}
    _ping_runs(root, "baseline", "none", {64: base64, 1024: base1024}, 2, 5, None, "b", drop)
    _ping_runs(root, "aes128gcm", "ipsec", {64: ipsec64, 1024: ipsec1024}, 2, 5, False, "a",
               params={"esp_proposal": "aes128gcm16", "auth": "cert", "mode": "start"})
    kept = np.concatenate([np.delete(np.array_split(base64, 10)[0], [4, 5, 6]), *np.array_split(base64, 10)[1:]])
    tree.expected["baseline_64_values"] = kept
    tree.expected["lost"] = len(drop)
    # wireguard on two datapaths (must be reported apart), one run each, 1024 B only
    _ping_runs(root, "wireguard", "wireguard", {1024: ipsec1024[:4000] + 0.25}, 1, 2, True, "wu")
    _ping_runs(root, "wireguard", "wireguard", {1024: ipsec1024[4000:8000] + 0.2}, 1, 2, False, "wk")
    # an invalid and an interrupted aes128gcm run with absurd values: must be left out
    _ping_runs(root, "aes128gcm", "ipsec", {64: np.full(2000, 99.0)}, 1, 1, False, "invalid", valid=False)
    _ping_runs(root, "aes128gcm", "ipsec", {64: np.full(2000, 77.0)}, 1, 1, False, "interrupted",
               state="interrupted")

    # sbi: real Open5GS NGAP from the RWTH F1-C captures (one registration each), roles by file
    f1c = rw / "f1c-socat-overhead"
    for profile, protocol, numbers, params, extra in (
        ("baseline", "none", range(0, 10), {}, {"attach_failures": [{"ue": "ue2", "attempt": 3, "reason": "timeout"}]}),
        ("tls13-aes256gcm", "tls", range(10, 20),
         {"version": "1.3", "cipher": "TLS_AES_256_GCM_SHA384", "cert": "ecdsa"}, {}),
        ("aes128gcm-psk-trap", "ipsec", [10, 11, 12, 5, 6, 7],
         {"esp_proposal": "aes128gcm16", "auth": "psk", "mode": "trap", "patched_wait": True}, {}),
    ):
        files: list[dict] = []
        d = _write_run(root, _manifest("sbi", profile, protocol, f"20261122T0000Z-{profile}", files,
                                       plane="sbi", params=params, userspace=None if protocol == "none" else False,
                                       ues=[{"name": "ue1", "imsi": "001010000000001", "role": "cold"},
                                            {"name": "ue2", "imsi": "001010000000002", "role": "warm"}],
                                       **extra))
        for k, n in enumerate(numbers):
            role = "cold" if k < len(numbers) // 2 else "warm"
            shutil.copy(f1c / f"{n}.pcap", d / f"n2-{n}.pcap")
            files.append({"path": f"n2-{n}.pcap", "kind": "pcap", "iface": "n2", "purpose": "timing", "role": role})
        if protocol == "none":   # a capture that starts too late: registration request missing
            shutil.copy(rw / "e1-socat-overhead" / "0.pcap", d / "n2-late.pcap")
            files.append({"path": "n2-late.pcap", "kind": "pcap", "iface": "n2", "purpose": "timing", "role": "warm"})
        m = json.loads((d / "manifest.json").read_text())
        m["files"] = files
        (d / "manifest.json").write_text(json.dumps(m, indent=2))

    # cpu: linear in UEs with real jitter (RWTH E1 procedure times, ms, used as 1/100 s noise);
    # core slope per UE = per_ue + 0.02 (amf-net); gnb and ue-scale (RAN) must be left out
    jitter = parse_rwth(rw / "e1-registration" / "noenc_2025-07-16-T10-12-48.txt").values["value"].to_numpy()
    services = ["amf", "smf", "nrf", "ausf", "udm", "amf-net", "gnb", "ue-scale"]
    j = 0
    for profile, protocol, per_ue, userspace in (("baseline", "none", 0.20, None), ("aes256gcm", "ipsec", 0.26, False),
                                                 ("wireguard", "wireguard", 0.23, False),
                                                 ("tls13-aes256gcm", "tls", 0.30, False)):
        files = []
        d = _write_run(root, _manifest("cpu", profile, protocol, f"20261122T0100Z-{profile}", files,
                                       plane="sbi", userspace=userspace))
        for ues in (1, 2, 4, 8):
            for rep in range(1, 4):
                name = f"cpu-{ues}-{rep}.csv"
                rows = ["service,cpu_usec"]
                for svc in services:
                    if svc in ("gnb", "ue-scale"):      # the simulated RAN: large, must not count
                        sec = 1.0 * ues + jitter[j] / 100.0
                    elif svc == "amf-net":              # overlay namespace holder: counts
                        sec = 0.02 * ues
                    else:
                        sec = (0.5 + per_ue * ues) / 5 + jitter[j] / 100.0
                    j += 1
                    rows.append(f"{svc},{int(round(sec * 1e6))}")
                (d / name).write_text("\n".join(rows) + "\n")
                files.append({"path": name, "kind": "cpu", "ues": ues, "rep": rep})
        m = json.loads((d / "manifest.json").read_text())
        m["files"] = files
        (d / "manifest.json").write_text(json.dumps(m, indent=2))

    # throughput: real iperf3 runs on loopback
    if iperf:
        for profile, protocol in (("baseline", "none"), ("aes128gcm", "ipsec")):
            files = []
            d = _write_run(root, _manifest("throughput", profile, protocol, f"20261122T0200Z-{profile}", files,
                                           userspace=None if protocol == "none" else False))
            for transport in ("tcp", "udp"):
                _iperf3(d / f"iperf3-{transport}.json", transport)
                files.append({"path": f"iperf3-{transport}.json", "kind": "iperf3", "transport": transport})
            m = json.loads((d / "manifest.json").read_text())
            m["files"] = files
            (d / "manifest.json").write_text(json.dumps(m, indent=2))
    return tree
