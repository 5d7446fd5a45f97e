"""Bytes on the wire: handshake bytes and packets, and the per-packet overhead of each protocol,
measured from a run's own capture and set beside the analytic overhead (docs/wire-bytes.md).

Every protocol's formula and handshake messages are its overlay plug-in's (`packet_overhead`,
`analytic_overheads`, `handshakes`, `protected_lengths`; <plug-in>/overhead.py); this module
builds the tables from them. Overheads are counted at the IP layer: the bytes an overlay adds to
one inner IP packet, outer IP header included (link-layer headers are the same with and without
it, so they cancel); an overlay below IP counts what it adds to the Ethernet frame (testbed/wire.py).
Handshakes are counted as whole frames (frame.len) and as IP bytes.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed import profiles, registry, tshark, wire
from testbed.wire import Handshakes

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Handshakes", "analytic_table", "measured_overheads", "results_table"]


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


# The unprotected packets whose lengths are the inner lengths, per experiment: the echo requests
# as GTP-U on N3 (stack runs), as plain ICMP between the namespaces (run-overlay).
BASELINE_PACKETS = {"n3": "gtp && icmp.type == 8", "overlay": "icmp.type == 8"}


def _wire_captures(run: Any) -> list[Any]:
    """The run's captures of the wire; an endpoint's plaintext view (purpose "timing", e.g. the
    gNB's view of an ESP-protected N2) carries no wire bytes, nor does a relay's tap."""
    return [f for f in run.files("pcap") if f.attrs.get("purpose") != "timing" and not f.attrs.get("tap")]


def _baseline_lengths(runs: list[Any]) -> dict[str, list[int]]:
    """{experiment: the distinct inner lengths} from the baseline runs' captures."""
    base_len: dict[str, list[int]] = {}
    for r in runs:
        if r.experiment in BASELINE_PACKETS and not registry.overlay(r.protocol).protects:
            for f in _wire_captures(r):
                lens = wire.lengths(f.path, BASELINE_PACKETS[r.experiment])
                if lens:
                    base_len.setdefault(r.experiment, sorted(set(lens)))
    return base_len


def _overheads(row: dict[str, object], ov: Any, prof: Any, pcap: Path, inner: list[int]) -> None:
    """Measured protected lengths against the inner ones, and the plug-in's analytic overhead."""
    prot = sorted(set(ov.protected_lengths(pcap)))
    if not prot:
        return
    row["protected_lengths"] = " ".join(map(str, prot))
    row["inner_lengths"] = " ".join(map(str, inner))
    if len(prot) == len(inner):
        row["overhead_measured"] = " ".join(str(p - i) for p, i in zip(prot, inner))
        analytic = [ov.packet_overhead(prof, i, pcap) for i in inner]
        row["overhead_analytic"] = " ".join(str(a) for a in analytic) if None not in analytic else ""


def _row(r: Any, f: Any, base_len: dict[str, list[int]]) -> dict[str, object]:
    row: dict[str, object] = {"experiment": r.experiment, "profile": r.profile, "protocol": r.protocol,
                              "run": r.run_id, "capture": f.path.name}
    ov = registry.overlay(r.protocol)
    plane = str(f.attrs.get("iface") or r.get("plane"))
    try:
        hs = ov.handshakes(f.path, plane, _values()) if ov.protects else None
        if hs is not None:
            row.update(handshake_packets=hs.total_packets, handshake_frame_bytes=hs.total_frame_bytes,
                       handshake_retransmitted=sum(hs.retransmitted.values()))
        if ov.protects and r.experiment in base_len:
            _overheads(row, ov, profiles.load().get(r.profile), f.path, base_len[r.experiment])
    except tshark.TsharkError as exc:
        row["problem"] = str(exc)
    return row


def _values() -> dict[str, Any]:
    from testbed import ran, stack
    return ran.restrict(stack.load(), ran.default())


def results_table(results: Path) -> pd.DataFrame:
    """One row per usable run with a capture: handshake packets/bytes, and for N3 runs the
    distinct protected packet lengths with the measured overhead against the baseline run of
    the same results tree (same sizes) and the analytic overhead."""
    import pandas as pd

    from analysis.results import discover
    runs = [r for r in discover(results) if r.usable and r.files("pcap")]
    base_len = _baseline_lengths(runs)
    return pd.DataFrame([_row(r, f, base_len) for r in runs for f in _wire_captures(r)])
