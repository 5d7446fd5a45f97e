"""The channel map (nf-configs/channels.yaml): which nodes talk on an overlaid plane.

A channel is directed (client opens the connection); overlays care about host pairs
(unordered), which is what `pairs()` returns. `links()`, `endpoints()` and `peers()` answer
the same for a set of planes (a PLANE expression such as "n2,n4", testbed/planes.py) and the
nodes of stack.yaml: a node on several planes has one peer link per plane it shares with a
partner. `seen_pairs()` reads a capture and returns the host pairs that really talked, so the
map can be checked on a real run (`python -m testbed channels-seen CAPTURE`).
"""
from __future__ import annotations

import dataclasses
import ipaddress
import logging
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import planes as planes_mod
from testbed import stack, tshark

log = logging.getLogger(__name__)

CHANNEL_FILE = planes_mod.PLANE_FILE
PHASES = ("startup", "ue")
# the network that carries each overlaid plane (nf-configs/channels.yaml)
PLANE_NETWORK = {p.name: p.network for p in planes_mod.load().values()}
GTPU_PORT = int(stack.load()[planes_mod.get("n3").port_key])

Pair = tuple[str, str]


class ChannelError(ValueError):
    """The channel map is malformed or names something that does not exist."""


@dataclasses.dataclass(frozen=True)
class Channel:
    plane: str
    client: str
    server: str
    phase: str
    requests: str
    build: str
    sent_from: str
    order_dependent: bool

    @property
    def pair(self) -> Pair:
        a, b = sorted((self.client, self.server))
        return a, b


@lru_cache(maxsize=4)
def load(path: Path = CHANNEL_FILE) -> tuple[Channel, ...]:
    """Every channel of the map, in file order (ChannelError if a field is missing)."""
    with open(path, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh)
    out: list[Channel] = []
    for plane, spec in raw["planes"].items():
        rows = (spec or {}).get("channels") if isinstance(spec, dict) else None
        if not isinstance(rows, list):
            raise ChannelError(f"{path}: planes.{plane} has no list of channels")
        for i, row in enumerate(rows):
            try:
                ch = Channel(plane=plane, client=row["client"], server=row["server"],
                             phase=row["phase"], requests=row["requests"], build=row["build"],
                             sent_from=row["sent_from"], order_dependent=bool(row["order_dependent"]))
            except KeyError as exc:
                raise ChannelError(f"{path}: planes.{plane}[{i}] lacks field {exc.args[0]!r}") from None
            if ch.phase not in PHASES:
                raise ChannelError(f"{path}: planes.{plane}[{i}] phase {ch.phase!r} is not one of {PHASES}")
            out.append(ch)
    return tuple(out)


def channels(plane: str = "sbi", phase: str | None = None) -> list[Channel]:
    if plane not in PLANE_NETWORK:
        raise ChannelError(f"unknown plane {plane!r}; known: {', '.join(PLANE_NETWORK)}")
    if phase is not None and phase not in PHASES:
        raise ChannelError(f"unknown phase {phase!r}; known: {', '.join(PHASES)}")
    return [c for c in load() if c.plane == plane and (phase is None or c.phase == phase)]


def pairs(plane: str = "sbi", phase: str | None = None,
          include_order_dependent: bool = True) -> list[Pair]:
    """Host pairs (names sorted inside each pair), sorted, without duplicates."""
    return sorted({c.pair for c in channels(plane, phase)
                   if include_order_dependent or not c.order_dependent})


def nodes(plane: str = "sbi") -> list[str]:
    """Every node that takes part in some channel of the plane, sorted."""
    return sorted({n for pair in pairs(plane) for n in pair})


def partners(node: str, plane: str = "sbi") -> list[str]:
    """The nodes `node` shares a host pair with on that plane, sorted."""
    return sorted({b if a == node else a for a, b in pairs(plane) if node in (a, b)})


# --- checking the map against a capture ------------------------------------------------------

# --- the links of a set of planes between the nodes of stack.yaml ----------------------------

@dataclasses.dataclass(frozen=True, order=True)
class Link:
    """One host pair on one plane (a, b sorted): one IPsec connection / WireGuard route."""
    plane: str
    a: str
    b: str

    def other(self, node: str) -> str:
        return self.b if node == self.a else self.a


def links(planes: str | Iterable[str], values: dict[str, Any],
          nodes: Iterable[str] | None = None) -> list[Link]:
    """Every host pair of the planes whose nodes both have an address on the plane's network
    (and, if given, are both among `nodes`), in plane order then pair order."""
    keep = None if nodes is None else set(nodes)
    out: list[Link] = []
    for plane in planes_mod.split(planes):
        have = set(planes_mod.nodes_on(plane, values))
        if keep is not None:
            have &= keep
        out += [Link(plane, a, b) for a, b in pairs(plane) if a in have and b in have]
    return out


def endpoints(planes: str | Iterable[str], values: dict[str, Any],
              nodes: Iterable[str] | None = None) -> list[str]:
    """The nodes that take part in some link of the planes, sorted."""
    return sorted({n for link in links(planes, values, nodes) for n in (link.a, link.b)})


def peers(node: str, planes: str | Iterable[str], values: dict[str, Any],
          nodes: Iterable[str] | None = None) -> list[Link]:
    """The node's links on the planes (one per plane and partner)."""
    return [link for link in links(planes, values, nodes) if node in (link.a, link.b)]


def _address_map(plane: str, values: dict[str, Any]) -> dict[str, str]:
    net = PLANE_NETWORK[plane]
    return {str(spec["networks"][net]): name for name, spec in values["nodes"].items()
            if net in spec.get("networks", {})}


def capture_filter(plane: str, values: dict[str, Any]) -> str:
    """tshark display filter for connection starts of the plane's protocol (TCP SYNs, SCTP
    INITs, or any datagram for UDP planes), IKE_SA_INIT requests, WireGuard handshake
    initiations."""
    p = planes_mod.get(plane)
    subnet = values["networks"][p.network]["subnet"]
    port = p.port(values)
    starts = {"tcp": f"(tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.dstport == {port})",
              "sctp": f"(sctp.dstport == {port} && sctp.chunk_type == 1)",
              "udp": f"(udp.port == {port} && !icmp)"}[p.transport]
    return (f"ip.src == {subnet} && ip.dst == {subnet} && "
            f"({starts} || (isakmp.exchangetype == 34 && isakmp.rspi == 00:00:00:00:00:00:00:00) || wg.type == 1)")


def seen_pairs(capture: Path, plane: str = "sbi",
               values: dict[str, Any] | None = None) -> tuple[list[Pair], list[str]]:
    """(host pairs seen in the capture, addresses seen that belong to no node)."""
    v = values or stack.load()
    try:
        rows = tshark.fields(capture, capture_filter(plane, v), ["ip.src", "ip.dst"])
    except tshark.TsharkError as exc:
        raise ChannelError(str(exc)) from None
    by_addr = _address_map(plane, v)
    found: set[Pair] = set()
    unknown: set[str] = set()
    for fields in rows:
        if len(fields) < 2 or not fields[0] or not fields[1]:
            continue
        # with tunnels (IP-in-IP) tshark lists outer,inner: the outer header is the wire
        src, dst = fields[0].split(",")[0], fields[1].split(",")[0]
        names = [by_addr.get(src), by_addr.get(dst)]
        for addr, name in zip((src, dst), names):
            if name is None and ipaddress.ip_address(addr) != ipaddress.ip_address(
                    v["networks"][PLANE_NETWORK[plane]]["gateway"]):
                unknown.add(addr)
        if names[0] and names[1] and names[0] != names[1]:
            a, b = sorted((names[0], names[1]))
            found.add((a, b))
    return sorted(found), sorted(unknown)


@dataclasses.dataclass(frozen=True)
class PairDiff:
    seen: list[Pair]
    expected: list[Pair]
    missing: list[Pair]             # in the map (not order-dependent) but not seen
    missing_optional: list[Pair]    # order-dependent pairs not seen (fine)
    unexpected: list[Pair]          # seen but not in the map

    @property
    def ok(self) -> bool:
        return not self.missing and not self.unexpected


def diff(seen: list[Pair], plane: str = "sbi", nodes_present: list[str] | None = None) -> PairDiff:
    """Compare seen host pairs to the map (limited to pairs whose nodes are both present)."""
    def keep(p: Pair) -> bool:
        return nodes_present is None or (p[0] in nodes_present and p[1] in nodes_present)
    required = {p for p in pairs(plane, include_order_dependent=False) if keep(p)}
    allowed = {p for p in pairs(plane) if keep(p)}
    s = set(seen)
    return PairDiff(seen=sorted(s), expected=sorted(allowed),
                    missing=sorted(required - s), missing_optional=sorted((allowed - required) - s),
                    unexpected=sorted(s - allowed))
