"""The planes an overlay can cover, as data (nf-configs/channels.yaml, key `planes`).

A plane is a network of nf-configs/stack.yaml, the transport and port of the protocol it
carries in the clear, and the channels (testbed/channels.py) between its nodes. A PLANE
expression names one plane or several (`n2,n4,n3,sbi`): `split()` turns it into the
canonical tuple (catalogue order, no repeats), `expr()` back into text and `key()` into the
form used in directory names (`n2+n4`). Adding a plane is an entry in the data file plus its
nodes' addresses (and port) in stack.yaml; nothing here names a plane.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT

PLANE_FILE = ROOT / "nf-configs" / "channels.yaml"
TRANSPORTS = ("tcp", "udp", "sctp")
ALL = "all"                         # a PLANE expression: every plane the profile supports
_SEP = re.compile(r"[\s,+]+")


class PlaneError(ValueError):
    """An unknown plane, or a malformed plane entry in the data file."""


@dataclasses.dataclass(frozen=True)
class Plane:
    name: str
    network: str          # stack.yaml network: one capture on it shows exactly this plane
    transport: str        # tcp | udp | sctp
    port_key: str         # stack.yaml key of its port (sbi_port, ngap_port, gtpu_port, pfcp_port)
    protocol: str         # tshark's protocol name (display-filter word)
    label: str

    def port(self, values: dict[str, Any]) -> int:
        try:
            return int(values[self.port_key])
        except KeyError:
            raise PlaneError(f"plane {self.name}: nf-configs/stack.yaml has no {self.port_key}") from None

    def plaintext_filter(self, values: dict[str, Any]) -> str:
        """The plane's own traffic as it looks without an overlay (tshark display filter): its
        protocol, or anything on its port whatever the transport (the namespace tests carry N2
        over a TCP stand-in where the kernel has no SCTP; that must count as plaintext too)."""
        port = self.port(values)
        return f"(tcp.port == {port} || udp.port == {port} || sctp.port == {port} || {self.protocol})"


@lru_cache(maxsize=4)
def load(path: Path = PLANE_FILE) -> dict[str, Plane]:
    """Every plane, in file order (PlaneError naming the field that is wrong)."""
    with open(path, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh)
    out: dict[str, Plane] = {}
    for name, spec in (raw.get("planes") or {}).items():
        try:
            p = Plane(name=str(name), network=str(spec["network"]), transport=str(spec["transport"]),
                      port_key=str(spec["port"]), protocol=str(spec["protocol"]), label=str(spec["label"]))
        except (KeyError, TypeError) as exc:
            raise PlaneError(f"{path}: planes.{name} lacks field {exc.args[0]!r}") from None
        if p.transport not in TRANSPORTS:
            raise PlaneError(f"{path}: planes.{name}.transport {p.transport!r} is not one of {TRANSPORTS}")
        if not re.fullmatch(r"[a-z0-9]+", p.name):
            raise PlaneError(f"{path}: plane name {p.name!r}: use lowercase letters and digits")
        out[p.name] = p
    return out


def names() -> tuple[str, ...]:
    return tuple(load())


def get(name: str) -> Plane:
    planes = load()
    if name not in planes:
        raise PlaneError(f"unknown plane {name!r}; known: {', '.join(planes)}")
    return planes[name]


def network(name: str) -> str:
    return get(name).network


def split(expression: str | Iterable[str]) -> tuple[str, ...]:
    """`"n4,n2"` / `"n2 n4"` / `["n2", "n4"]` -> ("n2", "n4") in catalogue order.
    PlaneError for an empty expression or an unknown plane (`all` is the profile's business)."""
    words = ([w for w in _SEP.split(expression) if w] if isinstance(expression, str)
             else [str(w) for w in expression])
    if not words:
        raise PlaneError(f"no plane named; known: {', '.join(names())}")
    unknown = [w for w in words if w not in load()]
    if unknown:
        raise PlaneError(f"unknown plane(s) {', '.join(unknown)}; known: {', '.join(names())}"
                         f" (several: PLANE=n2,n4; every plane of the profile: PLANE={ALL})")
    return tuple(p for p in load() if p in words)


def expr(planes: str | Iterable[str]) -> str:
    """The canonical PLANE text: "n2,n4"."""
    return ",".join(split(planes))


def key(planes: str | Iterable[str]) -> str:
    """The form used in directory names: "n2+n4" (one plane: its name)."""
    return "+".join(split(planes))


def nodes_on(name: str, values: dict[str, Any]) -> list[str]:
    """Nodes of stack.yaml with an address on the plane's network, in stack.yaml order."""
    net = network(name)
    return [n for n, spec in values["nodes"].items() if net in (spec.get("networks") or {})]
