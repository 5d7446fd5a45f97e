"""Signalling bytes and packets per UE attach, cold and warm, per interface, from the run-sbi
captures (docs/wire-bytes.md).

A UE's attach window is the one the attach time is measured over (analysis/parse/ngap_attach.py,
from the iteration's N2 timing capture): its Registration Request to its PDU Session
Establishment Accept. Every frame of every wire capture of the same iteration (N2, SBI, and N4
when captured; all taken on the same host clock) inside that window is counted: packets and
frame bytes per interface, and their sum. Overlay traffic on the wire (ESP, WireGuard, TLS,
DTLS, handshakes made during the window) is counted with the rest: that is what the overlay
costs. Captures with a `view` (run-sbi's gNB-side plaintext N2, view=gnb-plaintext) or marked
`tap` are not the wire: they give the window, never the counts. Statistics: one boot = one iteration (a fresh core); profiles are set
against the baseline of the same campaign, interface, role and NAS algorithms.
"""
from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from analysis.datasets import complete_attach, role_of, run_columns
from analysis.parse.ngap_attach import attach_times
from analysis.parse.tshark import tshark_records
from analysis.results import RawFile, Run, discover
from testbed import tshark

log = logging.getLogger(__name__)

ALL = "all"          # the interface label of the sum over interfaces


Frames = tuple[list[float], list[int]]


def frames(pcap: Path) -> Frames:
    """(epoch times ascending, frame lengths) of every frame of a capture: one tshark pass (the
    report reads them from the capture's shared export instead: analysis/wire_bytes.py read)."""
    rows = tshark_records(pcap, ["frame.time_epoch", "frame.len"])
    pairs = sorted((float(t), int(n)) for t, n, *_ in rows if t)
    return [t for t, _ in pairs], [n for _, n in pairs]


def in_window(times: list[float], lengths: list[int], start: float, end: float) -> tuple[int, int]:
    """(packets, bytes) of the frames with start <= time <= end."""
    lo, hi = bisect.bisect_left(times, start), bisect.bisect_right(times, end)
    return hi - lo, sum(lengths[lo:hi])


def wire_captures(run: Run, timing: RawFile) -> list[RawFile]:
    """The wire captures of the timing capture's iteration (only itself when it has none)."""
    it = timing.attrs.get("iteration")
    if it is None:
        return [timing]
    return [f for f in run.files("pcap") if f.attrs.get("iteration") == it and f.attrs.get("purpose") != "leak"
            and not f.attrs.get("tap") and not f.attrs.get("view") and f.attrs.get("iface")]


def _timing_captures(run: Run) -> list[RawFile]:
    return [f for f in run.files("pcap") if f.attrs.get("iface") == "n2" and f.attrs.get("purpose", "timing") == "timing"]


def _runs(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.usable and r.experiment == "sbi"]


def frame_captures(runs: list[Run]) -> list[tuple[Run, RawFile]]:
    """Every capture whose frames the attach windows count, with its run."""
    return [(run, f) for run in _runs(runs) for timing in _timing_captures(run) for f in wire_captures(run, timing)]


def run_rows(run: Run, attach: pd.DataFrame | None = None,
             frames_of: Mapping[Path, Frames] | None = None) -> list[dict[str, object]]:
    """One row per (registration, interface) of a run-sbi run, plus the interfaces' sum.
    `attach`: the registrations analysis/datasets.py already read (columns campaign, run, file,
    role, status, t_registration_request, ...); without it the timing captures are read here.
    `frames_of`: the captures' frames already read (analysis/wire_bytes.py read), by path."""
    out: list[dict[str, object]] = []
    known = frames_of or {}
    for timing in _timing_captures(run):
        if attach is not None:
            regs = attach[(attach["campaign"] == run.campaign) & (attach["run"] == run.run_id)
                          & (attach["file"] == timing.path.name)]
        else:
            regs = attach_times(timing.path)
            regs.insert(0, "role", role_of(run, timing, regs))
        regs = complete_attach(regs)
        if regs.empty:
            continue
        captures = {f.attrs["iface"]: known[f.path] if f.path in known else frames(f.path)
                    for f in wire_captures(run, timing)}
        for _, reg in regs.iterrows():
            role = str(reg["role"])
            start, end = float(reg["t_registration_request"]), float(reg["t_pdu_session_accept"])
            total_p = total_b = 0
            for iface, (times, lengths) in sorted(captures.items()):
                p, b = in_window(times, lengths, start, end)
                total_p, total_b = total_p + p, total_b + b
                out.append({**run_columns(run), "file": timing.path.name, "role": role, "iface": iface,
                            "packets": p, "bytes": b, "attach_ms": float(reg["attach_ms"])})
            out.append({**run_columns(run), "file": timing.path.name, "role": role, "iface": ALL,
                        "packets": total_p, "bytes": total_b, "attach_ms": float(reg["attach_ms"])})
    return out


def samples(results: Path, attach: pd.DataFrame | None = None,
            frames_of: Mapping[Path, Frames] | None = None) -> pd.DataFrame:
    """Per registration and interface: packets and bytes in the attach window (usable sbi runs);
    `attach`: analysis/datasets.py's attach frame of the same results, if already loaded;
    `frames_of`: the captures' frames, if already read."""
    runs = _runs(discover(results))

    def one(run: Run) -> list[dict[str, object]]:
        try:
            return run_rows(run, attach, frames_of)
        except (tshark.TsharkError, ValueError, KeyError) as exc:
            log.warning("%s: attach bytes left out: %s", run.directory, exc)
            return []
    # tshark passes, one per core at a time (as analysis/datasets.py reads the captures)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return pd.DataFrame([row for rows in pool.map(one, runs) for row in rows])


BY = ["campaign", "experiment", "profile", "protocol", "datapath", "host", "cpu", "placement", "nas", "iface", "role"]
MATCH = ["campaign", "experiment", "host", "cpu", "placement", "nas", "iface", "role"]


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean packets and bytes per attach per profile, interface and role, intervals over boots
    (iterations), with the overhead against the baseline of the same interface, role and NAS."""
    from analysis.tables import boot_summary
    if frame.empty:
        return pd.DataFrame()
    cols = ["n_boots", "n_samples", "mean", "ci", "baseline_mean", "overhead", "overhead_ci"]
    b = boot_summary(frame, BY, "bytes", MATCH, 0.99, per_file=True)[BY + cols]
    p = boot_summary(frame, BY, "packets", MATCH, 0.99, per_file=True)[BY + cols]
    b = b.rename(columns={c: f"bytes_{c}" for c in cols if c not in ("n_boots", "n_samples")})
    p = p.rename(columns={c: f"packets_{c}" for c in cols if c not in ("n_boots", "n_samples")})
    return b.merge(p.drop(columns=["n_boots", "n_samples"]), on=BY, how="left")
