"""analysis/parse/iperf3.py on JSON written by the real iperf3 (loopback)."""
from __future__ import annotations

import json

import pytest

from analysis.parse.iperf3 import iperf3_summary, parse_iperf3_intervals
from tests.analysis.results_tree import _iperf3
from tests.conftest import require_tools


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_real_iperf3_json(tmp_path, transport):
    require_tools("iperf3")
    path = tmp_path / f"{transport}.json"
    _iperf3(path, transport)
    doc = json.loads(path.read_text())
    s = iperf3_summary(path)
    assert s["transport"] == transport
    if transport == "tcp":
        assert s["receiver_mbps"] == pytest.approx(doc["end"]["sum_received"]["bits_per_second"] / 1e6)
        assert s["sender_mbps"] == pytest.approx(doc["end"]["sum_sent"]["bits_per_second"] / 1e6)
    else:
        assert 0 < s["receiver_mbps"] < 1000 and s["lost_percent"] is not None
    intervals = parse_iperf3_intervals(path)
    assert len(intervals) == len(doc["intervals"]) >= 1
    assert intervals["bytes"].sum() == pytest.approx(sum(i["sum"]["bytes"] for i in doc["intervals"]))


def test_error_document_and_garbage_are_rejected_with_the_path(tmp_path):
    err = tmp_path / "err.json"
    err.write_text(json.dumps({"start": {}, "intervals": [], "end": {},
                               "error": "unable to connect to server: Connection refused"}))
    with pytest.raises(ValueError, match="err.json: iperf3 reported an error: unable to connect"):
        iperf3_summary(err)
    bad = tmp_path / "bad.json"
    bad.write_text("Connecting to host 10.45.0.1, port 5201\n")
    with pytest.raises(ValueError, match="bad.json: not iperf3 JSON"):
        iperf3_summary(bad)
