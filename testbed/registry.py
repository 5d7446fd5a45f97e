"""The one registry of plug-ins (testbed/contract.py): one line per plug-in, nothing found by
file name. Adding a plug-in is its folder plus its line here; `python -m testbed plugins`
lists them and the contract test (tests/testbed/test_contract.py) checks each.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TypeVar

from testbed.contract import (BASES, DimensionPlugin, EnginePlugin, OverlayPlugin, Plugin,
                              RanPlugin, RuntimePlugin)

# (kind, name, "module:Class"), in the order tables, figures and `make profiles` list them. Only
# the plug-ins a caller asks for are imported (a driver asking for one overlay loads that one).
ENTRIES: tuple[tuple[str, str, str], ...] = (
    # overlays: top-level folders (ARCHITECTURE.md layout), Python beside the entrypoint
    ("overlay", "ipsec", "ipsec.plugin:Ipsec"),
    ("overlay", "wireguard", "wireguard.plugin:WireGuard"),
    ("overlay", "tls", "tls.plugin:Tls"),
    ("overlay", "dtls", "dtls.plugin:Dtls"),
    ("overlay", "macsec", "macsec.plugin:Macsec"),
    # RAN variants
    ("ran", "ueransim", "testbed.ran.ueransim.plugin:Ueransim"),
    ("ran", "oai", "testbed.ran.oai.plugin:Oai"),
    ("ran", "split", "testbed.ran.oai.plugin:Split"),
    # dimensions
    ("dimension", "secfn", "testbed.secfn.plugin:SecurityFunction"),
    ("dimension", "nas", "testbed.nas.plugin:Nas"),
    ("dimension", "keylog", "testbed.keylog.plugin:Keylog"),
    # security-function engines
    ("engine", "suricata", "testbed.secfn.engines.suricata.plugin:Suricata"),
    ("engine", "snort", "testbed.secfn.engines.snort.plugin:Snort"),
    ("engine", "passthrough", "testbed.secfn.engines.passthrough.plugin:Passthrough"),
    # runtimes (ENGINE=): the first is the default
    ("runtime", "compose", "testbed.runtime.compose.plugin:Compose"),
    ("runtime", "k8s", "testbed.runtime.k8s.plugin:Kubernetes"),
)
BASELINE = "testbed.baseline:Baseline"     # protocol "none": the core's own, not a plug-in

P = TypeVar("P", bound=Plugin)


class UnknownPlugin(ValueError):
    """No plug-in of that kind and name; the message lists the known ones."""


@lru_cache(maxsize=None)
def _load(entry: str) -> Plugin:
    module, _, cls = entry.partition(":")
    obj = getattr(importlib.import_module(module), cls)()
    if not isinstance(obj, Plugin) or obj.kind not in BASES or not isinstance(obj, BASES[obj.kind]):
        raise TypeError(f"testbed/registry.py: {entry} is not a plug-in of a known kind (testbed/contract.py)")
    return obj


def _loaded(kind: str, name: str, entry: str) -> Plugin:
    obj = _load(entry)
    if (obj.kind, obj.name) != (kind, name):
        raise TypeError(f"testbed/registry.py: {entry} is the {obj.kind} {obj.name!r}, registered as {kind} {name!r}")
    return obj


def plugins() -> tuple[Plugin, ...]:
    """Every registered plug-in, in ENTRIES order; TypeError/ValueError for a broken registry."""
    names = [(k, n) for k, n, _ in ENTRIES]
    twice = {kn for kn in names if names.count(kn) > 1}
    if twice:
        raise ValueError(f"testbed/registry.py: registered twice: {sorted(twice)}")
    return tuple(_loaded(*e) for e in ENTRIES)


def of_kind(kind: str, cls: type[P]) -> list[P]:
    out = []
    for k, n, entry in ENTRIES:
        if k == kind:
            p = _loaded(k, n, entry)
            if isinstance(p, cls):
                out.append(p)
    return out


def _get(kind: str, name: str, cls: type[P], what: str) -> P:
    for k, n, entry in ENTRIES:
        if (k, n) == (kind, name):
            p = _loaded(k, n, entry)
            if isinstance(p, cls):
                return p
    known = ", ".join(n for k, n, _ in ENTRIES if k == kind)
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


def runtimes() -> list[RuntimePlugin]:
    return of_kind("runtime", RuntimePlugin)


def runtime(name: str | None) -> RuntimePlugin:
    """The runtime ENGINE= names; empty: the first registered (compose)."""
    if not name:
        return runtimes()[0]
    return _get("runtime", name, RuntimePlugin, "engine (ENGINE=)")
