"""Sections of the report beyond the summary tables (analysis/report.py includes them when their
data exist): attach time per NAS algorithm, bytes on the wire, where the attach time goes per SBI
operation, the cipher micro-benchmark, the RAN interfaces, the UPF security functions."""
from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from analysis import markdown as md
from analysis.datasets import Datasets

log = logging.getLogger(__name__)

NAS_COLUMNS = ["campaign", "nas", "profile", "protocol", "datapath", "role", "n_boots", "n_samples", "mean", "ci",
               "baseline_mean", "overhead", "overhead_ci"]


def nas_section(attach: pd.DataFrame) -> str:
    """Attach time per NAS algorithm, unprotected (baseline) and protected (every overlay profile),
    each overhead against the baseline with the same NAS algorithms; '' without NAS-tagged rows."""
    if attach.empty or "nas" not in attach.columns:
        return ""
    t = attach[attach["nas"].astype(str) != ""]
    if t.empty:
        return ""
    t = t.assign(_base=t["protocol"] != "none").sort_values(["campaign", "nas", "_base", "profile", "role"])
    untagged = int((attach["nas"].astype(str) == "").sum())
    note = (f" {untagged} row(s) of runs that recorded no NAS choice are in the attach table only." if untagged else "")
    return ("## Attach time per NAS algorithm\n\n"
            "NAS ciphering/integrity as proven from each run's N2 Security Mode Commands (`NAS=`, docs/nas.md); "
            "never pooled across algorithms. Baseline rows are the unprotected attach, the others protected "
            "(their overhead is against the baseline with the same NAS algorithms)." + note + "\n\n"
            + md.table(t[[c for c in NAS_COLUMNS if c in t.columns]]))


def extra_sections(results: Path, out: Path, attach: pd.DataFrame, ds: Datasets) -> list[str]:
    """The sections that have data, in report order; their files go below `out`. `attach`: the
    attach summary table; `ds`: the loaded results (per-registration frame: ``ds.attach``)."""
    from analysis import crypto, pq, ran_report, secfn, wire_bytes_report
    registrations = ds.attach
    sections = [nas_section(attach)]
    try:
        sections.append(wire_bytes_report.markdown_section(results, out / "wire-bytes", link_dir="wire-bytes/",
                                                           registrations=registrations))
    except Exception as exc:
        log.warning("bytes section left out: %s", exc)
        sections.append(f"## Bytes on the wire\n\n_(left out: {exc})_\n")
    from analysis import sbi_report
    try:
        sections.append(sbi_report.markdown_section(results, out, ds.runs, registrations, attach))
    except Exception as exc:  # noqa: BLE001 - a section that cannot be built is flagged, not fatal
        log.warning("per-operation section left out: %s", exc)
        sections.append(f"## Where the attach time goes (per SBI operation)\n\n_(left out: {exc})_\n")
    sections.append(crypto.markdown_section(results, out / "crypto", link_dir="crypto/"))
    sections.append(pq.markdown_section(results, out / "pq", link_dir="pq/", attach=attach))
    sections.append(ran_report.section(out, ds))
    # D-ITG runs are not in the datasets: the section reads its own runs
    sections.append(secfn.markdown_section(results, out / "figures", link_prefix="figures/"))
    return [s for s in sections if s]
