"""Statistics: n, mean, sd, confidence intervals (t; z for comparison with published tools),
overhead against a baseline with the Welch confidence interval of the difference, and an
optional permutation test for a difference of means.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as st

CONFIDENCE = 0.99


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float                 # sample standard deviation (divisor n - 1)
    ci_halfwidth: float       # Student t, n - 1 degrees of freedom
    ci_halfwidth_z: float     # normal quantile (what e.g. the RWTH tools print)
    confidence: float = CONFIDENCE

    def as_dict(self) -> dict:
        return asdict(self)


def t_halfwidth(sd: float, n: int, confidence: float = CONFIDENCE) -> float:
    if n < 2 or not np.isfinite(sd):
        return float("nan")
    return float(st.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n))


def z_halfwidth(sd: float, n: int, confidence: float = CONFIDENCE) -> float:
    if n < 2 or not np.isfinite(sd):
        return float("nan")
    return float(st.norm.ppf(0.5 + confidence / 2) * sd / math.sqrt(n))


def summarize(values: Sequence[float] | np.ndarray | pd.Series,
              confidence: float = CONFIDENCE) -> Summary:
    """Summary of the finite values (NaN = lost sample, left out). n = 0 gives NaNs, not an error."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    mean = float(x.mean()) if n else float("nan")
    sd = float(x.std(ddof=1)) if n > 1 else float("nan")
    return Summary(n, mean, sd, t_halfwidth(sd, n, confidence), z_halfwidth(sd, n, confidence),
                   confidence)


def summarize_groups(frame: pd.DataFrame, by: list[str], value: str,
                     confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Vectorised summary per group: columns by + n, mean, sd, ci (t half-width), ci_low, ci_high."""
    clean = frame[np.isfinite(frame[value].astype(float))]
    g = clean.groupby(by, dropna=False, sort=True)[value]
    out = pd.DataFrame({"n": g.count(), "mean": g.mean(), "sd": g.std(ddof=1)}).reset_index()
    dof = (out["n"] - 1).where(out["n"] > 1)
    q = st.t.ppf(0.5 + confidence / 2, dof)
    out["ci"] = q * out["sd"] / np.sqrt(out["n"])
    out["ci_low"] = out["mean"] - out["ci"]
    out["ci_high"] = out["mean"] + out["ci"]
    return out


def summarize_boots(frame: pd.DataFrame, by: list[str], value: str, boot: str,
                    confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Replication done right: a stack boot is the independent unit, not a sample.

    Per group: the mean of each boot's samples, then n (= n_boots), mean, sd, ci (t, n_boots - 1
    degrees of freedom), ci_low, ci_high over those boot means; n_samples; and the pooled
    per-sample figures as descriptive columns (pooled_mean, pooled_sd, pooled_ci: what a tool
    that treats every ping as independent would print, for comparison with the papers). With
    one boot there is no interval over boots (NaN), never a pooled one in its place."""
    clean = frame[np.isfinite(frame[value].astype(float))]
    per_boot = clean.groupby(by + [boot], dropna=False, sort=True)[value].mean().rename(value).reset_index()
    out = summarize_groups(per_boot, by, value, confidence)
    pooled = summarize_groups(clean, by, value, confidence)[by + ["n", "mean", "sd", "ci"]]
    pooled = pooled.rename(columns={"n": "n_samples", "mean": "pooled_mean", "sd": "pooled_sd", "ci": "pooled_ci"})
    out = out.merge(pooled, on=by, how="left")
    out.insert(out.columns.get_loc("n") + 1, "n_boots", out["n"])
    return out


def welch_diff(n1: float, mean1: float, sd1: float, n0: float, mean0: float, sd0: float,
               confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(mean1 - mean0, half-width of its CI, Welch-Satterthwaite degrees of freedom)."""
    d, h, dof = welch_diff_arrays(np.array([n1]), np.array([mean1]), np.array([sd1]),
                                  np.array([n0]), np.array([mean0]), np.array([sd0]), confidence)
    return float(d[0]), float(h[0]), float(dof[0])


def welch_diff_arrays(n1: np.ndarray, m1: np.ndarray, s1: np.ndarray, n0: np.ndarray,
                      m0: np.ndarray, s0: np.ndarray,
                      confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n1, m1, s1, n0, m0, s0 = (np.asarray(a, dtype=float) for a in (n1, m1, s1, n0, m0, s0))
    v1 = s1 ** 2 / n1
    v0 = s0 ** 2 / n0
    with np.errstate(divide="ignore", invalid="ignore"):
        dof = (v1 + v0) ** 2 / (v1 ** 2 / (n1 - 1) + v0 ** 2 / (n0 - 1))
    q = st.t.ppf(0.5 + confidence / 2, dof)
    return m1 - m0, q * np.sqrt(v1 + v0), dof


def add_overhead(table: pd.DataFrame, is_baseline: pd.Series, match: list[str],
                 confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Add baseline_mean, baseline_n, overhead (mean - baseline mean), its Welch CI half-width and overhead_pct to a
    summary table (from ``summarize_groups``); the baseline row is the one with the same
    ``match`` columns where ``is_baseline`` holds. Rows without a baseline get NaN."""
    base = table[is_baseline.to_numpy()][match + ["n", "mean", "sd"]]
    base = base.drop_duplicates(subset=match).rename(columns={"n": "n0", "mean": "mean0", "sd": "sd0"})
    merged = table.merge(base, on=match, how="left")
    d, h, _ = welch_diff_arrays(merged["n"], merged["mean"], merged["sd"],
                                merged["n0"], merged["mean0"], merged["sd0"], confidence)
    out = table.copy()
    out["baseline_mean"] = merged["mean0"].to_numpy()
    out["baseline_n"] = merged["n0"].to_numpy()   # the other side's n (boots, in boot tables)
    out["overhead"] = d
    out["overhead_ci"] = h
    out["overhead_pct"] = 100.0 * d / merged["mean0"].to_numpy()
    own = is_baseline.to_numpy()
    out.loc[own, ["overhead", "overhead_ci", "overhead_pct"]] = np.nan   # the baseline against itself
    return out


def permutation_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                     n_permutations: int = 2000, seed: int = 0) -> float:
    """Two-sided p-value for a difference of means (random relabelling; seeded, so repeatable)."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size == 0 or y.size == 0:
        return float("nan")
    pooled = np.concatenate([x, y])
    observed = abs(x.mean() - y.mean())
    rng = np.random.default_rng(seed)
    total = pooled.sum()
    hits = 0
    chunk = max(1, min(n_permutations, int(4e6 // pooled.size)))
    done = 0
    while done < n_permutations:
        k = min(chunk, n_permutations - done)
        shuffled = rng.permuted(np.broadcast_to(pooled, (k, pooled.size)), axis=1)
        sx = shuffled[:, : x.size].sum(axis=1)
        diff = np.abs(sx / x.size - (total - sx) / y.size)
        hits += int((diff >= observed - 1e-12).sum())
        done += k
    return (hits + 1) / (n_permutations + 1)
