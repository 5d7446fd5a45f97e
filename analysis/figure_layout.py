"""How the figures lay out their rows (analysis/figures.py, analysis/rtt_figure.py): one cluster of
positions per profile (campaign, profile, datapath; ordered by protocol, then IPsec mode), one
position per value of a grouping column (payload size, role, transport) told apart by hatch,
and the marks every panel carries (a userspace datapath, a visible zero line)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis import protocols

if TYPE_CHECKING:
    import matplotlib.pyplot as plt

HATCHES = ("", "//", "..", "xx")
KEYS = ["campaign", "profile", "datapath"]
MODE_ORDER = {"start": 0, "trap": 1, "trap-drop": 2, "trap-queue": 3}


def label(row: pd.Series, datapaths: int, campaigns: int = 1) -> str:
    label = str(row["profile"])
    if campaigns > 1:
        label = f"{row['campaign']}: {label}"
    if datapaths > 1 and row.get("datapath") not in (None, "", "none"):
        label += f" [{row['datapath']}]"
    return label


def datapaths(table: pd.DataFrame) -> int:
    """How many overlay datapaths (kernel, userspace) the table mixes; the baseline has none."""
    if "datapath" not in table:
        return 1
    return table.loc[table["datapath"] != "none", "datapath"].nunique()


def order(table: pd.DataFrame) -> pd.DataFrame:
    t = table.copy()
    t["_p"] = t["protocol"].map(protocols.order()).fillna(99)
    t["_m"] = t["mode"].map(MODE_ORDER).fillna(9) if "mode" in t else 0
    if "campaign" not in t:
        t["campaign"] = ""
    return t.sort_values(["campaign", "_p", "_m", "profile", "datapath"]).drop(columns=["_p", "_m"])


@dataclass
class Layout:
    """Where each (cluster, group) of a table goes."""
    table: pd.DataFrame                # the rows, ordered
    keys: list[tuple]                  # the clusters (campaign, profile, datapath), in order
    labels: list[str]
    first: pd.DataFrame                # a row per cluster, indexed by KEYS
    groups: list[object]               # the grouping column's values, in order
    width: float

    def x(self, cluster: int, group: int) -> float:
        return cluster + (group - (len(self.groups) - 1) / 2) * self.width

    def protocol(self, key: tuple) -> str:
        return str(self.first["protocol"].get(key, ""))


def layout(table: pd.DataFrame, group: str) -> Layout:
    t = order(table)
    dps = datapaths(t)
    camps = t["campaign"].nunique()
    keys = list(dict.fromkeys(tuple(r) for r in t[KEYS].itertuples(index=False, name=None)))
    first = t.drop_duplicates(subset=KEYS).set_index(KEYS)
    labels = [label(pd.Series({**first.loc[k].to_dict(), "campaign": k[0], "profile": k[1], "datapath": k[2]}),
                    dps, camps) for k in keys]
    groups = sorted(t[group].dropna().unique(), key=lambda v: (str(type(v)), v))
    return Layout(t, keys, labels, first, groups, 0.8 / max(1, len(groups)))


def ticks(ax: plt.Axes, lay: Layout) -> None:
    """The clusters' labels under the axis, the baseline's in bold."""
    ax.set_xticks(np.arange(len(lay.keys)))
    ax.set_xticklabels(lay.labels, rotation=45, ha="right", fontsize=8)
    for tick, k in zip(ax.get_xticklabels(), lay.keys):
        if lay.protocol(k) == "none":
            tick.set_fontweight("bold")


def group_handles(lay: Layout, group_fmt: Callable[[object], str]) -> list:
    """Legend patches telling the groups apart by hatch on white (colour is the protocol's)."""
    from matplotlib.patches import Patch
    return [Patch(facecolor="white", edgecolor="black", hatch=HATCHES[gi % len(HATCHES)], label=group_fmt(g))
            for gi, g in enumerate(lay.groups)]


def show_zero(ax: plt.Axes) -> None:
    """A dashed line at 0 (the baseline of an overhead panel) is hidden by the bottom spine when
    every overhead is positive: start the axis a little below 0 so it can be seen."""
    lo, hi = ax.get_ylim()
    if lo >= 0:
        ax.set_ylim(-0.04 * (hi - lo), hi)


def mark_userspace(ax: plt.Axes, table: pd.DataFrame) -> None:
    """Every panel that holds a userspace fallback of a kernel datapath says so on the panel itself."""
    if "datapath" in table and any(protocols.not_comparable(p, d) for p, d in zip(table["protocol"], table["datapath"])):
        ax.text(0.99, 0.98, f"userspace datapath\n({protocols.userspace_fallbacks()}):\nNOT comparable with the papers",
                transform=ax.transAxes, ha="right", va="top", fontsize=7, color="#b00000",
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "#b00000", "linewidth": 0.5})
