"""Tidy frames over the usable runs of a results tree (one loader per raw-file kind).

Each frame starts with the run columns (campaign, experiment, profile, protocol, plane,
datapath, run, mode, auth, version, cipher, cert) so statistics can group by any of them.
Runs that are not usable (results.Run.problems) are left out here; the report lists them.
Warm-up ping files (attr ``warmup: true``) are left out and logged.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from analysis.parse.cpu import parse_cpu
from analysis.parse.iperf3 import iperf3_summary
from analysis.parse.ngap_attach import STATUS_COMPLETE, attach_times
from analysis.parse.ping import parse_ping
from analysis.parse.tshark import TsharkError
from analysis.results import RawFile, Run
from testbed import placement

log = logging.getLogger(__name__)
T = TypeVar("T")

PARAM_COLUMNS = ["mode", "auth", "version", "cipher", "cert"]
# measurement parameters that change what a number means: runs that differ in one are never
# pooled (and a profile is only compared with a baseline measured the same way)
MEASUREMENT_COLUMNS = ["host", "cpu", "placement", "interval", "count", "sets"]
# the RAN variant (manifest parameters ``ran``: ueransim, oai, split; ``uu``: the radio's AS
# security, e.g. nea2-nia2; empty for older runs): never pooled either
RUN_COLUMNS = (["campaign", "experiment", "profile", "protocol", "plane", "datapath", "run"] + PARAM_COLUMNS
               + MEASUREMENT_COLUMNS + ["ran", "uu", "nas"])


def nas_of(run: Run) -> str:
    """The run's NAS algorithms (nea<i>-nia<j>): the choice its N2 captures proved (manifest
    `nas.proven`, testbed/validity.py), else the one it asked for; "" when neither is known.
    Attach times are grouped by it, never pooled across algorithms."""
    rec = run.get("nas") or {}
    return str(rec.get("proven") or (run.get("parameters") or {}).get("nas") or "")


def placement_of(run: Run) -> str:
    """Where a cluster run's NFs ran, as testbed/placement.py `key` groups it ("" on one Docker
    host): runs of different placements are never pooled."""
    rec = run.get("placement")
    return placement.key(rec if isinstance(rec, dict) else None)


def run_columns(run: Run) -> dict[str, object]:
    params = run.get("profile_params") or {}
    measured = run.get("parameters") or {}
    host = run.get("host") or {}
    return {"campaign": run.campaign, "experiment": run.experiment, "profile": run.profile,
            "protocol": run.protocol, "plane": run.get("plane"), "datapath": run.datapath,
            "run": run.run_id, **{c: params.get(c) for c in PARAM_COLUMNS},
            "host": host.get("hostname"), "cpu": host.get("cpu_model"), "placement": placement_of(run),
            "interval": measured.get("interval"),
            "count": measured.get("pings"), "sets": measured.get("sets"), "ran": measured.get("ran"),
            "uu": measured.get("uu"), "nas": nas_of(run)}


def _with_run(frame: pd.DataFrame, run: Run, **extra: object) -> pd.DataFrame:
    cols = {**run_columns(run), **extra}
    head = pd.DataFrame({k: [v] * len(frame) for k, v in cols.items()}, index=frame.index)
    return pd.concat([head, frame], axis=1)


def _empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in RUN_COLUMNS + columns})


def _parse(f: RawFile, parser: Callable[[Path], T], errors: list[str] | None) -> T | None:
    """Parse one raw file; a broken file is logged and appended to ``errors`` (the report
    flags it), not fatal for the whole analysis."""
    try:
        return parser(f.path)
    except (ValueError, OSError, KeyError, TsharkError) as exc:
        msg = f"{f.path}: {exc}"
        log.warning("raw file left out: %s", msg)
        if errors is not None:
            errors.append(msg)
        return None


def _parsed(runs: list[Run], kind: str, parser: Callable[[Path], T],
            errors: list[str] | None) -> Iterator[tuple[Run, RawFile, T]]:
    """(run, file, what ``parser`` made of it) for each raw file of ``kind`` in the usable runs;
    warm-up files (only ping writes them) and files that do not parse (see _parse) are left out."""
    for run in runs:
        if not run.usable:
            continue
        for f in run.files(kind):
            if f.attrs.get("warmup"):
                log.info("%s: warm-up file left out", f.path)
                continue
            parsed = _parse(f, parser, errors)
            if parsed is not None:
                yield run, f, parsed


def ping(runs: list[Run], errors: list[str] | None = None) -> pd.DataFrame:
    """One row per ICMP sequence number: size (payload bytes), set, path (the f1u experiment's
    f1u | e2e; empty elsewhere), seq, rtt_ms, lost, dup."""
    parts = [_with_run(frame, run, size=f.attrs.get("size"), set=f.attrs.get("set"),
                       path=f.attrs.get("path"), file=f.path.name)
             for run, f, frame in _parsed(runs, "ping", parse_ping, errors)]
    if not parts:
        return _empty(["size", "set", "path", "file", "seq", "rtt_ms", "lost", "dup"])
    return pd.concat(parts, ignore_index=True)


def role_of(run: Run, f: RawFile, frame: pd.DataFrame) -> pd.Series:
    """cold/warm per registration: the capture's ``role`` attribute, else the manifest's UE whose
    IMSI ends with the SUCI MSIN of the Registration Request (null protection scheme, as
    UERANSIM sends it), else the UEs in manifest order when the counts agree, else unknown."""
    if f.attrs.get("role"):
        return pd.Series([str(f.attrs["role"])] * len(frame), index=frame.index, dtype=str)
    ues = [u for u in (run.get("ues") or []) if isinstance(u, dict)]
    roles = pd.Series(["unknown"] * len(frame), index=frame.index, dtype=str)
    for i, msin in frame["msin"].items():
        if msin:
            owners = {str(u.get("role", "unknown")) for u in ues if str(u.get("imsi", "")).endswith(str(msin))}
            if len(owners) == 1:
                roles[i] = owners.pop()
    if (roles == "unknown").all() and ues and len(ues) == len(frame):
        roles[:] = [str(u.get("role", "unknown")) for u in ues]
    return roles


def attach(runs: list[Run], errors: list[str] | None = None, workers: int = 0) -> pd.DataFrame:
    """One row per registration in the N2 timing captures (+ failed attempts from manifests)."""
    jobs = [(run, f) for run in runs if run.usable for f in run.files("pcap")
            if f.attrs.get("iface", "n2") == "n2" and f.attrs.get("purpose", "timing") == "timing"]
    # one tshark per capture, as many at once as there are cores (0 = os.cpu_count())
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        frames = list(pool.map(lambda job: _parse(job[1], attach_times, errors), jobs))
    parts = []
    for (run, f), frame in zip(jobs, frames):
        if frame is None:
            continue
        frame = frame.drop(columns=["ns_registration_request", "ns_pdu_session_accept"])
        frame.insert(0, "role", role_of(run, f, frame))
        parts.append(_with_run(frame, run, file=f.path.name))
    for run in runs:
        if not run.usable:
            continue
        fails = [a for a in (run.get("attach_failures") or []) if isinstance(a, dict)]
        if fails:
            roles = {u.get("name"): u.get("role") for u in run.get("ues") or [] if isinstance(u, dict)}
            frame = pd.DataFrame({"role": [str(roles.get(a.get("ue"), "unknown")) for a in fails],
                                  "ue": [str(a.get("ue")) for a in fails],
                                  "attach_ms": np.nan,
                                  "status": [f"failed: {a.get('reason', '')}" for a in fails]})
            parts.append(_with_run(frame, run, file="manifest.json"))
    if not parts:
        return _empty(["file", "role", "ue", "attach_ms", "status"])
    out = pd.concat(parts, ignore_index=True)
    out["attach_ms"] = out["attach_ms"].astype(float)
    return out


def retried_cold(frame: pd.DataFrame) -> pd.Series:
    """Cold registrations that were not the UE's first attempt in their capture (a retry or a
    re-registration): the core had seen the UE already, so they are not cold samples."""
    if "attempt" not in frame.columns or frame.empty:
        return pd.Series(False, index=frame.index)
    attempt = pd.to_numeric(frame["attempt"], errors="coerce")
    return (frame["role"].astype(str) == "cold") & (attempt > 1)


def complete_attach(frame: pd.DataFrame) -> pd.DataFrame:
    """Complete registrations that count: retried or re-registered cold ones are left out."""
    return frame[(frame["status"] == STATUS_COMPLETE) & ~retried_cold(frame)]


def cpu(runs: list[Run], errors: list[str] | None = None) -> pd.DataFrame:
    """One row per (file, service): ues, rep, service, cpu_usec, cpu_s."""
    parts = [_with_run(frame, run, ues=f.attrs.get("ues"), rep=f.attrs.get("rep"), file=f.path.name)
             for run, f, frame in _parsed(runs, "cpu", parse_cpu, errors)]
    if not parts:
        return _empty(["ues", "rep", "file", "service", "cpu_usec", "cpu_s"])
    return pd.concat(parts, ignore_index=True)


def is_ran_service(service: pd.Series) -> pd.Series:
    """UERANSIM containers (gnb, gnb-net, ue1, ue2, ue-scale): the simulated RAN, not the core."""
    s = service.astype(str)
    return (s == "gnb") | s.str.startswith("gnb-") | s.str.startswith("ue")


def cpu_totals(frame: pd.DataFrame, include_ran: bool = False) -> pd.DataFrame:
    """CPU seconds summed over the core's services (NFs, their overlay namespace holders
    ``<nf>-net``, MongoDB), one row per accounting file; the simulated RAN is left out unless
    ``include_ran``."""
    keys = [c for c in RUN_COLUMNS + ["ues", "rep", "file"] if c in frame.columns]
    if frame.empty:
        return pd.DataFrame(columns=keys + ["cpu_s"])
    frame = frame[~is_host_row(frame["service"])]
    if not include_ran:
        frame = frame[~is_ran_service(frame["service"])]
    return frame.groupby(keys, dropna=False, as_index=False)["cpu_s"].sum()


def is_host_row(service: pd.Series) -> pd.Series:
    """Host-wide rows of the accounting file (`host:<field>`, testbed/hostcpu.py), not a container."""
    return service.astype(str).str.startswith("host:")


def cpu_host(frame: pd.DataFrame) -> pd.DataFrame:
    """Host-wide CPU seconds per accounting file: `cpu_s` = host:net (every CPU's user, nice,
    system, irq, softirq and steal time over boot -> last PDU session, minus an idle window of
    the same length), beside the window's busy and idle-busy seconds."""
    keys = [c for c in RUN_COLUMNS + ["ues", "rep", "file"] if c in frame.columns]
    host = frame[is_host_row(frame["service"])] if not frame.empty else frame
    if host.empty:
        return pd.DataFrame(columns=keys + ["cpu_s", "busy_s", "idle_busy_s", "softirq_s", "irq_s"])
    wide = host.pivot_table(index=keys, columns="service", values="cpu_s", aggfunc="first",
                            dropna=False).reset_index()
    wide = wide.rename(columns={"host:net": "cpu_s", "host:busy": "busy_s", "host:idle-busy": "idle_busy_s",
                                "host:softirq": "softirq_s", "host:irq": "irq_s"})
    return wide[[c for c in keys + ["cpu_s", "busy_s", "idle_busy_s", "softirq_s", "irq_s"] if c in wide.columns]]


def throughput(runs: list[Run], errors: list[str] | None = None) -> pd.DataFrame:
    """One row per iperf3 file: transport, sender_mbps, receiver_mbps, ..."""
    rows = []
    for run, f, summary in _parsed(runs, "iperf3", iperf3_summary, errors):
        if f.attrs.get("transport"):
            summary["transport"] = f.attrs["transport"]
        rows.append({**run_columns(run), "file": f.path.name, **summary})
    if not rows:
        return _empty(["file", "transport", "sender_mbps", "receiver_mbps"])
    return pd.DataFrame(rows)


@dataclass
class Datasets:
    """All tidy frames of one results tree, loaded once."""
    runs: list[Run]
    ping: pd.DataFrame = field(default_factory=pd.DataFrame)
    attach: pd.DataFrame = field(default_factory=pd.DataFrame)
    cpu: pd.DataFrame = field(default_factory=pd.DataFrame)
    throughput: pd.DataFrame = field(default_factory=pd.DataFrame)
    file_errors: list[str] = field(default_factory=list)   # raw files that could not be parsed

    @classmethod
    def load(cls, runs: list[Run]) -> "Datasets":
        errors: list[str] = []
        return cls(runs=runs, ping=ping(runs, errors), attach=attach(runs, errors), cpu=cpu(runs, errors),
                   throughput=throughput(runs, errors), file_errors=errors)
