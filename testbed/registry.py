"""The one registry of plug-ins (testbed/contract.py): one line per plug-in, nothing found by
file name. Adding a plug-in is its folder plus its line here; `python -m testbed plugins`
lists them and the contract test (tests/testbed/test_contract.py) checks each.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TypeVar

from testbed.contract import (BASES, DimensionPlugin, EnginePlugin, OverlayPlugin, Plugin,
                              RanPlugin)

# "module:Class", in the order tables, figures and `make profiles` list them
ENTRIES: tuple[str, ...] = (
    # overlays: top-level folders (ARCHITECTURE.md layout), Python beside the entrypoint
    "ipsec.plugin:Ipsec",
    "wireguard.plugin:WireGuard",
    "tls.plugin:Tls",
    "dtls.plugin:Dtls",
    # RAN variants
    "testbed.ran.ueransim.plugin:Ueransim",
    "testbed.ran.oai.plugin:Oai",
    "testbed.ran.oai.plugin:Split",
    # dimensions
    "testbed.secfn.plugin:SecurityFunction",
    "testbed.nas.plugin:Nas",
    # security-function engines
    "testbed.secfn.engines.suricata.plugin:Suricata",
    "testbed.secfn.engines.snort.plugin:Snort",
    "testbed.secfn.engines.passthrough.plugin:Passthrough",
)
BASELINE = "testbed.baseline:Baseline"     # protocol "none": the core's own, not a plug-in

P = TypeVar("P", bound=Plugin)


class UnknownPlugin(ValueError):
    """No plug-in of that kind and name; the message lists the known ones."""


def _load(entry: str) -> Plugin:
    module, _, cls = entry.partition(":")
    obj = getattr(importlib.import_module(module), cls)()
    if not isinstance(obj, Plugin) or obj.kind not in BASES or not isinstance(obj, BASES[obj.kind]):
        raise TypeError(f"testbed/registry.py: {entry} is not a plug-in of a known kind (testbed/contract.py)")
    return obj


@lru_cache(maxsize=1)
def plugins() -> tuple[Plugin, ...]:
    """Every registered plug-in, in ENTRIES order; TypeError/ValueError for a broken registry."""
    loaded = tuple(_load(e) for e in ENTRIES)
    seen: set[tuple[str, str]] = set()
    for p in loaded:
        if (p.kind, p.name) in seen:
            raise ValueError(f"testbed/registry.py: two {p.kind} plug-ins named {p.name!r}")
        seen.add((p.kind, p.name))
    return loaded


def of_kind(kind: str, cls: type[P]) -> list[P]:
    return [p for p in plugins() if p.kind == kind and isinstance(p, cls)]


def _get(kind: str, name: str, cls: type[P], what: str) -> P:
    for p in of_kind(kind, cls):
        if p.name == name:
            return p
    known = ", ".join(p.name for p in of_kind(kind, cls))
    raise UnknownPlugin(f"unknown {what} {name!r}; known: {known}")


@lru_cache(maxsize=1)
def baseline() -> OverlayPlugin:
    obj = _load(BASELINE)
    assert isinstance(obj, OverlayPlugin)
    return obj


def overlays() -> list[OverlayPlugin]:
    """The overlay plug-ins (the baseline "none" is not one)."""
    return of_kind("overlay", OverlayPlugin)


def overlay(protocol: str) -> OverlayPlugin:
    """The plug-in of a profile's protocol; "none" is the baseline (no overlay)."""
    if protocol == baseline().name:
        return baseline()
    return _get("overlay", protocol, OverlayPlugin, "overlay protocol")


def protocols() -> tuple[str, ...]:
    """Every protocol a profile may have: the baseline's, then each overlay's."""
    return (baseline().name, *(p.name for p in overlays()))


def rans() -> list[RanPlugin]:
    return of_kind("ran", RanPlugin)


def ran(name: str) -> RanPlugin:
    return _get("ran", name, RanPlugin, "RAN")


def dimensions() -> list[DimensionPlugin]:
    return of_kind("dimension", DimensionPlugin)


def dimension(name: str) -> DimensionPlugin:
    return _get("dimension", name, DimensionPlugin, "dimension")


def engines() -> list[EnginePlugin]:
    return of_kind("engine", EnginePlugin)


def engine(name: str) -> EnginePlugin:
    return _get("engine", name, EnginePlugin, "engine")
