"""The UPF security-function experiment (testbed/secfn/run.py): D-ITG rows -> table, figure,
saturation knees and the report section beside the seed study's findings (docs/secfn.md).

Input: run directories `<results>/<campaign>/secfn/<secfn>-<ids>/<run>/` with `ditg.csv` and a
manifest; only complete, valid runs are used (the others are listed with their reason). One row
per flow (protocol x offered rate x run); intervals are t intervals over the runs of a
configuration, at the house confidence (analysis/stats.py), not the seed's 95 %.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import stats

log = logging.getLogger(__name__)

METRICS = {                     # column -> (label, scale to the unit shown)
    "throughput_mbps": ("throughput (Mbit/s)", 1.0),
    "delay_ms": ("one-way delay (ms)", 1.0),
    "jitter_ms": ("jitter (ms)", 1.0),
    "loss_pct": ("UDP loss (%)", 1.0),
}
KNEE_FRACTION = 0.9             # offered rate at which less than 90 % of the sent packets arrive
# The seed's qualitative findings (Malik et al., section IV-A): it printed no numbers.
SEED_FINDINGS = (
    ("IDS-NAT ~ NAT", "the passive IDS does not change throughput: IDS-NAT = NAT"),
    ("IPS-NAT loses throughput", "IPS-NAT delivers less than IDS-NAT at high packet rates (NFQUEUE)"),
    ("IPS-NAT drops more", "UDP loss is higher with IPS-NAT than with IDS-NAT at high rates"),
    ("UDP latency non-linear", "UDP latency grows non-linearly with the packet rate"),
)


def runs(results: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(usable run dirs, [(dropped run dir, why)])."""
    use, drop = [], []
    for m in sorted(Path(results).rglob("manifest.json")):
        try:
            man = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            drop.append((m.parent, f"unreadable manifest: {exc}"))
            continue
        if man.get("experiment") != "secfn":
            continue
        if man.get("state") != "complete" or man.get("valid") is not True:
            drop.append((m.parent, f"state {man.get('state')}, valid {man.get('valid')}: "
                                   f"{(man.get('validity') or {}).get('details', '')}"))
        elif not (m.parent / "ditg.csv").is_file():
            drop.append((m.parent, "no ditg.csv"))
        else:
            use.append(m.parent)
    return use, drop


def load(run_dirs: list[Path]) -> pd.DataFrame:
    frames = []
    for d in run_dirs:
        man = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        df = pd.read_csv(d / "ditg.csv")
        sf = man.get("secfn") or {}
        df["secfn"] = sf.get("function")
        df["engine"] = sf.get("engine") or "-"
        df["config"] = df["secfn"] + ("/" + df["engine"]).where(df["engine"] != "-", "")
        df["campaign_run"] = d.name
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    df["throughput_mbps"] = df["bitrate_kbps"] / 1000.0
    df["delay_ms"] = df["delay_avg_s"] * 1000.0
    df["jitter_ms"] = df["jitter_avg_s"] * 1000.0
    sent = df["packets"] + df["dropped"].clip(lower=0)
    df["loss_pct"] = np.where(sent > 0, 100.0 * df["dropped"].clip(lower=0) / sent, np.nan)
    # delivered of what was sent (the function's loss), and sent of what was asked (the generator)
    df["delivered_fraction"] = np.where(df["sent_packets"] > 0, df["packets"] / df["sent_packets"], np.nan)
    df["generator_fraction"] = df["sent_rate"] / df["rate"]
    return df


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Per config, protocol and offered rate: n and mean/CI of each metric over the runs."""
    by = ["config", "protocol", "rate"]
    out = None
    for col in (*METRICS, "delivered_fraction", "generator_fraction"):
        s = stats.summarize_groups(df, by, col)[by + ["n", "mean", "ci"]]
        s = s.rename(columns={"n": "n_runs", "mean": col, "ci": f"{col}_ci"})
        out = s if out is None else out.merge(s.drop(columns="n_runs"), on=by)
    return out if out is not None else pd.DataFrame()


def knees(tab: pd.DataFrame) -> pd.DataFrame:
    """Per config and protocol: the lowest offered rate at which less than KNEE_FRACTION of the
    sent packets arrive (NaN: no knee inside the sweep), and the lowest at which the generator
    itself sent less than KNEE_FRACTION of the offered rate (above it the sweep measures D-ITG)."""
    rows = []
    for (config, proto), g in tab.groupby(["config", "protocol"]):
        g = g.sort_values("rate")
        below = g[g["delivered_fraction"] < KNEE_FRACTION]
        gen = g[g["generator_fraction"] < KNEE_FRACTION]
        rows.append({"config": config, "protocol": proto,
                     "knee_rate": float(below["rate"].iloc[0]) if len(below) else float("nan"),
                     "generator_limited_from": float(gen["rate"].iloc[0]) if len(gen) else float("nan"),
                     "max_rate": float(g["rate"].max())})
    return pd.DataFrame(rows)


def figure(tab: pd.DataFrame, out: Path) -> list[Path]:
    if tab.empty:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    protos = sorted(set(tab["protocol"]))
    fig, axes = plt.subplots(len(protos), len(METRICS), figsize=(4.2 * len(METRICS), 3.4 * len(protos)),
                             squeeze=False)
    configs = sorted(set(tab["config"]))
    colours = {c: plt.get_cmap("tab10")(i % 10) for i, c in enumerate(configs)}
    for r, proto in enumerate(protos):
        for c, (col, (label, _)) in enumerate(METRICS.items()):
            ax = axes[r][c]
            if col == "loss_pct" and proto != "udp":
                ax.set_axis_off()
                continue
            for cfg in configs:
                d = tab[(tab["config"] == cfg) & (tab["protocol"] == proto)].sort_values("rate")
                if d.empty:
                    continue
                ax.errorbar(d["rate"], d[col], yerr=d[f"{col}_ci"], marker="o", ms=3, capsize=2,
                            color=colours[cfg], label=cfg)
            ax.set_xscale("log")
            ax.set_xlabel("offered rate (packets/s, Poisson)")
            ax.set_ylabel(label)
            ax.set_title(f"{proto.upper()}: {label.split(' (')[0]}")
            ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("UPF security functions between namespaces (userspace engines; 512 B payloads)", fontsize=9)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in ("png", "pdf"):
        p = out / f"fig_secfn.{fmt}"
        fig.savefig(p, dpi=140)
        paths.append(p)
    plt.close(fig)
    return paths


def findings(tab: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Each seed finding with what our data says at the highest common rate ('not testable'
    when the configurations it needs are missing)."""
    out = []

    def at_top(cfg_prefix: str, proto: str, col: str) -> tuple[float, float] | None:
        d = tab[(tab["config"].str.startswith(cfg_prefix)) & (tab["protocol"] == proto)]
        if d.empty:
            return None
        top = d[d["rate"] == d["rate"].max()].iloc[0]
        return float(top[col]), float(top[f"{col}_ci"])

    for key, text in SEED_FINDINGS:
        if key == "IDS-NAT ~ NAT":
            a, b = at_top("ids-nat", "udp", "throughput_mbps"), at_top("nat", "udp", "throughput_mbps")
            verdict = "not testable" if not a or not b else (
                "agrees" if abs(a[0] - b[0]) <= a[1] + b[1] else f"differs ({a[0]:.2f} vs {b[0]:.2f} Mbit/s)")
        elif key == "IPS-NAT loses throughput":
            a, b = at_top("ips-nat", "udp", "throughput_mbps"), at_top("ids-nat", "udp", "throughput_mbps")
            verdict = "not testable" if not a or not b else (
                "agrees" if a[0] + a[1] < b[0] - b[1] else f"not seen in this sweep ({a[0]:.2f} vs {b[0]:.2f} Mbit/s)")
        elif key == "IPS-NAT drops more":
            a, b = at_top("ips-nat", "udp", "loss_pct"), at_top("ids-nat", "udp", "loss_pct")
            verdict = "not testable" if not a or not b else (
                "agrees" if a[0] > b[0] + b[1] else f"not seen in this sweep ({a[0]:.2f} vs {b[0]:.2f} %)")
        else:
            d = tab[tab["protocol"] == "udp"].groupby("rate")["delay_ms"].mean().sort_index()
            if len(d) < 3:
                verdict = "not testable (fewer than 3 rates)"
            else:
                slope = np.diff(d.values) / np.diff(d.index.values)
                verdict = "agrees" if slope[-1] > 2 * max(slope[0], 1e-12) else "not seen in this sweep"
        out.append((key, text, verdict))
    return out


def markdown_section(results: Path, out: Path) -> str:
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
    figs = figure(tab, out)
    lines += [f"{len(use)} run(s), {len(df)} flows; intervals over runs (t, "
              f"{int(stats.CONFIDENCE * 100)} %). Userspace engines between namespaces: the shape, "
              "not a hardware figure.", ""]
    if figs:
        lines += [f"![security functions]({figs[0].name})", ""]
    lines += ["### Saturation knee (fewer than 90 % of the sent packets arrive)", "", md_table(knees(tab)), "",
              "`generator_limited_from`: from this offered rate on, ITGSend itself sent less than 90 % "
              "of it (the host's or the generator's limit, not the function's); compare knees below it.", "",
              "### Beside the seed's findings", "",
              md_table(pd.DataFrame(findings(tab), columns=["finding", "seed", "here"])), "",
              "### Per configuration, protocol and rate", "", md_table(tab.round(4)), ""]
    return "\n".join(lines)


def write_report(results: Path, out: Path) -> Path | None:
    from analysis.markdown import write_page
    return write_page(out, "secfn", "UPF security functions", markdown_section(results, out))
