"""iperf3 JSON (`iperf3 -J`) -> tidy interval frame and a one-row summary."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

INTERVAL_COLUMNS = ["start", "end", "seconds", "bytes", "mbps", "retransmits", "lost_packets", "packets"]


def _load(path: Path | str) -> dict[str, Any]:
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not iperf3 JSON ({exc}); was it written by `iperf3 -J`?") from exc
    if doc.get("error") and not doc.get("end"):
        raise ValueError(f"{p}: iperf3 reported an error: {doc['error']}")
    return doc


def parse_iperf3_intervals(path: Path | str) -> pd.DataFrame:
    """One row per reporting interval (the 'sum' over parallel streams)."""
    doc = _load(path)
    rows = []
    for interval in doc.get("intervals", []):
        s = interval.get("sum", {})
        rows.append({
            "start": s.get("start"), "end": s.get("end"), "seconds": s.get("seconds"),
            "bytes": s.get("bytes"), "mbps": s.get("bits_per_second", float("nan")) / 1e6,
            "retransmits": s.get("retransmits"), "lost_packets": s.get("lost_packets"),
            "packets": s.get("packets"),
        })
    return pd.DataFrame(rows, columns=INTERVAL_COLUMNS)


def iperf3_summary(path: Path | str) -> dict[str, Any]:
    """Protocol, duration and end-of-test throughput (Mbit/s) as sender and receiver saw it.

    TCP: ``end.sum_sent`` / ``end.sum_received``. UDP: ``end.sum`` (sender view, with loss and
    jitter from the receiver's report) and ``end.sum_received`` when present (iperf3 >= 3.11).
    """
    doc = _load(path)
    start = doc.get("start", {})
    end = doc.get("end", {})
    transport = str(start.get("test_start", {}).get("protocol", "")).lower()
    out: dict[str, Any] = {"transport": transport,
                           "duration_s": start.get("test_start", {}).get("duration")}
    if transport == "udp":
        s = end.get("sum", {})
        out["sender_mbps"] = s.get("bits_per_second", float("nan")) / 1e6
        recv = end.get("sum_received")
        out["receiver_mbps"] = (recv or s).get("bits_per_second", float("nan")) / 1e6
        out["lost_percent"] = s.get("lost_percent")
        out["jitter_ms"] = s.get("jitter_ms")
    else:
        out["sender_mbps"] = end.get("sum_sent", {}).get("bits_per_second", float("nan")) / 1e6
        out["receiver_mbps"] = end.get("sum_received", {}).get("bits_per_second", float("nan")) / 1e6
        out["retransmits"] = end.get("sum_sent", {}).get("retransmits")
    return out
