"""Our RAN runs (experiments ``ran-procedures`` and ``f1u``) as summary tables, in one format
shared with the authors' data (analysis/ran_authors.py) so the report and the figures treat both
alike (``source`` = ``ours`` | ``authors``).

- ``procedure_rows``: one row per registration and interface (F1-C, E1) of every usable
  ``ran-procedures`` run (a run is one stack boot): its timing captures (files of kind pcap,
  ``iface`` n2 | f1c | e1, ``purpose`` timing) are read one tshark per capture, all runs' captures
  in parallel, and paired per run (analysis/parse/ran_procedures.py); every registration is a
  row whatever its ``status``.
- ``procedure_summary``: both start points (``definition``: ``request`` = the paper's, ``ngap``
  = the authors' scripts') per profile, over boots (analysis/tables.py ``boot_summary``), the
  overhead against the baseline of the same campaign, interface, definition, RAN, host and CPU;
  for each DTLS profile a ``net`` row = DTLS minus the relay-only profile (``dtls-relay-plain``,
  profile parameter ``relay: plain``) with the Welch interval over both sides' boots: the
  relay's own cost stays its own row and the subtraction is a labelled row, never silent.
- ``f1u_summary``: the ``f1u`` experiment's pings (path ``f1u`` or ``e2e``, RAN ``split`` or
  ``oai``) from the general RTT table (analysis/tables.py ``rtt``, which never pools paths or RANs).
"""
from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from analysis import tables
from analysis.datasets import RUN_COLUMNS, Datasets, run_columns
from analysis.parse import ran_procedures as rp
from analysis.results import Run
from analysis.stats import CONFIDENCE, welch_diff

log = logging.getLogger(__name__)

PROCEDURES = "ran-procedures"
F1U = "f1u"
SUMMARY_COLUMNS = ["source", "campaign", "experiment", "interface", "definition", "ran", "uu", "profile", "protocol",
                   "relay", "datapath", "host", "cpu", "placement", "n_boots", "n_samples", "mean", "sd", "ci", "ci_basis",
                   "pooled_mean", "pooled_ci", "ci_z", "baseline_mean", "baseline_n_boots", "overhead",
                   "overhead_ci", "overhead_pct", "overhead_basis"]
DEFINITIONS = {"request": "request_ms", "ngap": "ngap_ms"}
DEFINITION_TEXT = {"request": "F1AP/E1AP setup request -> response (the paper's definition, Sec. 5.1)",
                   "ngap": "NGAP PDUSessionResourceSetupRequest -> F1AP/E1AP setup response (the authors' scripts)"}
BY = ["campaign", "experiment", "interface", "definition", "ran", "uu", "profile", "protocol", "relay", "datapath",
      "host", "cpu", "placement"]
MATCH = ["campaign", "experiment", "interface", "definition", "ran", "host", "cpu", "placement"]


RELAY_PLAIN, RELAY_NET = "plain", "net"      # the relay without its security; a DTLS-minus-relay row


def relay_of(run: Run) -> str:
    """The profile's ``relay`` parameter: ``dtls`` (a DTLS relay), ``plain`` (the relay without
    DTLS), '' for a profile that is no relay; a manifest without it is read from the catalogue."""
    params = run.get("profile_params") or {}
    if "relay" not in params:
        from testbed import profiles
        known = profiles.load().get(run.profile)
        params = known.params if known is not None and known.protocol == run.protocol else {}
    return str(params.get("relay") or "")


def secured_relay(relay: pd.Series) -> pd.Series:
    """Rows of a relay that carries its security (not the plain relay, not a difference row)."""
    r = relay.astype(object).where(relay.notna(), "").astype(str)
    return (r != "") & (r != RELAY_PLAIN) & (r != RELAY_NET)


def _timing_captures(run: Run) -> list:
    return [f for f in run.files("pcap") if f.attrs.get("purpose", "timing") == "timing"
            and f.attrs.get("iface") in ("n2", "f1c", "e1")]


def procedure_rows(runs: list[Run], workers: int = 0, errors: list[str] | None = None) -> pd.DataFrame:
    """One row per registration and interface of the usable ran-procedures runs (see above)."""
    jobs = [(run, _timing_captures(run)) for run in runs if run.usable and run.experiment == PROCEDURES]
    paths = [f.path for _, caps in jobs for f in caps]
    events = iter(rp.events_parallel(paths, workers, errors if errors is not None else []))
    parts = []
    for run, caps in jobs:
        evs = [e for _ in caps for e in next(events)]
        captured = {i: any(f.attrs.get("iface") == i for f in caps) for i in rp.INTERFACES}
        dicts = [d for i in rp.INTERFACES if captured[i] for d in rp.row_dicts(rp.pair(evs, i, True))]
        if not dicts:
            # a run whose timing captures hold no procedure at all still shows, as one row
            dicts = [{**rp.no_messages_row(), "interface": i} for i in rp.INTERFACES if captured[i]] or \
                    [rp.no_messages_row()]
        frame = rp.frame_of(dicts)
        head = {**run_columns(run), "ran": (run.get("parameters") or {}).get("ran") or "split",
                "relay": relay_of(run)}
        for k, v in reversed(list(head.items())):
            frame.insert(0, k, [v] * len(frame))
        parts.append(frame)
    if not parts:
        return pd.DataFrame(columns=RUN_COLUMNS + ["relay"] + rp.COLUMNS)
    return pd.concat(parts, ignore_index=True)


def _keyed(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    frame = frame.copy()
    for c in by:
        if c not in frame.columns:
            frame[c] = ""
        frame[c] = frame[c].astype(object).where(frame[c].notna(), "")
    return frame


def procedure_summary(rows: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per profile, interface and definition, over boots (see the module docstring)."""
    if rows.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    long = pd.concat([rows.assign(definition=d, ms=rows[col].astype(float)) for d, col in DEFINITIONS.items()],
                     ignore_index=True)
    long = _keyed(long[np.isfinite(long["ms"])], BY)
    if long.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    t = tables.boot_summary(long, BY, "ms", MATCH, confidence)
    t = t.assign(source="ours", ci_basis="boots", overhead_basis="boots", ci_z=math.nan)
    t = pd.concat([t, net_rows(t, confidence)], ignore_index=True)
    return t.reindex(columns=SUMMARY_COLUMNS)


def net_rows(t: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """For each DTLS row, DTLS minus the relay-only row measured the same way (over boots)."""
    rows = []
    if t.empty or "relay" not in t.columns:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    for _, g in t.groupby(MATCH + ["uu"], dropna=False):
        relay = g[g["relay"] == RELAY_PLAIN]
        for _, r in g[secured_relay(g["relay"])].iterrows():
            if len(relay) != 1:
                continue
            p = relay.iloc[0]
            d, h, _ = welch_diff(r["n_boots"], r["mean"], r["sd"], p["n_boots"], p["mean"], p["sd"], confidence)
            rows.append({**{c: r[c] for c in BY if c in r}, "source": r.get("source", "ours"),
                         "profile": f"{r['profile']} minus {p['profile']}", "relay": RELAY_NET,
                         "n_boots": r["n_boots"], "n_samples": r["n_samples"], "baseline_mean": p["mean"],
                         "baseline_n_boots": p["n_boots"], "overhead": d, "overhead_ci": h,
                         "overhead_pct": 100.0 * d / p["mean"], "overhead_basis": "boots", "ci_basis": "boots"})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS) if rows else pd.DataFrame(columns=SUMMARY_COLUMNS)


def status_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """Registrations per campaign, profile, interface and status (every status, complete too)."""
    cols = ["campaign", "profile", "interface", "status"]
    if rows.empty:
        return pd.DataFrame(columns=cols + ["runs", "registrations", "duplicate_copies"])
    r = _keyed(rows, cols)
    return (r.groupby(cols, sort=True).agg(runs=("run", "nunique"), registrations=("status", "size"),
                                           duplicate_copies=("copies", "sum")).reset_index())


def f1u_summary(ds: Datasets, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The f1u experiment's RTT rows (interface = path: f1u or e2e) in the summary format."""
    rtt = tables.rtt(ds, confidence)
    t = rtt[rtt["experiment"] == F1U] if not rtt.empty else rtt
    if t.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS + ["size"])
    t = t.assign(source="ours", interface=t["path"].replace("", F1U), definition="",
                 ran=t["ran"].replace("", "split"), relay="", ci_basis="boots", overhead_basis="boots",
                 ci_z=math.nan)
    return t.reindex(columns=SUMMARY_COLUMNS + ["size"])


def f1u_throughput(ds: Datasets, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """iperf3 over F1-U (the f1u experiment's iperf3 files) from the general throughput table."""
    tp = tables.throughput(ds, confidence)
    return tp[tp["experiment"] == F1U] if not tp.empty else tp
