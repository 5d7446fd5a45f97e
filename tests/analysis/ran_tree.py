"""A results tree of the RAN experiments (``ran-procedures``, ``f1u``) in the formats the drivers
write (docs/contracts.md, "Results"; pcap attrs iface n2|f1c|e1 and purpose timing; ping files
like run-n3's with attr ``path``; manifest parameter ``ran``), from REAL data in tests/data: the
authors' relay-only captures (one OAI registration each, NGAP + E1AP or NGAP + F1AP) and their
ping RTT files, until the split stack produces real runs.

What is synthetic: the manifests, which real capture or ping value goes to which of our profiles
and runs (the captures all come from one relay-only experiment, so the "overheads" between our
fixture profiles are noise), the ping line framing, and two edited captures made with the real
Wireshark tools (editcap cuts one capture before its response, mergecap merges one with itself so
every message is there twice).
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from analysis.parse.rwth_txt import parse_rwth
from tests.analysis.results_tree import _manifest, _write_run, ping_text

RW = "rwth-internal-ran-security"
DTLS = {"version": "1.2", "cipher": "ECDHE-ECDSA-AES128-GCM-SHA256", "cert": "ecdsa", "relay": "dtls"}
PLAIN = {"version": None, "cipher": None, "cert": None, "relay": "plain"}
# profile -> (protocol, profile params, E1 capture numbers per run)
E1_RUNS: dict[str, tuple[str, dict, list[list[int]]]] = {
    "baseline": ("none", {}, [[0, 1, 2, 3], [4, 5, 6, 7]]),
    "aes128gcm": ("ipsec", {"esp_proposal": "aes128gcm16", "auth": "cert", "mode": "start"}, [[8, 9, 10, 11], [12, 13, 14, 15]]),
    "dtls12-aes128gcm": ("dtls", DTLS, [[16, 17, 18, 19], [20, 21, 22, 23]]),
    "dtls-relay-plain": ("dtls", PLAIN, [[24, 25, 26], [27, 28, 29]]),
}
F1C_RUNS: dict[str, tuple[str, dict, list[list[int]]]] = {
    "baseline": ("none", {}, [[4, 6, 7, 8], [11, 12, 13, 16]]),
    "aes128gcm": ("ipsec", {"esp_proposal": "aes128gcm16", "auth": "cert", "mode": "start"}, [[19, 0], [1, 2]]),
}


@dataclass
class Tree:
    root: Path
    expected: dict[str, Any] = field(default_factory=dict)


def _finish(d: Path, files: list[dict]) -> None:
    m = json.loads((d / "manifest.json").read_text())
    m["files"] = files
    (d / "manifest.json").write_text(json.dumps(m, indent=2))


def _procedure_run(root: Path, shared: Path, iface: str, profile: str, protocol: str, params: dict,
                   numbers: list[int], k: int) -> Path:
    folder = shared / RW / ("e1-socat-overhead" if iface == "e1" else "f1c-socat-overhead")
    files: list[dict] = []
    d = _write_run(root, _manifest("ran-procedures", profile, protocol, f"20261124T{k:04d}Z-{iface}-{profile}",
                                   files, plane=iface, params=params,
                                   userspace=None if protocol == "none" else protocol == "dtls"))
    for n in numbers:
        name = f"{iface}-{n}.pcap"
        (d / name).write_bytes((folder / f"{n}.pcap").read_bytes())
        files.append({"path": name, "kind": "pcap", "iface": iface, "purpose": "timing"})
    _finish(d, files)
    return d


def build(root: Path, shared: Path) -> Tree:
    tree = Tree(root)
    k = 0
    for iface, runs in (("e1", E1_RUNS), ("f1c", F1C_RUNS)):
        for profile, (protocol, params, groups) in runs.items():
            for numbers in groups:
                k += 1
                _procedure_run(root, shared, iface, profile, protocol, params, numbers, k)
    # a baseline E1 boot whose last registration lost its response (the capture ends before it:
    # frames 1-15 of 0.pcap, the response is frame 16) and one of whose registrations is also in
    # its N2 capture, 0.2 ms later (one packet seen on two interfaces: counted once)
    d = _procedure_run(root, shared, "e1", "baseline", "none", {}, [1, 2], 99)
    rw = shared / RW / "e1-socat-overhead"
    subprocess.run(["editcap", "-r", str(rw / "0.pcap"), str(d / "e1-cut.pcap"), "1-15"], check=True)
    subprocess.run(["editcap", "-t", "0.0002", str(rw / "2.pcap"), str(d / "n2-2.pcap")], check=True)
    m = json.loads((d / "manifest.json").read_text())
    _finish(d, m["files"] + [{"path": "e1-cut.pcap", "kind": "pcap", "iface": "e1", "purpose": "timing"},
                             {"path": "n2-2.pcap", "kind": "pcap", "iface": "n2", "purpose": "timing"}])
    tree.expected["edited_run"] = d.name
    # an invalid run with absurd captures: left out
    d = _procedure_run(root, shared, "e1", "aes128gcm", "ipsec", {}, [5], 98)
    m = json.loads((d / "manifest.json").read_text())
    m["valid"] = False
    (d / "manifest.json").write_text(json.dumps(m, indent=2))

    # f1u: each of the authors' 10 boots (2,000 pings in file order) becomes one of our runs,
    # as 2 sets of 1,000 pings (f1u path: noenc and two ESP files; e2e: split and monolithic)
    ping = {("f1u", "split", "baseline"): "f1u-ping/noenc_2025-08-20-T02-45-02.txt",
            ("f1u", "split", "aes128gcm"): "f1u-ping/ipsec_2025-08-20-T13-12-50.txt",
            ("f1u", "split", "aes256gcm"): "f1u-ping/ipsec_2025-08-20-T14-31-18.txt",
            ("e2e", "split", "baseline"): "end-to-end/disaggregated_no_security.txt",
            ("e2e", "split", "aes128gcm"): "end-to-end/disaggregated_encryption_integrity.txt",
            ("e2e", "oai", "baseline"): "end-to-end/monolithic_no_security.txt",
            ("e2e", "oai", "aes128gcm"): "end-to-end/monolithic_encryption_integrity.txt"}
    for (path, ran, profile), src in ping.items():
        values = parse_rwth(shared / RW / src).values["value"].to_numpy()
        tree.expected[(path, ran, profile)] = values
        protocol = "none" if profile == "baseline" else "ipsec"
        for b, boot in enumerate(np.split(values, 10)):
            files = []
            d = _write_run(root, _manifest("f1u", profile, protocol, f"20261124T1{b:03d}Z-{path}-{ran}", files,
                                           plane="f1u", userspace=None if protocol == "none" else False,
                                           params={"esp_proposal": "aes128gcm16"} if protocol == "ipsec" else {}))
            m = json.loads((d / "manifest.json").read_text())
            m["parameters"] = {"ran": ran, "pings": 1000, "sets": 2, "interval": 0.2, "sizes": [1024]}
            (d / "manifest.json").write_text(json.dumps(m, indent=2))
            for s, chunk in enumerate(np.split(boot, 2), start=1):
                name = f"ping-{path}-1024-{s}.txt"
                (d / name).write_text(ping_text(chunk, 1024, 1.76e9 + 1000 * s))
                files.append({"path": name, "kind": "ping", "size": 1024, "set": s, "warmup": False,
                              "attrs": {"path": path}})
            _finish(d, files)
    return tree
