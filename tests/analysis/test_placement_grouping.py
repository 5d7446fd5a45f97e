"""The report never pools runs of different placements (issue 29 part 2): a cluster run's
placement (manifest `placement`, testbed/runtime/k8s/cluster.py record) is a grouping key of every
table beside the host and CPU, and a profile's overhead is against the baseline placed alike."""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import tables
from analysis.datasets import Datasets, placement_of, run_columns
from analysis.results import Run

CPU, KERNEL = "Intel Xeon E-2388G", "6.12.0-k8s"
ALL = ["amf", "ausf", "gnb", "nrf", "smf", "ue1", "upf"]


def _record(groups: dict[str, list[str]], cpu: str = CPU) -> dict[str, Any]:
    return {"engine": "k8s", "requested": {},
            "nodes": {node: {"pods": pods, "cpu_model": cpu, "kernel": KERNEL} for node, pods in groups.items()},
            "pods": {p: {"node": node, "addresses": {}} for node, pods in groups.items() for p in pods}}


def _run(record: dict[str, Any] | None) -> Run:
    return Run(directory=Path("/x"), manifest={"placement": record} if record else {})


ONE_NODE = placement_of(_run(_record({"node-a": ALL})))
UPF_APART = placement_of(_run(_record({"node-a": [p for p in ALL if p != "upf"], "node-b": ["upf"]})))


def test_placement_key_is_the_grouping_of_pods_and_the_nodes_hardware_not_their_names() -> None:
    assert placement_of(_run(None)) == ""                                # Compose: one host, as before
    assert ONE_NODE == placement_of(_run(_record({"node-b": ALL})))      # a shard on another node alike
    assert ONE_NODE != UPF_APART
    assert ONE_NODE != placement_of(_run(_record({"node-a": ALL}, cpu="AMD EPYC 9654")))
    assert "upf @ " + CPU in UPF_APART
    assert run_columns(_run(_record({"node-a": ALL})))["placement"] == ONE_NODE


def _pings() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    # N3 across two nodes costs +2 ms here; the overlay +1 ms wherever it runs
    for (profile, protocol), placement, boot in itertools.product(
            [("baseline", "none"), ("aes256gcm", "ipsec")], [ONE_NODE, UPF_APART], range(3)):
        base = 10.0 + (2.0 if placement == UPF_APART else 0.0) + (1.0 if protocol == "ipsec" else 0.0)
        for _ in range(20):
            rows.append({"campaign": "c", "experiment": "n3", "profile": profile, "protocol": protocol,
                         "datapath": "none" if protocol == "none" else "kernel", "host": "driver", "cpu": "x",
                         "placement": placement, "interval": 0.2, "count": 20, "sets": 1, "size": 64,
                         "run": f"{profile}-{placement[:9]}-{boot}", "rtt_ms": base + rng.normal(0, 0.05),
                         "dup": False, "lost": False})
    return pd.DataFrame(rows)


def test_rtt_rows_per_placement_and_overhead_against_the_baseline_placed_alike() -> None:
    t = tables.rtt(Datasets(runs=[], ping=_pings()))
    assert len(t) == 4                                   # 2 profiles x 2 placements, never pooled
    assert set(t["placement"]) == {ONE_NODE, UPF_APART}
    assert (t["n_boots"] == 3).all()
    prot = t[t["protocol"] == "ipsec"]
    assert np.allclose(prot["overhead"].astype(float), 1.0, atol=0.1)     # not 1 +/- 2: same placement
    apart = t[(t["protocol"] == "none") & (t["placement"] == UPF_APART)]["mean"].to_numpy(float)
    one = t[(t["protocol"] == "none") & (t["placement"] == ONE_NODE)]["mean"].to_numpy(float)
    assert np.allclose(apart - one, 2.0, atol=0.1)


def test_the_report_shows_the_placement_column_only_where_a_run_has_one() -> None:
    from analysis import markdown
    t = tables.rtt(Datasets(runs=[], ping=_pings()))
    assert "| placement |" in markdown.table(t) and UPF_APART in markdown.table(t)
    compose = t.assign(placement="")
    assert "placement" not in markdown.table(compose)
