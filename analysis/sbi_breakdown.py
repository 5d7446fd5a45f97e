"""Where the attach time goes: per-operation SBI latency over a results tree (docs/analysis.md
"Per-operation breakdown").

For every usable run-sbi run and iteration (= one stack boot): the iteration's SBI wire capture
(`iface: sbi`), decrypted with the run's own key files where it is protected (analysis/decrypt.py),
gives one row per HTTP/2 request (analysis/parse/sbi_ops.py); NF names come from the run's
addresses (nf-configs/stack.yaml moved to the run's address slot, manifest `instance.slot`). Each
request is placed in the attach window (Registration Request -> PDU Session Establishment Accept,
from the iteration's N2 timing capture: analysis/datasets.py) it starts in: `phase` = the UE's role
(`cold`, `warm`), else `other` (start-up, heartbeats, after the attach).

Tables:
- `operations`: per profile, phase, operation and NF pair: n (boots), mean, sd, 99 % t interval
  over boots (each boot's mean first), n_samples, and the Welch overhead against the baseline of
  the same campaign, host, CPU, NAS, phase and operation (analysis/tables.py boot_summary);
- `budget`: per profile and role, the measured attach-time overhead beside the SBI's share: the
  overhead of `sbi_ms` (the union of the attach's request intervals: time during which at least
  one SBI request was open, nested and parallel requests counted once) and the sum of the
  per-operation overheads (each operation's overhead x its mean count per attach; nested requests
  counted in each, so an upper bound of the SBI share), and `elsewhere` = attach overhead - SBI
  (union) overhead (N2, NAS, the UE, PFCP, waiting): intervals combined as sqrt(h1^2 + h2^2)
  (conservative: the two are measured on the same attaches);
- `top`: the operations that add the most time per profile and role, with their intervals;
- `n2-procedures`: N2 procedure times (NGAP request -> response, AMF turnarounds) per profile,
  phase and procedure, intervals over boots and the overhead (where the SBI's time shows on N2).
"""
from __future__ import annotations

import logging
import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import decrypt
from analysis.datasets import complete_attach, run_columns
from analysis.parse import sbi_ops
from analysis.results import RawFile, Run
from testbed import instance, stack

log = logging.getLogger(__name__)

PHASE_OTHER = "other"
BY = ["campaign", "experiment", "profile", "protocol", "datapath", "host", "cpu", "placement", "nas", "phase", "operation", "pair"]
MATCH = ["campaign", "experiment", "host", "cpu", "placement", "nas", "phase", "operation", "pair"]
ROLE_BY = ["campaign", "experiment", "profile", "protocol", "datapath", "host", "cpu", "placement", "nas", "role"]
ROLE_MATCH = ["campaign", "experiment", "host", "cpu", "placement", "nas", "role"]


def names(run: Run) -> dict[str, str]:
    """Address -> node name of every node on every network, at the run's address slot."""
    slot = int(((run.get("instance") or {}).get("slot")) or 0)
    values = instance.shift(stack.load(), slot)
    out: dict[str, str] = {}
    for node, spec in (values.get("nodes") or {}).items():
        for addr in (spec.get("networks") or {}).values():
            out.setdefault(str(addr), str(node))
    return out


def sbi_captures(run: Run) -> list[RawFile]:
    return [f for f in run.files("pcap") if f.attrs.get("iface") == "sbi" and not f.attrs.get("view")]


def read_capture(run: Run, capture: RawFile) -> tuple[list[dict[str, Any]], str]:
    plan = decrypt.plan(run, capture)
    if plan.decode is None:
        return [], plan.status
    # one pass: the stack's SBI port decoded as what it carries on the wire (the overlay's
    # Decryption.carrier: TLS, whose ALPN h2 gives HTTP/2; else HTTP/2, cleartext or inside ESP)
    rows = sbi_ops.requests(capture.path, plan.decode, ports=[stack.sbi_port()], detect=False)
    status = plan.status
    if not rows and plan.decode is not sbi_ops.CLEAR:
        status = f"not decrypted: {plan.status.removeprefix('decrypted ')} gave no readable HTTP/2"
    return sbi_ops.with_names(rows, names(run)), status


def load(runs: list[Run], workers: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per request, one row per capture with its decryption status) over the usable
    sbi runs; one tshark pass per capture, as many at once as there are cores."""
    jobs = [(run, f) for run in runs if run.usable and run.experiment == "sbi" for f in sbi_captures(run)]

    def one(job: tuple[Run, RawFile]) -> tuple[list[dict[str, Any]], str]:
        try:
            return read_capture(*job)
        except Exception as exc:       # noqa: BLE001 - one unreadable capture is flagged, not fatal
            log.warning("%s: SBI operations left out: %s", job[1].path, exc)
            return [], f"unreadable: {exc}"
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        results = list(pool.map(one, jobs))
    parts, status = [], []
    for (run, f), (rows, st) in zip(jobs, results):
        head = {**run_columns(run), "file": f.path.name, "iteration": f.attrs.get("iteration")}
        status.append({**head, "decryption": st, "requests": len(rows)})
        if rows:
            frame = pd.DataFrame(rows)
            parts.append(frame.assign(**{k: [v] * len(frame) for k, v in head.items()}))
    from analysis.tables import with_plane_labels      # profiles on other planes: <profile>@<planes>
    req = with_plane_labels(pd.concat(parts, ignore_index=True)) if parts else pd.DataFrame()
    if not req.empty:
        req["time_ms"] = (req["ns_response"].astype("Float64") - req["ns_request"].astype("Float64")) / 1e6
        req["pair"] = req["client_nf"].where(req["client_nf"] != "", req["client"]) + " -> " + \
            req["server_nf"].where(req["server_nf"] != "", req["server"])
    return req, with_plane_labels(pd.DataFrame(status)) if status else pd.DataFrame()


def windows(runs: list[Run], attach: pd.DataFrame) -> pd.DataFrame:
    """Complete attach windows per (campaign, run, iteration): role, start and end (epoch s)."""
    if attach.empty:
        return pd.DataFrame(columns=["campaign", "run", "iteration", "role", "start", "end", "attach_ms"])
    it_of = {(r.campaign, r.run_id, f.path.name): f.attrs.get("iteration") for r in runs for f in r.files("pcap")}
    a = complete_attach(attach)
    out = pd.DataFrame({"campaign": a["campaign"], "run": a["run"],
                        "iteration": [it_of.get((c, r, f)) for c, r, f in zip(a["campaign"], a["run"], a["file"])],
                        "role": a["role"].astype(str), "start": a["t_registration_request"].astype(float),
                        "end": a["t_pdu_session_accept"].astype(float), "attach_ms": a["attach_ms"].astype(float)})
    return out.reset_index(drop=True)


def with_phase(req: pd.DataFrame, win: pd.DataFrame) -> pd.DataFrame:
    """`phase` (cold/warm/other) and `window` (index into `win`, -1 outside) per request."""
    if req.empty:
        return req.assign(phase=pd.Series(dtype=str), window=pd.Series(dtype=int))
    phase, window = [PHASE_OTHER] * len(req), [-1] * len(req)
    by_key: dict[tuple[Any, Any, Any], list[tuple[int, float, float, str]]] = {}
    for i, w in win.iterrows():
        by_key.setdefault((w["campaign"], w["run"], w["iteration"]), []).append((int(i), w["start"], w["end"], w["role"]))
    t = req["ns_request"].astype(float) / 1e9
    for j, (c, r, it, ts) in enumerate(zip(req["campaign"], req["run"], req["iteration"], t)):
        for i, s, e, role in by_key.get((c, r, it), []):
            if s <= ts <= e:
                phase[j], window[j] = role, i
                break
    return req.assign(phase=phase, window=window)


def union_ms(intervals: list[tuple[float, float]]) -> float:
    """Total length (ms) of the union of (start, end) intervals in ns."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total / 1e6


def per_attach(req: pd.DataFrame, win: pd.DataFrame, runs_cols: pd.DataFrame) -> pd.DataFrame:
    """One row per attach window with SBI requests: role, attach_ms, sbi_ms (union), ops_ms (sum),
    requests, unanswered, plus the run columns and the capture file (the boot)."""
    if req.empty:
        return pd.DataFrame()
    rows = []
    inside = req[req["window"] >= 0]
    for i, g in inside.groupby("window"):
        w = win.loc[int(i)]
        done = g[g["ns_response"].notna()]
        intervals = [(float(a), float(b)) for a, b in zip(done["ns_request"], done["ns_response"])]
        first = g.iloc[0]
        rows.append({**{c: first[c] for c in runs_cols.columns if c in g.columns}, "role": w["role"],
                     "attach_ms": w["attach_ms"], "sbi_ms": union_ms(intervals),
                     "ops_ms": float(done["time_ms"].astype(float).sum()), "requests": len(g),
                     "unanswered": int(g["ns_response"].isna().sum())})
    return pd.DataFrame(rows)


def operations(req: pd.DataFrame) -> pd.DataFrame:
    """Per profile, phase, operation and NF pair: intervals over boots and overhead vs baseline;
    `per_attach`: the operation's mean count per attach window (cold/warm phases)."""
    from analysis.tables import boot_summary
    if req.empty:
        return pd.DataFrame()
    answered = req[req["ns_response"].notna()].copy()
    answered["time_ms"] = answered["time_ms"].astype(float)
    table = boot_summary(answered, BY, "time_ms", MATCH, 0.99, per_file=True)
    counts = (answered[answered["window"] >= 0].groupby(BY + ["run", "window"]).size().rename("k").reset_index()
              .groupby(BY)["k"].mean().rename("per_attach").reset_index())
    table = table.merge(counts, on=BY, how="left")
    unanswered = req[req["ns_response"].isna()]
    if not unanswered.empty:
        miss = unanswered.groupby(BY).size().rename("unanswered").reset_index()
        table = table.merge(miss, on=BY, how="left")
    else:
        table["unanswered"] = 0
    table["unanswered"] = table["unanswered"].fillna(0).astype(int)
    return table


def budget(attach_rows: pd.DataFrame, ops: pd.DataFrame, attach_table: pd.DataFrame) -> pd.DataFrame:
    """Per profile and role: attach overhead (the attach table's), SBI union overhead, sum of
    per-operation overheads, elsewhere."""
    from analysis.tables import boot_summary
    if attach_rows.empty:
        return pd.DataFrame()
    sbi = boot_summary(attach_rows, ROLE_BY, "sbi_ms", ROLE_MATCH, 0.99, per_file=True)
    keep = ROLE_BY + ["n_boots", "mean", "ci", "overhead", "overhead_ci"]
    out = sbi[keep].rename(columns={"mean": "sbi_ms", "ci": "sbi_ci", "overhead": "sbi_overhead",
                                    "overhead_ci": "sbi_overhead_ci"})
    if not attach_table.empty:
        at = attach_table.copy()
        for c in ROLE_BY:
            if c not in at.columns:
                at[c] = ""
            at[c] = at[c].astype(object).where(at[c].notna(), "")
        at = at[ROLE_BY + ["mean", "overhead", "overhead_ci"]].rename(
            columns={"mean": "attach_ms", "overhead": "attach_overhead", "overhead_ci": "attach_overhead_ci"})
        out = out.merge(at, on=ROLE_BY, how="left")
    else:
        out[["attach_ms", "attach_overhead", "attach_overhead_ci"]] = float("nan")
    if not ops.empty:
        o = ops[ops["phase"].isin(["cold", "warm"])].copy()
        o["contribution"] = o["overhead"].astype(float) * o["per_attach"].astype(float)
        o["contribution_ci2"] = (o["overhead_ci"].astype(float) * o["per_attach"].astype(float)) ** 2
        s = (o.rename(columns={"phase": "role"}).groupby([c for c in ROLE_BY], dropna=False)
             .agg(ops_overhead_sum=("contribution", lambda x: x.sum(min_count=1)),
                  ops_overhead_ci=("contribution_ci2", lambda x: math.sqrt(x.sum(min_count=1))
                                   if x.notna().any() else float("nan"))).reset_index())
        out = out.merge(s, on=ROLE_BY, how="left")
    out["elsewhere"] = out["attach_overhead"] - out["sbi_overhead"]
    out["elsewhere_ci"] = (out["attach_overhead_ci"] ** 2 + out["sbi_overhead_ci"] ** 2) ** 0.5
    return out


def top(ops: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The operations that add the most time per attach (overhead x count per attach), per
    profile and role, largest first."""
    if ops.empty:
        return pd.DataFrame()
    o = ops[ops["phase"].isin(["cold", "warm"]) & ops["overhead"].notna()].copy()
    o["adds_ms"] = o["overhead"].astype(float) * o["per_attach"].astype(float)
    o["adds_ci"] = o["overhead_ci"].astype(float) * o["per_attach"].astype(float)
    o = o.sort_values(["campaign", "profile", "phase", "adds_ms"], ascending=[True, True, True, False])
    return o.groupby(["campaign", "profile", "datapath", "phase"], sort=False).head(n)[
        ["campaign", "profile", "datapath", "phase", "operation", "pair", "n_boots", "per_attach", "baseline_mean",
         "mean", "ci", "overhead", "overhead_ci", "adds_ms", "adds_ci"]].reset_index(drop=True)


N2_BY = ["campaign", "experiment", "profile", "protocol", "datapath", "host", "cpu", "placement", "nas", "phase", "procedure"]
N2_MATCH = ["campaign", "experiment", "host", "cpu", "placement", "nas", "phase", "procedure"]


def n2_procedures(runs: list[Run], win: pd.DataFrame) -> pd.DataFrame:
    """N2 procedure times (analysis/parse/ngap_procedures.py) of every iteration's N2 timing
    capture, per profile, phase (the attach window they start in) and procedure: intervals over
    boots and the overhead against the baseline."""
    from analysis.parse import ngap_procedures
    from analysis.tables import boot_summary, with_plane_labels
    jobs = [(run, f) for run in runs if run.usable and run.experiment == "sbi" for f in run.files("pcap")
            if f.attrs.get("iface") == "n2" and f.attrs.get("purpose", "timing") == "timing"]

    def one(job: tuple[Run, RawFile]) -> list[dict[str, Any]]:
        try:
            return ngap_procedures.procedures(job[1].path)
        except Exception as exc:       # noqa: BLE001 - flagged, not fatal
            log.warning("%s: N2 procedures left out: %s", job[1].path, exc)
            return []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(one, jobs))
    rows = []
    for (run, f), procs in zip(jobs, results):
        ws = win[(win["campaign"] == run.campaign) & (win["run"] == run.run_id)
                 & (win["iteration"] == f.attrs.get("iteration"))] if not win.empty else win
        for r in procs:
            if r["ns_end"] is None:
                continue
            ts = int(r["ns_start"]) / 1e9
            inside = ws[(ws["start"] <= ts) & (ts <= ws["end"])] if not ws.empty else ws
            rows.append({**run_columns(run), "file": f.path.name, "procedure": r["procedure"], "kind": r["kind"],
                         "phase": inside["role"].iloc[0] if len(inside) else PHASE_OTHER,
                         "ms": (int(r["ns_end"]) - int(r["ns_start"])) / 1e6})
    if not rows:
        return pd.DataFrame()
    return boot_summary(with_plane_labels(pd.DataFrame(rows)), N2_BY, "ms", N2_MATCH, 0.99, per_file=True)


def tables(runs: list[Run], attach: pd.DataFrame, attach_table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every breakdown table of a results tree: requests, decryption, operations, attaches,
    budget, top."""
    req, status = load(runs)
    win = windows(runs, attach)
    req = with_phase(req, win)
    ops = operations(req)
    from analysis.datasets import RUN_COLUMNS
    attaches = per_attach(req, win, pd.DataFrame(columns=RUN_COLUMNS + ["file"]))
    return {"sbi-requests": req, "sbi-decryption": status, "sbi-operations": ops, "sbi-attaches": attaches,
            "sbi-budget": budget(attaches, ops, attach_table), "sbi-top": top(ops),
            "n2-procedures": n2_procedures(runs, win)}


def write(tables_: dict[str, pd.DataFrame], out: Path) -> None:
    """CSV files (requests without their raw ns columns renamed: all columns kept)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in tables_.items():
        frame.to_csv(out / f"{name}.csv", index=False)
