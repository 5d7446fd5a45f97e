"""The RAN report section (issue 13): our ran-procedures and f1u runs beside the paper's printed
numbers (analysis/reference.py RAN_REFERENCES) and beside our analysis of the authors' published
data (analysis/ran_authors.py), with the figures of analysis/ran_figures.py.

``section`` is what ``make report`` appends to report.md (only when the results hold RAN runs;
otherwise one line saying where the authors'-data comparison is); ``write_report`` writes the
section as its own page (``python -m analysis ran``); ``write_authors_report`` the page on the
authors' data alone, with the check of their relay-only captures (``python -m analysis rwth``).
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import pandas as pd

from analysis import markdown as md
from analysis import protocols, ran_authors, ran_figures, ran_tables
from analysis.datasets import Datasets
from analysis.reference import RAN_REFERENCES, Reference
from analysis.headlines import headline, select
from analysis.results import discover

log = logging.getLogger(__name__)

# a paper value reads as "~120 us": it agrees with a number when the gap is within that number's
# interval plus this share of the printed value (the paper rounds to about one significant digit)
ROUNDING = 0.15
NAMES = {"f1c": "F1-C", "e1": "E1", "f1u": "F1-U", "e2e": "end-to-end"}
# the rows of the relay table: the plain relay and the difference row ({label}: the protocol's)
RELAY_WORDS = {ran_tables.RELAY_PLAIN: "relay only, no {label}, vs no security",
               ran_tables.RELAY_NET: "{label} minus relay only (the paper's way)"}


def _value(ref: Reference, table: pd.DataFrame) -> tuple[float, float, str]:
    """(value in the reference's unit, its 99 % half-width, the configurations) or NaNs."""
    h = headline(ref, select(table, ref.match)) if not table.empty else None
    if h is None:
        return math.nan, math.nan, ""
    names = h.profiles
    if ref.aggregate in ("min", "max"):
        vals = select(table, ref.match)
        vals = vals[vals[ref.quantity].notna()]
        pick = vals[ref.quantity].idxmin() if ref.aggregate == "min" else vals[ref.quantity].idxmax()
        names = [str(vals["profile"].loc[pick])]
    return h.measured, h.ci, ", ".join(names) if len(names) <= 2 else f"mean of {len(names)} configurations"


def _fmt(v: float, h: float) -> str:
    if math.isnan(v):
        return "not measured"
    return f"{v:.1f}" + (f" ± {h:.1f}" if not math.isnan(h) else " (no interval)")


def _ours_groups(ours: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Our rows per campaign and datapath class: a userspace IPsec/WireGuard datapath is never
    averaged into the kernel numbers set beside the paper (its own, marked row)."""
    if ours.empty:
        return [("", ours)]
    userspace = pd.Series([protocols.not_comparable(str(p), str(d)) for p, d in zip(ours["protocol"], ours["datapath"])],
                          index=ours.index)
    cls = userspace.map({True: "userspace datapath: NOT comparable", False: ""})
    many = ours["campaign"].nunique() > 1
    return [("; ".join(x for x in ((str(c) if many else ""), k) if x), g)
            for (c, k), g in ours.groupby([ours["campaign"], cls], sort=True)]


def comparison(authors: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """One row per published RAN value (and per campaign / datapath class of ours): the paper's
    number, our analysis of the authors' files, ours per start point (procedures) and whether the
    authors' files give the paper's number."""
    rows = []
    for ref in RAN_REFERENCES:
        a, ah, aconf = _value(ref, authors)
        paper = float(ref.value) if ref.value is not None else math.nan
        agrees = "" if math.isnan(a) or math.isnan(paper) else (
            "yes" if abs(a - paper) <= (0 if math.isnan(ah) else ah) + ROUNDING * abs(paper)
            else "NO: differs")
        procedure = ref.match.get("interface") in ("f1c", "e1")
        groups = _ours_groups(ours)
        found = [(w, g) for w, g in groups if not select(g, ref.match).empty] or groups[:1]
        for which, group in found:
            row = {"result": ref.key + (f" [{which}]" if which else ""), "paper": f"~{ref.value:g}",
                   "unit": ref.unit, "aggregate": ref.aggregate, "authors_data": _fmt(a, ah),
                   "authors_configurations": aconf, "paper_from_authors_data": agrees}
            configurations = []
            for d in (("ngap", "request") if procedure else ("",)):
                sub = group[group["definition"] == d] if not group.empty else group
                v, h, conf = _value(ref, sub)
                row[f"ours_{d}_start" if d else "ours"] = _fmt(v, h)
                configurations.append(conf)
            row["ours_configurations"] = next((c for c in configurations if c), "")
            row["paper_says"] = ref.text
            rows.append(row)
    cols = ["result", "paper", "authors_data", "authors_configurations", "paper_from_authors_data",
            "ours", "ours_ngap_start", "ours_request_start", "ours_configurations", "unit", "aggregate", "paper_says"]
    return pd.DataFrame(rows).reindex(columns=cols).fillna("")


def relay_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per source and interface: the DTLS overhead with the relay in it, the relay's own overhead
    (relay-only profile / the authors' res.txt), and the difference (what the paper prints), each
    its own row: nothing is subtracted silently."""
    relay = summary["relay"].astype(object).where(summary["relay"].notna(), "").astype(str) if not summary.empty \
        else summary
    t = summary[(relay != "") & summary["interface"].isin(["f1c", "e1"])] if not summary.empty else summary
    if t.empty:
        return pd.DataFrame()
    what = [RELAY_WORDS.get(str(r), "{label} (relay included) vs no security").format(label=protocols.label(str(p)))
            for r, p in zip(t["relay"], t["protocol"])]
    out = t.assign(row=what, overhead_us=1000 * t["overhead"], ci99_us=1000 * t["overhead_ci"])
    out = out.sort_values(["source", "interface", "definition", "relay", "profile"])
    return out[["source", "interface", "definition", "row", "profile", "overhead_us", "ci99_us", "overhead_basis",
                "n_boots", "n_samples"]]


def _authors_notes(files: list[ran_authors.AuthorsFile], ft: pd.DataFrame, comp: pd.DataFrame) -> list[str]:
    notes = []
    by_rel = {f.rel: f for f in files}
    for _, r in ft[~ft["printed_ok"]].iterrows():
        notes.append(f"`{r['file']}`: printed `{r['printed']}`, but its {r['n']} value lines give mean "
                     f"{r['mean']:.6f}, sd {r['sd']:.6f}, z half-width {r['ci_z']:.6f}"
                     + ran_authors.printed_from_subset(by_rel[r["file"]]) + ".")
    for _, r in comp[comp["paper_from_authors_data"] == "NO: differs"].drop_duplicates("paper_says").iterrows():
        notes.append(f"**{r['result'].split(' [')[0]}**: the paper prints ~{r['paper'].lstrip('~')} {r['unit']}, the authors' "
                     f"own files give {r['authors_data']} {r['unit']} ({r['authors_configurations']}).")
    fastest = comp[comp["result"].str.startswith("f1c-ipsec-fastest")]
    if len(fastest) and fastest.iloc[0]["authors_configurations"] not in ("", "aes256cbc"):
        notes.append(f"**f1c-ipsec-fastest**: the paper names AES256-HMAC; in the authors' files the fastest of "
                     f"the six is `{fastest.iloc[0]['authors_configurations']}` (their AES256-HMAC file, "
                     f"aes256-sha2_256, is {_overhead(ft, 'f1c', 'aes256cbc'):.0f} us over the baseline).")
    dtls = ft[ft["setup"].isin(ran_authors.secured_relay_setups())]
    for interface, g in dtls.groupby("interface"):
        relay = ft[(ft["kind"] == f"{interface}-relay")]
        base = ft[(ft["interface"] == interface) & (ft["setup"] == "noenc")]
        if len(relay) == 1 and len(base) == 1:
            printed = sorted(set(g["subtracted"].dropna()))
            notes.append(f"{NAMES[str(interface)]} DTLS: {len(g)} DTLS configurations ({', '.join(g['security'])}), "
                         "averaged for the paper's single DTLS value. They subtract "
                         f"{', '.join(f'{p:.3f}' for p in printed)} ms as the relay's cost, the difference of their "
                         f"printed rounded means ({relay.iloc[0]['mean']:.3f} - {base.iloc[0]['mean']:.3f}); the "
                         f"unrounded means give {relay.iloc[0]['mean'] - base.iloc[0]['mean']:.3f} ms.")
        cut = g[g["n"] < 1000]
        if len(cut):
            notes.append(f"{NAMES[str(interface)]} DTLS files keep {', '.join(map(str, cut['n']))} of 1,000 "
                         "registrations: the others were dropped before the summary (no rule recorded).")
    for _, r in ft[ft["setup"] == "relay"].iterrows():
        notes.append(f"`{r['file']}` (relay only) lists only the times below a cut the authors did not record "
                     f"(about {ran_authors.RELAY_CUT_MS[r['interface']]:g} ms; "
                     f"{int(r['n'])} values), while their no-security and IPsec files keep every time: the "
                     "relay cost they subtract comes from filtered data.")
    if (ft["measure"] == "throughput").any():
        notes.append("The F1-U iperf3 files hold one number per run without a unit (their script keeps "
                     "a field of iperf3's receiver line); their printed lines are recomputed in the file table but "
                     "not compared with anything.")
    return notes


def _overhead(ft: pd.DataFrame, interface: str, profile: str) -> float:
    x = ft[(ft["interface"] == interface) & (ft["profile"] == profile) & (ft["measure"] == "procedure")]
    b = ft[(ft["interface"] == interface) & (ft["setup"] == "noenc") & (ft["measure"] == "procedure")]
    return 1000 * float(x.iloc[0]["mean"] - b.iloc[0]["mean"]) if len(x) and len(b) else math.nan


def _figures(summary: pd.DataFrame, out: Path, rel: str) -> list[str]:
    lines = []
    for name, paths in ran_figures.draw_all(summary, out).items():
        png = [p for p in paths if p.suffix == ".png"]
        if png:
            lines.append(f"### {ran_figures.FIGURES[name][0]}\n\n![{name}]({rel}{png[0].name}) "
                         f"([PDF]({rel}{name}.pdf))\n")
    return lines


def _write(tables: dict[str, pd.DataFrame], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
        (folder / f"{name}.md").write_text(md.table(frame), encoding="utf-8")


def has_ran_runs(ds: Datasets) -> bool:
    return any(r.experiment in (ran_tables.PROCEDURES, ran_tables.F1U) for r in ds.runs)


def section(out: Path, ds: Datasets, authors_dir: Path | None = ran_authors.DEFAULT_DIR,
            figures_rel: str = "figures/", tables_rel: str = "tables/", always: bool = False) -> str:
    """Markdown of the RAN section; figures into out/figures, tables into out/tables."""
    if not always and not has_ran_runs(ds):
        return ("\n## RAN interfaces (F1-C, F1-U, E1, end-to-end)\n\nNo `ran-procedures` or `f1u` runs in these "
                "results. The paper's RAN values beside our analysis of the authors' published data: "
                "`python -m analysis rwth` (docs/analysis.md).\n")
    errors: list[str] = []
    rows = ran_tables.procedure_rows(ds.runs, errors=errors)
    ours = pd.concat([ran_tables.procedure_summary(rows), ran_tables.f1u_summary(ds)], ignore_index=True)
    files = ran_authors.load(authors_dir) if authors_dir is not None else []
    authors = ran_authors.summary(files) if files else pd.DataFrame(columns=ran_tables.SUMMARY_COLUMNS)
    comp = comparison(authors, ours)
    both = pd.concat([ours, authors.reindex(columns=ran_tables.SUMMARY_COLUMNS)], ignore_index=True)
    counts = ran_tables.status_counts(rows)
    relay = relay_table(both)
    tput = ran_tables.f1u_throughput(ds)
    _write({"ran-comparison": comp, "ran-summary": both, "ran-registrations": counts,
            "ran-procedure-rows": rows, "ran-relay": relay}, out / "tables")
    lines = ["\n## RAN interfaces (F1-C, F1-U, E1, end-to-end)\n",
             "Michaelides et al., WiSec 2026: the cost of IPsec and DTLS on the split RAN's F1-C, F1-U and E1 "
             "and end-to-end, split against monolithic. Procedure times are per registration with two start "
             "points: *request* = F1AP UE Context Setup / E1AP Bearer Context Setup request -> response (the "
             "paper's definition, Sec. 5.1), *ngap* = the UE's NGAP PDUSessionResourceSetupRequest -> the same "
             "response (what the authors' scripts measured, so what their numbers are). Our intervals are "
             "99 % t over stack boots (a run is one boot); the authors' registration files are one boot each, "
             "so theirs are per sample (`ci_basis`).\n",
             "### Beside the paper and the authors' data\n",
             "*paper*: its printed value; *authors_data*: our analysis of the authors' published files "
             "(their NGAP start); *ours*: our runs (per start point for procedures). DTLS values are net of "
             f"the relay's own cost as the paper prints them; the parts are in the next table. CSV: "
             f"`{tables_rel}ran-comparison.csv`.\n", md.table(comp.drop(columns=["paper_says"]), digits=1)]
    lines += ["\n### DTLS and the relay's own cost\n",
              "The relay-only profile (`dtls-relay-plain`; the authors' `res.txt`) measures socat without DTLS: "
              "its overhead is its own row, and *DTLS minus relay only* is a labelled difference with its own "
              "interval, never a silent subtraction.\n",
              md.table(relay, digits=1) if not relay.empty else "_(no DTLS rows)_\n"]
    lines += ["\n### Figures\n"] + _figures(both, out / "figures", figures_rel)
    lines += ["\n### Our registrations by status\n",
              "Every registration of every usable ran-procedures run, whatever happened (a procedure "
              "without its response is counted here, never dropped silently; `duplicate_copies`: the same "
              f"message seen twice within a few ms, counted once). Per registration: `{tables_rel}ran-procedure-rows.csv`.\n",
              md.table(counts) if not counts.empty else "_(no ran-procedures runs)_\n"]
    if errors:
        lines.append("\nUnreadable captures left out: " + "; ".join(errors) + "\n")
    ours_rows = ours[ours["relay"] != ran_tables.RELAY_NET] if not ours.empty else ours
    lines += ["\n### Our runs\n", md.table(ours_rows[["experiment", "interface", "definition", "ran", "profile",
                                                      "datapath", "n_boots", "n_samples", "mean", "ci", "overhead",
                                                      "overhead_ci"]]) if not ours_rows.empty else "_(none)_\n"]
    if not tput.empty:
        lines += ["\n### iperf3 over F1-U (Mbit/s, receiver)\n",
                  md.table(tput[["profile", "datapath", "transport", "n_boots", "mean", "ci", "overhead", "overhead_ci"]])]
    if files:
        ft = ran_authors.file_table(files)
        notes = _authors_notes(files, ft, comp)
        lines += ["\n### Notes on the authors' data\n"] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def write_report(results: Path, out: Path, authors_dir: Path | None = ran_authors.DEFAULT_DIR) -> Path | None:
    """The RAN section as its own page out/ran.md (None when the results hold no RAN run)."""
    ds = Datasets.load(discover(results))
    if not has_ran_runs(ds):
        return None
    text = section(out, ds, authors_dir)
    return md.write_page(out, "ran", "RAN interfaces", text.split("\n", 2)[2])


def authors_page(folder: Path, out: Path, check_captures: bool = True) -> str:
    """Markdown of the page on the authors' data alone (figures/tables into ``out``)."""
    files = ran_authors.load(folder)
    ft = ran_authors.file_table(files)
    authors = ran_authors.summary(files)
    comp = comparison(authors, pd.DataFrame(columns=ran_tables.SUMMARY_COLUMNS))
    comp = comp.drop(columns=[c for c in comp.columns if c.startswith("ours")])
    check = ran_authors.relay_capture_check(files) if check_captures else pd.DataFrame()
    _write({"rwth-files": ft, "rwth-summary": authors, "rwth-comparison": comp, "rwth-relay-captures": check},
           out / "tables")
    ok = int(ft["printed_ok"].sum())
    lines = [f"Source: {ran_authors.SOURCE}, read from `{folder}` ({len(files)} result files).\n",
             "### Their printed summaries, recomputed\n",
             f"{ok} of {len(ft)} printed `Results:` lines are reproduced to every printed digit from the files' "
             "own values (mean, sample sd, and their normal-quantile half-width `ci_z`); `ci_t` is the t "
             "half-width over the same samples and `ci_boots` the 99 % t interval over stack boots where "
             "the file says how its values fall into boots. DTLS means are printed `raw-relay`: `mean` is the "
             "raw one, `subtracted` what they took off, `mean_net` their result. CSV: `tables/rwth-files.csv`.\n",
             md.table(ft.drop(columns=["unit", "measure", "ran", "kind"]), digits=3),
             "\n### The paper's numbers from the authors' files\n", md.table(comp.drop(columns=["paper_says"]), digits=1),
             "\n### DTLS and the relay's own cost\n", md.table(relay_table(authors), digits=1)]
    if not check.empty:
        lines += ["\n### Their relay-only captures, read by our extraction\n",
                  "Each capture holds one registration; our NGAP-start time, cut to microseconds as their tool "
                  "did, for every capture present, in file-number order, below their unrecorded cut "
                  "(`ran_authors.RELAY_CUT_MS`), against the lines of their `res.txt`.\n", md.table(check)]
    lines += ["\n### Figures\n"] + _figures(authors, out / "figures", "figures/")
    lines += ["\n### Notes\n"] + [f"- {n}" for n in _authors_notes(files, ft, comp)] + [""]
    return "\n".join(lines)


def write_authors_report(folder: Path, out: Path, check_captures: bool = True) -> Path:
    path = md.write_page(out, "rwth", "The RAN study's published data, analysed",
                         authors_page(folder, out, check_captures))
    assert path is not None
    return path
