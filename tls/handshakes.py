"""The TLS handshakes of a capture, one record per TCP connection (docs/overlays/tls.md
"Post-quantum groups"): the handshake micro-benchmark's rows and the bytes table's TLS part.

One tshark field export of the TLS port. Per connection: the ClientHello(s) and ServerHello (and a
HelloRetryRequest) with their handshake-message sizes and the TCP segments each took (a hybrid
group's key share makes the ClientHello larger than one segment), the negotiated group, and every
frame from the client's first ClientHello segment to its first record after the ServerHello (in TLS
1.3 the encrypted client Finished): packets, bytes and the time between them on the capture's clock.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from testbed import tshark
from tls.verify import HRR_RANDOM

FIELDS = ["tcp.stream", "frame.time_epoch", "frame.len", "ip.len", "tcp.len", "tcp.srcport", "tcp.flags.syn",
          "tcp.flags.ack", "tcp.segment.count", "tls.handshake.type", "tls.handshake.length",
          "tls.record.content_type", "tls.record.opaque_type", "tls.handshake.random",
          "tls.handshake.extensions_key_share_group"]


@dataclasses.dataclass
class _Conn:
    client_port: str = ""
    start: float | None = None
    end: float | None = None
    server_hello: bool = False
    packets: int = 0
    ip_bytes: int = 0
    frame_bytes: int = 0
    retries: int = 0
    group: int | None = None
    hellos: dict[str, list[int]] = dataclasses.field(default_factory=dict)   # kind -> [message bytes, segments]


def _ints(value: str) -> list[int]:
    return [int(x, 0) for x in value.split(",") if x.strip()]


def _row(conns: dict[str, _Conn], r: list[str]) -> None:
    (stream, t, frame, iplen, tcplen, sport, syn, ack, segs, hs_type, hs_len, content, opaque, rnd,
     share) = r + [""] * (len(FIELDS) - len(r))
    c = conns.setdefault(stream, _Conn())
    if tshark.flag(syn) and not tshark.flag(ack):
        c.client_port = sport
    from_client = sport == c.client_port
    if c.end is not None:
        return
    if c.start is None and not (from_client and int(tcplen or 0) > 0):
        return                                   # before the ClientHello: the TCP handshake
    if c.start is None:
        c.start = float(t)
    c.packets += 1
    c.ip_bytes += int(iplen or 0)
    c.frame_bytes += int(frame)
    types, lengths = _ints(hs_type), _ints(hs_len)
    for i, ty in enumerate(types):
        if ty not in (1, 2):
            continue
        hrr = ty == 2 and rnd.split(",")[0].replace(":", "").lower() == HRR_RANDOM
        kind = "ClientHello" if ty == 1 else "HelloRetryRequest" if hrr else "ServerHello"
        if kind == "ClientHello" and kind in c.hellos:
            kind = "ClientHello2"
        c.hellos[kind] = [lengths[i] + 4 if i < len(lengths) else 0, int(segs or 1)]
        if hrr:
            c.retries += 1
        elif ty == 2:
            c.server_hello = True
            groups = _ints(share)
            c.group = groups[-1] if groups else None
    records = set(_ints(content)) | set(_ints(opaque))
    if c.server_hello and from_client and 23 in records:
        c.end = float(t)


def records(pcap: Path, s: Any = None, port: int | None = None) -> list[dict[str, Any]]:
    """One row per connection whose handshake completed (ServerHello and a client record after it).
    `s` (tls.overlay.TlsSettings) only labels the rows; `port`: the TLS port (default: the SBI's)."""
    if port is None:
        from testbed import stack
        port = stack.sbi_port()
    conns: dict[str, _Conn] = {}
    for r in tshark.fields(pcap, f"tcp.port=={port}", FIELDS, extra=["-d", f"tcp.port=={port},tls"]):
        _row(conns, r)
    out = []
    for stream, c in conns.items():
        if c.start is None or c.end is None:
            continue
        row: dict[str, Any] = {"stream": int(stream), "handshake_ms": round((c.end - c.start) * 1000, 3),
                               "start": c.start, "packets": c.packets, "ip_bytes": c.ip_bytes,
                               "frame_bytes": c.frame_bytes, "retransmitted": 0, "hello_retries": c.retries,
                               "group": f"0x{c.group:04x}" if c.group is not None else None}
        for kind, (size, segs) in c.hellos.items():
            row[f"{kind}_bytes"] = size
            row[f"{kind}_segments"] = segs
        if s is not None:
            row["want_group"] = f"0x{s.group_id:04x}"
        out.append(row)
    return out
