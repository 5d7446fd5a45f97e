"""How many boots? `python -m analysis plan RESULTS --resolve-us 10` (issue 22 point 10).

From a pilot (the runs present), per profile: the stack boots, at the pilot's samples per boot,
that a 99 % interval of the given half-width on its overhead needs, and the campaign time they
imply. docs/methodology.md ("How many boots") derives it; in short, a two-level nested design:

    a sample  y_bj = mu + B_b + e_bj,   Var B_b = s2_between,  Var e_bj = s2_within
    a boot mean over m samples has variance  a = s2_between + s2_within / m

estimated per profile (one-way ANOVA on the boots, analysis/stats.py's boot = a stack boot):
s2_within = the boots' pooled sample variance, s2_between = max(0, variance of the boot means -
s2_within / m). With B boots on each side, the overhead (profile mean - baseline mean) has
variance (a_profile + a_baseline) / B and Welch-Satterthwaite degrees of freedom
(B - 1)(a_p + a_0)^2 / (a_p^2 + a_0^2); the plan is the smallest B >= 2 whose 99 % t half-width
is at most the target. More samples per boot shrink only s2_within / m: `within_share` says how
much of a boot mean's variance that is, `boots_at_4x_samples` what four times the samples buys.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as st

from analysis.datasets import Datasets, complete_attach
from analysis.results import Run
from analysis.stats import CONFIDENCE
from analysis.tables import ATTACH_BY, ATTACH_MATCH, RTT_BY, RTT_MATCH, is_baseline, with_plane_labels

MAX_BOOTS = 10_000


@dataclass(frozen=True)
class Quantity:
    """What is resolved: the RTT (target in us, data in ms) or the attach time (ms)."""
    name: str
    value: str          # the samples' column (ms)
    by: list[str]       # one row of the summary table
    match: list[str]    # what a profile shares with its baseline
    detail: str         # the column that splits a profile's rows (payload size, role)
    per_file: bool      # a boot per capture file (run-sbi iterations), not per run


RTT = Quantity("rtt", "rtt_ms", RTT_BY, RTT_MATCH, "size", False)
ATTACH = Quantity("attach", "attach_ms", ATTACH_BY, ATTACH_MATCH, "role", True)


def _samples(ds: Datasets, q: Quantity) -> pd.DataFrame:
    frame = ds.ping if q is RTT else ds.attach
    if frame.empty:
        return frame
    if q is RTT:
        frame = frame[~frame["dup"].astype(bool)]
    else:
        frame = complete_attach(with_plane_labels(frame))
    frame = frame.assign(**{c: None for c in q.by if c not in frame.columns})
    frame = frame[np.isfinite(frame[q.value].astype(float))].copy()
    for c in q.by:
        frame[c] = frame[c].astype(object).where(frame[c].notna(), "")
    frame["boot"] = frame["run"].astype(str) + ("/" + frame["file"].astype(str) if q.per_file and "file" in frame else "")
    return frame


def components(ds: Datasets, q: Quantity) -> pd.DataFrame:
    """Per summary row: n_boots, samples per boot (m), mean, s2_between, s2_within (ms^2)."""
    s = _samples(ds, q)
    if s.empty:
        return pd.DataFrame(columns=q.by + ["n_boots", "m", "mean", "s2_between", "s2_within"])
    rows = []
    for key, g in s.groupby(q.by, sort=True):
        boots = g.groupby("boot")[q.value]
        n, means, var = boots.count(), boots.mean(), boots.var(ddof=1).fillna(0.0)
        dof = float((n - 1).clip(lower=0).sum())
        within = float(((n - 1).clip(lower=0) * var).sum() / dof) if dof > 0 else float("nan")
        m = float(n.mean())
        if not np.isfinite(within):
            # one sample per boot (an attach time per iteration): the boots' variance is all there
            # is; it cannot be split, and more samples per boot are not an option
            within = 0.0
        between = max(0.0, float(means.var(ddof=1)) - within / m) if len(means) > 1 else float("nan")
        rows.append({**dict(zip(q.by, key)), "n_boots": len(means), "m": m, "mean": float(means.mean()),
                     "s2_between": between, "s2_within": within})
    return pd.DataFrame(rows)


def boots_needed(a_profile: float, a_baseline: float, half_width: float,
                 confidence: float = CONFIDENCE) -> int | None:
    """Smallest B >= 2 (boots on each side) whose Welch t interval on the overhead has at most
    `half_width`; a_* = the variance of one boot mean; None beyond MAX_BOOTS or without data."""
    total = a_profile + a_baseline
    if not (np.isfinite(total) and half_width > 0):
        return None
    if total <= 0:
        return 2
    ratio = total ** 2 / (a_profile ** 2 + a_baseline ** 2) if a_profile or a_baseline else 1.0
    z = st.norm.ppf(0.5 + confidence / 2)
    lo = max(2, math.ceil(z * z * total / half_width ** 2))      # the t quantile only adds to z
    for b in range(lo, MAX_BOOTS + 1):
        if st.t.ppf(0.5 + confidence / 2, (b - 1) * ratio) * math.sqrt(total / b) <= half_width:
            return b
    return None


def _durations(runs: list[Run], boots: dict[str, int]) -> dict[tuple[str, str, str], float]:
    """Seconds per boot, per (campaign, experiment, profile): the median run's wall time over
    the boots it holds (`boots`: per run id; run-sbi boots once per iteration file)."""
    out: dict[tuple[str, str, str], list[float]] = {}
    for r in runs:
        if not r.usable:
            continue
        try:
            t0 = pd.Timestamp(r.manifest.get("started"))
            t1 = pd.Timestamp(r.manifest.get("finished"))
        except (TypeError, ValueError):
            continue
        if pd.isna(t0) or pd.isna(t1) or t1 <= t0:
            continue
        n = max(1, boots.get(r.run_id, 1))
        out.setdefault((r.campaign, r.experiment, r.profile), []).append((t1 - t0).total_seconds() / n)
    return {k: float(np.median(v)) for k, v in out.items()}


def plan(ds: Datasets, q: Quantity, half_width_ms: float, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per profile row (and payload size or role): the pilot, its variance components, and the
    boots each side needs for a `confidence` interval of `half_width_ms` on the overhead."""
    comp = components(ds, q)
    if comp.empty:
        return comp
    base = comp[is_baseline(comp)]
    base = base.drop_duplicates(subset=q.match).set_index(q.match)
    rows = []
    for _, r in comp[~is_baseline(comp)].iterrows():
        key = tuple(r[c] for c in q.match)
        if key not in base.index:
            continue
        b = base.loc[key]
        m_p, m_0 = r["m"], b["m"]
        a_p = r["s2_between"] + r["s2_within"] / m_p
        a_0 = b["s2_between"] + b["s2_within"] / m_0
        need = boots_needed(a_p, a_0, half_width_ms, confidence)
        need4 = boots_needed(r["s2_between"] + r["s2_within"] / (4 * m_p),
                             b["s2_between"] + b["s2_within"] / (4 * m_0), half_width_ms, confidence)
        rows.append({**{c: r[c] for c in q.by}, "n_boots": int(r["n_boots"]), "baseline_n_boots": int(b["n_boots"]),
                     "samples_per_boot": int(round(m_p)), "overhead_ms": r["mean"] - b["mean"],
                     "sd_between_ms": math.sqrt(r["s2_between"]) if np.isfinite(r["s2_between"]) else float("nan"),
                     "sd_within_ms": math.sqrt(r["s2_within"]) if np.isfinite(r["s2_within"]) else float("nan"),
                     "within_share": (r["s2_within"] / m_p) / a_p if a_p > 0 else float("nan"),
                     "boots_needed": need, "boots_at_4x_samples": need4})
    out = pd.DataFrame(rows)
    if not out.empty:
        out = out.astype({"boots_needed": "Int64", "boots_at_4x_samples": "Int64"})
    return out


def per_profile(detail: pd.DataFrame, q: Quantity, ds: Datasets) -> pd.DataFrame:
    """Per profile: the most boots any of its rows (size, role) needs, the baseline's (as many
    as its most demanding comparison), and the campaign time (boots x seconds per boot)."""
    if detail.empty:
        return detail
    runs = ds.runs
    s = _samples(ds, q)
    secs = _durations(runs, {str(k): int(v) for k, v in s.groupby("run")["boot"].nunique().items()})
    keys = ["campaign", "experiment", "profile", "datapath"]
    rows = []
    for key, g in detail.groupby(keys, sort=True):
        unknown = g["boots_needed"].isna().any()
        worst = g.loc[g["boots_needed"].fillna(MAX_BOOTS + 1).idxmax()]
        rows.append({**dict(zip(keys, key)), "n_boots": int(g["n_boots"].min()),
                     "samples_per_boot": int(g["samples_per_boot"].median()),
                     "boots_needed": None if unknown else int(g["boots_needed"].max()),
                     "worst": f"{q.detail} {worst[q.detail]}", "s_per_boot": secs.get(key[:3], float("nan"))})
    out = pd.DataFrame(rows)
    # the baseline of each campaign and experiment: as many boots as its most demanding profile
    base = []
    for (c, e), g in out.groupby(["campaign", "experiment"]):
        base_profiles = {r.profile for r in runs if r.usable and r.campaign == c and r.experiment == e
                         and str(r.manifest.get("protocol") or "none") == "none"}
        known = g["boots_needed"].dropna()
        need = int(known.max()) if len(known) else None
        n = int(detail.loc[(detail["campaign"] == c) & (detail["experiment"] == e), "baseline_n_boots"].min())
        for p in sorted(base_profiles):
            base.append({"campaign": c, "experiment": e, "profile": p, "datapath": "none", "n_boots": n,
                         "samples_per_boot": int(g["samples_per_boot"].median()), "boots_needed": need,
                         "worst": "baseline of every profile", "s_per_boot": secs.get((c, e, p), float("nan"))})
    out = pd.concat([pd.DataFrame(base), out], ignore_index=True) if base else out
    out["boots_needed"] = out["boots_needed"].astype(object).where(out["boots_needed"].notna(), None)
    out["n_boots"] = out["n_boots"].astype(int)
    out["campaign_h"] = [b * s / 3600 if b is not None and np.isfinite(s) else float("nan")
                         for b, s in zip(out["boots_needed"], out["s_per_boot"])]
    # what is left to run: the pilot's boots count
    out["more_boots"] = [max(0, b - n) if b is not None else None for b, n in zip(out["boots_needed"], out["n_boots"])]
    out["more_boots"] = out["more_boots"].astype("Int64")
    out["more_h"] = [m * s / 3600 if m is not None and np.isfinite(s) else float("nan")
                     for m, s in zip(out["more_boots"], out["s_per_boot"])]
    return out


def summary_lines(profiles: pd.DataFrame, target: str) -> list[str]:
    """The total, and what cannot be planned and why."""
    if profiles.empty:
        return [f"no profile with a baseline and at least one boot each: nothing to plan for {target}"]
    lines = []
    unknown = profiles[profiles["boots_needed"].isna()]
    if len(unknown):
        lines.append("not planned (a side has one boot, so no between-boot variance, or more than "
                     f"{MAX_BOOTS} boots): " + ", ".join(sorted(set(unknown["profile"]))))
    for (c, e), g in profiles.groupby(["campaign", "experiment"]):
        known = g["campaign_h"].dropna()
        most = int(g["boots_needed"].dropna().max()) if g["boots_needed"].notna().any() else None
        lines.append(f"{c}/{e}: {target} needs " + (f"{most} boots of the most demanding profile" if most else
                                                    "more boots than can be planned from this pilot")
                     + f"; campaign time {known.sum():.1f} h ({g['more_h'].dropna().sum():.1f} h beyond the "
                     f"pilot) for {len(known)} of {len(g)} profiles (seconds per boot: the pilot's manifests)")
    return lines


def to_json(detail: pd.DataFrame, profiles: pd.DataFrame) -> str:
    return json.dumps({"detail": json.loads(detail.to_json(orient="records")),
                       "profiles": json.loads(profiles.to_json(orient="records"))}, indent=1)


def write(out: Path, detail: pd.DataFrame, profiles: pd.DataFrame, name: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    detail.to_csv(out / f"plan-{name}-detail.csv", index=False)
    profiles.to_csv(out / f"plan-{name}.csv", index=False)
