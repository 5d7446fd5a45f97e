"""What WireGuard puts on the wire (docs/wire-bytes.md): the per-packet overhead of transport data
messages and the handshake messages of a capture."""
from __future__ import annotations

from pathlib import Path

from testbed import wire
from testbed.profiles import Profile

WG_HEADER, WG_TAG = 16, 16              # type/reserved + receiver index + counter; Poly1305 tag
WG_TYPES = {"1": "handshake initiation", "2": "handshake response", "3": "cookie reply"}
# a retransmitted initiation is a new message (new ephemeral key, new sender index)
WG_IDS = ["wg.sender", "wg.receiver", "ip.src", "ipv6.src"]
# what handshakes and protected_lengths read from a capture's shared export
FIELDS = wire.Fields(("wg.type", *WG_IDS))


def wireguard_overhead(inner: int, *, ipv6: bool = False) -> int:
    """Bytes WireGuard adds: outer IP + UDP + 16 B header + 16 B tag + padding of the inner
    packet to 16 B (the WireGuard paper, section 5.4.6)."""
    return (wire.IPV6 if ipv6 else wire.IPV4) + wire.UDP + WG_HEADER + WG_TAG + (-inner) % 16


def analytic_rows(profiles: list[Profile], sizes: tuple[int, ...]) -> list[dict[str, object]]:
    return [{"profile": p.id, "what": "WireGuard transport data", "size": size,
             "added_bytes": wireguard_overhead(size)} for p in profiles for size in sizes]


def handshakes(pcap: Path | wire.Export) -> wire.Handshakes:
    found = [r for r in wire.exported(pcap, FIELDS).rows if wire.occurs(r, "wg.type", WG_TYPES)]
    return wire.count_messages("wireguard", found, lambda r: WG_TYPES[wire.first_of(r, "wg.type", WG_TYPES)], WG_IDS)


def protected_lengths(pcap: Path | wire.Export, src: str | None = None) -> list[int]:
    """IP lengths of the transport data messages, optionally only those sent by `src`."""
    rows = [r for r in wire.exported(pcap, FIELDS).rows if wire.occurs(r, "wg.type", ("4",))]
    return [wire.ip_len(r) for r in wire.sent_by(rows, src)]


def handshake_records(pcap: Path) -> list[dict[str, object]]:
    """One row per completed WireGuard handshake: initiation (its sender index) to the response
    naming it as receiver; packets 2, bytes of both, time between them on the capture's clock."""
    from testbed import tshark
    init: dict[str, tuple[float, int, int]] = {}
    rows: list[dict[str, object]] = []
    for t, ty, sender, receiver, frame, iplen in tshark.fields(
            pcap, "wg.type == 1 || wg.type == 2", ["frame.time_epoch", "wg.type", "wg.sender", "wg.receiver",
                                                   "frame.len", "ip.len"]):
        if ty == "1":
            init[sender] = (float(t), int(frame), int(iplen or 0))
        elif receiver in init:
            t0, f0, i0 = init.pop(receiver)
            rows.append({"kind": "wireguard", "start": t0, "handshake_ms": round((float(t) - t0) * 1000, 3),
                         "packets": 2, "frame_bytes": f0 + int(frame), "ip_bytes": i0 + int(iplen or 0),
                         "retransmitted": 0, "initiation_ip_bytes": i0, "response_ip_bytes": int(iplen or 0)})
    return rows
