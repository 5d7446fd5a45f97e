"""The UPF security functions between namespaces with the real engines (Suricata, the NFQUEUE
passthrough), real iptables-legacy NAT/NFQUEUE and D-ITG: every seed rule alerts on test traffic,
the inline drop rule drops, NAT shows on the server's side, and the engine inspected the flows."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_root, require_tools

pytestmark = pytest.mark.netns


def _run(tmp_path: Path, function: str, ids: str = "") -> dict:
    require_root()
    require_tools("ip", "socat", "ITGSend", "ITGRecv", "ITGDec", "ping")
    if shutil.which("iptables-legacy") is None and shutil.which("iptables") is None:
        pytest.skip("iptables not found: make setup installs it")
    if ids == "suricata" and shutil.which("suricata") is None:
        pytest.skip("suricata not found: make setup installs it (bookworm-backports)")
    if ids == "passthrough" and shutil.which("gcc") is None:
        pytest.skip("gcc not found (the passthrough engine is compiled from testbed/secfn/nfq_accept.c)")
    res = subprocess.run([sys.executable, "-m", "testbed", "secfn", "--secfn", function, "--ids", ids,
                          "--results", str(tmp_path / "results"), "--rates", "300", "--runs", "1",
                          "--duration", "1", "--seed", "7"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                         env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "STATE": str(tmp_path / "state")})
    assert res.returncode == 0, res.stdout[-1500:] + res.stderr[-1500:]
    run_dir = Path(res.stdout.strip().splitlines()[-1])
    m = json.loads((run_dir / "manifest.json").read_text())
    m["_rows"] = list(csv.DictReader((run_dir / "ditg.csv").open()))
    m["_dir"] = run_dir
    return m


def test_nat_only(tmp_path: Path) -> None:
    m = _run(tmp_path, "nat")
    assert m["valid"] is True, m["validity"]
    assert {r["seen_source"] for r in m["_rows"]} == {"10.100.6.7"}       # masqueraded to the UPF's N6
    assert {r["protocol"] for r in m["_rows"]} == {"udp", "tcp"}


def test_ids_nat_with_suricata(tmp_path: Path) -> None:
    m = _run(tmp_path, "ids-nat", "suricata")
    assert m["valid"] is True, m["validity"]
    alerts = {int(k): v for k, v in m["engine"]["alerts_per_sid"].items()}
    assert all(alerts.get(s) for s in (1000004, 1000002, 1000001, 2094284)), alerts
    assert m["engine"]["inspected"] > 300                                 # the D-ITG flows were seen
    assert m["proof"]["drop_probe_arrived"] is True                        # passive: nothing dropped


def test_ips_nat_with_suricata_drops_inline(tmp_path: Path) -> None:
    m = _run(tmp_path, "ips-nat", "suricata")
    assert m["valid"] is True, m["validity"]
    assert m["proof"]["drop_probe_arrived"] is False and m["engine"]["ips_blocked"] >= 1
    assert m["queue"] is not None and m["queue"]["id_sequence"] >= m["engine"]["inspected"] > 300


def test_ips_nat_passthrough_counts_every_queued_packet(tmp_path: Path) -> None:
    m = _run(tmp_path, "ips-nat", "passthrough")
    assert m["valid"] is True, m["validity"]
    assert m["engine"]["inspected"] == m["queue"]["id_sequence"] > 300
