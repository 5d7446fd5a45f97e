"""The report: Markdown with figures, tables as CSV and Markdown, the papers' values beside
ours, and the runs' provenance with invalid or incomplete runs flagged (and left out).

Output folder layout::

    report.md             the report
    figures/<name>.png|pdf
    tables/<name>.csv|md  summary tables (analysis.tables) + runs.csv + headline.csv
"""
from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from analysis import figures as figs
from analysis.counterparts import counterpart_frame
from analysis import markdown as md
from analysis import tables as tbl
from analysis.datasets import Datasets
from analysis.headlines import Headline, headlines
from analysis.namespace_headlines import empty_table_line, is_namespace, missing_lines, namespace_frame
from analysis.namespace_headlines import section as namespace_section
from analysis.reference import REFERENCES
from analysis.results import Run, discover

log = logging.getLogger(__name__)

TABLE_TITLES = {
    "rtt": "Ping RTT (ms) per experiment, profile and payload size",
    "attach": "UE attach time (ms) per profile and role (cold/warm)",
    "cpu": "CPU time of the core (NFs, their overlay namespace holders, MongoDB; not the simulated RAN) (s) per profile and number of UEs",
    "cpu_host": "Host-wide CPU time (s: every CPU's user, system, irq and softirq time, kernel threads included, minus an idle window of the same length) per profile and number of UEs",
    "cpu_slopes": "CPU time per additional UE (least squares)",
    "throughput": "Throughput (Mbit/s, receiver) per profile and transport",
}
def headline_frame(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (published figure, experiment that measured it); figures that these results
    do not measure get one row with ``experiment`` empty and ``profiles`` = "not measured"."""
    rows = []
    for ref in REFERENCES:
        # the namespace micro-benchmark (experiment "overlay": two namespaces, no 5G stack) is
        # never set beside the papers' full-stack figures; its numbers stay in the RTT table
        # (analysis/namespace_headlines.py sets them apart, with the caveat)
        found: list[Headline | None] = [h for h in headlines(ref, tables) if not is_namespace(h)] or [None]
        for h in found:
            rows.append({
                "result": ref.key, "experiment": h.experiment if h else "",
                "datapath": ("userspace: NOT comparable" if h.datapath == "userspace" else h.datapath)
                            if h else "",
                "measured": h.measured if h else float("nan"), "ci99": h.ci if h else float("nan"),
                "range": (f"{h.low:.3f} to {h.high:.3f}" if h and len(h.profiles) > 1 else ""),
                "unit": ref.unit, "paper": ref.paper_value(), "paper_ci": ref.paper_ci,
                "aggregate": ref.aggregate,
                "profiles": (", ".join(h.profiles) if h and len(h.profiles) <= 4
                             else f"{len(h.profiles)} profiles" if h else "not measured"),
                "source": f"{ref.source}, {ref.section}", "paper_says": ref.text,
            })
    return pd.DataFrame(rows)


def provenance_frame(runs: list[Run]) -> pd.DataFrame:
    return pd.DataFrame([r.provenance() for r in runs])


def dropped_frame(runs: list[Run]) -> pd.DataFrame:
    """Runs left out of the statistics, counted per experiment, profile and reason (the
    manifest's state/validity reason as analysis/results.py load_run words it)."""
    rows = [{"experiment": r.experiment, "profile": r.profile, "reason": "; ".join(r.problems)}
            for r in runs if not r.usable]
    cols = ["experiment", "profile", "reason"]
    if not rows:
        return pd.DataFrame(columns=cols + ["runs"])
    return (pd.DataFrame(rows).groupby(cols, dropna=False, sort=True).size()
            .rename("runs").reset_index())


def mixed_datapaths(runs: list[Run]) -> list[str]:
    seen: dict[tuple[str, str, str], set[str]] = {}
    for r in runs:
        if r.usable:
            seen.setdefault((r.campaign, r.experiment, r.profile), set()).add(r.datapath)
    return [f"{c}/{e}/{p}: runs on {' and '.join(sorted(d))} datapaths (reported as separate rows)"
            for (c, e, p), d in sorted(seen.items()) if len(d) > 1]


def write_tables(tables: dict[str, pd.DataFrame], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
        (folder / f"{name}.md").write_text(md.table(frame), encoding="utf-8")


def build(results: Path, out: Path, figure_names: list[str] | None = None,
          datasets: Datasets | None = None, permutations: int = 0) -> Path:
    """Discover runs under ``results``, write figures, tables and ``report.md`` into ``out``
    (``datasets``: already loaded from ``results``, to skip loading them again)."""
    ds = datasets if datasets is not None else Datasets.load(discover(results))
    runs = ds.runs
    tables = tbl.all_tables(ds, permutations=permutations)
    drawn = figs.draw_all(tables, out / "figures", figure_names, ds)
    head = headline_frame(tables)
    prov = provenance_frame(runs)
    write_tables({**tables, "headline": head, "headline_namespace": namespace_frame(tables), "runs": prov,
                  "dropped": dropped_frame(runs),
                  "counterparts": counterpart_frame()}, out / "tables")
    from analysis.report_sections import extra_sections
    text = render(results, runs, ds, tables, head, prov, drawn, extra_sections(results, out, tables["attach"], ds))
    path = out / "report.md"
    path.write_text(text, encoding="utf-8")
    log.info("wrote %s", path)
    return path


def render(results: Path, runs: list[Run], ds: Datasets, tables: dict[str, pd.DataFrame],
           head: pd.DataFrame, prov: pd.DataFrame, drawn: dict[str, list[Path]],
           extra: list[str] | None = None) -> str:
    used = [r for r in runs if r.usable]
    excluded = [r for r in runs if not r.usable]
    out = [f"# Results report: `{results}`\n",
           f"{len(runs)} runs found, **{len(used)} used** in the statistics, "
           f"**{len(excluded)} left out** (invalid or incomplete; listed below).\n",
           "Statistics: the independent replication is a stack boot, not a sample. Each boot's samples "
           "are averaged; `mean`, `sd` and the 99 % t interval `ci` are over those boot means, with "
           "`n_boots` boots and `n_samples` samples (with one boot there is no interval: n/a). Overheads "
           "are against the baseline (protocol `none`) of the same campaign, experiment, payload size or "
           "role, with the 99 % Welch interval of the difference of boot means (both sides' boot-to-boot "
           "uncertainty). `pooled_mean`/`pooled_ci` treat every sample as independent, as the papers "
           "did: descriptive only, for comparison. Campaigns, and kernel and userspace datapaths, are "
           "never pooled; warm-up files, lost pings and duplicate replies are left out. `p_perm` (when "
           "computed): two-sided permutation p-value of the samples against the baseline's.\n"]
    out.append("## Headline results beside the papers\n")
    out.append("Hosts differ from the papers' (compare overheads and orderings, not absolute times). "
               "Where several profiles match, *measured* is their mean, *ci99* is sqrt(sum h_i^2)/k, "
               "and *range* their spread; percentages divide by the baseline mean.\n")
    measured = head[head["profiles"] != "not measured"]
    out.append("Each paper value is matched only to the profiles of that paper's own configurations "
               "(`analysis/reference.py`); *aggregate* says whether the paper reports the mean over them or "
               "its slowest (max) / fastest (min) configuration, and *measured* is the same over ours.\n")
    ns = namespace_frame(tables)
    out.append(md.table(measured[["result", "experiment", "datapath", "aggregate", "measured", "ci99", "range",
                                  "unit", "paper", "paper_ci", "profiles", "source"]])
               if len(measured) else empty_table_line(ns))
    out += missing_lines(head.loc[head["profiles"] == "not measured", "result"].tolist(), ns)
    out += namespace_section(ns)
    out.append("\n## Profiles and the papers' configurations\n")
    measured_profiles = sorted({r.profile for r in used})
    out.append("Each profile measured here, the paper configuration it reproduces (suite, authentication, "
               "mode), under which conditions the paper reports it, or why it has no counterpart; profiles "
               "with the same settings under another paper's name are named, never pooled. Every profile of "
               "the catalogue: `tables/counterparts.csv`.\n")
    out.append(md.table(counterpart_frame(measured_profiles)) if measured_profiles else "_(no runs used)_\n")
    out.append("\n## Runs left out\n")
    dropped = dropped_frame(runs)
    out.append(f"{len(excluded)} run(s) left out of every statistic (only complete runs with valid "
               "true are used), per experiment, profile and reason:\n\n" + md.table(dropped)
               if len(dropped) else "None: every run found is complete and valid.\n")
    out.append("\n## Flags\n")
    flags = [f"- LEFT OUT `{r.directory}`: {'; '.join(r.problems)}" for r in excluded]
    flags += [f"- note `{r.directory}`: {'; '.join(r.notes)}" for r in used if r.notes]
    flags += [f"- MIXED DATAPATHS {m}" for m in mixed_datapaths(runs)]
    flags += [f"- UNREADABLE raw file left out: {e}" for e in ds.file_errors]
    incomplete = ds.attach[ds.attach["status"] != "complete"] if not ds.attach.empty else ds.attach
    if len(incomplete):
        flags.append(f"- {len(incomplete)} registration(s) without a complete attach time (left out of "
                     "the means; counted in the `incomplete` column): "
                     + ", ".join(sorted(set(incomplete["status"].astype(str)))))
    if not ds.attach.empty:
        from analysis.datasets import retried_cold
        retried = int(retried_cold(ds.attach).sum())
        if retried:
            flags.append(f"- {retried} cold registration(s) left out of the cold statistics: not the "
                         "UE's first attempt in its capture (a retry or a re-registration)")
    for r in used:
        for e in r.get("events") or []:
            if isinstance(e, dict) and e.get("level") == "warning" and str(e.get("message", "")).startswith("loss:"):
                flags.append(f"- LOSS `{r.directory}`: {e['message'][6:]}")
    if not ds.ping.empty and ds.ping["lost"].any():
        flags.append(f"- {int(ds.ping['lost'].sum())} ping(s) lost (see `loss_pct`)")
    out.append("\n".join(flags) + "\n" if flags else "No flags: every run is complete and valid.\n")
    out.append("\n## Figures\n")
    for name, paths in drawn.items():
        png = [p for p in paths if p.suffix == ".png"]
        if png:
            out.append(f"### {figs.FIGURES[name].description}\n\n![{name}](figures/{png[0].name}) "
                       f"([PDF](figures/{name}.pdf))\n")
        else:
            out.append(f"### {figs.FIGURES[name].description}\n\n_(no data for this figure in these results)_\n")
    out.append("\n## Tables\n")
    for name, frame in tables.items():
        out.append(f"### {TABLE_TITLES.get(name, name)}\n\nCSV: `tables/{name}.csv`\n\n{md.table(frame)}")
    out += [f"\n{s}" for s in extra or []]
    out.append("\n## Runs (provenance from the manifests)\n")
    cols = ["campaign", "experiment", "profile", "run", "state", "valid", "datapath", "started",
            "commit", "dirty", "host", "kernel", "used", "problems", "notes"]
    out.append(md.table(prov[[c for c in cols if c in prov.columns]]) if not prov.empty else "_(no runs)_\n")
    return "\n".join(out)
