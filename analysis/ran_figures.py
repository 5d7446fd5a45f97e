"""Figures of the RAN study (Michaelides et al., WiSec 2026, Fig. 2 and 3) from the RAN summary
table (analysis/ran_tables.py SUMMARY_COLUMNS): one figure per interface (F1-U, F1-C, E1) and
one for end-to-end, one panel per source (our runs, the authors' data: never on one axis, their
hosts differ) and, for the procedures, per start point. One unit per figure (ms), the mean of
each configuration with its 99 % interval (the basis, over boots or per sample, is in the panel
title), the baseline as a dashed line with its interval shaded, a relay-only row hatched, a
userspace IPsec/WireGuard datapath marked on its label and on the panel. Points, not bars: the
axes are zoomed to the data, and a bar from zero would hide a 0.1 ms difference on 11 ms.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import protocols
from analysis.figure_files import write_figure
from analysis.ran_tables import RELAY_NET, RELAY_PLAIN

log = logging.getLogger(__name__)

SOURCES = {"ours": "our runs", "authors": "the authors' published data"}
TITLES = {"f1u": "F1-U: ping RTT UE -> UPF (1,024 B)", "f1c": "F1-C: UE Context Setup",
          "e1": "E1: Bearer Context Setup", "e2e": "end-to-end: ping RTT UE -> UPF, everything protected"}
DEFINITION_SHORT = {"request": "from the F1AP/E1AP request (paper)",
                    "ngap": "from NGAP PDUSessionResourceSetupRequest (authors' scripts)", "": ""}


def _label(row: pd.Series) -> str:
    label = str(row["profile"])
    if row.get("relay") == RELAY_PLAIN:
        label += f" (relay only, no {protocols.label(str(row.get('protocol')))})"
    if protocols.not_comparable(str(row.get("protocol")), str(row.get("datapath"))):
        label += " [userspace]"
    if row.get("campaign") not in (None, "", np.nan) and row.get("_campaigns", 1) > 1:
        label = f"{row['campaign']}: {label}"
    return label


def _basis(t: pd.DataFrame) -> str:
    bases = sorted(set(t["ci_basis"].dropna().astype(str)) - {""})
    words = {"boots": "over stack boots", "samples": "per sample (one boot / boots unknown)"}
    return "99 % t " + " / ".join(words.get(b, b) for b in bases) if bases else "99 % interval"


def _panel(ax, t: pd.DataFrame, title: str) -> None:
    t = t[t["relay"] != RELAY_NET].copy()          # net rows are overheads only: in the tables
    t["_o"] = t["protocol"].map(protocols.order()).fillna(99)
    t["_campaigns"] = t["campaign"].nunique()
    t = t.sort_values(["_o", "relay", "profile"], kind="stable")
    base = t[t["protocol"] == "none"]
    rest = t[t["protocol"] != "none"]
    x = np.arange(len(rest))
    for i, (_, r) in enumerate(rest.iterrows()):
        hatch_face = "white" if r["relay"] == RELAY_PLAIN else protocols.colour(str(r["protocol"]))
        ax.errorbar(x[i], r["mean"], yerr=0 if pd.isna(r["ci"]) else r["ci"], fmt="o", capsize=3,
                    color=protocols.colour(str(r["protocol"])), markerfacecolor=hatch_face, ms=6)
    for j, (_, b) in enumerate(base.iterrows()):
        ax.axhline(b["mean"], color="#555555", linestyle="--", linewidth=0.9,
                   label=f"baseline (no security) {b['mean']:.3f} ms" if j == 0 else None)
        if pd.notna(b["ci"]):
            ax.axhspan(b["mean"] - b["ci"], b["mean"] + b["ci"], color="#999999", alpha=0.25, linewidth=0)
    ax.set_xticks(x)
    ax.set_xticklabels([_label(r) for _, r in rest.iterrows()], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("ms (mean, 99 % interval)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{title}\n{_basis(t)}", fontsize=8)
    if len(base):
        ax.legend(fontsize=7, loc="upper left")
    if any(protocols.not_comparable(str(p), str(d)) for p, d in zip(t["protocol"], t["datapath"])):
        ax.text(0.99, 0.02, f"[userspace] = userspace datapath ({protocols.userspace_fallbacks()}): NOT comparable "
                "with the paper's kernel datapaths", transform=ax.transAxes, ha="right", va="bottom", fontsize=6,
                color="#b00000")
    if rest.empty:
        ax.text(0.5, 0.5, "baseline only", transform=ax.transAxes, ha="center")


def _draw(summary: pd.DataFrame, out: Path, name: str, interface: str,
          panel_keys: Callable[[pd.DataFrame], list[tuple[str, str, pd.DataFrame]]],
          panel: Callable[..., None] = _panel) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = summary[summary["interface"] == interface] if not summary.empty else summary
    panels = panel_keys(t) if not t.empty else []
    panels = [p for p in panels if not p[2][p[2]["relay"] != RELAY_NET].empty]
    if not panels:
        log.info("%s: no %s data", name, interface)
        return []
    widths = [max(3.0, 0.35 * len(p[2]) + 1.5) for p in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(min(20.0, sum(widths) + 1.0), 5.0), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for ax, (source, sub, frame) in zip(axes[0], panels):
        panel(ax, frame, f"{SOURCES.get(source, source)}" + (f"\n{sub}" if sub else ""))
    key = "dashed line = baseline" if panel is _panel else "grey squares = baselines"
    fig.suptitle(f"{TITLES[interface]} (Michaelides et al., WiSec 2026; {key})", fontsize=10)
    fig.tight_layout()
    return write_figure(fig, out, name, tight=True)


def _panels(t: pd.DataFrame, by_definition: bool) -> list[tuple[str, str, pd.DataFrame]]:
    """One panel per source (ours first), then (``by_definition``) per start point."""
    out = []
    for source in [s for s in SOURCES if s in set(t["source"])] + sorted(set(t["source"]) - set(SOURCES)):
        g = t[t["source"] == source]
        if not by_definition:
            out.append((source, "", g))
            continue
        # the paper's definition first
        for d in sorted(set(g["definition"]), key=lambda v: list(DEFINITION_SHORT).index(v)
                        if v in DEFINITION_SHORT else 9):
            out.append((source, DEFINITION_SHORT.get(d, d), g[g["definition"] == d]))
    return out


def fig_ran_f1u(summary: pd.DataFrame, out: Path) -> list[Path]:
    return _draw(summary, out, "fig-ran-f1u", "f1u", lambda t: _panels(t, False))


def fig_ran_f1c(summary: pd.DataFrame, out: Path) -> list[Path]:
    return _draw(summary, out, "fig-ran-f1c", "f1c", lambda t: _panels(t, True))


def fig_ran_e1(summary: pd.DataFrame, out: Path) -> list[Path]:
    return _draw(summary, out, "fig-ran-e1", "e1", lambda t: _panels(t, True))


RAN_NAMES = {"split": "disaggregated (split)", "oai": "monolithic (oai)"}


def _e2e_panel(ax, t: pd.DataFrame, title: str) -> None:
    """Split and monolithic on one axis (the paper's Fig. 3): baseline (grey) and protected
    points per RAN, so both baselines and both overheads read off one scale."""
    t = t.assign(_r=t["ran"].map({"split": 0, "oai": 1}).fillna(9), _o=t["protocol"].map(protocols.order()).fillna(99))
    t = t.sort_values(["_r", "_o", "profile"], kind="stable")
    for i, (_, r) in enumerate(t.iterrows()):
        colour = protocols.colour(str(r["protocol"]))
        ax.errorbar(i, r["mean"], yerr=0 if pd.isna(r["ci"]) else r["ci"], fmt="s" if r["protocol"] == "none" else "o",
                    capsize=3, color=colour, ms=6)
    ax.set_xticks(np.arange(len(t)))
    ax.set_xticklabels([f"{RAN_NAMES.get(str(r['ran']), r['ran'])}: "
                        f"{'baseline' if r['protocol'] == 'none' else _label(r)}" for _, r in t.iterrows()],
                       rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("ms (mean, 99 % interval)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{title}\n{_basis(t)}", fontsize=8)


def fig_ran_e2e(summary: pd.DataFrame, out: Path) -> list[Path]:
    return _draw(summary, out, "fig-ran-e2e", "e2e", lambda t: _panels(t, False), _e2e_panel)


FIGURES: dict[str, tuple[str, Callable[[pd.DataFrame, Path], list[Path]]]] = {
    "fig-ran-f1u": ("F1-U ping RTT per IPsec configuration, ours and the authors' data", fig_ran_f1u),
    "fig-ran-f1c": ("F1-C UE Context Setup time, both start points, ours and the authors' data", fig_ran_f1c),
    "fig-ran-e1": ("E1 Bearer Context Setup time, both start points, ours and the authors' data", fig_ran_e1),
    "fig-ran-e2e": ("end-to-end RTT, split and monolithic, baseline and protected", fig_ran_e2e),
}


def draw_all(summary: pd.DataFrame, out: Path) -> dict[str, list[Path]]:
    return {name: draw(summary, out) for name, (_, draw) in FIGURES.items()}
