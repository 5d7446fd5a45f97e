"""Attach times by NAS algorithms (issue 12 part 4): the NAS choice is a group of the attach table
(never pooled across algorithms), a profile's overhead is against the baseline with the same
algorithms, and the run's NAS column comes from what its N2 captures proved."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import tables
from analysis.datasets import Datasets, nas_of
from analysis.results import Run


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    # baseline and a protected profile, each under two NAS choices; NEA2 costs +5 ms here
    for (profile, protocol), nas, boot in itertools.product(
            [("baseline", "none"), ("dtls12-aes128gcm", "dtls")], ["nea0-nia2", "nea2-nia2"], range(3)):
        for role in ("cold", "warm"):
            base = 100.0 + (5.0 if nas == "nea2-nia2" else 0.0) + (20.0 if protocol == "dtls" else 0.0)
            rows.append({"campaign": "c", "experiment": "sbi", "profile": profile, "protocol": protocol,
                         "datapath": "none" if protocol == "none" else "userspace", "host": "h", "cpu": "x",
                         "nas": nas, "role": role, "run": f"{profile}-{nas}", "file": f"it{boot:02d}-n2.pcap",
                         "attach_ms": base + rng.normal(0, 0.5), "status": "complete"})
    return pd.DataFrame(rows)


def test_attach_rows_per_nas_choice_and_overhead_against_the_same_choice() -> None:
    t = tables.attach(Datasets(runs=[], attach=_frame()))
    assert len(t) == 8                                  # 2 profiles x 2 NAS x 2 roles
    assert set(t["nas"]) == {"nea0-nia2", "nea2-nia2"}
    assert (t["n_boots"] == 3).all()
    prot = t[t["protocol"] == "dtls"]
    assert np.allclose(prot["overhead"].astype(float), 20.0, atol=1.5)     # not 20 +/- 5: same NAS baseline
    nea2 = t[(t["protocol"] == "none") & (t["nas"] == "nea2-nia2")]
    nea0 = t[(t["protocol"] == "none") & (t["nas"] == "nea0-nia2")]
    assert np.allclose(nea2["mean"].to_numpy(float) - nea0["mean"].to_numpy(float), 5.0, atol=1.5)


def test_nas_of_prefers_the_proven_choice() -> None:
    def run(m: dict) -> Run:
        return Run(directory=Path("/x"), manifest=m)
    assert nas_of(run({"nas": {"proven": "nea1-nia1"}, "parameters": {"nas": "nea1-nia1"}})) == "nea1-nia1"
    assert nas_of(run({"nas": {"proven": "nea0-nia2"}, "parameters": {"nas": ""}})) == "nea0-nia2"
    assert nas_of(run({"nas": {"proven": None}, "parameters": {"nas": "nea2-nia1"}})) == "nea2-nia1"
    assert nas_of(run({"parameters": {}})) == ""
