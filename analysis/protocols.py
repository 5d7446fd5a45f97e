"""What the tables and figures show of each protocol, asked of its overlay plug-in
(testbed/registry.py; protocol "none" is the baseline): its label, colour and place in the order,
and whether a run on a userspace datapath may stand beside the papers' kernel numbers. The
analysis never spells a protocol's name: a new overlay brings all of this in its own folder.
"""
from __future__ import annotations

from functools import lru_cache

from testbed import registry
from testbed.contract import OverlayPlugin

OTHER_COLOUR = "#8c564b"        # a protocol no plug-in knows (a foreign data set's)


@lru_cache(maxsize=64)
def _plugin(protocol: str) -> OverlayPlugin | None:
    try:
        return registry.overlay(protocol)
    except registry.UnknownPlugin:
        return None


def order() -> dict[str, int]:
    """{protocol: its place}: the baseline first, then the overlays in registry order."""
    return {p: i for i, p in enumerate(registry.protocols())}


def colour(protocol: str) -> str:
    ov = _plugin(str(protocol))
    return ov.colour if ov is not None else OTHER_COLOUR


def label(protocol: str) -> str:
    """Its name in legends ("IPsec"; the baseline: "baseline (none)")."""
    ov = _plugin(str(protocol))
    if ov is None:
        return str(protocol)
    return ov.label if ov.protects else f"{ov.label} ({ov.name})"


def is_baseline(protocol: str) -> bool:
    ov = _plugin(str(protocol))
    return ov is not None and not ov.protects


def has_kernel_datapath(protocol: str) -> bool:
    """Whether the protocol runs in the kernel where the kernel can (the papers measured that)."""
    ov = _plugin(str(protocol))
    return ov is not None and any(d not in ov.userspace_datapaths for d in ov.datapaths)


def not_comparable(protocol: str, datapath: str) -> bool:
    """A run on a userspace fallback of a protocol the papers ran in the kernel: never set beside
    their numbers unmarked (a protocol that only runs in userspace, a relay, is its own reference)."""
    return str(datapath) == "userspace" and has_kernel_datapath(protocol)


def userspace_fallbacks() -> str:
    """The userspace fallbacks of the kernel datapaths, in words ("libipsec / wireguard-go")."""
    return " / ".join(d for ov in registry.overlays() if has_kernel_datapath(ov.name)
                      for d in ov.datapaths if d in ov.userspace_datapaths)
