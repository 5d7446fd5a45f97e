"""analysis/ran_tables.py on a results tree in the drivers' formats made from the authors' real
captures and pings (tests/analysis/ran_tree.py): every registration counted, statistics over
boots against independent computations, the relay's cost as its own row, paths and RANs apart."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from analysis import ran_authors, ran_tables, tables
from analysis.parse.rwth_txt import parse_rwth

RW = "rwth-internal-ran-security"


@pytest.fixture(scope="module")
def rows(ran_fixture_datasets):
    return ran_tables.procedure_rows(ran_fixture_datasets.runs)


@pytest.fixture(scope="module")
def summary(rows):
    return ran_tables.procedure_summary(rows)


def _row(t: pd.DataFrame, **kw) -> pd.Series:
    m = np.ones(len(t), dtype=bool)
    for k, v in kw.items():
        m &= (t[k] == v).to_numpy()
    assert m.sum() == 1, kw
    return t[m].iloc[0]


def test_every_registration_is_a_row_with_its_status(rows, ran_fixture_tree):
    counts = ran_tables.status_counts(rows).set_index(["profile", "interface", "status"])
    assert counts.loc[("baseline", "e1", "complete"), "registrations"] == 10       # 4 + 4 + 2
    assert counts.loc[("baseline", "e1", "missing_response"), "registrations"] == 1  # the cut capture
    assert counts.loc[("baseline", "e1", "complete"), "duplicate_copies"] == 3      # NGAP, request, response
    assert counts.loc[("dtls-relay-plain", "e1", "complete"), "registrations"] == 6
    assert counts.loc[("aes128gcm", "e1", "complete"), "runs"] == 2                 # the invalid run left out
    assert len(rows[rows["run"].str.contains("0098Z")]) == 0
    edited = rows[rows["run"] == ran_fixture_tree.expected["edited_run"]]
    assert sorted(edited["status"]) == ["complete", "complete", "missing_response"]


def test_over_boots_matches_an_independent_computation(summary, shared):
    # baseline E1, NGAP start: boots = runs of captures 0-3, 4-7 and 1-2 (+ the lost one);
    # res.txt line i is capture i's value (microsecond-cut: within 1 us of ours)
    res = parse_rwth(shared / RW / "e1-socat-overhead" / "res.txt").values["value"].to_numpy()
    boots = np.array([res[0:4].mean(), res[4:8].mean(), res[1:3].mean()])
    r = _row(summary, interface="e1", definition="ngap", profile="baseline")
    assert (r["n_boots"], r["n_samples"], r["ci_basis"]) == (3, 10, "boots")
    assert r["mean"] == pytest.approx(boots.mean(), abs=1e-3)
    assert r["ci"] == pytest.approx(st.t.ppf(0.995, 2) * boots.std(ddof=1) / math.sqrt(3), abs=2e-3)
    a = _row(summary, interface="e1", definition="ngap", profile="aes128gcm")
    ab = np.array([res[8:12].mean(), res[12:16].mean()])
    assert a["overhead"] == pytest.approx(ab.mean() - boots.mean(), abs=1e-3)
    v1, v0 = ab.var(ddof=1) / 2, boots.var(ddof=1) / 3
    dof = (v1 + v0) ** 2 / (v1 ** 2 / 1 + v0 ** 2 / 2)
    assert a["overhead_ci"] == pytest.approx(st.t.ppf(0.995, dof) * math.sqrt(v1 + v0), rel=1e-2)
    # both start points, the paper's shorter
    q = _row(summary, interface="e1", definition="request", profile="baseline")
    assert 1.0 < q["mean"] < r["mean"] - 1.5


def test_relay_cost_is_its_own_row_and_the_difference_is_labelled(summary):
    d = _row(summary, interface="e1", definition="ngap", profile="dtls12-aes128gcm")
    p = _row(summary, interface="e1", definition="ngap", profile="dtls-relay-plain")
    n = _row(summary, interface="e1", definition="ngap", relay="net")
    assert (d["relay"], p["relay"], n["profile"]) == ("dtls", "plain", "dtls12-aes128gcm minus dtls-relay-plain")
    assert n["overhead"] == pytest.approx(d["mean"] - p["mean"])
    v1, v0 = d["sd"] ** 2 / d["n_boots"], p["sd"] ** 2 / p["n_boots"]
    dof = (v1 + v0) ** 2 / (v1 ** 2 / (d["n_boots"] - 1) + v0 ** 2 / (p["n_boots"] - 1))
    assert n["overhead_ci"] == pytest.approx(st.t.ppf(0.995, dof) * math.sqrt(v1 + v0))
    assert not math.isnan(p["overhead"])             # the relay's own cost against the baseline


def test_f1u_rtt_over_boots_equals_the_authors_boot_statistics(ran_fixture_datasets, shared):
    f = ran_tables.f1u_summary(ran_fixture_datasets)
    ft = ran_authors.file_table(ran_authors.load(shared / RW)).set_index("file")
    for (interface, ran, profile, src) in (
            ("f1u", "split", "baseline", "f1u-ping/noenc_2025-08-20-T02-45-02.txt"),
            ("e2e", "split", "aes128gcm", "end-to-end/disaggregated_encryption_integrity.txt"),
            ("e2e", "oai", "baseline", "end-to-end/monolithic_no_security.txt")):
        r = _row(f, interface=interface, ran=ran, profile=profile)
        a = ft.loc[src]
        assert (r["n_boots"], r["n_samples"]) == (10, 20000)
        assert r["mean"] == pytest.approx(a["mean_boots"]) and r["ci"] == pytest.approx(a["ci_boots"])
    e2e = _row(f, interface="e2e", ran="split", profile="aes128gcm")
    assert f"{e2e['overhead']:.3f}" == "1.339"           # the paper: ~1.3 ms
    # the general RTT table keeps paths and RANs apart too (never pooled)
    rtt = tables.rtt(ran_fixture_datasets)
    base = rtt[(rtt["experiment"] == "f1u") & (rtt["profile"] == "baseline")]
    assert sorted(zip(base["path"], base["ran"])) == [("e2e", "oai"), ("e2e", "split"), ("f1u", "split")]


def test_uu_security_is_not_a_baseline():
    t = pd.DataFrame({"protocol": ["none", "none", "none", "ipsec"], "uu": ["", "nea2-nia2", "nea0-nia0", ""]})
    assert tables.is_baseline(t).tolist() == [True, False, True, False]


def test_empty_results_give_empty_tables(tmp_path):
    from analysis.datasets import Datasets
    ds = Datasets.load([])
    assert ran_tables.procedure_rows([]).empty and ran_tables.procedure_summary(ran_tables.procedure_rows([])).empty
    assert ran_tables.f1u_summary(ds).empty and ran_tables.status_counts(ran_tables.procedure_rows([])).empty
