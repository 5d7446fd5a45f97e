"""iputils ping output (`LC_ALL=C ping -D -n ...`, or plain `ping`) -> tidy DataFrame.

One row per ICMP sequence number that was sent: replies carry their RTT; sequence numbers
that never got a reply (gaps, or the tail up to the "N packets transmitted" count) are rows
with ``lost=True`` and ``rtt_ms`` NaN, so losses stay visible. Duplicate replies
(``(DUP!)``) are rows with ``dup=True`` and are not counted as samples by the statistics.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ["seq", "timestamp", "bytes", "ttl", "rtt_ms", "lost", "dup"]

_REPLY = re.compile(
    r"^(?:\[(\d+\.\d+)\] )?(\d+) bytes from [^:]+: icmp_seq=(\d+) ttl=(\d+) time=([0-9.]+) ms( \(DUP!\))?",
    re.M,
)
# the same reply line, whole (no groups): the fast path keeps these lines and lets pandas' C
# parser read the numbers once the constant tokens are stripped
_REPLY_LINE = re.compile(
    r"^(?:\[\d+\.\d+\] )?\d+ bytes from [^:\s]+: icmp_seq=\d+ ttl=\d+ time=[0-9.]+ ms(?: \(DUP!\))?$",
    re.M,
)
_HOST = re.compile(r" bytes from ([^:\s]+): icmp_seq=")
_TRANSMITTED = re.compile(r"^(\d+) packets transmitted, (\d+) (?:packets )?received", re.M)
_SEQ_WRAP = 65536


def _reply_block(data: str) -> tuple[str, int] | None:
    """The reply lines as one block and their count. Usual case: everything between the
    ``PING`` header and the first blank line, when every line there is a reply (checked by
    counting tokens, no per-line work); otherwise the lines the full-line regex keeps."""
    start = data.find("\n") + 1 if data.startswith("PING ") else 0
    end = data.find("\n\n", start)
    block = data[start:end if end >= 0 else len(data)].rstrip("\n")
    n = block.count("\n") + 1 if block else 0
    if n and block.count(" bytes from ") == n and block.count(" time=") == n and block.count(" ms") >= n:
        return block, n
    lines = _REPLY_LINE.findall(data)
    return ("\n".join(lines), len(lines)) if lines else None


def _replies_fast(data: str) -> pd.DataFrame | None:
    """Reply rows via pandas' C CSV reader once the constant tokens are stripped; None when the
    text is irregular (then the regex path decides)."""
    found = _reply_block(data)
    if found is None:
        return None
    body, n = found
    stamped = body.startswith("[")
    first = _HOST.search(body, 0, 300)
    token = f" bytes from {first.group(1)}: icmp_seq=" if first else ""
    hosts = [first.group(1)] if first and body.count(token) == n else set(_HOST.findall(body))
    for host in hosts:
        body = body.replace(f" bytes from {host}: icmp_seq=", " ")
    body = (body.replace("[", "").replace("] ", " ").replace(" ttl=", " ").replace(" time=", " ")
            .replace(" ms (DUP!)", " 1").replace(" ms", " 0"))
    names = (["timestamp"] if stamped else []) + ["bytes", "seq", "ttl", "rtt_ms", "dup"]
    try:
        frame = pd.read_csv(io.StringIO(body), sep=" ", header=None, names=names, engine="c", dtype=float)
    except (ValueError, pd.errors.ParserError):
        return None
    if len(frame) != n or frame.isna().any().any():
        return None          # e.g. stamped and unstamped lines mixed, or a torn line
    if not stamped:
        frame.insert(0, "timestamp", np.nan)
    return pd.DataFrame({
        "seq": frame["seq"].to_numpy(dtype=np.int64), "timestamp": frame["timestamp"].to_numpy(dtype=float),
        "bytes": frame["bytes"].to_numpy(dtype=np.int64), "ttl": frame["ttl"].to_numpy(dtype=np.int64),
        "rtt_ms": frame["rtt_ms"].to_numpy(dtype=float), "lost": False,
        "dup": frame["dup"].to_numpy(dtype=np.int64) == 1})


def _replies_regex(data: str) -> pd.DataFrame:
    found = pd.DataFrame(_REPLY.findall(data), columns=["ts", "bytes", "seq", "ttl", "rtt", "dup"],
                         dtype=str)
    return pd.DataFrame({
        "seq": found["seq"].to_numpy(dtype=np.int64),
        "timestamp": pd.to_numeric(found["ts"], errors="coerce").to_numpy(dtype=float),
        "bytes": found["bytes"].to_numpy(dtype=np.int64),
        "ttl": found["ttl"].to_numpy(dtype=np.int64),
        "rtt_ms": found["rtt"].to_numpy(dtype=float),
        "lost": False,
        "dup": (found["dup"] != "").to_numpy(dtype=bool),
    })


def parse_ping_text(text: str | bytes, fast: bool = True) -> pd.DataFrame:
    """Parse ping output; see the module docstring for the frame's columns. ``fast=False``
    forces the plain regex path (the fast path falls back to it by itself on odd input)."""
    data = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    replies = (_replies_fast(data) if fast else None)
    if replies is None:
        replies = _replies_regex(data)
    seq = _unwrap(replies["seq"].to_numpy(dtype=np.int64))
    replies["seq"] = seq
    tail = data.rfind("packets transmitted")           # the summary is at the end: no full scan
    m = _TRANSMITTED.search(data, max(0, data.rfind("\n", 0, tail) + 1)) if tail >= 0 else None
    transmitted = int(m.group(1)) if m else 0
    first = min(int(seq.min()) if len(seq) else 1, 1)
    last = max(int(seq.max()) if len(seq) else 0, first + transmitted - 1)
    present = np.zeros(max(0, last - first + 1), dtype=bool)
    present[seq - first] = True
    missing = np.flatnonzero(~present).astype(np.int64) + first
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
