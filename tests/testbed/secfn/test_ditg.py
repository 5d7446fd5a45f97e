"""D-ITG: the flow plan and ITGDec's text, parsed from real output (tests/data/ditg, provenance in
tests/data/README.md), lossy and cut cases included (testbed/secfn/ditg.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testbed import host_tools
from testbed.secfn import ditg
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "ditg"


def test_receiver_totals_and_the_source_it_saw() -> None:
    got = ditg.parse((DATA / "recv-udp-300-0.log.txt").read_text())
    assert got["packets"] == 215 and got["bytes"] == 110080 and got["dropped"] == 0
    assert got["delay_avg_s"] == pytest.approx(0.002444) and got["jitter_avg_s"] == pytest.approx(0.002405)
    assert got["bitrate_kbps"] == pytest.approx(874.959761)
    assert got["seen_source"] == "10.100.6.7"                  # masqueraded to the UPF's N6 address
    tcp = ditg.parse((DATA / "recv-tcp-300-0.log.txt").read_text())
    assert tcp["packets"] == 116 and tcp["seen_source"] == "10.100.6.7"


def test_lossy_flow_counts_its_losses() -> None:
    recv = ditg.parse((DATA / "recv-udp-lossy.log.txt").read_text())
    sent = ditg.parse((DATA / "send-udp-lossy.log.txt").read_text())
    assert sent["packets"] == 741 and recv["packets"] == 662 and recv["dropped"] == 79
    assert sent["packets"] - recv["packets"] == recv["dropped"]


def test_cut_output_is_an_error() -> None:
    text = (DATA / "recv-udp-300-0.log.txt").read_text()
    with pytest.raises(ditg.DitgError, match="no 'TOTAL RESULTS'"):
        ditg.parse(text[: text.index("TOTAL")])
    with pytest.raises(ditg.DitgError, match="no 'bitrate_kbps'"):
        ditg.parse(text.replace("Average bitrate", "Average bit rate"))


def test_decode_runs_the_real_itgdec_and_keeps_its_text(tmp_path: Path) -> None:
    if shutil.which("ITGDec") is None:
        pytest.skip(f"ITGDec not found: {host_tools.install_hint('ITGDec')}")
    log = tmp_path / "recv.log"
    shutil.copy(DATA / "recv-udp-300-0.log", log)
    got = ditg.decode(log)
    assert got["packets"] == 215 and (tmp_path / "recv.log.txt").read_text().count("TOTAL RESULTS") == 1
    with pytest.raises(ditg.DitgError):
        ditg.decode(tmp_path / "missing.log")


def test_plan_is_seeded_and_complete() -> None:
    a = ditg.plan(["udp", "tcp"], [100, 1000], 3, seed=7)
    assert a == ditg.plan(["udp", "tcp"], [100, 1000], 3, seed=7) != ditg.plan(["udp", "tcp"], [100, 1000], 3, seed=8)
    assert sorted(a) == sorted((p, r, i) for i in range(3) for p in ("udp", "tcp") for r in (100, 1000))
    assert ditg.send_command("10.100.6.20", "udp", 1000, 5, "s", "r", source="10.45.0.2") == [
        "ITGSend", "-T", "UDP", "-a", "::ffff:10.100.6.20", "-sa", "::ffff:10.45.0.2", "-Ssa", "::ffff:10.45.0.2",
        "-c", "512",
        "-O", "1000", "-t", "5000", "-l", "s", "-x", "r"]
