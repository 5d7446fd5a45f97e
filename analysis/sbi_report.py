"""The report section "Where the attach time goes" (docs/analysis.md "Per-operation breakdown"): the
cold-attach timelines (analysis/sbi_timeline.py), the operations that add the most time per profile,
the attach-time budget (what is on the SBI, what is elsewhere), and how each run's SBI capture was
read (cleartext, decrypted, or not, with the reason). Tables go to `sbi-ops/*.csv`."""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import decrypt, markdown, sbi_breakdown, sbi_timeline
from analysis.results import Run
from testbed import stack

log = logging.getLogger(__name__)

TOP_COLUMNS = ["profile", "datapath", "phase", "operation", "pair", "n_boots", "per_attach", "baseline_mean", "mean",
               "overhead", "overhead_ci", "adds_ms", "adds_ci"]
BUDGET_COLUMNS = ["profile", "datapath", "nas", "role", "n_boots", "attach_ms", "attach_overhead", "attach_overhead_ci",
                  "sbi_ms", "sbi_overhead", "sbi_overhead_ci", "ops_overhead_sum", "ops_overhead_ci", "elsewhere",
                  "elsewhere_ci"]
OPS_COLUMNS = ["profile", "datapath", "phase", "operation", "pair", "n_boots", "n_samples", "per_attach", "mean", "sd",
               "ci", "baseline_mean", "overhead", "overhead_ci", "unanswered"]
N2_COLUMNS = ["profile", "datapath", "phase", "procedure", "n_boots", "n_samples", "mean", "ci", "baseline_mean",
              "overhead", "overhead_ci"]
MAX_TIMELINES = 8


def _tables(runs: list[Run], attach: pd.DataFrame) -> dict[str, pd.DataFrame]:
    from analysis import tables
    from analysis.datasets import Datasets
    ds = Datasets(runs=runs, attach=attach)
    return sbi_breakdown.tables(runs, attach, tables.attach(ds))


def cli_tables(results: Path) -> tuple[pd.DataFrame, str, pd.DataFrame]:
    """`python -m analysis sbi-ops RESULTS`: the per-operation table and the budget."""
    from analysis.datasets import attach
    from analysis.results import discover
    runs = discover(results)
    t = _tables(runs, attach(runs))
    ops = t["sbi-operations"]
    # a capture that gave no request says why (an encrypted SBI without its keys, above all),
    # or a TLS run's tables are empty with no word (the guest's run-sbi tls13-aes128gcm)
    status = t["sbi-decryption"]
    for _, row in status[status["requests"] == 0].iterrows() if not status.empty else ():
        print(f"{row['run']}/{row['file']}: no SBI request paired ({row['profile']}): {row['decryption']}",
              file=sys.stderr)
    return (ops[[c for c in OPS_COLUMNS if c in ops.columns]] if not ops.empty else ops,
            "Attach-time budget: SBI share and elsewhere (ms)",
            t["sbi-budget"][[c for c in BUDGET_COLUMNS if c in t["sbi-budget"].columns]]
            if not t["sbi-budget"].empty else t["sbi-budget"])


def _capture(run: Run, iface: str, iteration: Any, purpose: str | None = None) -> Any:
    for f in run.files("pcap"):
        if f.attrs.get("iface") == iface and f.attrs.get("iteration") == iteration and not f.attrs.get("view") \
                and (purpose is None or f.attrs.get("purpose", "timing") == purpose):
            return f
    return None


def _panel(runs: dict[tuple[str, str], Run], req: pd.DataFrame, win: pd.DataFrame, i: int, title: str
           ) -> dict[str, Any] | None:
    w = win.loc[i]
    run = runs.get((w["campaign"], w["run"]))
    if run is None:
        return None
    start, end = int(round(w["start"] * 1e9)), int(round(w["end"] * 1e9))
    n2 = _capture(run, "n2", w["iteration"], "timing")
    n2 = n2 or next((f for f in run.files("pcap") if f.attrs.get("iface") == "n2"
                     and f.attrs.get("iteration") == w["iteration"]), None)
    sbi = _capture(run, "sbi", w["iteration"])
    hs: list[dict[str, Any]] = []
    if sbi is not None:
        plan = decrypt.plan(run, sbi)
        d = plan.decode
        # TLS decoded by port (Decryption.carrier), as the operations were read
        carried = (f"tcp.port=={stack.sbi_port()},{d.carrier}",) if d and d.carrier else ()
        hs = sbi_timeline.handshakes(sbi.path, dict(d.prefs) if d else None, tuple(d.extra) if d else (), carried)
    return {"title": title, "requests": req[req["window"] == i], "n2": sbi_timeline.n2_rows(n2.path, start, end)
            if n2 is not None else [], "handshakes": hs, "names": sbi_breakdown.names(run), "start_ns": start,
            "end_ns": end}


def timelines(runs: list[Run], req: pd.DataFrame, win: pd.DataFrame, out: Path) -> dict[str, list[Path]]:
    """One figure per protected profile with a cold window: its first cold attach below the
    baseline's first one (same campaign)."""
    if req.empty or win.empty:
        return {}
    by_run = {(r.campaign, r.run_id): r for r in runs}
    cold = req[(req["phase"] == "cold") & (req["window"] >= 0)]
    drawn: dict[str, list[Path]] = {}
    for campaign, g in cold.groupby("campaign"):
        base = g[g["protocol"] == "none"]
        if base.empty:
            continue
        bi = int(base.sort_values(["run", "iteration"])["window"].iloc[0])
        for profile, p in g[g["protocol"] != "none"].groupby("profile"):
            if len(drawn) >= MAX_TIMELINES:
                log.info("timelines: %d drawn, the other profiles left out", MAX_TIMELINES)
                return drawn
            pi = int(p.sort_values(["run", "iteration"])["window"].iloc[0])
            panels = [_panel(by_run, req, win, bi, f"baseline ({campaign}, {win.loc[bi]['attach_ms']:.1f} ms)"),
                      _panel(by_run, req, win, pi, f"{profile} ({win.loc[pi]['attach_ms']:.1f} ms)")]
            if all(panels):
                drawn[str(profile)] = sbi_timeline.figure(out, str(profile), panels)   # type: ignore[arg-type]
    return drawn


def markdown_section(results: Path, out: Path, runs: list[Run], attach: pd.DataFrame, attach_table: pd.DataFrame,
                     figure_prefix: str = "figures/", table_prefix: str = "sbi-ops/") -> str:
    """The section ('' without a run-sbi SBI capture); writes its CSVs under out/sbi-ops and its
    figures under out/figures."""
    if not any(r.usable and r.experiment == "sbi" and sbi_breakdown.sbi_captures(r) for r in runs):
        return ""
    t = sbi_breakdown.tables(runs, attach, attach_table)
    sbi_breakdown.write(t, out / "sbi-ops")
    win = sbi_breakdown.windows(runs, attach)
    drawn = timelines(runs, t["sbi-requests"], win, out / "figures")
    status = t["sbi-decryption"]
    lines = ["## Where the attach time goes (per SBI operation)\n",
             "Every HTTP/2 request of each iteration's SBI wire capture, paired with its response (same TCP "
             "connection and stream id); protected runs decrypted with the key material the run exported itself "
             "(`KEYS=1`: TLS key logs of the NFs, the ESP SAs of the IPsec holders). Validity was judged on the "
             "encrypted capture; decryption feeds this section only. Requests are placed in the attach window "
             "(Registration Request to PDU Session Establishment Accept) they start in. Intervals are 99 % over "
             "boots (iterations); overheads against the baseline of the same campaign, host, NAS, phase and "
             f"operation. Tables: `{table_prefix}sbi-operations.csv` (every operation), `sbi-budget.csv`, "
             "`sbi-top.csv`, `sbi-attaches.csv`, `sbi-requests.csv` (every request).\n"]
    if not status.empty:
        summary = (status.groupby(["profile", "decryption"]).agg(captures=("file", "count"),
                                                                 requests=("requests", "sum")).reset_index())
        lines.append("### How each capture was read\n\n" + markdown.table(summary))
        unread = status[status["decryption"].str.startswith("not decrypted")]
        if len(unread):
            lines.append(f"\n{len(unread)} capture(s) could not be decrypted: their profiles have no "
                         "per-operation rows (the reason is in the table).\n")
    for profile, paths in drawn.items():
        png = next((p for p in paths if p.suffix == ".png"), None)
        if png is not None:
            lines.append(f"### Cold attach timeline: baseline and {profile}\n\n![{png.stem}]({figure_prefix}{png.name}) "
                         f"([PDF]({figure_prefix}{png.stem}.pdf))\n")
    budget = t["sbi-budget"]
    if not budget.empty:
        lines.append("### The attach-time overhead: on the SBI and elsewhere (ms)\n\n"
                     "`sbi_ms`: time within the attach during which at least one SBI request was open (nested and "
                     "parallel requests once); `ops_overhead_sum`: sum over operations of overhead x count per "
                     "attach (nested requests counted in each: an upper bound); `elsewhere` = attach overhead - "
                     "SBI overhead (N2, NAS, the UE, PFCP, waiting), interval sqrt(h1^2 + h2^2).\n\n"
                     + markdown.table(budget[[c for c in BUDGET_COLUMNS if c in budget.columns]]))
    n2 = t["n2-procedures"]
    if not n2.empty:
        cold = n2[n2["phase"].isin(["cold", "warm"])]
        lines.append("\n### N2 procedure times in the attach (ms)\n\nPer NGAP procedure (request -> response) and AMF "
                     "turnaround (the UE's latest uplink message -> the AMF's next downlink message: SBI work "
                     "happens inside these), 99 % intervals over boots, overhead against the baseline. All phases: "
                     f"`{table_prefix}n2-procedures.csv`.\n\n"
                     + markdown.table(cold[[c for c in N2_COLUMNS if c in cold.columns]]))
    top = t["sbi-top"]
    if not top.empty:
        lines.append("\n### The operations that add the most time per attach (ms)\n\n"
                     "`adds_ms` = overhead x mean count per attach, with its 99 % interval; at most 10 per profile "
                     "and role.\n\n" + markdown.table(top[[c for c in TOP_COLUMNS if c in top.columns]]))
    return "\n".join(lines)
