"""analysis/bench.py: the tshark-based extraction against the per-packet pyshark extractor on
the same real capture (small size here; `make bench-analysis` runs the large one)."""
from __future__ import annotations

import pytest

from analysis.bench import build_ping_text, run_benchmark
from analysis.parse.ping import parse_ping_text
from tests.conftest import require_tools


def test_benchmark_agrees_and_tshark_is_at_least_20x_faster(shared, tmp_path):
    require_tools("tshark", "editcap", "mergecap", "capinfos")
    pytest.importorskip("pyshark", reason="pyshark (the bench extra) is not installed: pip install '.[bench]'")
    # two copies of the real Open5GS capture (5,380 packets): big enough that tshark's start-up
    # does not dominate, small enough for the suite (pyshark needs ~15-40 s per copy)
    result = run_benchmark(tmp_path, copies=2, ping_lines=20_000,
                           source=shared / "open5gs-docs-pcaps" / "5g-roaming-lbo.pcapng")
    assert result["packets"] == 2 * 2690
    assert result["complete"] == 2 and result["attach_ms"] == [150.986991]
    assert result["same_attach_times"] is True
    assert result["speedup"] >= 20, result
    assert result["ok"] is True
    assert result["ping_rows"] == 20_000 and result["ping_lines_per_s"] > 0


def test_replicated_capture_keeps_every_registration(shared, tmp_path):
    require_tools("tshark", "editcap", "mergecap", "capinfos")
    result = run_benchmark(tmp_path, copies=3, ping_lines=10, pyshark=False,
                           source=shared / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap")
    assert result["packets"] == 3 * 825 and result["complete"] == 3 and result["attach_ms"] == [731.136847]


def test_ping_bench_input_is_valid_ping_output(shared):
    values = shared / "rwth-internal-ran-security" / "f1u-ping" / "noenc_2025-08-20-T02-45-02.txt"
    frame = parse_ping_text(build_ping_text(values, 70_000))       # crosses the 16-bit icmp_seq wrap
    assert len(frame) == 70_000 and not frame["lost"].any() and frame["seq"].is_monotonic_increasing
