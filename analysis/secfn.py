"""The UPF security-function experiments (testbed/secfn/): D-ITG rows -> table, four figures,
saturation knees and the report section beside the seed study's findings (docs/secfn.md).

Input: run directories `<results>/<campaign>/<secfn|secfn-lab>/<profile>.<secfn>-<engine>/<run>/`
with `ditg.csv` and a manifest; only complete, valid runs are used (the others are listed with
their reason). One row per flow (protocol x offered rate x run). A series is one security
function with its engine, plus the N3 overlay when it is not the baseline; the namespace form
and the stack form are never pooled (separate figures and rows). Intervals are t intervals over
the D-ITG runs of a series at one rate (the seed's unit: 20 runs of 5 s), at the house
confidence (analysis/stats.py), not the seed's 95 %.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import stats
from analysis.figure_files import write_figure
from testbed.manifest import SECFN_EXPERIMENTS

log = logging.getLogger(__name__)

EXPERIMENTS = SECFN_EXPERIMENTS        # the drivers' (testbed/manifest.py)
METRICS = {                     # column -> (label, file name)
    "throughput_mbps": ("throughput (Mbit/s)", "throughput"),
    "delay_ms": ("one-way delay (ms)", "delay"),
    "jitter_ms": ("jitter (ms)", "jitter"),
    "loss_pct": ("UDP loss (%)", "loss"),
}
KNEE_FRACTION = 0.9             # offered rate at which less than 90 % of the sent packets arrive
# The seed's qualitative findings (Malik et al., section IV-A): it printed no numbers.
SEED_FINDINGS = (
    ("IDS-NAT ~ NAT", "the passive IDS does not change throughput: IDS-NAT = NAT"),
    ("IPS-NAT loses throughput", "IPS-NAT delivers less than IDS-NAT at high packet rates (NFQUEUE)"),
    ("IPS-NAT drops more", "UDP loss is higher with IPS-NAT than with IDS-NAT at high rates"),
    ("UDP latency non-linear", "UDP latency grows non-linearly with the packet rate"),
)
FORM_TITLE = {"namespaces": "between namespaces", "stack": "in the Docker stack"}


def runs(results: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(usable run dirs, [(dropped run dir, why)])."""
    use, drop = [], []
    for m in sorted(Path(results).rglob("manifest.json")):
        try:
            man = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            drop.append((m.parent, f"unreadable manifest: {exc}"))
            continue
        if man.get("experiment") not in EXPERIMENTS:
            continue
        if man.get("state") != "complete" or man.get("valid") is not True:
            drop.append((m.parent, f"state {man.get('state')}, valid {man.get('valid')}: "
                                   f"{(man.get('validity') or {}).get('details', '')}"))
        elif not (m.parent / "ditg.csv").is_file():
            drop.append((m.parent, "no ditg.csv"))
        else:
            use.append(m.parent)
    return use, drop


def series_name(function: str, engine: str | None, profile: str) -> str:
    name = function + (f"/{engine}" if engine else "")
    return name if profile in ("", "baseline") else f"{name} + {profile}"


def load(run_dirs: list[Path]) -> pd.DataFrame:
    frames = []
    for d in run_dirs:
        man = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        df = pd.read_csv(d / "ditg.csv")
        sf = man.get("secfn") or {}
        df["secfn"] = sf.get("function")
        df["engine"] = sf.get("engine") or "-"
        profile = str(man.get("profile") or "baseline")
        df["profile"] = profile
        df["form"] = sf.get("form") or ("namespaces" if man.get("experiment") == "secfn-lab" else "stack")
        df["config"] = series_name(str(sf.get("function")), sf.get("engine"), "baseline")
        df["series"] = series_name(str(sf.get("function")), sf.get("engine"), profile)
        df["run_dir"] = d.name
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    df["throughput_mbps"] = df["bitrate_kbps"] / 1000.0
    df["delay_ms"] = df["delay_avg_s"] * 1000.0
    df["jitter_ms"] = df["jitter_avg_s"] * 1000.0
    lost = (df["sent_packets"] - df["packets"]).clip(lower=0)
    # loss of what the generator really sent (UDP; TCP retransmits what the network lost)
    df["loss_pct"] = np.where((df["protocol"] == "udp") & (df["sent_packets"] > 0),
                              100.0 * lost / df["sent_packets"], np.nan)
    # delivered of what was sent (the function's loss), and sent of what was asked (the generator)
    df["delivered_fraction"] = np.where(df["sent_packets"] > 0, df["packets"] / df["sent_packets"], np.nan)
    df["generator_fraction"] = df["sent_rate"] / df["rate"]
    return df


GROUP = ["form", "series", "protocol", "rate"]


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Per form, series, protocol and offered rate: n and mean/CI of each metric over the runs."""
    out = None
    for col in (*METRICS, "delivered_fraction", "generator_fraction"):
        s = stats.summarize_groups(df, GROUP, col)[GROUP + ["n", "mean", "ci"]]
        s = s.rename(columns={"n": "n_runs" if col == "throughput_mbps" else f"n_{col}", "mean": col,
                              "ci": f"{col}_ci"})
        out = s if out is None else out.merge(s, on=GROUP, how="outer")
    if out is None:
        return pd.DataFrame()
    return out.drop(columns=[c for c in out.columns if c.startswith("n_") and c != "n_runs"])


def knees(tab: pd.DataFrame) -> pd.DataFrame:
    """Per form, series and protocol: the lowest offered rate at which less than KNEE_FRACTION of
    the sent packets arrive (NaN: no knee inside the sweep), and the lowest at which the generator
    itself sent less than KNEE_FRACTION of the offered rate (above it the sweep measures D-ITG)."""
    rows = []
    for (form, series, proto), g in tab.groupby(["form", "series", "protocol"]):
        g = g.sort_values("rate")
        below = g[g["delivered_fraction"] < KNEE_FRACTION]
        gen = g[g["generator_fraction"] < KNEE_FRACTION]
        rows.append({"form": form, "series": series, "protocol": proto,
                     "knee_rate": float(below["rate"].iloc[0]) if len(below) else float("nan"),
                     "generator_limited_from": float(gen["rate"].iloc[0]) if len(gen) else float("nan"),
                     "max_rate": float(g["rate"].max())})
    return pd.DataFrame(rows)


def figures(tab: pd.DataFrame, out: Path) -> list[Path]:
    """One figure per metric and form: its value against the offered rate, one line per series
    (intervals over runs), one panel per protocol (loss: UDP only)."""
    if tab.empty:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    all_series = sorted(set(tab["series"]))
    # one colour per function/engine, the same for it with an overlay (dashed, hollow markers)
    configs = sorted({s.split(" + ")[0] for s in all_series})
    colours = {c: plt.get_cmap("tab10")(i % 10) for i, c in enumerate(configs)}
    markers = "osD^vP*X<>"
    for form in sorted(set(tab["form"])):
        ft = tab[tab["form"] == form]
        for col, (label, fname) in METRICS.items():
            protos = ["udp"] if col == "loss_pct" else sorted(set(ft["protocol"]))
            protos = [p for p in protos if not ft[(ft["protocol"] == p) & ft[col].notna()].empty]
            if not protos:
                continue
            fig, axes = plt.subplots(1, len(protos), figsize=(5.2 * len(protos) + 2.6, 3.8), squeeze=False)
            for ax, proto in zip(axes[0], protos):
                for s in all_series:
                    d = ft[(ft["series"] == s) & (ft["protocol"] == proto)].sort_values("rate")
                    if d.empty or d[col].isna().all():
                        continue
                    base = s.split(" + ")[0]
                    overlay = " + " in s
                    ax.errorbar(d["rate"], d[col], yerr=d[f"{col}_ci"].fillna(0),
                                marker=markers[configs.index(base) % len(markers)], ms=4, capsize=2,
                                color=colours[base], linestyle="--" if overlay else "-",
                                mfc="none" if overlay else colours[base], label=s)
                ax.set_xscale("log")
                ax.set_ylim(bottom=0)       # none of the four can be negative; intervals are clipped there
                ax.set_xlabel("offered rate (packets/s, Poisson, 512 B)")
                ax.set_ylabel(label)
                ax.set_title(f"{proto.upper()}: {label.split(' (')[0]}")
                ax.grid(True, alpha=0.3)
            handles, labels = axes[0][0].get_legend_handles_labels()
            fig.legend(handles, labels, loc="center right", fontsize=7, frameon=False)
            suffix = "" if form == "namespaces" else f"_{form}"
            fig.suptitle(f"UPF security functions {FORM_TITLE.get(form, form)} (userspace engines; "
                         f"intervals over runs, {int(stats.CONFIDENCE * 100)} %)", fontsize=9)
            fig.tight_layout(rect=(0, 0, 1 - 2.6 / (5.2 * len(protos) + 2.6), 1))
            paths += write_figure(fig, out, f"fig_secfn_{fname}{suffix}", dpi=140)
    return paths


def _at_top(tab: pd.DataFrame, series: str, proto: str, col: str) -> tuple[float, float, float] | None:
    """(rate, mean, ci) of a series at its highest offered rate."""
    d = tab[(tab["series"] == series) & (tab["protocol"] == proto)].dropna(subset=[col])
    if d.empty:
        return None
    top = d.loc[d["rate"].idxmax()]
    ci = float(top[f"{col}_ci"]) if np.isfinite(top[f"{col}_ci"]) else 0.0
    return float(top["rate"]), float(top[col]), ci


def findings(tab: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """Each seed finding, per form and engine, with what our data says at the highest rate both
    series reached (baseline N3 only: the seed had no overlay). 'not testable' when a series is
    missing."""
    out = []
    base = tab[~tab["series"].str.contains(" + ", regex=False)]
    for form in sorted(set(base["form"])):
        ft = base[base["form"] == form]
        engines = sorted({s.split("/", 1)[1] for s in ft["series"] if "/" in s and s.split("/", 1)[1] != "passthrough"})
        for engine in engines or ["-"]:
            ids, ips = f"ids-nat/{engine}", f"ips-nat/{engine}"
            where = f"{form}, {engine}"
            for key, text in SEED_FINDINGS:
                if key == "IDS-NAT ~ NAT":
                    a, b = _at_top(ft, ids, "udp", "throughput_mbps"), _at_top(ft, "nat", "udp", "throughput_mbps")
                    verdict = "not testable" if not a or not b else (
                        "agrees" if abs(a[1] - b[1]) <= a[2] + b[2] else
                        f"differs ({a[1]:.2f} vs {b[1]:.2f} Mbit/s at {a[0]:g}/s)")
                elif key == "IPS-NAT loses throughput":
                    a, b = _at_top(ft, ips, "udp", "throughput_mbps"), _at_top(ft, ids, "udp", "throughput_mbps")
                    verdict = "not testable" if not a or not b else (
                        "agrees" if a[1] + a[2] < b[1] - b[2] else
                        f"not seen in this sweep ({a[1]:.2f} vs {b[1]:.2f} Mbit/s at {a[0]:g}/s)")
                elif key == "IPS-NAT drops more":
                    a, b = _at_top(ft, ips, "udp", "loss_pct"), _at_top(ft, ids, "udp", "loss_pct")
                    verdict = "not testable" if not a or not b else (
                        "agrees" if a[1] - a[2] > b[1] + b[2] else
                        f"not seen in this sweep ({a[1]:.2f} vs {b[1]:.2f} % at {a[0]:g}/s)")
                else:
                    d = ft[(ft["protocol"] == "udp") & ft["series"].isin([ids, ips, "nat"])]
                    d = d.groupby("rate")["delay_ms"].mean().sort_index()
                    if len(d) < 3:
                        verdict = "not testable (fewer than 3 rates)"
                    else:
                        slope = np.diff(d.values) / np.diff(d.index.values)
                        verdict = ("agrees" if slope[-1] > 2 * max(slope[0], 1e-12)
                                   else f"not seen in this sweep (slopes {slope[0]:.2g} -> {slope[-1]:.2g} ms per packet/s)")
                out.append((key, where, text, verdict))
    return out


def markdown_section(results: Path, out: Path, link_prefix: str = "") -> str:
    """The section's Markdown; figures and secfn.csv go into `out`, linked as link_prefix + name."""
    from analysis.markdown import table as md_table
    use, drop = runs(results)
    if not use and not drop:
        return ""
    lines = ["## UPF security functions (SECFN x IDS, D-ITG)", ""]
    if drop:
        lines += [f"{len(drop)} run(s) left out:", ""] + [f"- `{d}`: {why}" for d, why in drop] + [""]
    if not use:
        return "\n".join(lines)
    df = load(use)
    tab = table(df)
    out.mkdir(parents=True, exist_ok=True)
    tab.to_csv(out / "secfn.csv", index=False)
    figs = figures(tab, out)
    lines += [f"{len(use)} run(s), {len(df)} flows; intervals over the D-ITG runs of a series (t, "
              f"{int(stats.CONFIDENCE * 100)} %). Userspace engines (AF_PACKET, NFQUEUE): the shape, "
              "not a hardware figure; the namespace form and the stack form are never pooled.", ""]
    lines += [f"![{p.stem}]({link_prefix}{p.name})" for p in figs if p.suffix == ".png"] + [""]
    lines += ["### Saturation knee (fewer than 90 % of the sent packets arrive)", "", md_table(knees(tab)), "",
              "`generator_limited_from`: from this offered rate on, ITGSend itself sent less than 90 % "
              "of it (the host's or the generator's limit, not the function's); compare knees below it.", "",
              "### Beside the seed's findings", "",
              md_table(pd.DataFrame(findings(tab), columns=["finding", "where", "seed", "here"])), "",
              "### Per series, protocol and rate", "", md_table(tab.round(4)), ""]
    return "\n".join(lines)


def write_report(results: Path, out: Path) -> Path | None:
    from analysis.markdown import write_page
    return write_page(out, "secfn", "UPF security functions", markdown_section(results, out))
