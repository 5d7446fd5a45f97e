"""analysis/ran_report.py: the RAN section of `make report` and the page on the authors' data:
our numbers beside the paper's and beside our analysis of the authors' files, the relay's cost
as its own rows, every registration counted, the authors' data quirks stated."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis import ran_report
from analysis.reference import RAN_REFERENCES


@pytest.fixture(scope="module")
def text(ran_fixture_report):
    return (ran_fixture_report / "report.md").read_text()


def test_section_in_the_report_with_tables_and_figures(text, ran_fixture_report):
    assert "## RAN interfaces (F1-C, F1-U, E1, end-to-end)" in text
    for name in ("ran-comparison", "ran-summary", "ran-registrations", "ran-procedure-rows", "ran-relay"):
        assert (ran_fixture_report / "tables" / f"{name}.csv").is_file()
    for fig in ("fig-ran-f1u", "fig-ran-f1c", "fig-ran-e1", "fig-ran-e2e"):
        assert f"](figures/{fig}.png)" in text and (ran_fixture_report / "figures" / f"{fig}.pdf").is_file()
    assert "| baseline | e1 | missing_response | 1 | 1 | 0 |" in text


def test_comparison_paper_authors_ours(ran_fixture_report):
    c = pd.read_csv(ran_fixture_report / "tables" / "ran-comparison.csv", keep_default_na=False).set_index("result")
    assert list(c.index) == [r.key for r in RAN_REFERENCES]
    assert c.loc["f1c-ipsec", "paper"] == "~120" and c.loc["f1c-ipsec", "authors_data"].startswith("120.3 ± ")
    assert c.loc["f1u-ipsec", "paper_from_authors_data"] == "NO: differs"       # their files: ~312 us
    assert (c.loc[[k for k in c.index if k != "f1u-ipsec"], "paper_from_authors_data"] == "yes").all()
    assert c.loc["f1c-ipsec-fastest", "authors_configurations"] == "aes128cbc"   # the paper says AES256-HMAC
    assert c.loc["e2e-split-overhead", "ours"].startswith("1.3 ± ") and c.loc["e2e-split-overhead", "unit"] == "ms"
    # procedures: ours per start point; nothing measured for F1-C DTLS in the fixture
    assert c.loc["e1-dtls", "ours_ngap_start"] != "" and c.loc["e1-dtls", "ours_request_start"] != ""
    assert c.loc["f1c-dtls", "ours_ngap_start"] == "not measured"


def test_relay_rows_never_subtracted_silently(ran_fixture_report, text):
    r = pd.read_csv(ran_fixture_report / "tables" / "ran-relay.csv")
    ours = r[(r["source"] == "ours") & (r["definition"] == "ngap")]
    assert sorted(ours["row"]) == ["DTLS (relay included) vs no security", "DTLS minus relay only (the paper's way)",
                                   "relay only, no DTLS, vs no security"]
    assert "They subtract 0.458 ms as the relay's cost" in text and "the unrounded means give 0.459 ms" in text


def test_userspace_ipsec_gets_its_own_marked_row():
    ours = pd.DataFrame([{"campaign": "c", "interface": "e1", "definition": "ngap", "protocol": "ipsec",
                          "profile": "aes128gcm", "datapath": d, "overhead": o, "overhead_ci": 0.001,
                          "relay": "", "ran": "split"} for d, o in (("kernel", 0.010), ("userspace", 0.200))])
    c = ran_report.comparison(pd.DataFrame(columns=ours.columns), ours).set_index("result")
    assert c.loc["e1-ipsec-aes128gcm", "ours_ngap_start"].startswith("10.0 ± ")
    assert c.loc["e1-ipsec-aes128gcm [userspace datapath: NOT comparable]", "ours_ngap_start"].startswith("200.0 ± ")


def test_report_without_ran_runs_points_to_the_authors_page(fixture_report):
    text = (fixture_report / "report.md").read_text()
    assert "No `ran-procedures` or `f1u` runs in these results" in text and "python -m analysis rwth" in text


def test_authors_page(shared, tmp_path):
    path = ran_report.write_authors_report(shared / "rwth-internal-ran-security", tmp_path)
    page = path.read_text()
    assert "51 of 52 printed `Results:` lines are reproduced" in page
    assert "e1-registration/ipsec_2025-07-30-T22-56-00.txt" in page and "without the first one" in page
    chk = pd.read_csv(tmp_path / "tables" / "rwth-relay-captures.csv").set_index("interface")
    assert bool(chk.loc["e1", "equal"]) and bool(chk.loc["f1c", "equal"])
    assert (tmp_path / "figures" / "fig-ran-e2e.png").is_file()
