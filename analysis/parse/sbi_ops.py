"""Per-request SBI operations from a capture: one row per HTTP/2 or HTTP/1.1 request, with its
response.

One tshark field export per capture, cached by content (analysis/cache.py). HTTP/2: a request is
the HEADERS frame carrying `:method`; its response is the HEADERS frame carrying a final `:status`
(>= 200) on the same TCP connection (`tcp.stream`) and HTTP/2 stream id. HTTP/1.1 (Open5GS's own
test programs speak it on 7777): a request is the frame tshark completes the request message in
(`http.request.method`), its response the frame of the final response (status >= 200) whose
`http.request_in` names it (tshark's pairing within the TCP connection). `time_ms` = response
frame time - request frame time; a request without a response in the capture is a row with empty
`status`, `t_response` and `time_ms`, never dropped. Bytes: HTTP/2 frame bytes (9-byte frame
header + payload: HEADERS, CONTINUATION, DATA) of the stream in each direction; HTTP/1.1 the
message's TCP payload (reassembled length, else the segment's).

Captures from elsewhere:
- cleartext HTTP/2 with its connection preface in the capture is found in the same pass, on any
  port: tshark's HTTP heuristic (port 80) and h2_preface.lua beside this file (any other port);
  connections that started before the capture are not, so the same pass also exports the TCP
  segments that start like an HTTP/2 HEADERS frame (END_HEADERS, not TLS; CANDIDATE) and are not
  decoded: where a connection has DETECT_MIN of them, its server port is decoded as HTTP/2 (`-d
  tcp.port==P,http2`) in a second pass, only then. Headers that refer to HPACK dynamic-table
  entries made before the capture cannot be decoded (tshark has not seen them): such requests
  have an empty path;
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
FORMAT = 2                   # bump when the rows change (cache key)
PREFACE_LUA = Path(__file__).with_name("h2_preface.lua")

FIELDS = ["frame.number", "frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "tcp.stream",
          "tcp.srcport", "tcp.dstport", "http2.streamid", "http2.type", "http2.length", "http2.header.count",
          "http2.header.name", "http2.header.value", "http.request.method", "http.request.uri",
          "http.response.code", "http.request_in", "tcp.len", "tcp.reassembled.length"]
HEADERS, DATA, CONTINUATION, PUSH_PROMISE = 1, 0, 9, 5
# a packet of one HTTP/2 frame of another type (SETTINGS, WINDOW_UPDATE, PING, RST_STREAM, GOAWAY,
# PRIORITY) opens, answers and counts nothing: skipped before its fields are split (a seventh of
# the records of an Open5GS SBI capture)
UNCOUNTED = frozenset({"2", "3", "4", "6", "7", "8"})
# a TCP segment beginning with an HTTP/2 HEADERS frame header (type 1, END_HEADERS, R bit clear):
# how a connection whose preface the capture missed is found (rows without HTTP fields)
CANDIDATE = "(!tls && tcp.len >= 9 && tcp.payload[3] == 01 && tcp.payload[4] & 04 && !(tcp.payload[5] & 80))"
FILTER = f"http2.type || (tcp && (http.request || http.response)) || {CANDIDATE}"
# a connection needs this many HEADERS-looking segments before its port is decoded as HTTP/2 (one
# stray match in some other binary protocol is not enough)
DETECT_MIN = 2

(I_FRAME, I_TIME, I_SRC, I_DST, I_SRC6, I_DST6, I_STREAM, I_SPORT, I_DPORT, I_SID, I_TYPE, I_LENGTH, I_COUNT,
 I_NAME, I_VALUE, I_METHOD, I_URI, I_CODE, I_REQUEST_IN, I_TCPLEN, I_REASSEMBLED) = range(len(FIELDS))

COLUMNS = ["capture", "t_request", "t_response", "time_ms", "method", "path", "operation", "status",
           "client", "client_port", "server", "server_port", "client_nf", "server_nf", "tcp_stream",
           "stream_id", "request_bytes", "response_bytes", "frame_request", "frame_response", "http"]


@dataclass(frozen=True)
class Decode:
    """What tshark needs beyond the capture: preferences (`-o`), extra arguments (`-o uat:...`),
    the input files whose bytes change the result (key logs; part of the cache key) and a label."""
    prefs: Mapping[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    inputs: tuple[Path, ...] = ()
    label: str = "cleartext"
    carrier: str = ""           # what the given ports carry on the wire, empty: HTTP/2 (testbed/contract.py Decryption)


CLEAR = Decode()


def _split(value: str) -> list[str]:
    return field_values(value, AGG, keep_empty=True)


def _last(*values: str) -> str:
    return last_value(*values, aggregator=AGG, keep_empty=True)


def _records(capture: Path | str, decode: Decode, ports: Sequence[int], found: Sequence[int] = ()) -> list[list[str]]:
    """The field records; `ports` decoded as what they carry (decode.carrier, else HTTP/2), the
    ports undecoded_ports `found` as cleartext HTTP/2."""
    # a script tshark cannot run (no Lua in the build) is a warning to tshark, not an error: the
    # preface's connections are then candidates, and undecoded_ports finds their ports
    rules = [f"tcp.port=={p},{decode.carrier or 'http2'}" for p in ports] + [f"tcp.port=={p},http2" for p in found]
    text = tshark.export(capture, FIELDS, FILTER, prefs=decode.prefs,
                         extra=("-X", f"lua_script:{PREFACE_LUA}", *decode.extra),
                         decode_as=rules, timeout=None, aggregator=AGG)
    return tshark.rows(text, len(FIELDS))


def _ints(text: str) -> list[int]:
    """A numeric field's values (the common single value without a split)."""
    if AGG not in text:
        return [int(text)] if text else []
    return [int(v) for v in text.split(AGG) if v]


def undecoded_ports(records: Iterable[Sequence[str]]) -> list[int]:
    """Server ports of the connections whose HEADERS-looking segments (CANDIDATE) tshark did not
    decode as HTTP: a port seen in several such connections is a listener; in a single
    connection the lower port is taken."""
    decoded: set[str] = set()
    hits: dict[str, int] = {}
    streams: dict[str, tuple[int, int]] = {}
    for raw in records:
        s = raw[I_STREAM].rpartition(AGG)[2]
        if raw[I_TYPE] or raw[I_METHOD] or raw[I_CODE]:
            decoded.add(s)
        elif raw[I_SPORT]:
            a, b = int(raw[I_SPORT].rpartition(AGG)[2]), int(raw[I_DPORT].rpartition(AGG)[2])
            streams[s] = (min(a, b), max(a, b))
            hits[s] = hits.get(s, 0) + 1
    found = {s: ab for s, ab in streams.items() if s not in decoded and hits[s] >= DETECT_MIN}
    seen: dict[int, int] = {}
    for a, b in found.values():
        seen[a] = seen.get(a, 0) + 1
        seen[b] = seen.get(b, 0) + 1
    ports: set[int] = set()
    for a, b in found.values():
        listeners = [p for p in (a, b) if seen[p] > 1]
        ports.add(listeners[0] if len(listeners) == 1 else a)
    return sorted(ports)


def detect_ports(capture: Path | str, decode: Decode = CLEAR) -> list[int]:
    """TCP server ports that carry cleartext HTTP/2: those of the requests tshark decodes by
    itself (the preface) and those undecoded_ports finds."""
    records = _records(capture, decode, [])
    rows = requests_from_records(records)
    return sorted({int(r["server_port"]) for r in rows if r["http"] == "2"} | set(undecoded_ports(records)))


def _header_blocks(raw: Sequence[str], types: list[int]) -> list[dict[str, str] | None]:
    """Per HEADERS/PUSH_PROMISE frame of the packet, its decoded pseudo-headers (None where the
    block could not be lined up or decoded)."""
    blocks = [t for t in types if t in (HEADERS, PUSH_PROMISE)]
    if not blocks:
        return []
    counts = _ints(raw[I_COUNT])
    names, values = _split(raw[I_NAME]), _split(raw[I_VALUE])
    if len(counts) != len(blocks) or sum(counts) != len(names) or len(names) != len(values):
        log.debug("frame %s: %d header blocks, %d decoded counts, %d names, %d values: not lined up",
                  raw[I_FRAME], len(blocks), len(counts), len(names), len(values))
        return [None] * len(blocks)
    out: list[dict[str, str] | None] = []
    i = 0
    for c in counts:
        out.append({k: v for k, v in zip(names[i:i + c], values[i:i + c]) if k.startswith(":")})
        i += c
    return out


def _base(raw: Sequence[str], capture: str, src: str, sport: str) -> dict[str, Any]:
    """A new row's columns from its request frame."""
    return {"capture": capture, "ns_request": epoch_ns_text(raw[I_TIME]), "ns_response": None, "status": "",
            "client": src, "client_port": sport, "server": _last(raw[I_DST], raw[I_DST6]),
            "server_port": raw[I_DPORT].rpartition(AGG)[2], "tcp_stream": raw[I_STREAM].rpartition(AGG)[2],
            "request_bytes": 0, "response_bytes": 0, "frame_request": int(raw[I_FRAME]), "frame_response": None}


def _http1(raw: Sequence[str], capture: str, rows: list[dict[str, Any]],
           open_: dict[int, list[dict[str, Any]]]) -> None:
    """An HTTP/1.1 frame: its request(s) opened, or its final response paired with the request
    in the frame that tshark names (`http.request_in`)."""
    frame = int(raw[I_FRAME])
    size = int(_last(raw[I_REASSEMBLED]) or _last(raw[I_TCPLEN]) or 0)
    src, sport = _last(raw[I_SRC], raw[I_SRC6]), raw[I_SPORT].rpartition(AGG)[2]
    for method, uri in zip(_split(raw[I_METHOD]), _split(raw[I_URI])):
        req = {**_base(raw, capture, src, sport), "method": method, "path": uri,
               "operation": sbi_paths.operation(method, uri), "stream_id": "", "request_bytes": size, "http": "1.1"}
        open_.setdefault(frame, []).append(req)
        rows.append(req)
    for code, request_in in zip(_split(raw[I_CODE]), _split(raw[I_REQUEST_IN])):
        waiting = [r for r in open_.get(int(request_in or 0), []) if not r["status"]]
        if waiting and code.isdigit() and int(code) >= 200:
            waiting[0].update(status=code, ns_response=epoch_ns_text(raw[I_TIME]), frame_response=frame,
                              response_bytes=size)


def requests_from_records(records: Iterable[Sequence[str]], capture: str = "") -> list[dict[str, Any]]:
    """Rows (COLUMNS, without NF names) from the field records of one capture."""
    rows: list[dict[str, Any]] = []
    open_: dict[tuple[str, int], dict[str, Any]] = {}
    open1: dict[int, list[dict[str, Any]]] = {}
    undecoded = 0
    for raw in records:
        if raw[I_METHOD] or raw[I_CODE]:
            _http1(raw, capture, rows, open1)
            continue
        if raw[I_TYPE] in UNCOUNTED:
            continue
        types, sids, lengths = _ints(raw[I_TYPE]), _ints(raw[I_SID]), _ints(raw[I_LENGTH])
        if not (len(types) == len(sids) == len(lengths)):
            log.debug("frame %s: HTTP/2 frame fields not lined up; skipped", raw[I_FRAME])
            continue
        src, sport = _last(raw[I_SRC], raw[I_SRC6]), raw[I_SPORT].rpartition(AGG)[2]
        tcp_stream = raw[I_STREAM].rpartition(AGG)[2]
        blocks = iter(_header_blocks(raw, types))
        for t, sid, length in zip(types, sids, lengths):
            block = next(blocks) if t in (HEADERS, PUSH_PROMISE) else None
            if sid == 0:
                continue
            key = (tcp_stream, sid)
            req = open_.get(key)
            if t == HEADERS and block is not None and ":method" in block:
                req = {**_base(raw, capture, src, sport), "method": block[":method"], "path": block.get(":path", ""),
                       "stream_id": sid, "http": "2"}
                req["operation"] = sbi_paths.operation(req["method"], req["path"])
                open_[key] = req
                rows.append(req)
            elif t == HEADERS and block is None:
                undecoded += 1
            if req is None or t not in (HEADERS, CONTINUATION, DATA):
                continue
            outbound = src == req["client"] and sport == req["client_port"]
            req["request_bytes" if outbound else "response_bytes"] += 9 + length
            if (t == HEADERS and not outbound and block is not None and not req["status"]
                    and block.get(":status", "").isdigit() and int(block[":status"]) >= 200):
                req.update(status=block[":status"], ns_response=epoch_ns_text(raw[I_TIME]), frame_response=int(raw[I_FRAME]))
    if undecoded:
        log.info("%s: %d HEADERS frame(s) whose header block tshark could not decode (HPACK state "
                 "from before the capture, or a truncated capture)", capture or "capture", undecoded)
    return rows


def requests(capture: Path | str, decode: Decode = CLEAR, ports: Sequence[int] | None = None,
             detect: bool = True) -> list[dict[str, Any]]:
    """Every HTTP/2 and HTTP/1.1 request of one capture (rows with COLUMNS but the NF names; times
    as integer ns in `ns_request`/`ns_response`). `ports`: TCP ports to decode as what they carry
    (`decode.carrier`: TLS, whose ALPN h2 then gives HTTP/2; else cleartext HTTP/2) beside what
    tshark finds itself; `detect`: also decode the ports of connections whose preface
    the capture missed (undecoded_ports: a second pass, only when there are such connections)."""
    path = Path(capture)
    given = sorted(set(ports or []))
    question = {"what": "sbi-ops", "format": FORMAT, "fields": FIELDS, "filter": FILTER,
                "prefs": dict(decode.prefs), "extra": list(decode.extra), "ports": given, "carrier": decode.carrier,
                "detect": detect, "lua": PREFACE_LUA.read_text(encoding="utf-8")}

    def compute() -> list[dict[str, Any]]:
        records = _records(path, decode, given)
        more = sorted(set(undecoded_ports(records)) - set(given)) if detect else []
        if more:
            log.info("%s: HTTP/2 connections without their preface in the capture on port(s) %s: "
                     "read again with them decoded as HTTP/2", capture, ", ".join(map(str, more)))
            records = _records(path, decode, given, more)
        return requests_from_records(records, str(capture))
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
