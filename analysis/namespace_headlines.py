"""The namespace runs beside the papers (issue 22 point 8): experiment `overlay` (make run-overlay)
runs an overlay between two network namespaces on this host, without the 5G stack. Its numbers
are kept out of the headline table on purpose (analysis/report.py headline_frame): the papers
measured their overheads through a whole 5G user plane. A report of namespace runs only would
then say "(no rows)" and call the papers' values "not measured"; this module gives the reason
in that place, and the namespace runs' own overheads beside the papers' values with the caveat.
"""
from __future__ import annotations

import pandas as pd

from analysis import markdown as md
from analysis import protocols
from analysis.headlines import Headline, headlines
from analysis.reference import REFERENCES

NAMESPACE = "overlay"            # the experiment of make run-overlay (docs/experiments.md)
COLUMNS = ["result", "datapath", "measured", "ci99", "unit", "paper", "profiles", "source"]
CAVEAT = ("Experiment `overlay` runs the overlay between two network namespaces of this host joined by "
          "a veth pair: no 5G core, no gNB or UE, no GTP-U tunnel, no container network. Its overhead "
          "is the overlay's alone on this host's datapath (kernel, or a userspace fallback marked "
          "NOT comparable), against a plaintext namespace baseline; the papers measured theirs through "
          "the whole 5G user plane of their testbed. Beside the paper's value for orientation, never "
          "as a reproduction.")


def is_namespace(h: Headline) -> bool:
    """A headline of namespace runs (`experiment` is `campaign/overlay` when campaigns are many)."""
    return h.experiment.split("/")[-1] == NAMESPACE


def namespace_frame(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per published figure that namespace runs measured, their value (one row per campaign and
    datapath), the paper's beside it."""
    rows = []
    for ref in REFERENCES:
        for h in headlines(ref, tables):
            if not is_namespace(h):
                continue
            rows.append({
                "result": ref.key,
                "datapath": "userspace: NOT comparable" if h.datapath == "userspace" else h.datapath,
                "measured": h.measured, "ci99": h.ci, "unit": ref.unit, "paper": ref.paper_value(),
                "profiles": ", ".join(h.profiles) if len(h.profiles) <= 4 else f"{len(h.profiles)} profiles",
                "source": f"{ref.source}, {ref.section}",
            })
    return pd.DataFrame(rows, columns=COLUMNS)


def missing_lines(missing: list[str], ns: pd.DataFrame) -> list[str]:
    """The papers' values no full-stack run measured, those the namespace runs did apart."""
    if not missing:
        return []
    by_ns = set(ns["result"]) if not ns.empty else set()
    only_ns = [k for k in missing if k in by_ns]
    none = [k for k in missing if k not in by_ns]
    out = []
    if only_ns:
        out.append(f"\nMeasured only by namespace runs (experiment `{NAMESPACE}`), kept out of the table above "
                   f"on purpose (no 5G stack; below, beside the papers): {', '.join(only_ns)}.\n")
    if none:
        out.append(f"\nNot measured in these results (no matching runs): {', '.join(none)}.\n")
    out.append("All published values with the papers' words: `tables/headline.csv`.\n")
    return out


def empty_table_line(ns: pd.DataFrame) -> str:
    """What stands in place of an empty headline table: why it is empty."""
    if ns.empty:
        return "_No run here matches a paper value (the values and what they need: `tables/headline.csv`)._\n"
    return (f"_No full-stack run matches a paper value: the runs that do are namespace runs (experiment "
            f"`{NAMESPACE}`, no 5G stack), which this table leaves out on purpose; their overheads beside "
            "the papers' values follow in \"Namespace runs beside the papers\"._\n")


def section(ns: pd.DataFrame) -> list[str]:
    """The namespace runs' overheads beside the papers' values, with the datapath caveat."""
    if ns.empty:
        return []
    fallbacks = protocols.userspace_fallbacks()
    return ["\n### Namespace runs beside the papers (not a reproduction)\n",
            CAVEAT + (f" Userspace fallbacks here: {fallbacks}." if fallbacks else "") + "\n",
            md.table(ns.round({"measured": 3, "ci99": 3})),
            "\nThe same rows: `tables/headline_namespace.csv`.\n"]
