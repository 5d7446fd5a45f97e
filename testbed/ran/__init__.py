"""RAN variants (RAN=ueransim|oai|split): plug-ins the stack renderer calls (testbed/contract.py
RanPlugin, one line each in testbed/registry.py, one folder each under testbed/ran/). A variant
is also a name in nf-configs/stack.yaml `ran.variants` (its label, whether experimental, the
node kind of its RAN nodes). Helpers here answer what every variant shares: which is the
default, which nodes a variant runs, which planes it has.

Every variant exports the same RAN_* variables, which the scripts read instead of assuming
UERANSIM (scripts/up.sh, scripts/lib/): RAN, RAN_READY (the service that is healthy once the RAN
is connected to the core), RAN_UE_TUN (the UE's PDU session interface), RAN_UE_SESSION_LOG (a
fixed string of the UE's log line that says its PDU session is up), RAN_SCALE (1 if the variant
has the scaling UEs).
"""
from __future__ import annotations

from typing import Any

from testbed import registry, stack
from testbed.contract import RanContext, RanPlugin

RAN_ENV_KEYS = ("RAN", "RAN_READY", "RAN_UE_TUN", "RAN_UE_SESSION_LOG", "RAN_SCALE")


def has_plane(variant: str, plane: str) -> bool:
    """Whether a RAN variant has the interface a plane names: a plane some variant declares as its
    own (the split's f1c, f1u, e1) exists only in the variants that declare it."""
    own = {p for r in registry.rans() for p in r.planes}
    return plane not in own or plane in registry.ran(variant).planes


class RanError(ValueError):
    """An unknown RAN variant, or one its module cannot render (the message lists the valid ones)."""


RenderContext = RanContext


def variants(values: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    v = values or stack.load()
    return dict((v.get("ran") or {}).get("variants") or {"ueransim": {"label": "UERANSIM"}})


def default(values: dict[str, Any] | None = None) -> str:
    v = values or stack.load()
    return str((v.get("ran") or {}).get("default") or "ueransim")


def check(variant: str | None, values: dict[str, Any] | None = None) -> str:
    """The variant (the default for None/""), or RanError naming the valid ones."""
    v = values or stack.load()
    name = variant or default(v)
    known = variants(v)
    plugged = [r.name for r in registry.rans()]
    if name not in known or name not in plugged:
        raise RanError(f"unknown RAN {name!r}; valid: {', '.join(n for n in known if n in plugged)} "
                       "(nf-configs/stack.yaml ran.variants; docs/ran.md)")
    return name


def get(variant: str) -> RanPlugin:
    try:
        return registry.ran(variant)
    except registry.UnknownPlugin as exc:
        raise RanError(str(exc)) from None


def runs_node(node: str, variant: str, values: dict[str, Any]) -> bool:
    """Whether `variant` runs a stack.yaml node (a node without a `ran:` list is in every variant)."""
    only = (values["nodes"].get(node) or {}).get("ran")
    return only is None or variant in only


def restrict(values: dict[str, Any], variant: str) -> dict[str, Any]:
    """The stack values as `variant` sees them: the nodes of other RAN variants left out, so that
    everything derived from the nodes (a plane's endpoints, their overlay configs, compose.env's
    addresses) names only nodes that run; its RAN nodes carry the variant's `node_kind`."""
    nodes = {n: spec for n, spec in values["nodes"].items() if runs_node(n, variant, values)}
    kind = variants(values).get(variant, {}).get("node_kind")
    if kind:
        for n in get(variant).nodes(values):
            nodes[n] = {**nodes[n], "kind": kind}
    return {**values, "nodes": nodes}


def ran_nodes(variant: str, values: dict[str, Any]) -> list[str]:
    """The nodes restricted to some variants (`ran:` lists) that `variant` runs, in stack.yaml order."""
    return [n for n, spec in values["nodes"].items() if spec.get("ran") is not None and variant in spec["ran"]]


def label(variant: str, values: dict[str, Any] | None = None) -> str:
    return str(variants(values).get(variant, {}).get("label", variant))


def experimental(variant: str, values: dict[str, Any] | None = None) -> bool:
    return bool(variants(values).get(variant, {}).get("experimental", False))


def compose_text(doc: dict[str, Any], variant: str, profile: str) -> str:
    """The rendered Compose file of a variant's services (<render dir>/compose/ran.yaml)."""
    from testbed.ran import compose as rc
    header = (f"Rendered by `python -m testbed render` for RAN={variant} (profile {profile}) from\n"
              "nf-configs/stack.yaml and compose/base.yaml's x-* templates by testbed/ran/. Do not edit.\n"
              "Documentation: docs/ran.md, docs/stack.md.")
    return rc.dump(doc, header)
