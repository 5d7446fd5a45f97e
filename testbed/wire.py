"""Bytes on the wire, the part every overlay plug-in shares: header sizes, handshake counts
and IP lengths read from a capture by tshark field export (analysis/wire_bytes.py builds the
tables; each plug-in's overhead.py knows its own formula and handshake messages).

Overheads are counted at the IP layer: the bytes an overlay adds to one inner IP packet, outer
IP header included (link-layer headers are the same with and without it, so they cancel). An
overlay below IP (one that changes the Ethernet frame itself) counts the bytes it adds to the
frame that carries the inner packet; its protected "lengths" are frame lengths less the Ethernet
header the packet would have in the clear (`frame_lengths`), so protected - inner is the added
bytes either way and the two kinds sit in one table.
Handshakes are counted as whole frames (frame.len) and as IP bytes.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from testbed import tshark

IPV4, IPV6, UDP = 20, 40, 8
ETHERNET = 14                       # destination, source, EtherType: an untagged frame's header
LENGTH_FIELDS = ["frame.len", "ip.len", "ipv6.plen"]


@dataclass(frozen=True)
class Handshakes:
    """Handshake frames of one capture: per message kind, packets and bytes."""

    protocol: str
    packets: dict[str, int]
    frame_bytes: dict[str, int]
    ip_bytes: dict[str, int]
    retransmitted: dict[str, int] = field(default_factory=dict)   # repeats of an earlier message

    @property
    def total_packets(self) -> int:
        return sum(self.packets.values())

    @property
    def total_frame_bytes(self) -> int:
        return sum(self.frame_bytes.values())


def ip_len(row: dict[str, str]) -> int:
    """The IP length of a row with LENGTH_FIELDS (the outer header of a tunnelled packet)."""
    if row.get("ip.len"):
        return int(row["ip.len"].split(",")[0])
    if row.get("ipv6.plen"):
        return IPV6 + int(row["ipv6.plen"].split(",")[0])
    return 0


def rows(pcap: Path, display_filter: str, names: list[str], extra: Sequence[str] = ()) -> list[dict[str, str]]:
    """One dict per matching packet, every name a key ("" when the packet lacks the field)."""
    return [dict(zip(names, r + [""] * (len(names) - len(r))))
            for r in tshark.fields(pcap, display_filter, names, extra=list(extra))]


def count_messages(protocol: str, found: list[dict[str, str]], kind: Callable[[dict[str, str]], str],
                   ids: Sequence[str] = ()) -> Handshakes:
    """Handshakes from rows of LENGTH_FIELDS + the fields `kind` reads + `ids` (a row whose kind
    and ids repeat an earlier one is also counted as retransmitted)."""
    packets: Counter[str] = Counter()
    frames: Counter[str] = Counter()
    ips: Counter[str] = Counter()
    again: Counter[str] = Counter()
    seen: set[tuple[str, ...]] = set()
    for r in found:
        k = kind(r)
        key = (k, *(r.get(i, "") for i in ids))
        if ids and key in seen:
            again[k] += 1
        seen.add(key)
        packets[k] += 1
        frames[k] += int(r["frame.len"])
        ips[k] += ip_len(r)
    return Handshakes(protocol, dict(packets), dict(frames), dict(ips), dict(again))


def lengths(pcap: Path, display_filter: str, src: str | None = None, extra: Sequence[str] = ()) -> list[int]:
    """IP lengths of the packets matching the filter, optionally only those sent by `src`."""
    if src:
        display_filter = f"({display_filter}) && {'ipv6' if ':' in src else 'ip'}.src == {src}"
    return [ip_len(r) for r in rows(pcap, display_filter, LENGTH_FIELDS, extra)]


def frame_lengths(pcap: Path, display_filter: str, extra: Sequence[str] = ()) -> list[int]:
    """For an overlay below IP: each matching frame's length less the 14 B Ethernet header the
    inner packet would have in the clear (an untagged frame, no FCS, as Linux captures it), so
    that this minus the inner IP length is what the overlay adds to the frame, as an IP-layer
    overlay's outer IP length minus the inner one is. A cleartext IPv4 frame gives its ip.len
    (frames under 60 B on a real NIC are padded; the captures here are not)."""
    return [int(r["frame.len"]) - ETHERNET for r in rows(pcap, display_filter, ["frame.len"], extra)]


# ------------------------------------------------------------------ one shared export per capture

BASE_FIELDS = ("frame.protocols", *LENGTH_FIELDS, "ip.src", "ipv6.src")
"""Fields every shared export holds: the frame's protocol stack (colon-separated, what a display
filter naming a protocol tests), the lengths and the outer and inner source addresses."""


@dataclass(frozen=True)
class Fields:
    """What a capture's byte accounting reads in its one tshark pass: field names and decode-as
    rules (values of tshark's -d, e.g. "udp.port==4433,dtls")."""

    names: tuple[str, ...] = ()
    decode_as: tuple[str, ...] = ()

    def __or__(self, other: Fields) -> Fields:
        return Fields(tuple(dict.fromkeys((*self.names, *other.names))),
                      tuple(dict.fromkeys((*self.decode_as, *other.decode_as))))


class Export:
    """Every frame of one capture from one tshark field export (no display filter): a row per
    frame, field -> text ("" where the frame lacks it, several occurrences comma-joined, as
    testbed/tshark.py exports them). What a plug-in filtered with a display filter before, it now
    picks from these rows: `having` the protocols (frame.protocols), `occurs` a field's value."""

    def __init__(self, rows: list[dict[str, str]], fields: Fields, path: Path | None = None) -> None:
        self.rows = rows
        self.fields = fields
        self.path = path
        self._stacks: dict[str, frozenset[str]] = {}    # frame.protocols text -> its protocols

    @staticmethod
    def with_base(fields: Fields) -> Fields:
        return Fields(BASE_FIELDS) | fields

    @classmethod
    def parse(cls, text: str, fields: Fields, path: Path | None = None) -> Export:
        """From tshark's export text of `Export.with_base(fields)`, in that field order."""
        names = cls.with_base(fields).names
        rows = [dict(zip(names, r)) for r in tshark.rows(text, len(names))]
        return cls(rows, cls.with_base(fields), path)

    @classmethod
    def read(cls, pcap: Path, fields: Fields) -> Export:
        """One tshark pass over the capture (its own; the analysis reads through its cache)."""
        full = cls.with_base(fields)
        return cls.parse(tshark.export(pcap, full.names, decode_as=full.decode_as), fields, Path(pcap))

    def covers(self, fields: Fields) -> None:
        """ValueError unless the export holds these fields and decode-as rules (it was made without
        the reader's wire_fields: counting from it would silently find nothing)."""
        missing = [f for f in (*fields.names, *fields.decode_as) if f not in (*self.fields.names, *self.fields.decode_as)]
        if missing:
            raise ValueError(f"export of {self.path} lacks {', '.join(missing)}: make it with the plug-in's wire_fields")

    def having(self, *protocols: str) -> list[dict[str, str]]:
        """The frames whose protocol stack holds every one of `protocols` (display filter "a && b")."""
        want = set(protocols)
        stacks = self._stacks      # a capture has a handful of distinct stacks: each split once
        for text in {r["frame.protocols"] for r in self.rows}.difference(stacks):
            stacks[text] = frozenset(text.split(":"))
        return [r for r in self.rows if want <= stacks[r["frame.protocols"]]]


def occurs(row: dict[str, str], field: str, values: Collection[str]) -> bool:
    """Whether any occurrence of the field has one of the values (display filter "field == v")."""
    text = row.get(field, "")
    if "," not in text:            # one occurrence or none: most frames
        return text in values
    return any(v in values for v in text.split(","))


def first_of(row: dict[str, str], field: str, values: Collection[str]) -> str:
    """The first occurrence of the field among the values ("" when none is)."""
    return next((v for v in row.get(field, "").split(",") if v in values), "")


def sent_by(rows: list[dict[str, str]], src: str | None) -> list[dict[str, str]]:
    """The rows whose source address (outer or inner) is `src` (all of them when src is None)."""
    if not src:
        return rows
    field = "ipv6.src" if ":" in src else "ip.src"
    return [r for r in rows if src in r.get(field, "").split(",")]


def exported(pcap: Path | Export, fields: Fields) -> Export:
    """The export to count from: the shared one given (checked to hold `fields`), or a pass of its own."""
    if isinstance(pcap, Export):
        pcap.covers(fields)
        return pcap
    return Export.read(pcap, fields)
