"""iputils ping output (`LC_ALL=C ping -D -n ...`, or plain `ping`) -> tidy DataFrame.

One row per ICMP sequence number that was sent: replies carry their RTT; sequence numbers
that never got a reply (gaps, or the tail up to the "N packets transmitted" count) are rows
with ``lost=True`` and ``rtt_ms`` NaN, so losses stay visible. Duplicate replies
(``(DUP!)``) are rows with ``dup=True`` and are not counted as samples by the statistics.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ["seq", "timestamp", "bytes", "ttl", "rtt_ms", "lost", "dup"]

_REPLY = re.compile(
    r"^(?:\[(\d+\.\d+)\] )?(\d+) bytes from [^:]+: icmp_seq=(\d+) ttl=(\d+) time=([0-9.]+) ms( \(DUP!\))?",
    re.M,
)
_TRANSMITTED = re.compile(r"^(\d+) packets transmitted, (\d+) (?:packets )?received", re.M)
_SEQ_WRAP = 65536


def parse_ping_text(text: str | bytes) -> pd.DataFrame:
    """Parse ping output; see the module docstring for the frame's columns."""
    data = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    found = pd.DataFrame(_REPLY.findall(data), columns=["ts", "bytes", "seq", "ttl", "rtt", "dup"],
                         dtype=str)
    seq = _unwrap(found["seq"].to_numpy(dtype=np.int64))
    replies = pd.DataFrame({
        "seq": seq,
        "timestamp": pd.to_numeric(found["ts"], errors="coerce").to_numpy(dtype=float),
        "bytes": found["bytes"].to_numpy(dtype=np.int64),
        "ttl": found["ttl"].to_numpy(dtype=np.int64),
        "rtt_ms": found["rtt"].to_numpy(dtype=float),
        "lost": False,
        "dup": (found["dup"] != "").to_numpy(dtype=bool),
    })
    m = _TRANSMITTED.search(data)
    transmitted = int(m.group(1)) if m else 0
    first = min(int(seq.min()) if len(seq) else 1, 1)
    last = max(int(seq.max()) if len(seq) else 0, first + transmitted - 1)
    missing = np.setdiff1d(np.arange(first, last + 1, dtype=np.int64), seq)
    frame = replies
    if len(missing):
        lost = pd.DataFrame({"seq": missing, "timestamp": np.nan, "bytes": 0, "ttl": 0,
                             "rtt_ms": np.nan, "lost": True, "dup": False})
        frame = pd.concat([replies, lost], ignore_index=True)
        frame = frame.sort_values(["seq", "dup"], kind="stable").reset_index(drop=True)
    return frame.astype({"seq": "int64", "bytes": "int64", "ttl": "int64", "rtt_ms": "float64",
                         "timestamp": "float64", "lost": "bool", "dup": "bool"})[COLUMNS]


def _unwrap(seq: np.ndarray) -> np.ndarray:
    """icmp_seq is 16 bits: undo wrap-arounds so long runs stay monotonic."""
    if len(seq) < 2:
        return seq
    jumps = np.diff(seq) < -(_SEQ_WRAP // 2)
    if not jumps.any():
        return seq
    return seq + _SEQ_WRAP * np.concatenate([[0], np.cumsum(jumps)])


def parse_ping(path: Path | str) -> pd.DataFrame:
    """Parse one ping output file."""
    return parse_ping_text(Path(path).read_bytes())


def rtt_samples(frame: pd.DataFrame) -> pd.Series:
    """The RTT samples of a parsed ping frame: replies only, duplicates left out."""
    ok = ~frame["lost"] & ~frame["dup"]
    return frame.loc[ok, "rtt_ms"]
