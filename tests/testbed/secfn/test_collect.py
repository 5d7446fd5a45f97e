"""The stack driver's Python steps on real tool output (tests/data): the flow plan it prints
(python -m testbed secfn-plan) and the collection (secfn-finish: ditg.csv, engine and queue
counters into the manifest; testbed/secfn/collect.py)."""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

from testbed import manifest
from testbed.secfn import collect
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"


def _tb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "testbed", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "SECFN": ""})


def test_plan_prints_each_flow_with_its_itgsend_command(tmp_path: Path) -> None:
    run = manifest.create(tmp_path, "secfn", "baseline", {"SECFN": "ips-nat", "IDS": "snort", "RATES": "100 300",
                                                          "RUNS": "2", "DURATION": "1.5", "ORDER_SEED": "9"})
    res = _tb("secfn-plan", str(run), "--server", "10.100.6.20", "--source", "10.45.0.3", "--log-dir", "/l")
    assert res.returncode == 0, res.stderr
    rows = [line.split("\t") for line in res.stdout.splitlines()]
    assert len(rows) == 2 * 2 * 2 and sorted({tuple(r[:3]) for r in rows}) == sorted(
        (p, r, i) for p in ("udp", "tcp") for r in ("100", "300") for i in ("0", "1"))
    proto, rate, i, *argv = rows[0]
    assert argv[:9] == ["ITGSend", "-T", proto.upper(), "-a", "::ffff:10.100.6.20", "-sa", "::ffff:10.45.0.3",
                        "-Ssa", "::ffff:10.45.0.3"]
    assert argv[-6:] == ["-t", "1500", "-l", f"/l/send-{proto}-{rate}-{i}.log", "-x", f"/l/recv-{proto}-{rate}-{i}.log"]
    flows = manifest.load(run)["flows"]
    assert flows["seed"] == 9 and flows["planned"] == 8 and [list(map(str, f)) for f in flows["order"]] == [r[:3] for r in rows]


def test_finish_collects_flows_and_the_engines_counters(tmp_path: Path) -> None:
    run = manifest.create(tmp_path, "secfn", "baseline", {"SECFN": "ips-nat", "IDS": "snort", "RATES": "300",
                                                          "RUNS": "1", "PROTOCOLS": "udp tcp", "ORDER_SEED": "1"})
    assert _tb("secfn-plan", str(run), "--server", "s", "--log-dir", "/l").returncode == 0
    (run / "ditg").mkdir()
    for proto in ("udp", "tcp"):        # the real receiver and sender texts (the tcp flow lacks its sender's)
        shutil.copy(DATA / "ditg" / f"recv-{proto}-300-0.log.txt", run / "ditg" / f"recv-{proto}-300-0.log.txt")
    shutil.copy(DATA / "ditg" / "send-udp-300-0.log.txt", run / "ditg" / "send-udp-300-0.log.txt")
    (run / "engine").mkdir()
    shutil.copy(DATA / "snort" / "snort-inline.out", run / "engine" / "snort.out")
    shutil.copy(DATA / "snort" / "alert_json.txt", run / "engine" / "alert_json.txt")
    (run / "engine" / "nfqueue.txt").write_text("    4  12345     0     2 65531     0     0      295  1\n")
    res = _tb("secfn-finish", str(run))
    assert res.returncode == 0 and "flow tcp-300-0: no ITGDec text" in res.stderr, res.stderr
    m = manifest.load(run)
    assert m["flows"]["decoded"] == 1 and m["flows"]["planned"] == 2
    assert m["engine"]["engine"] == "snort" and m["engine"]["blocked"] == 1 and m["engine"]["inspected"] == 295
    assert m["nfqueue"] == {"queue_total": 0, "queue_dropped": 0, "user_dropped": 0, "id_sequence": 295}
    (row,) = list(csv.DictReader((run / "ditg.csv").open()))
    assert row["protocol"] == "udp" and row["packets"] == "215.0" and row["sent_packets"] == "215.0"
    assert list(row) == list(collect.FIELDS)
