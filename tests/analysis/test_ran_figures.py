"""analysis/ran_figures.py: every RAN figure draws from our runs and the authors' data (PNG + PDF),
one panel per source and start point, skips without data, marks a userspace datapath."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis import ran_authors, ran_figures, ran_tables


@pytest.fixture(scope="module")
def both(ran_fixture_datasets, shared):
    ours = pd.concat([ran_tables.procedure_summary(ran_tables.procedure_rows(ran_fixture_datasets.runs)),
                      ran_tables.f1u_summary(ran_fixture_datasets)], ignore_index=True)
    authors = ran_authors.summary(ran_authors.load(shared / "rwth-internal-ran-security"))
    return pd.concat([ours, authors.reindex(columns=ran_tables.SUMMARY_COLUMNS)], ignore_index=True)


def test_every_figure_draws_png_and_pdf(both, tmp_path):
    drawn = ran_figures.draw_all(both, tmp_path)
    assert set(drawn) == {"fig-ran-f1u", "fig-ran-f1c", "fig-ran-e1", "fig-ran-e2e"}
    for name, paths in drawn.items():
        assert [p.name for p in paths] == [f"{name}.png", f"{name}.pdf"]
        assert all(p.stat().st_size > 5000 for p in paths)


def test_panels_per_source_and_start_point(both):
    e1 = both[both["interface"] == "e1"]
    got = [(s, d) for s, d, _ in ran_figures._panels(e1, True)]
    assert got == [("ours", ran_figures.DEFINITION_SHORT["request"]), ("ours", ran_figures.DEFINITION_SHORT["ngap"]),
                   ("authors", ran_figures.DEFINITION_SHORT["ngap"])]


def test_no_data_no_figure_and_userspace_marked(tmp_path):
    empty = pd.DataFrame(columns=ran_tables.SUMMARY_COLUMNS)
    assert all(v == [] for v in ran_figures.draw_all(empty, tmp_path).values())
    row = pd.Series({"profile": "aes128gcm", "relay": "", "datapath": "userspace", "protocol": "ipsec", "campaign": ""})
    assert ran_figures._label(row) == "aes128gcm [userspace]"
    assert ran_figures._label(row.replace({"userspace": "kernel"})) == "aes128gcm"
    assert ran_figures._label(pd.Series({"profile": "dtls-relay-plain", "relay": "plain", "datapath": "userspace",
                                         "protocol": "dtls", "campaign": ""})) == "dtls-relay-plain (relay only, no DTLS)"
