"""`python -m analysis` as a user runs it (subprocess): stdout formats, exit codes, messages."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from tests.conftest import ROOT, require_tools


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "analysis", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)


def test_attach_times_prints_csv(shared):
    require_tools("tshark")
    proc = _run("attach-times", str(shared / "open5gs-docs-pcaps" / "5g-roaming-lbo.pcapng"))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [(r["ue"], r["attach_ms"], r["status"]) for r in rows] == [("127.0.0.1:56378/ran-ue-1", "150.986991", "complete")]
    assert rows[0]["t_registration_request"] == "1696241564.880737326"
    assert rows[0]["t_pdu_session_accept"] == "1696241565.031724317"
    proc = _run("attach-times", "--ngap-only", str(shared / "open5gs-docs-pcaps" / "5g-roaming-lbo.pcapng"))
    assert [r["status"] for r in csv.DictReader(io.StringIO(proc.stdout))] == ["complete", "missing_pdu_session_accept"]


def test_ping_stats_prints_one_json_object(shared):
    d = shared / "rwth-internal-ran-security" / "f1u-ping"
    proc = _run("ping-stats", str(d / "ipsec_2025-08-20-T04-03-31.txt"))
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    assert stats["n"] == 20000
    assert (f"{stats['mean_ms']:.3f}", f"{stats['sd_ms']:.3f}", f"{stats['ci99_halfwidth_ms']:.3f}") == ("11.626", "2.030", "0.037")


def test_ping_stats_pools_real_ping_output(tmp_path):
    files = []
    for i, body in enumerate(("time=1.0 ms", "time=3.0 ms")):
        p = tmp_path / f"p{i}.txt"
        p.write_text(f"[1.0] 72 bytes from 10.0.0.1: icmp_seq=1 ttl=64 {body}\n"
                     "1 packets transmitted, 1 received, 0% packet loss, time 0ms\n")
        files.append(str(p))
    stats = json.loads(_run("ping-stats", *files).stdout)
    assert (stats["n"], stats["mean_ms"], stats["lost"]) == (2, 2.0, 0)


def test_errors_exit_1_with_a_message_and_usage_errors_exit_2(tmp_path):
    bad = tmp_path / "x.txt"
    bad.write_text("hello\n")
    proc = _run("ping-stats", str(bad))
    assert proc.returncode == 1 and "x.txt: no ping replies" in proc.stderr and proc.stdout == ""
    proc = _run("attach-times", str(tmp_path / "none.pcap"))
    assert proc.returncode == 1 and "does not exist" in proc.stderr
    assert _run("no-such-command").returncode == 2
    assert _run("procedure-times", "--interface", "f1u", "x").returncode == 2
    proc = _run("ran-procedures", str(tmp_path), str(bad))
    assert proc.returncode == 1 and "one results directory, or capture files" in proc.stderr
    proc = _run("rwth", str(tmp_path / "nope"))
    assert proc.returncode == 1 and "does not exist" in proc.stderr


def test_ran_procedures_on_captures_and_on_a_results_tree(shared, ran_fixture_tree):
    require_tools("tshark")
    d = shared / "rwth-internal-ran-security" / "e1-socat-overhead"
    proc = _run("ran-procedures", "--interface", "e1", str(d / "0.pcap"), str(d / "1.pcap"))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [(r["status"], r["request_ms"], r["ngap_ms"], r["ngap_ms_us"]) for r in rows] == [
        ("complete", "1.275662", "3.175151", "3.175000"), ("complete", "1.291446", "3.234796", "3.235000")]
    proc = _run("ran-procedures", str(ran_fixture_tree.root), "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    table = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert {(r["interface"], r["definition"]) for r in table} == {("e1", "ngap"), ("e1", "request"),
                                                                   ("f1c", "ngap"), ("f1c", "request")}
    proc = _run("f1u", str(ran_fixture_tree.root))
    assert proc.returncode == 0 and "## F1-U and end-to-end RTT (ms)" in proc.stdout


def test_rwth_page(shared, tmp_path):
    proc = _run("rwth", str(shared / "rwth-internal-ran-security"), "--out", str(tmp_path), "--no-captures")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "rwth.md") and "51 of 52" in (tmp_path / "rwth.md").read_text()
