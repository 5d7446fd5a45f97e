"""Overlay plug-ins, one module per protocol (see docs/contracts.md, "Overlays").

A new overlay is a module here plus one line in MODULES.
"""
from __future__ import annotations

import importlib
from types import ModuleType

# protocol -> module name under testbed.overlays ("none" has no module: baseline)
MODULES: dict[str, str] = {
    "ipsec": "ipsec",
    "wireguard": "wireguard",
    "tls": "tls",
    "dtls": "dtls",
}


def get(protocol: str) -> ModuleType | None:
    """The overlay module for a protocol, or None for the baseline."""
    if protocol == "none":
        return None
    if protocol not in MODULES:
        raise ValueError(f"unknown overlay protocol {protocol!r}; known: none, {', '.join(MODULES)}")
    return importlib.import_module(f"testbed.overlays.{MODULES[protocol]}")
