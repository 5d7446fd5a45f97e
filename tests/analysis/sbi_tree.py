"""A results tree of run-sbi runs in the drivers' layout, built from the real Open5GS capture of
tests/data/open5gs-docs-pcaps (one UE's registration and PDU session, NGAP and the cleartext SBI on
one loopback capture), for the per-operation breakdown tests.

What is synthetic: the manifests, and the boots: iteration 2 of each run is the same capture
shifted by 100 s (editcap -t), so both iterations hold the same real packets. The "protected"
profiles are labels on the same cleartext traffic: `wireguard` on PLANE=n3 (its SBI stays
cleartext: read as such), `tls13-aes128gcm` without exported keys (must be reported as not
decrypted). Overheads on this tree are therefore exactly 0.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from testbed.manifest import datapath_for

CAPTURE = "open5gs-docs-pcaps/5g-roaming-lbo.pcapng"
IMSI = "001010000021309"          # the capture's UE (SOURCE.md)
RUNS = (("baseline", "none", "sbi"), ("wireguard", "wireguard", "n3"), ("tls13-aes128gcm", "tls", "sbi"))


def build(root: Path, shared: Path) -> Path:
    src = shared / CAPTURE
    root.mkdir(parents=True, exist_ok=True)
    shifted = root / "shifted.pcapng"
    subprocess.run(["editcap", "-t", "100", str(src), str(shifted)], check=True, capture_output=True)
    for profile, protocol, plane in RUNS:
        run = f"20261127T0000Z-{profile}"
        d = root / "fixture" / "sbi" / (profile if plane == "sbi" else f"{profile}@{plane}") / run
        d.mkdir(parents=True)
        files = []
        for it, capture in ((1, src), (2, shifted)):
            for iface, purpose in (("n2", "timing"), ("sbi", "validation")):
                name = f"it{it:02d}-{iface}.pcap"
                shutil.copy(capture, d / name)
                entry = {"path": name, "kind": "pcap", "iface": iface, "purpose": purpose, "iteration": it}
                if iface == "n2":
                    entry["role"] = "cold"          # the test program's SUCI is concealed: no MSIN to match
                files.append(entry)
        manifest = {
            "schema_version": 1, "experiment": "sbi", "profile": profile, "plane": plane, "protocol": protocol,
            "campaign": "fixture", "run": run, "state": "complete", "valid": True,
            "validity": {"protected_packets": 1, "plaintext_packets": 0, "details": "fixture"},
            "datapath": datapath_for(protocol, {"wireguard": "kernel"}),
            "parameters": {"iterations": 2, "mode": "cold", "keys": 0}, "profile_params": {},
            "host": {"kernel": "6.1.0-fixture", "cpu_model": "fixture CPU", "aes_ni": True,
                     "hostname": "fixture-host", "nproc": 2},
            "versions": {"testbed_commit": "0123456789abcdef", "testbed_dirty": False},
            "instance": {"state": "/fixture", "project": "g5tb", "slot": 0},
            "started": "2026-11-27T00:00:00Z", "finished": "2026-11-27T00:10:00Z", "commands": [],
            "files": files,
            "ues": [{"name": "ue1", "imsi": IMSI, "role": "cold", "iteration": it, "attempt": 1, "attached": True}
                    for it in (1, 2)],
        }
        (d / "manifest.json").write_text(json.dumps(manifest, indent=1))
    shifted.unlink()
    return root
