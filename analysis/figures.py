"""Figures, one function per figure, looked up by name (``python -m analysis list-figures``).

Each function takes the summary tables (``analysis.tables.all_tables``) and an output folder,
writes ``<name>.png`` and ``<name>.pdf`` and returns their paths, or returns ``[]`` (and logs
why) when the results hold no data for it. Headless (Agg). Error bars are 99 % t confidence
intervals; the baseline (protocol ``none``) is drawn in grey with a dashed reference line.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis import protocols, rtt_figure
from analysis.figure_files import write_figure
from analysis.figure_layout import (HATCHES, KEYS, MODE_ORDER, datapaths, group_handles, label, layout,
                                    mark_userspace, order, ticks)
from analysis.reference import PAPERS

log = logging.getLogger(__name__)

Tables = dict[str, pd.DataFrame]
MODE_HATCH = {"start": "", "trap": "//", "trap-drop": "xx", "trap-queue": ".."}


@dataclass(frozen=True)
class Figure:
    name: str
    description: str
    draw: Callable[..., list[Path]]
    samples: bool = False          # draws from the loaded results too (draw(tables, out, datasets))
    tables: tuple[str, ...] = ()   # the summary tables it is drawn from: with its samples, its data key


def _empty(t: pd.DataFrame, figure: str, why: str) -> bool:
    """Whether the figure's table has no rows, so that the figure is skipped (and the log says why)."""
    if t.empty:
        log.info("%s: %s", figure, why)
    return t.empty


Draw = Callable[[Tables, Path], list[Path]]


def _drawn_from(table: str, figure: str, why: str) -> Callable[[Callable[[pd.DataFrame, Path], list[Path]]], Draw]:
    """A figure drawn from one summary table: called with ``tables`` like every figure, it draws
    ``tables[table]``, or is skipped (the log says why) when that table has no rows."""
    def wrap(draw: Callable[[pd.DataFrame, Path], list[Path]]) -> Draw:
        @functools.wraps(draw)
        def drawn(tables: Tables, out: Path) -> list[Path]:
            t = tables[table]
            return [] if _empty(t, figure, why) else draw(t, out)
        return drawn
    return wrap


def _save(fig: plt.Figure, out: Path, name: str) -> list[Path]:
    return write_figure(fig, out, name, tight=True)


def _bars(ax: plt.Axes, table: pd.DataFrame, value: str, err: str, group: str, scale: float = 1.0,
          group_fmt: Callable[[object], str] = str) -> list[tuple]:
    """Grouped bars: one cluster per profile (ordered), one bar per value of ``group``."""
    lay = layout(table, group)
    for gi, g in enumerate(lay.groups):
        sub = lay.table[lay.table[group] == g].set_index(KEYS)
        vals = np.array([sub[value].get(k, np.nan) for k in lay.keys], dtype=float) * scale
        errs = np.array([sub[err].get(k, np.nan) for k in lay.keys], dtype=float) * scale
        colours = [protocols.colour(lay.protocol(k)) for k in lay.keys]
        ax.bar([lay.x(i, gi) for i in range(len(lay.keys))], vals, lay.width, yerr=np.nan_to_num(errs),
               color=colours, edgecolor="black", linewidth=0.5, hatch=HATCHES[gi % len(HATCHES)],
               capsize=2, label=group_fmt(g), error_kw={"elinewidth": 0.8})
    ticks(ax, lay)
    ax.grid(axis="y", alpha=0.3)
    if len(lay.groups) > 1:
        # the groups differ by hatch, not colour (colour is the protocol): the legend says so
        ax.legend(handles=group_handles(lay, group_fmt), fontsize=8, title=group, title_fontsize=8, loc="upper left")
    mark_userspace(ax, lay.table)
    _headroom(ax, lay.table, value, err, scale)
    return lay.keys


def _headroom(ax: plt.Axes, table: pd.DataFrame, value: str, err: str, scale: float) -> None:
    """Room above the tallest bar (with its interval) for the legend and the userspace note, so
    neither hides a bar or the other."""
    tops = ((table[value].astype(float) + table[err].astype(float).fillna(0)) * scale).to_numpy()
    tops = tops[np.isfinite(tops)]
    if tops.size and tops.max() > 0:
        lo, _ = ax.get_ylim()
        ax.set_ylim(lo, tops.max() * 1.35)


def _baseline_lines(ax: plt.Axes, table: pd.DataFrame, value: str, group: str | None,
                    scale: float = 1.0) -> None:
    base = table[table["protocol"] == "none"]
    for i, (_, row) in enumerate(base.iterrows()):
        suffix = f" ({group} {row[group]})" if group else ""
        ax.axhline(row[value] * scale, color="#555555", linestyle="--", linewidth=0.8,
                   label="baseline" + suffix if i < 4 else None)


def _protocol_legend(ax: plt.Axes, shown: set[str], modes: dict[str, list[str]] | None = None) -> None:
    """One patch per protocol shown (its plug-in's colour and label), one per mode ({protocol:
    its modes shown}: a profile parameter `mode`, drawn as hatches)."""
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=protocols.colour(p), edgecolor="black", label=protocols.label(p))
               for p in sorted(shown, key=lambda p: protocols.order().get(p, 99))]
    handles += [Patch(facecolor="white", edgecolor="black", hatch=MODE_HATCH.get(m, ""), label=f"{protocols.label(p)} {m}")
                for p, ms in (modes or {}).items() for m in ms]
    ax.legend(handles=handles, fontsize=8, loc="upper left", title="protocol / mode", title_fontsize=8)


def fig2_n3_rtt(tables: Tables, out: Path, ds: Any = None) -> list[Path]:
    """Figure 2 (analysis/rtt_figure.py): with the loaded results `ds` (their ping samples) the
    samples' distribution and every boot's mean beside the mean over boots; without, the means."""
    t = tables["rtt"]
    # N3 pings, else the namespace twin's; the f1u experiment's have their own figures (analysis/ran_figures.py)
    t = t[t["experiment"].isin(["n3", "overlay"])] if not t.empty else t
    if _empty(t, "fig2-n3-rtt", "no ping data"):
        return []
    exp = "n3" if (t["experiment"] == "n3").any() else None
    if exp:
        t = t[t["experiment"] == exp]
    found = rtt_figure.samples(getattr(ds, "ping", None), sorted(t["experiment"].astype(str).unique()))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.2), layout="constrained")   # the right y label clears the left panel
    # one unit, the RTT table's (ms)
    rtt_figure.rtt_panel(ax1, t, found, group_fmt=lambda s: f"{s} B")
    over = t[t["protocol"] != "none"]
    if over["overhead"].notna().any():
        rtt_figure.overhead_panel(ax2, over, found, group_fmt=lambda s: f"{s} B")
    else:
        ax2.text(0.5, 0.5, "no baseline or no secured profile:\noverhead not available",
                 ha="center", va="center", transform=ax2.transAxes)
        ax2.set_axis_off()
    exps = sorted(t["experiment"].astype(str).unique())
    where = ("N3 (UE -> UPF side)" if exp else
             "N3 between two network namespaces (experiment overlay)" if exps == ["overlay"] else
             "experiments " + ", ".join(exps))
    few = rtt_figure.few_boots(t)
    fig.suptitle(f"Figure 2: ping RTT over {where}; bold label = baseline" + (f"\n{few}" if few else ""),
                 fontsize=11 if not few else 10)
    return _save(fig, out, "fig2-n3-rtt")


@_drawn_from("attach", "fig3-attach-time", "no attach-time data")
def fig3_attach_time(t: pd.DataFrame, out: Path) -> list[Path]:
    roles = [r for r in ("cold", "warm") if (t["role"] == r).any()] or sorted(t["role"].astype(str).unique())
    fig, axes = plt.subplots(1, len(roles), figsize=(7 * len(roles), 5), squeeze=False)
    for ax, role in zip(axes[0], roles):
        sub = t[t["role"] == role]
        keys = _bars(ax, sub, "mean", "ci", "role")
        mode_of = sub.assign(mode=sub["mode"].astype(str)).set_index(["campaign", "profile", "datapath"])["mode"]
        modes = [str(mode_of.get(k, "")) for k in keys]
        for bar, mode in zip(ax.patches, modes):
            bar.set_hatch(MODE_HATCH.get(mode, ""))
        _baseline_lines(ax, sub, "mean", None)
        shown: dict[str, set[str]] = {}
        for proto, mode in zip(sub["protocol"].astype(str), sub["mode"].astype(str)):
            if mode in MODE_ORDER:
                shown.setdefault(proto, set()).add(mode)
        _protocol_legend(ax, set(sub["protocol"].astype(str)),
                         {p: [m for m in MODE_ORDER if m in ms] for p, ms in shown.items()})
        lo = np.nanmin((sub["mean"] - sub["ci"].fillna(0)).to_numpy(dtype=float))
        hi = np.nanmax((sub["mean"] + sub["ci"].fillna(0)).to_numpy(dtype=float))
        pad = max(1.0, 0.15 * (hi - lo))
        bottom = max(0.0, lo - pad)
        ax.set_ylim(bottom, hi + pad)
        ax.set_ylabel("attach time (ms), 99 % CI" + (f" (axis starts at {bottom:.0f} ms)" if bottom > 0 else ""))
        ax.set_title(f"{role} (registration request -> PDU session accept)")
    fig.suptitle("Figure 3: UE attach time by protocol and mode (IPsec: start/trap; dashed = baseline)")
    return _save(fig, out, "fig3-attach-time")


@_drawn_from("cpu", "fig4-cpu-vs-ues", "no CPU accounting data")
def fig4_cpu_vs_ues(t: pd.DataFrame, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(7.5, 5))
    dps = datapaths(t)
    camps = t["campaign"].nunique()
    for _, g in order(t).groupby(["campaign", "profile", "datapath"], sort=False):
        g = g.assign(ues=g["ues"].astype(float)).sort_values("ues")
        proto = str(g["protocol"].iloc[0])
        style = {"color": protocols.colour(proto), "linestyle": "--" if proto == "none" else "-"}
        ax.errorbar(g["ues"], g["mean"], yerr=g["ci"].fillna(0), marker="o", capsize=3,
                    label=label(g.iloc[0], dps, camps) + (" (baseline)" if proto == "none" and
                                                           g.iloc[0]["profile"] != "baseline" else ""), **style)
    ax.set_xlabel("number of UEs")
    ax.set_ylabel("CPU time of the core: NFs + overlay + DB (s), 99 % CI")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Figure 4: CPU time (boot -> last PDU session) vs number of UEs")
    return _save(fig, out, "fig4-cpu-vs-ues")


@_drawn_from("throughput", "fig-throughput", "no iperf3 data")
def fig_throughput(t: pd.DataFrame, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(8, 4.8))
    _bars(ax, t, "mean", "ci", "transport", group_fmt=lambda s: str(s).upper())
    ax.set_ylabel("throughput, receiver (Mbit/s), 99 % CI")
    ax.set_title("Throughput per profile (iperf3; bold label = baseline)")
    return _save(fig, out, "fig-throughput")


def fig_tls_suites(tables: Tables, out: Path) -> list[Path]:
    t = tables["attach"]
    # the 2024 paper's subject: every profile of the protocol it studied
    tls = t[t["protocol"] == PAPERS["wisec2024"].protocol] if not t.empty else t
    if tls.empty or tls["overhead"].isna().all():
        log.info("fig-tls-suites: no TLS attach times with a baseline")
        return []
    roles = [r for r in ("cold", "warm") if (tls["role"] == r).any()]
    fig, axes = plt.subplots(1, len(roles), figsize=(6.5 * len(roles), max(4.0, 0.35 * len(tls) / max(1, len(roles)) + 2)),
                             squeeze=False, sharey=True)
    for ax, role in zip(axes[0], roles):
        sub = order(tls[tls["role"] == role])
        pct_ci = 100.0 * sub["overhead_ci"] / sub["baseline_mean"]
        colours = ["#2ca02c" if c == "ecdsa" else "#98df8a" for c in sub["cert"]]
        names = [label(r, datapaths(tls), tls["campaign"].nunique()) for _, r in sub.iterrows()]
        ax.barh(names, sub["overhead_pct"], xerr=pct_ci.fillna(0), color=colours,
                edgecolor="black", linewidth=0.5, capsize=2)
        ax.axvline(0, color="#555555", linestyle="--", linewidth=0.8, label="baseline (no TLS)")
        ax.set_xlabel("attach-time overhead vs baseline (%), 99 % CI")
        ax.set_title(f"{role}")
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].invert_yaxis()      # shared y: once, so the first suite is on top in both panels
    fig.suptitle("TLS suites on the SBI: attach-time overhead, cold and warm (dark = ECDSA, light = RSA)")
    return _save(fig, out, "fig-tls-suites")


FIGURES: dict[str, Figure] = {f.name: f for f in (
    Figure("fig2-n3-rtt", "Figure 2: N3 ping RTT per profile and payload size (samples, boot means, 99 % CIs) and "
           "the overhead", fig2_n3_rtt, samples=True, tables=("rtt",)),
    Figure("fig3-attach-time", "Figure 3: UE attach time, cold and warm, grouped by protocol and mode", fig3_attach_time,
           tables=("attach",)),
    Figure("fig4-cpu-vs-ues", "Figure 4: CPU time of the core NFs vs number of UEs", fig4_cpu_vs_ues, tables=("cpu",)),
    Figure("fig-throughput", "iperf3 throughput per profile (TCP, UDP)", fig_throughput, tables=("throughput",)),
    Figure("fig-tls-suites", "TLS suites: attach-time overhead cold and warm (Zeidler et al. 2024)", fig_tls_suites,
           tables=("attach",)),
)}


def get(name: str) -> Figure:
    try:
        return FIGURES[name]
    except KeyError:
        raise KeyError(f"unknown figure {name!r}; valid: {', '.join(FIGURES)} "
                       "(python -m analysis list-figures)") from None


def data_key(figure: Figure, tables: Tables, datasets: Any = None) -> str | None:
    """What a figure is drawn from, hashed: its summary tables, its samples (the ping RTTs), and
    the code and catalogues that draw it (analysis/stamps.py); None where it does not say."""
    if not figure.tables:
        return None
    import hashlib

    from analysis import stamps
    h = hashlib.sha256(figure.name.encode())
    for s in stamps.code_stamps():
        h.update(s.encode())
    frames = [tables[t] for t in figure.tables]
    if figure.samples:
        ping = getattr(datasets, "ping", None)
        frames.append(ping if ping is not None else pd.DataFrame())
    for f in frames:
        h.update(repr(list(f.columns)).encode())
        h.update(pd.util.hash_pandas_object(f, index=True).to_numpy().tobytes())
    return h.hexdigest()


def draw_all(tables: Tables, out: Path, names: list[str] | None = None, datasets: Any = None) -> dict[str, list[Path]]:
    """Every figure (or those named); `datasets`: the loaded results the summary tables came from,
    for the figures that show samples. A figure whose data (data_key) are those it was last drawn
    from, its files still there, is not drawn again (figure 2 over 20 runs' samples: 1.2 s)."""
    from analysis.figure_files import kept, remember
    drawn: dict[str, list[Path]] = {}
    for n in names or list(FIGURES):
        f = get(n)
        k = data_key(f, tables, datasets)
        old = kept(out, n, k)
        if old is not None:
            drawn[n] = old
            continue
        drawn[n] = f.draw(tables, out, datasets) if f.samples else f.draw(tables, out)
        remember(out, n, k, drawn[n])
    return drawn
