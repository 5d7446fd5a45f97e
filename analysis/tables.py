"""Summary tables per experiment (statistics over the tidy frames of analysis.datasets).

Every table has one row per group (campaigns are never pooled: each has its own baseline) with
n = n_boots (independent stack boots), n_samples, and mean, sd, ci (99 % t half-width), ci_low,
ci_high computed over the boots' means; pooled_mean/pooled_sd/pooled_ci treat every sample as
independent and are kept only to set beside the papers' figures
and, where a baseline (protocol ``none``) exists for the same experiment and group, the
overhead against it with the Welch CI of the difference (``overhead``, ``overhead_ci``,
``overhead_pct``). Groups include ``datapath`` so kernel and userspace runs never mix.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.datasets import Datasets, complete_attach, cpu_host, cpu_totals
from analysis.stats import CONFIDENCE, add_overhead, permutation_test, summarize_boots


def _fill(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``frame`` with every column of ``columns`` (a frame built without a measurement column,
    e.g. by hand in a test, gets one empty value for all its rows)."""
    missing = [c for c in columns if c not in frame.columns]
    return frame.assign(**{c: None for c in missing}) if missing else frame


def _keyed(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """``by`` columns as text-or-empty (NaN-free keys for grouping and matching)."""
    frame = frame.copy()
    for c in by:
        frame[c] = frame[c].astype(object).where(frame[c].notna(), "")
    return frame


def add_permutation_p(table: pd.DataFrame, samples: pd.DataFrame, by: list[str], value: str,
                      match: list[str], n_permutations: int, seed: int = 0) -> pd.DataFrame:
    """Column ``p_perm``: two-sided permutation p-value of each row's samples against its
    baseline's (NaN for the baseline itself and rows without a baseline)."""
    out = table.copy()
    out["p_perm"] = np.nan
    if n_permutations <= 0 or table.empty:
        return out
    s = _keyed(samples[np.isfinite(samples[value].astype(float))], by)
    groups = {k: g[value].to_numpy(dtype=float) for k, g in s.groupby(by, sort=False)}
    base = {tuple(r[m] for m in match): k for k, r in
            ((k, dict(zip(by, k))) for k in groups)
            if r["protocol"] == "none" and str(r.get("uu", "")) in NO_UU_SECURITY}
    for i, row in out.iterrows():
        key = tuple(row[c] for c in by)
        bkey = base.get(tuple(row[m] for m in match))
        if bkey is None or key == bkey or key not in groups:
            continue
        out.at[i, "p_perm"] = permutation_test(groups[key], groups[bkey], n_permutations, seed)
    return out


BOOT = "boot"
# the radio's AS security (manifest parameter ``uu``) that still counts as no security
NO_UU_SECURITY = ("", "none", "nea0-nia0")


def is_baseline(table: pd.DataFrame) -> pd.Series:
    """Rows without any security: protocol ``none`` and, where recorded, no Uu security (a
    baseline profile with ciphered radio bearers is a security configuration, not the baseline)."""
    base = table["protocol"] == "none"
    if "uu" in table.columns:
        base &= table["uu"].astype(object).where(table["uu"].notna(), "").isin(NO_UU_SECURITY)
    return base


def _with_boot(frame: pd.DataFrame, per_file: bool) -> pd.DataFrame:
    """The boot a sample belongs to: the run (run-n3, run-throughput, run-overlay: one boot per
    run), or the run's capture/counter file where a run boots the stack once per file (run-sbi
    iterations, run-cpu repetitions)."""
    frame = frame.copy()
    frame[BOOT] = frame["run"].astype(str)
    if per_file and "file" in frame.columns:
        frame[BOOT] = frame[BOOT] + "/" + frame["file"].astype(str)
    return frame


def boot_summary(frame: pd.DataFrame, by: list[str], value: str, match: list[str],
                 confidence: float, per_file: bool = False) -> pd.DataFrame:
    """Intervals over boots (analysis/stats.py summarize_boots); the overhead is the Welch
    difference of the profile's and the baseline's boot means, so both sides' boot-to-boot
    uncertainty enters it."""
    if frame.empty:
        return pd.DataFrame(columns=by + ["n", "n_boots", "n_samples", "mean", "sd", "ci", "ci_low", "ci_high",
                                          "pooled_mean", "pooled_sd", "pooled_ci", "baseline_mean",
                                          "baseline_n_boots", "overhead", "overhead_ci", "overhead_pct"])
    frame = _with_boot(_keyed(frame, by), per_file)
    table = summarize_boots(frame, by, value, BOOT, confidence)
    # the baseline's n here is its number of boots: named so beside the profile's n_boots
    return add_overhead(table, is_baseline(table), match, confidence).rename(
        columns={"baseline_n": "baseline_n_boots"})


RTT_MATCH = ["campaign", "experiment", "host", "cpu", "placement", "interval", "count", "sets", "size", "ran", "path"]
RTT_BY = ["campaign", "experiment", "profile", "protocol", "datapath"] + RTT_MATCH[2:] + ["uu"]


def rtt(ds: Datasets, confidence: float = CONFIDENCE, permutations: int = 0) -> pd.DataFrame:
    """Ping RTT (ms) per experiment, profile, datapath, measurement parameters (host, CPU model,
    interval, pings and sets per size) and payload size; losses counted."""
    p = _fill(ds.ping, RTT_BY)
    if p.empty:
        return boot_summary(p, RTT_BY, "rtt_ms", RTT_MATCH, confidence)
    samples = p[~p["dup"].astype(bool)]
    by = RTT_BY
    table = boot_summary(samples, by, "rtt_ms", RTT_MATCH, confidence)
    key = samples[by].astype(object).where(samples[by].notna(), "")
    lost = (samples.assign(**{c: key[c] for c in by}).groupby(by)["lost"]
            .agg(lost="sum", sent="count").reset_index())
    table = table.merge(lost, on=by, how="left")
    table["loss_pct"] = 100.0 * table["lost"] / table["sent"]
    table["runs"] = table.merge(_runs_per_group(samples, by), on=by, how="left")["runs"].to_numpy()
    return add_permutation_p(table, samples, by, "rtt_ms", RTT_MATCH, permutations)


def _runs_per_group(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    key = frame[by].astype(object).where(frame[by].notna(), "")
    return frame.assign(**{c: key[c] for c in by}).groupby(by)["run"].nunique().rename("runs").reset_index()


# the plane whose profile rows keep their plain id (run-sbi's default; testbed/runparams.py PLANE)
ATTACH_PLANE = "sbi"


def with_plane_labels(frame: pd.DataFrame, default: str = ATTACH_PLANE) -> pd.DataFrame:
    """Profiles run on other planes than ``default`` (run-sbi PLANE=n2,n4: manifest plane "n2,n4")
    become their own rows, ``<profile>@<planes>`` (aes128gcm@n2+n4), as their result directories
    are named: never pooled with the SBI rows. The baseline protects no plane: one baseline."""
    if frame.empty or "plane" not in frame.columns:
        return frame
    plane = frame["plane"].astype(object).where(frame["plane"].notna(), default).astype(str)
    other = (frame["protocol"].astype(str) != "none") & (plane != default) & (plane != "")
    if not other.any():
        return frame
    out = frame.copy()
    out.loc[other, "profile"] = out.loc[other, "profile"].astype(str) + "@" + plane[other].str.replace(",", "+")
    return out


ATTACH_BY = ["campaign", "experiment", "profile", "protocol", "mode", "auth", "version", "cipher", "cert", "datapath",
             "host", "cpu", "placement", "nas", "role"]
ATTACH_MATCH = ["campaign", "experiment", "host", "cpu", "placement", "nas", "role"]


def attach(ds: Datasets, confidence: float = CONFIDENCE, permutations: int = 0) -> pd.DataFrame:
    """Attach time (ms) per profile (and plane set), datapath, NAS algorithms and role (cold/warm);
    incomplete ones counted. A profile's overhead is against the baseline with the same NAS algorithms."""
    by, match = ATTACH_BY, ATTACH_MATCH
    a = with_plane_labels(_fill(ds.attach, by))
    table = boot_summary(complete_attach(a) if not a.empty else a, by, "attach_ms", match, confidence, per_file=True)
    if not a.empty and not table.empty:
        key = a[by].astype(object).where(a[by].notna(), "")
        bad = a.assign(**{c: key[c] for c in by}).assign(incomplete=a["status"] != "complete")
        counts = bad.groupby(by)["incomplete"].sum().rename("incomplete").reset_index()
        table = table.merge(counts, on=by, how="left")
        table = add_permutation_p(table, complete_attach(a), by, "attach_ms", match, permutations)
    return table


def cpu(ds: Datasets, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """CPU seconds (all services) per profile, datapath and number of UEs."""
    totals = cpu_totals(ds.cpu)
    by = ["campaign", "experiment", "profile", "protocol", "datapath", "host", "cpu", "placement", "ues"]
    return boot_summary(_fill(totals, by), by, "cpu_s", ["campaign", "experiment", "host", "cpu", "placement", "ues"], confidence,
                    per_file=True)


def cpu_host_table(ds: Datasets, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Host-wide CPU seconds (kernel threads, irq and softirq included; idle window subtracted)
    per profile, datapath and number of UEs: the cost the paper compares (the cgroup table
    misses the kernel's share of ESP and WireGuard)."""
    by = ["campaign", "experiment", "profile", "protocol", "datapath", "host", "cpu", "placement", "ues"]
    return boot_summary(_fill(cpu_host(ds.cpu), by), by, "cpu_s", ["campaign", "experiment", "host", "cpu", "placement", "ues"], confidence,
                    per_file=True)


def cpu_slopes(ds: Datasets) -> pd.DataFrame:
    """Least-squares slope (CPU s per UE) and intercept per profile."""
    totals = _fill(cpu_totals(ds.cpu), ["host", "cpu", "placement"])
    rows = []
    if not totals.empty:
        # one line per host, CPU model and placement too: points measured on different machines never share a fit
        for (campaign, profile, protocol, datapath, host, cpu_model, placement), g in _keyed(
                totals, ["host", "cpu", "placement"]).groupby(["campaign", "profile", "protocol", "datapath", "host", "cpu",
                                                               "placement"]):
            x = g["ues"].astype(float).to_numpy()
            y = g["cpu_s"].astype(float).to_numpy()
            if len(np.unique(x)) >= 2:
                slope, intercept = np.polyfit(x, y, 1)
                rows.append({"campaign": campaign, "profile": profile, "protocol": protocol, "datapath": datapath,
                             "host": host, "cpu": cpu_model, "placement": placement, "cpu_s_per_ue": slope, "intercept_s": intercept,
                             "points": len(x)})
    return pd.DataFrame(rows, columns=["campaign", "profile", "protocol", "datapath", "host", "cpu", "placement",
                                       "cpu_s_per_ue", "intercept_s", "points"])


def throughput(ds: Datasets, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Receiver-side throughput (Mbit/s) per profile, datapath and transport."""
    by = ["campaign", "experiment", "profile", "protocol", "datapath", "host", "cpu", "placement", "transport"]
    return boot_summary(_fill(ds.throughput, by), by, "receiver_mbps", ["campaign", "experiment", "host", "cpu", "placement", "transport"],
                    confidence)


TABLES = {"rtt": rtt, "attach": attach, "cpu": cpu, "cpu_host": cpu_host_table, "cpu_slopes": cpu_slopes,
          "throughput": throughput}


def all_tables(ds: Datasets, permutations: int = 0) -> dict[str, pd.DataFrame]:
    """Every summary table; ``permutations`` > 0 adds permutation p-values (column ``p_perm``)
    to the RTT and attach-time tables."""
    out = {name: fn(ds) for name, fn in TABLES.items()}
    if permutations > 0:
        out["rtt"] = rtt(ds, permutations=permutations)
        out["attach"] = attach(ds, permutations=permutations)
    return out
