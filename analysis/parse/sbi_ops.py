"""Per-request SBI operations from a capture: one row per HTTP/2 request, with its response.

One tshark field export per capture (plus a light pre-pass that finds the cleartext HTTP/2 ports
when they are not given), cached by content (analysis/cache.py). A request is the HEADERS frame
carrying `:method`; its response is the HEADERS frame carrying a final `:status` (>= 200) on the
same TCP connection (`tcp.stream`) and HTTP/2 stream id. `time_ms` = response frame time -
request frame time; a request without a response in the capture is a row with empty `status`,
`t_response` and `time_ms`, never dropped. Bytes: HTTP/2 frame bytes (9-byte frame header +
payload: HEADERS, CONTINUATION, DATA) of the stream in each direction.

Captures from elsewhere:
- cleartext HTTP/2 with its connection preface in the capture is found by tshark's own
  heuristics (`http` -> `http2`); connections that started before the capture are not, so
  the ports of their HEADERS frames are found first (pre-pass: a TCP segment that starts with
  an HTTP/2 HEADERS frame header with END_HEADERS, not TLS) and decoded as HTTP/2 (`-d
  tcp.port==P,http2`). Headers that refer to HPACK dynamic-table entries made before the
  capture cannot be decoded (tshark has not seen them): such requests have an empty path;
- Linux cooked captures (SLL, SLL2) and pcapng/pcap with micro- or nanosecond timestamps read
  the same (tshark gives `frame.time_epoch` with the file's precision; kept as integer ns);
- TLS: with a key log (`tls.keylog_file`, NSS format) tshark decrypts the records and ALPN h2
  selects HTTP/2; ESP: with the SAs (`esp_sa` table) the inner packets are decoded
  (analysis/decrypt.py builds both). The inner addresses and ports are the ones reported.

Several HTTP/2 frames in one TCP segment are lined up by tshark's per-frame fields
(`http2.streamid`, `http2.type`, `http2.length` occur once per HTTP/2 frame; `http2.header.count`
once per decoded header block, which splits `http2.header.name`/`value`).
"""
from __future__ import annotations

import csv
import io
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis import cache, sbi_paths
from analysis.parse.tshark import epoch_ns_text, field_values, last_value, ns_epoch_text
from testbed import tshark

log = logging.getLogger(__name__)

AGG = "\x1f"                 # tshark's aggregator here: header values hold commas
FORMAT = 1                   # bump when the rows change (cache key)

FIELDS = ["frame.number", "frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "tcp.stream",
          "tcp.srcport", "tcp.dstport", "http2.streamid", "http2.type", "http2.length", "http2.header.count",
          "http2.header.name", "http2.header.value"]
FILTER = "http2.type"
HEADERS, DATA, CONTINUATION, PUSH_PROMISE = 1, 0, 9, 5
# a TCP segment beginning with the HTTP/2 client connection preface (RFC 9113 3.4), or with an
# HTTP/2 HEADERS frame header (type 1, END_HEADERS, R bit clear): how a connection whose preface
# the capture missed is found
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DETECT_FILTER = ("!tls && tcp.len >= 9 && (tcp.payload[0:14] == 50:52:49:20:2a:20:48:54:54:50:2f:32:2e:30 || "
                 "(tcp.payload[3] == 01 && tcp.payload[4] & 04 && !(tcp.payload[5] & 80)))")
# a port needs this many HEADERS-looking segments before it is decoded as HTTP/2 (one stray match
# in some other binary protocol is not enough); one preface is enough
DETECT_MIN = 2

COLUMNS = ["capture", "t_request", "t_response", "time_ms", "method", "path", "operation", "status",
           "client", "client_port", "server", "server_port", "client_nf", "server_nf", "tcp_stream",
           "stream_id", "request_bytes", "response_bytes", "frame_request", "frame_response"]


@dataclass(frozen=True)
class Decode:
    """What tshark needs beyond the capture: preferences (`-o`), extra arguments (`-o uat:...`),
    the input files whose bytes change the result (key logs; part of the cache key) and a label."""
    prefs: Mapping[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    inputs: tuple[Path, ...] = ()
    label: str = "cleartext"
    dissects: bool = False      # tshark finds the decrypted payload's protocol itself (testbed/contract.py Decryption)


CLEAR = Decode()


def _split(value: str) -> list[str]:
    return field_values(value, AGG, keep_empty=True)


def _last(*values: str) -> str:
    return last_value(*values, aggregator=AGG, keep_empty=True)


def detect_ports(capture: Path | str, decode: Decode = CLEAR) -> list[int]:
    """TCP server ports that carry cleartext HTTP/2 HEADERS frames (see DETECT_FILTER): a port
    seen in several connections is a listener; in a single connection the lower port is taken."""
    text = tshark.export(capture, ["tcp.stream", "tcp.srcport", "tcp.dstport", "tcp.payload"], DETECT_FILTER,
                         prefs=decode.prefs, extra=decode.extra, timeout=None, aggregator=AGG)
    streams: dict[str, tuple[int, int]] = {}
    hits: dict[str, int] = {}
    ports: set[int] = set()
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or not parts[1]:
            continue
        s, a, b = parts[0], int(_last(parts[1])), int(_last(parts[2]))
        if _last(parts[3]).replace(":", "")[:2 * len(PREFACE)] == PREFACE.hex():
            ports.add(b)                              # the preface goes to the server
            continue
        streams[s] = (min(a, b), max(a, b))
        hits[s] = hits.get(s, 0) + 1
    seen: dict[int, int] = {}
    for a, b in streams.values():
        seen[a] = seen.get(a, 0) + 1
        seen[b] = seen.get(b, 0) + 1
    for s, (a, b) in streams.items():
        if hits[s] < DETECT_MIN or a in ports or b in ports:
            continue
        listeners = [p for p in (a, b) if seen[p] > 1]
        ports.add(listeners[0] if len(listeners) == 1 else a)
    return sorted(ports)


def _records(capture: Path | str, decode: Decode, ports: Sequence[int]) -> list[list[str]]:
    n = len(FIELDS)
    text = tshark.export(capture, FIELDS, FILTER, prefs=decode.prefs, extra=decode.extra,
                         decode_as=[f"tcp.port=={p},http2" for p in ports], timeout=None, aggregator=AGG)
    return [(line.split("\t") + [""] * n)[:n] for line in text.splitlines() if line]


def _header_blocks(rec: dict[str, str], types: list[int], frame: str) -> list[dict[str, str] | None]:
    """Per HEADERS/PUSH_PROMISE frame of the packet, its decoded pseudo-headers (None where the
    block could not be lined up or decoded)."""
    blocks = [t for t in types if t in (HEADERS, PUSH_PROMISE)]
    counts = [int(c) for c in _split(rec["http2.header.count"]) if c]
    names, values = _split(rec["http2.header.name"]), _split(rec["http2.header.value"])
    if len(counts) != len(blocks) or sum(counts) != len(names) or len(names) != len(values):
        if blocks:
            log.debug("frame %s: %d header blocks, %d decoded counts, %d names, %d values: not lined up",
                      frame, len(blocks), len(counts), len(names), len(values))
        return [None] * len(blocks)
    out: list[dict[str, str] | None] = []
    i = 0
    for c in counts:
        out.append({k: v for k, v in zip(names[i:i + c], values[i:i + c]) if k.startswith(":")})
        i += c
    return out


def requests_from_records(records: Iterable[Sequence[str]], capture: str = "") -> list[dict[str, Any]]:
    """Rows (COLUMNS, without NF names) from the field records of one capture."""
    rows: list[dict[str, Any]] = []
    open_: dict[tuple[str, int], dict[str, Any]] = {}
    undecoded = 0
    for raw in records:
        rec = dict(zip(FIELDS, raw))
        frame = rec["frame.number"]
        types = [int(t) for t in _split(rec["http2.type"]) if t]
        sids = [int(s) for s in _split(rec["http2.streamid"]) if s]
        lengths = [int(x) for x in _split(rec["http2.length"]) if x]
        if not (len(types) == len(sids) == len(lengths)):
            log.debug("frame %s: HTTP/2 frame fields not lined up; skipped", frame)
            continue
        ns = epoch_ns_text(rec["frame.time_epoch"])
        src, dst = _last(rec["ip.src"], rec["ipv6.src"]), _last(rec["ip.dst"], rec["ipv6.dst"])
        sport, dport = _last(rec["tcp.srcport"]), _last(rec["tcp.dstport"])
        tcp_stream = _last(rec["tcp.stream"])
        blocks = iter(_header_blocks(rec, types, frame))
        for t, sid, length in zip(types, sids, lengths):
            block = next(blocks) if t in (HEADERS, PUSH_PROMISE) else None
            if sid == 0:
                continue
            key = (tcp_stream, sid)
            req = open_.get(key)
            if t == HEADERS and block is not None and ":method" in block:
                req = {"capture": capture, "ns_request": ns, "ns_response": None,
                       "method": block[":method"], "path": block.get(":path", ""),
                       "status": "", "client": src, "client_port": sport, "server": dst, "server_port": dport,
                       "tcp_stream": tcp_stream, "stream_id": sid, "request_bytes": 0, "response_bytes": 0,
                       "frame_request": int(frame), "frame_response": None}
                req["operation"] = sbi_paths.operation(req["method"], req["path"])
                open_[key] = req
                rows.append(req)
            elif t == HEADERS and block is None:
                undecoded += 1
            if req is None or t not in (HEADERS, CONTINUATION, DATA):
                continue
            outbound = (src, sport) == (req["client"], req["client_port"])
            req["request_bytes" if outbound else "response_bytes"] += 9 + length
            if (t == HEADERS and not outbound and block is not None and not req["status"]
                    and block.get(":status", "").isdigit() and int(block[":status"]) >= 200):
                req.update(status=block[":status"], ns_response=ns, frame_response=int(frame))
    if undecoded:
        log.info("%s: %d HEADERS frame(s) whose header block tshark could not decode (HPACK state "
                 "from before the capture, or a truncated capture)", capture or "capture", undecoded)
    return rows


def requests(capture: Path | str, decode: Decode = CLEAR, ports: Sequence[int] | None = None,
             detect: bool = True) -> list[dict[str, Any]]:
    """Every HTTP/2 request of one capture (rows with COLUMNS but the NF names; times as integer
    ns in `ns_request`/`ns_response`). `ports`: TCP ports to decode as cleartext HTTP/2 beside
    what tshark finds itself; `detect`: also find them with the pre-pass."""
    path = Path(capture)
    question = {"what": "sbi-ops", "format": FORMAT, "fields": FIELDS, "filter": FILTER,
                "prefs": dict(decode.prefs), "extra": list(decode.extra), "ports": sorted(ports or []),
                "detect": detect}

    def compute() -> list[dict[str, Any]]:
        found = set(ports or [])
        if detect:
            found |= set(detect_ports(path, decode))
        return requests_from_records(_records(path, decode, sorted(found)), str(capture))
    rows = cache.cached([path, *decode.inputs], question, compute)
    log.info("%s (%s): %d requests, %d answered", capture, decode.label, len(rows),
             sum(1 for r in rows if r["ns_response"] is not None))
    return rows


def with_names(rows: list[dict[str, Any]], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """`client_nf`/`server_nf` from an address -> node name map ('' where unknown)."""
    for r in rows:
        r["client_nf"] = names.get(r["client"], "")
        r["server_nf"] = names.get(r["server"], "")
    return rows


def time_ms(row: Mapping[str, Any]) -> float | None:
    a, b = row.get("ns_request"), row.get("ns_response")
    return None if a is None or b is None else (int(b) - int(a)) / 1e6


def rows_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    """CSV: epoch seconds with all nine digits, time_ms with six; empty where unanswered."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        t = time_ms(r)
        cells = {**r, "t_request": ns_epoch_text(r.get("ns_request")), "t_response": ns_epoch_text(r.get("ns_response")),
                 "time_ms": "" if t is None else f"{t:.6f}"}
        w.writerow(["" if cells.get(c) is None else cells.get(c, "") for c in COLUMNS])
    return buf.getvalue()
