"""The panels of Figure 2 (analysis/figures.py fig2_n3_rtt): ping RTT and its overhead per profile
and payload size, in ms like the RTT table.

Per profile and size, what the statistics rest on is shown, not only their result: the samples'
distribution (a box: quartiles, whiskers at the 1st and 99th percentile, as Zeidler et al. plot
theirs; a whisker more than twice as high as the rest is cut just above it, its value written
there, so that the means stay readable), every boot's mean as a point (the boot is the
replication), and the mean over boots with its 99 % t interval (a diamond). An RTT is never
negative: an interval reaching below 0 is cut at 0 there and marked. With few boots the figure
says so (the t quantile with n_boots - 1 degrees of freedom makes the interval wide: 9.9 x
sd/sqrt(n) for 3 boots).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis import protocols
from analysis.figure_layout import HATCHES, KEYS, Layout, group_handles, layout, mark_userspace, show_zero, ticks

if TYPE_CHECKING:
    import matplotlib.pyplot as plt

SMALL_BOOTS = 5          # fewer boots than this: the figure says its intervals rest on few boots
CLIPPED = "#b00000"
Samples = dict[tuple[str, ...], dict[str, np.ndarray]]      # (campaign, profile, datapath, size) -> run -> RTTs


def _key(*parts: object) -> tuple[str, ...]:
    """(campaign, profile, datapath, size) as strings, a missing value (None, NaN) as ''."""
    return tuple("" if v is None or v != v else str(v) for v in parts)


def samples(ping: pd.DataFrame | None, experiments: list[str]) -> Samples:
    """The ping samples (ms) of the experiments, per profile and size, per boot (run); duplicate
    replies and lost pings left out, as in the RTT table (analysis/tables.py rtt)."""
    if ping is None or ping.empty:
        return {}
    p = ping[ping["experiment"].isin(experiments)]
    if "dup" in p:
        p = p[~p["dup"].astype(bool)]
    p = p[np.isfinite(p["rtt_ms"].astype(float))]
    out: Samples = {}
    for (c, prof, dp, size, run), g in p.groupby(["campaign", "profile", "datapath", "size", "run"], dropna=False):
        out.setdefault(_key(c, prof, dp, size), {})[str(run)] = g["rtt_ms"].to_numpy(dtype=float)
    return out


def _row(sub: pd.DataFrame, key: tuple) -> pd.Series | None:
    if key not in sub.index:
        return None
    row = sub.loc[key]
    return row.iloc[0] if isinstance(row, pd.DataFrame) else row


def _finite(v: Any) -> float:
    f = float(v) if v is not None else float("nan")
    return f if np.isfinite(f) else 0.0


def _boots(ax: plt.Axes, x: float, width: float, means: np.ndarray) -> None:
    jitter = np.linspace(-0.25, 0.25, len(means)) * width if len(means) > 1 else np.zeros(1)
    ax.scatter(x + jitter, means, s=12, color="black", zorder=4, gid="boots")


def _box(ax: plt.Axes, x: float, width: float, values: np.ndarray, colour: str, hatch: str) -> tuple[float, Any]:
    """The samples' box at x; returns its upper quartile and the boxplot's artists."""
    b = ax.boxplot([values], positions=[x], widths=width * 0.75, whis=(1, 99), showfliers=False,
                   patch_artist=True, manage_ticks=False, medianprops={"color": "black", "linewidth": 0.8})
    for box in b["boxes"]:
        box.set(facecolor=colour, alpha=0.35, hatch=hatch, edgecolor="black", linewidth=0.5, gid="samples")
    return float(np.percentile(values, 75)), b


def _whisker_top(b: Any) -> float:
    return float(max(np.max(w.get_ydata()) for w in b["whiskers"]))


def _clip_whiskers(ax: plt.Axes, boxes: list[tuple[float, Any]], cut: float) -> bool:
    """Upper whiskers above `cut` end there, with an arrow and the 99th percentile written beside
    it (a namespace ping's tail reaches 145 ms where the means are below 2 ms: drawn whole, it
    flattened every mean into the axis). Whether any was cut."""
    clipped = False
    for x, b in boxes:
        top = _whisker_top(b)
        if top <= cut:
            continue
        clipped = True
        for w in b["whiskers"]:
            y = w.get_ydata()
            if np.max(y) == top:
                w.set_ydata([min(y), cut])
        for c in b["caps"]:
            if np.max(c.get_ydata()) == top:
                c.set_visible(False)
        ax.plot([x], [cut], marker="^", ms=6, color=CLIPPED, linestyle="none", zorder=6, gid="whisker-clipped")
        ax.annotate(f"{top:.3g}", (x, cut), xytext=(4, 0), textcoords="offset points", ha="left", va="center",
                    fontsize=6, color=CLIPPED)
    return clipped


def rtt_panel(ax: plt.Axes, table: pd.DataFrame, found: Samples, group_fmt: Callable[[object], str]) -> None:
    """RTT per profile and size: samples, boot means, mean over boots with its interval cut at 0.
    The axis is scaled to the means, their intervals, the boot means and the boxes (quartiles):
    a 99th-percentile whisker above that is cut at the top and its value written there."""
    lay = layout(table, "size")
    top, clipped = 0.0, False
    boxes: list[tuple[float, Any]] = []
    for gi, g in enumerate(lay.groups):
        sub = lay.table[lay.table["size"] == g].set_index(KEYS)
        for i, k in enumerate(lay.keys):
            row = _row(sub, k)
            if row is None:
                continue
            x, colour = lay.x(i, gi), protocols.colour(lay.protocol(k))
            runs = found.get(_key(*k, g), {})
            if runs:
                q3, b = _box(ax, x, lay.width, np.concatenate(list(runs.values())), colour, HATCHES[gi % len(HATCHES)])
                boxes.append((x, b))
                means = np.array([v.mean() for v in runs.values()])
                _boots(ax, x, lay.width, means)
                top = max(top, q3, float(means.max()))
            mean, ci = float(row["mean"]), _finite(row["ci"])
            below = min(ci, mean)                           # the interval stops at 0
            line = ax.errorbar(x, mean, yerr=[[below], [ci]], fmt="D", ms=5, color=colour, mec="black",
                               ecolor="black", capsize=3, zorder=5)
            line.lines[0].set_gid("mean")
            if mean - ci < 0:
                clipped = True
                ax.plot([x], [0], marker="v", ms=7, color=CLIPPED, linestyle="none", zorder=6, gid="clipped")
            top = max(top, mean + ci)
    # whiskers up to twice the rest stay whole; a longer tail is cut just above the rest
    whole = [_whisker_top(b) for _, b in boxes]
    top = max([top] + [w for w in whole if w <= 2 * top])
    cut = _clip_whiskers(ax, boxes, top * 1.04)
    # room above for the legend and the notes (with a cut whisker: one legend line more, and the
    # written values below the legend)
    ax.set_ylim(0, top * (1.8 if cut else 1.45) if top > 0 else 1)
    _finish(ax, lay, group_fmt, clipped, cut)
    ax.set_ylabel("RTT (ms): samples, boot means, mean over boots with 99 % CI")
    ax.set_title("RTT per profile and payload size")


def overhead_panel(ax: plt.Axes, table: pd.DataFrame, found: Samples, group_fmt: Callable[[object], str]) -> None:
    """Overhead against the baseline: each boot's mean minus the baseline's mean over boots, and
    the difference of the means over boots with its 99 % Welch interval (never cut: an overhead
    may be negative)."""
    lay = layout(table, "size")
    for gi, g in enumerate(lay.groups):
        sub = lay.table[lay.table["size"] == g].set_index(KEYS)
        for i, k in enumerate(lay.keys):
            row = _row(sub, k)
            if row is None or not np.isfinite(float(row["overhead"])):
                continue
            x, colour = lay.x(i, gi), protocols.colour(lay.protocol(k))
            runs = found.get(_key(*k, g), {})
            base = float(row.get("baseline_mean", np.nan))
            if runs and np.isfinite(base):
                _boots(ax, x, lay.width, np.array([v.mean() for v in runs.values()]) - base)
            err = _finite(row["overhead_ci"])
            line = ax.errorbar(x, float(row["overhead"]), yerr=err, fmt="D", ms=5, color=colour, mec="black",
                               ecolor="black", capsize=3, zorder=5)
            line.lines[0].set_gid("mean")
    ax.axhline(0, color="#555555", linestyle="--", linewidth=0.8)
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi + 0.6 * (hi - lo))                   # room for the legend and the notes
    show_zero(ax)
    _finish(ax, lay, group_fmt, False, False)
    ax.set_ylabel("overhead vs baseline (ms), 99 % Welch CI")
    ax.set_title("RTT overhead against the baseline (dashed = baseline)")


def _finish(ax: plt.Axes, lay: Layout, group_fmt: Callable[[object], str], clipped: bool, cut: bool) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    ticks(ax, lay)
    ax.grid(axis="y", alpha=0.3)
    handles = group_handles(lay, group_fmt)
    handles += [Patch(facecolor="0.8", edgecolor="black", label="samples: quartiles, 1st-99th pct"),
                Line2D([], [], marker="o", ms=4, color="black", linestyle="none", label="one boot's mean"),
                Line2D([], [], marker="D", ms=5, color="0.6", mec="black", linestyle="none",
                       label="mean over boots, 99 % CI")]
    if clipped:
        handles.append(Line2D([], [], marker="v", ms=7, color=CLIPPED, linestyle="none",
                              label="interval clipped at 0 (reaches below)"))
    if cut:
        handles.append(Line2D([], [], marker="^", ms=6, color=CLIPPED, linestyle="none",
                              label="99th pct cut here (its value written, ms)"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", title="payload", title_fontsize=7)
    mark_userspace(ax, lay.table)


def few_boots(table: pd.DataFrame) -> str:
    """A line for the figure when some profile has fewer than SMALL_BOOTS boots ('' otherwise)."""
    n = pd.to_numeric(table["n_boots"], errors="coerce").dropna() if "n_boots" in table else pd.Series(dtype=float)
    if n.empty or n.min() >= SMALL_BOOTS:
        return ""
    lo, hi = int(n.min()), int(n[n < SMALL_BOOTS].max())
    count = f"n_boots = {lo}" if lo == hi else f"n_boots = {lo} to {hi}"
    return (f"few boots: {count} (fewer than {SMALL_BOOTS}); the 99 % intervals over boot means are wide "
            "(t with n_boots - 1 degrees of freedom; none with one boot): more boots narrow them "
            "(python -m analysis plan)")
