"""Overlay plug-ins, one module per protocol: the typed hook interface (docs/contracts.md).

A new overlay is a module here plus one line in MODULES; testbed/render calls its hooks and
never names a protocol. `plane` in every hook is a PLANE expression (testbed/planes.py): one
plane ("n2") or several ("n2,n4,n3,sbi", canonical order); `verify_capture` gets one plane,
because one capture shows one network. `values` are the stack values (nf-configs/stack.yaml)
as render hands them over: with `use_scp` and `overlay_planes` (the tuple of planes the run
covers) set, so that hooks without a plane argument (nf_config_overrides, nf_environment) can
tell whether their plane is covered (a relay overlay that moves where an NF connects needs it).

Required (`Overlay`): render, endpoints, verify_capture. Optional (looked up by `hook()`,
called when present): nf_config_overrides, nf_environment, compose_env, compose_services,
host_needs, with the signatures of the aliases below.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from testbed.overlays.verdict import Verdict

# protocol -> module name under testbed.overlays ("none" has no module: baseline)
MODULES: dict[str, str] = {
    "ipsec": "ipsec",
    "wireguard": "wireguard",
    "tls": "tls",
    "dtls": "dtls",
}

Values = dict[str, Any]


class Overlay(Protocol):
    """What every overlay module defines."""

    def render(self, profile: Any, plane: str, values: Values, keys_dir: Path,
               out_dir: Path) -> dict[str, Path]:
        """Write out_dir/<node>/ for every endpoint of the plane(s); return {node: dir}."""

    def endpoints(self, plane: str, values: Values) -> list[str]:
        """The nodes that take part on the plane(s)."""

    def verify_capture(self, pcap: Path, profile: Any, plane: str, values: Values) -> Verdict:
        """Does a capture of one plane's network show the overlay, and no plaintext?"""


# Optional hooks: name -> signature (the render, the lab and the doctor call them when present)
NfConfigOverrides = Callable[[str, Any, Values], dict[str, Any]]
"""(node, profile, values) -> dict deep-merged into that node's rendered NF/gNB config
(TLS: https and certificates; a relay overlay: the address the NF connects to)."""
NfEnvironment = Callable[[str, Any, Values], dict[str, str]]
"""(node, profile, values) -> extra environment of the node's program container (env/<node>.env)."""
ComposeEnv = Callable[[Any, str, Values], dict[str, str]]
"""(profile, plane, values) -> extra variables for Compose interpolation (compose.env)."""
ComposeServices = Callable[[Any, str, Values], dict[str, dict[str, Any]]]
"""(profile, plane, values) -> {service: override} written into the render's Compose overlay
fragment (testbed/render/compose_overlay.py); tunnel overlays override the `<node>-net`
holders (compose_overlay.holder_service), a relay overlay may add services of its own."""
HostNeeds = Callable[[Any, str], list[str]]
"""(profile, plane) -> what the host must offer (doctor/preflight)."""

HOOKS: dict[str, object] = {
    "nf_config_overrides": NfConfigOverrides,
    "nf_environment": NfEnvironment,
    "compose_env": ComposeEnv,
    "compose_services": ComposeServices,
    "host_needs": HostNeeds,
}


def get(protocol: str) -> ModuleType | None:
    """The overlay module for a protocol, or None for the baseline."""
    if protocol == "none":
        return None
    if protocol not in MODULES:
        raise ValueError(f"unknown overlay protocol {protocol!r}; known: none, {', '.join(MODULES)}")
    return importlib.import_module(f"testbed.overlays.{MODULES[protocol]}")


REQUIRED = ("render", "endpoints", "verify_capture")


def hook(module: ModuleType | None, name: str) -> Callable[..., Any] | None:
    """A function of the overlay interface the module defines (None without a module or when an
    optional hook is absent)."""
    if name not in HOOKS and name not in REQUIRED:
        raise ValueError(f"{name!r} is not an overlay hook; hooks: {', '.join((*REQUIRED, *HOOKS))}")
    fn = getattr(module, name, None) if module is not None else None
    return fn if callable(fn) else None
