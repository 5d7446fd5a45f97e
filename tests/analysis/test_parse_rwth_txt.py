"""analysis/parse/rwth_txt.py + analysis/stats.py: recompute the printed statistics of every real
RWTH result file to its printed precision (their tools use z; we print t too)."""
from __future__ import annotations

import pytest

from analysis.parse.rwth_txt import looks_like_rwth, parse_rwth, parse_rwth_text
from analysis.stats import summarize

FILES = [
    "f1u-ping/noenc_2025-08-20-T02-45-02.txt",
    "f1u-ping/ipsec_2025-08-20-T04-03-31.txt",
    "end-to-end/monolithic_no_security.txt",
    "end-to-end/monolithic_encryption_integrity.txt",
    "f1u-iperf/noenc_2025-08-29-T18-57-57.txt",
    "e1-registration/noenc_2025-07-16-T10-12-48.txt",
    "f1c-registration/noenc_2025-08-01-T15-49-41.txt",
    "e1-socat-overhead/res.txt",
    "f1c-socat-overhead/res.txt",
]


@pytest.mark.parametrize("name", FILES)
def test_printed_results_line_is_recomputed_to_three_decimals(shared, name):
    r = parse_rwth(shared / "rwth-internal-ran-security" / name)
    s = summarize(r.values["value"])
    assert s.n == int(r.printed["n"]) == len(r.values)
    assert f"{s.mean:.3f}" == f"{r.printed_number('mean'):.3f}"
    assert f"{s.sd:.3f}" == r.printed["sd"]
    assert f"{s.ci_halfwidth_z:.3f}" == r.printed["h"]


def test_iperf_file_tells_t_from_z(shared):
    r = parse_rwth(shared / "rwth-internal-ran-security" / "f1u-iperf" / "noenc_2025-08-29-T18-57-57.txt")
    s = summarize(r.values["value"])
    assert r.params["ITERATIONS"] == "5"
    assert f"{s.ci_halfwidth_z:.3f}" == "2.306"     # what they printed (normal quantile)
    assert f"{s.ci_halfwidth:.4f}" == "4.1216"      # Student t with 4 dof, what we report


def test_dtls_mean_with_subtraction_and_missing_results_line():
    r = parse_rwth_text("SETUP = dtls\n\nResults: n=2 mean=3.438-0.458 stdev=±0.1 99%conf=±0.2\n3.4\n3.476\n")
    assert r.printed_number("mean") == 3.438
    assert r.values["value"].tolist() == [3.4, 3.476]
    assert looks_like_rwth("A = 1\n\nResults: n=1 mean=1 stdev=±0 99%conf=±0\n1\n")
    with pytest.raises(ValueError, match="no 'Results: n="):
        parse_rwth_text("64 bytes from 10.0.0.1: icmp_seq=1 ttl=64 time=1.0 ms\n", "x.txt")
