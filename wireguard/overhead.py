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


def wireguard_overhead(inner: int, *, ipv6: bool = False) -> int:
    """Bytes WireGuard adds: outer IP + UDP + 16 B header + 16 B tag + padding of the inner
    packet to 16 B (the WireGuard paper, section 5.4.6)."""
    return (wire.IPV6 if ipv6 else wire.IPV4) + wire.UDP + WG_HEADER + WG_TAG + (-inner) % 16


def analytic_rows(profiles: list[Profile], sizes: tuple[int, ...]) -> list[dict[str, object]]:
    return [{"profile": p.id, "what": "WireGuard transport data", "size": size,
             "added_bytes": wireguard_overhead(size)} for p in profiles for size in sizes]


def handshakes(pcap: Path) -> wire.Handshakes:
    found = wire.rows(pcap, "wg.type == 1 || wg.type == 2 || wg.type == 3",
                      wire.LENGTH_FIELDS + ["wg.type", *WG_IDS])
    return wire.count_messages("wireguard", found, lambda r: WG_TYPES[r["wg.type"].split(",")[0]], WG_IDS)


def protected_lengths(pcap: Path, src: str | None = None) -> list[int]:
    """IP lengths of the transport data messages, optionally only those sent by `src`."""
    return wire.lengths(pcap, "wg.type == 4", src)
