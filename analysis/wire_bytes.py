"""Bytes on the wire: handshake bytes and packets, and the per-packet overhead of each protocol,
measured from a run's own capture and set beside the analytic overhead (docs/wire-bytes.md).

Every protocol's formula and handshake messages are its overlay plug-in's (`packet_overhead`,
`analytic_overheads`, `handshakes`, `protected_lengths`; <plug-in>/overhead.py); this module
builds the tables from them. Overheads are counted at the IP layer: the bytes an overlay adds to
one inner IP packet, outer IP header included (link-layer headers are the same with and without
it, so they cancel); an overlay below IP counts what it adds to the Ethernet frame (testbed/wire.py).
Handshakes are counted as whole frames (frame.len) and as IP bytes.

One tshark pass per capture: every capture is exported once (testbed/wire.py Export, with the
fields its run's plug-in asks for in `wire_fields`, through the content cache of
analysis/parse/tshark.py), captures in parallel, and everything (handshakes, protected and
baseline lengths, the frames the attach windows count) is read from that one export.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from analysis.parse import tshark as exports
from analysis.results import RawFile, Run
from testbed import profiles, registry, tshark, wire
from testbed.wire import Handshakes

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Handshakes", "analytic_table", "measured_lengths", "measured_overheads", "results_table"]
T = TypeVar("T")
Frames = tuple[list[float], list[int]]          # epoch times ascending, frame lengths


def analytic_table(sizes: tuple[int, ...] = (64, 1024)) -> pd.DataFrame:
    """The theoretical per-packet overhead of every overlay plug-in's catalogue profiles, per inner
    packet / payload size (each plug-in chooses which of its profiles stand for it)."""
    import pandas as pd
    rows: list[dict[str, object]] = []
    usable = [p for p in profiles.load().values() if not p.refused]
    for ov in registry.overlays():
        mine = [p for p in usable if p.protocol == ov.name]
        rows += [{"protocol": ov.name, **r} for r in ov.analytic_overheads(mine, sizes)]
    return pd.DataFrame(rows)


def measured_overheads(lengths: list[int], inner: list[int]) -> dict[int, int]:
    """{inner length: measured overhead}: the distinct protected lengths, ascending, matched to
    the known inner lengths, ascending (both overlays grow with the inner length, so the order
    is the same); a count mismatch raises with both lists."""
    seen = sorted(set(lengths))
    want = sorted(set(inner))
    if len(seen) != len(want):
        raise ValueError(f"{len(seen)} distinct protected lengths {seen} for {len(want)} inner "
                         f"lengths {want}: traffic other than the known payloads was captured")
    return {i: s - i for i, s in zip(want, seen)}


def measured_lengths(lengths: list[int], n_inner: int) -> tuple[list[int], list[tuple[int, int]]]:
    """(the protected lengths of the measured packets, ascending; [(length, count)] of the others).
    The measured echoes are SETS x PINGS of each of the n_inner sizes; with more distinct lengths
    than that, the n_inner most frequent ones are theirs and the rest is other traffic in the
    tunnel (run-overlay's fresh handshake is set off by one datagram, answered by an ICMP error),
    kept apart and counted rather than matched with an inner size."""
    counts = Counter(lengths)
    keep = {n for n, _ in counts.most_common(n_inner)} if len(counts) > n_inner > 0 else set(counts)
    return sorted(keep), sorted((n, c) for n, c in counts.items() if n not in keep)


# The unprotected packets whose lengths are the inner lengths, per experiment: the echo requests
# as GTP-U on N3 (stack runs), as plain ICMP between the namespaces (run-overlay): the protocols
# in the frame's stack, and ICMP type 8.
BASELINE_PACKETS = {"n3": ("gtp", "icmp"), "overlay": ("icmp",)}
# what the analysis itself reads from every export, beside the plug-ins' fields
FIELDS = wire.Fields(("frame.time_epoch", "icmp.type"))


# Captures that are not the measured wire: an endpoint's plaintext view (purpose "timing", e.g. the
# gNB's view of an ESP-protected N2) and the leak captures of every interface out of an endpoint's
# namespace (purpose "leak": evidence that nothing left in the clear, testbed/validity.py; in the
# namespace lab the same packets as the n3 capture, twice more, and in a stack run every network
# the endpoint is on). Reading them tripled a protected run's tshark passes and its table rows.
NOT_THE_WIRE = ("timing", "leak")


def wire_captures(run: Run) -> list[RawFile]:
    """The run's captures of the wire (none of NOT_THE_WIRE, no relay's tap)."""
    return [f for f in run.files("pcap") if f.attrs.get("purpose") not in NOT_THE_WIRE and not f.attrs.get("tap")]


def _plane(run: Run, f: RawFile) -> str:
    return str(f.attrs.get("iface") or run.get("plane"))


def values() -> dict[str, Any]:
    """The stack values the plug-ins read (relay ports ...), for the default RAN."""
    from testbed import ran, stack
    return ran.restrict(stack.load(), ran.default())


def export(run: Run, f: RawFile, stack_values: dict[str, Any]) -> wire.Export:
    """The capture's one shared export: the analysis' fields and those of the run's plug-in."""
    ov = registry.overlay(run.protocol)
    fields = FIELDS | (ov.wire_fields(_plane(run, f), stack_values) if ov.protects else wire.Fields())
    full = wire.Export.with_base(fields)
    return wire.Export.parse(exports.export(f.path, full.names, decode_as=full.decode_as), fields, f.path)


def each_capture(jobs: Sequence[tuple[Run, RawFile]], read: Callable[[Run, RawFile, wire.Export], T],
                 stack_values: dict[str, Any], workers: int = 0) -> list[T | tshark.TsharkError]:
    """`read(run, file, export)` for every capture, one tshark pass each (or none: cached), as many
    at once as there are cores; a capture tshark cannot read gives its error in its place. Only
    what `read` returns is kept, so a large tree is never held in memory at once."""
    def one(job: tuple[Run, RawFile]) -> T | tshark.TsharkError:
        try:
            return read(job[0], job[1], export(job[0], job[1], stack_values))
        except tshark.TsharkError as exc:
            return exc
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        return list(pool.map(one, jobs))


def frames(ex: wire.Export) -> Frames:
    """(epoch times ascending, frame lengths) of every frame of the export."""
    pairs = sorted((float(r["frame.time_epoch"]), int(r["frame.len"])) for r in ex.rows if r["frame.time_epoch"])
    return [t for t, _ in pairs], [n for _, n in pairs]


def baseline_lengths(ex: wire.Export, experiment: str) -> list[int]:
    """The distinct inner lengths: those of the experiment's unprotected echo requests."""
    found = [wire.ip_len(r) for r in ex.having(*BASELINE_PACKETS[experiment]) if wire.occurs(r, "icmp.type", ("8",))]
    return sorted(set(found))


def _overheads(row: dict[str, object], ov: Any, prof: Any, ex: wire.Export, inner: list[int]) -> None:
    """Measured protected lengths against the inner ones, and the plug-in's analytic overhead."""
    prot, others = measured_lengths(ov.protected_lengths(ex), len(inner))
    if not prot:
        return
    row["protected_lengths"] = " ".join(map(str, prot))
    if others:
        row["other_lengths"] = " ".join(f"{n}x{c}" for n, c in others)
    row["inner_lengths"] = " ".join(map(str, inner))
    if len(prot) == len(inner):
        row["overhead_measured"] = " ".join(str(p - i) for p, i in zip(prot, inner))
        analytic = [ov.packet_overhead(prof, i, ex) for i in inner]
        row["overhead_analytic"] = " ".join(str(a) for a in analytic) if None not in analytic else ""


def _head(r: Run, f: RawFile) -> dict[str, object]:
    return {"experiment": r.experiment, "profile": r.profile, "protocol": r.protocol, "run": r.run_id,
            "capture": f.path.name}


def _row(r: Run, f: RawFile, ex: wire.Export, base_len: dict[str, list[int]],
         stack_values: dict[str, Any]) -> dict[str, object]:
    row = _head(r, f)
    ov = registry.overlay(r.protocol)
    if ov.protects:
        hs = ov.handshakes(ex, _plane(r, f), stack_values)
        if hs is not None:
            row.update(handshake_packets=hs.total_packets, handshake_frame_bytes=hs.total_frame_bytes,
                       handshake_retransmitted=sum(hs.retransmitted.values()))
        if r.experiment in base_len:
            _overheads(row, ov, profiles.load().get(r.profile), ex, base_len[r.experiment])
    return row


@dataclass
class Read:
    """What one pass over each capture of a results tree gave."""
    rows: list[dict[str, object]] = field(default_factory=list)     # the wire-bytes table's rows
    frames: dict[Path, Frames] = field(default_factory=dict)        # the captures asked for in `frames_of`


def read(runs: list[Run], frames_of: Sequence[tuple[Run, RawFile]] = (), workers: int = 0) -> Read:
    """The wire-bytes rows of the usable runs' wire captures and the frames of `frames_of` (the
    attach windows' captures, analysis/attach_bytes.py), one pass per capture: the baseline runs'
    captures first (their echo requests give the inner lengths), then the protected ones."""
    stack_values = values()
    table = [(r, f) for r in runs if r.usable for f in wire_captures(r)]
    want_rows = {f.path for _, f in table}
    want_frames = {f.path for _, f in frames_of}
    jobs = list({f.path: (r, f) for r, f in [*table, *frames_of]}.values())
    base_len: dict[str, list[int]] = {}

    def first(r: Run, f: RawFile, ex: wire.Export) -> tuple[list[int], Frames | None]:
        lens = baseline_lengths(ex, r.experiment) if r.experiment in BASELINE_PACKETS and f.path in want_rows else []
        return lens, frames(ex) if f.path in want_frames else None

    def then(r: Run, f: RawFile, ex: wire.Export) -> tuple[dict[str, object] | None, Frames | None]:
        return (_row(r, f, ex, base_len, stack_values) if f.path in want_rows else None,
                frames(ex) if f.path in want_frames else None)

    plain = [j for j in jobs if not registry.overlay(j[0].protocol).protects]
    protected = [j for j in jobs if registry.overlay(j[0].protocol).protects]
    got: dict[Path, Any] = {}
    out = Read()
    for (r, f), lens in zip(*_read_plain(plain, first, want_rows, want_frames, stack_values, workers)):
        got[f.path] = lens
        if not isinstance(lens, tshark.TsharkError) and lens[0]:
            base_len.setdefault(r.experiment, lens[0])
    for (r, f), row in zip(protected, each_capture(protected, then, stack_values, workers)):
        got[f.path] = row
    for r, f in jobs:
        res = got.get(f.path)          # None: a baseline capture not needed (_read_plain)
        if res is not None and not isinstance(res, tshark.TsharkError) and res[1] is not None:
            out.frames[f.path] = res[1]
    for r, f in table:
        res = got.get(f.path)
        if isinstance(res, tshark.TsharkError):
            out.rows.append({**_head(r, f), "problem": str(res)})
        else:
            out.rows.append(res[0] if res is not None and registry.overlay(r.protocol).protects else _head(r, f))
    return out


def _read_plain(plain: list[tuple[Run, RawFile]], read: Callable[[Run, RawFile, wire.Export], T],
                want_rows: set[Path], want_frames: set[Path], stack_values: dict[str, Any],
                workers: int) -> tuple[list[tuple[Run, RawFile]], list[T | tshark.TsharkError]]:
    """The unprotected captures that must be read, in `plain`'s order, and what `read` gave: every
    one whose frames are asked for, and of the others only as many as give each experiment its
    inner lengths (a baseline capture's table row is its run's name alone; the first capture in
    order with echo requests gives the lengths). A paper-sized namespace campaign read all five
    baseline captures for the one it used."""
    workers = workers or os.cpu_count() or 1
    got: dict[Path, T | tshark.TsharkError] = {}

    def candidate(job: tuple[Run, RawFile]) -> bool:
        return job[0].experiment in BASELINE_PACKETS and job[1].path in want_rows

    def settled(experiment: str) -> bool:
        """The first capture in order that can give this experiment's lengths has given them."""
        for job in plain:
            if job[0].experiment != experiment or not (candidate(job) or job[1].path in want_frames):
                continue
            res = got.get(job[1].path)
            if res is None:
                return False
            if not isinstance(res, tshark.TsharkError) and res[0]:     # type: ignore[index]
                return True
        return True

    batch = [j for j in plain if j[1].path in want_frames]
    while True:
        more = [j for j in plain if j[1].path not in got and j not in batch and candidate(j)
                and not settled(j[0].experiment)]
        batch += more[:max(workers - len(batch), 1)]
        if not batch:
            break
        for job, res in zip(batch, each_capture(batch, read, stack_values, workers)):
            got[job[1].path] = res
        batch = []
    done = [j for j in plain if j[1].path in got]
    return done, [got[j[1].path] for j in done]


def results_table(results: Path) -> pd.DataFrame:
    """One row per usable run with a capture: handshake packets/bytes, and for N3 runs the
    distinct protected packet lengths with the measured overhead against the baseline run of
    the same results tree (same sizes) and the analytic overhead."""
    import pandas as pd

    from analysis.results import discover
    return pd.DataFrame(read([r for r in discover(results) if r.usable and r.files("pcap")]).rows)
