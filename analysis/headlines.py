"""Our value for each published figure: the rows of a summary table that measure what the paper
measured (a reference's ``match``, analysis/reference.py), reduced as the paper did (the mean over
its configurations, or its slowest / fastest one), with the interval of that reduction. Used by
the report's headline table (analysis/report.py) and the RAN section (analysis/ran_report.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.reference import Reference

CI_COLUMN = {"overhead": "overhead_ci", "mean": "ci"}


@dataclass
class Headline:
    ref: Reference
    measured: float
    ci: float
    low: float
    high: float
    profiles: list[str]
    experiment: str = ""
    datapath: str = ""          # kernel | userspace | none ("" where the table has no datapath)


def select(table: pd.DataFrame, match: dict) -> pd.DataFrame:
    """The rows of ``table`` a reference's ``match`` names (none when it names a column the table lacks)."""
    t = table
    for key, value in match.items():
        if t.empty:
            break
        if key == "cipher_contains":
            t = t[t["cipher"].astype(str).str.upper().str.contains(str(value).upper(), regex=False)]
        elif key in t.columns:
            wanted = [str(v) for v in value] if isinstance(value, (tuple, list)) else [str(value)]
            t = t[t[key].astype(str).isin(wanted)]
        else:
            return t.iloc[0:0]
    return t


def headlines(ref: Reference, tables: dict[str, pd.DataFrame]) -> list[Headline]:
    """Our values for one published figure, one per experiment that measured it."""
    t = select(tables.get(ref.table, pd.DataFrame()), ref.match)
    if t.empty or ref.quantity not in t.columns:
        return []
    if "experiment" not in t.columns:
        h = headline(ref, t)
        return [h] if h else []
    keys = ["campaign", "experiment"] if "campaign" in t.columns else ["experiment"]
    many = "campaign" in t.columns and t["campaign"].nunique() > 1
    # a userspace datapath (kernel-libipsec, wireguard-go) is never set beside the papers'
    # kernel numbers unlabelled: it gets its own row, marked
    by_datapath = "datapath" in t.columns
    out = []
    for k, g in t.groupby(keys + (["datapath"] if by_datapath else []), sort=True):
        k = k if isinstance(k, tuple) else (k,)
        names = k[:len(keys)]
        h = headline(ref, g, "/".join(map(str, names)) if many else str(names[-1]))
        if h is not None and by_datapath:
            h.datapath = str(k[-1])
        out.append(h)
    return [h for h in out if h is not None]


def headline(ref: Reference, t: pd.DataFrame, experiment: str = "") -> Headline | None:
    """Our value for one published figure from the matching rows ``t`` (one per profile): their
    mean, its CI half-width sqrt(sum h_i^2)/k (independent estimates), and the min/max."""
    t = t[t[ref.quantity].notna()]
    if t.empty:
        return None
    vals = t[ref.quantity].astype(float).to_numpy() * ref.scale
    if ref.quantity == "overhead_pct":
        h = (100.0 * t["overhead_ci"] / t["baseline_mean"]).astype(float).to_numpy()
    elif ref.quantity in CI_COLUMN:
        h = t[CI_COLUMN[ref.quantity]].astype(float).to_numpy() * ref.scale
    else:
        h = np.full(len(vals), np.nan)
    if ref.aggregate in ("max", "min"):
        # the paper's slowest/fastest configuration: that profile's value and its own interval
        i = int(np.argmax(vals) if ref.aggregate == "max" else np.argmin(vals))
        value, ci = float(vals[i]), float(h[i])
    else:
        value = float(vals.mean())
        ci = float(math.sqrt(np.nansum(h ** 2)) / len(h)) if np.isfinite(h).any() else float("nan")
    return Headline(ref, value, ci, float(vals.min()), float(vals.max()),
                    sorted(t["profile"].astype(str).unique()) if "profile" in t else [], experiment)
