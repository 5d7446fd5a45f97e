"""RAN variants (RAN=ueransim|oai|split): plug-ins the stack renderer calls, like the overlays.

A variant is a name in nf-configs/stack.yaml `ran.variants` and a module under testbed/ran/
(MODULES below: one line per module) implementing `RanModule`. testbed/render calls only this
interface, so a new RAN variant never edits the renderer:

    nodes(variant, values) -> list[str]            the stack.yaml nodes it runs (filtered by `ran:`)
    env_nodes(variant) -> list[str]                its program containers that get an env/<node>.env
                                                   (the overlays' nf_environment hook fills them)
    render(variant, ctx) -> list[Path]             its configs, written under ctx.out_dir; the
                                                   overlay's nf_config_overrides (ctx.overrides) are
                                                   deep-merged into each gNB-side node's config
    compose(variant, values) -> dict               its Compose services (+ networks), rendered
                                                   into <render dir>/compose/ran.yaml
    compose_env(variant, values) -> dict[str, str] its variables for compose.env (RAN_*)
    plan(variant, values) -> list[str]             lines for plan.txt
    images(variant) -> list[str]                   the image variables it runs (UERANSIM_IMAGE ...)

Every variant exports the same RAN_* variables, which the scripts read instead of assuming
UERANSIM (scripts/up.sh, scripts/lib/common.sh):

    RAN                 the variant
    RAN_READY           the service that is healthy once the RAN is connected to the core
    RAN_UE_TUN          the UE's PDU session interface (uesimtun0, oaitun_ue1)
    RAN_UE_SESSION_LOG  a fixed string of the UE's log line that says its PDU session is up
    RAN_SCALE           1 if the variant has the scaling UEs (ue-scale), else 0
"""
from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from testbed import stack

# variant -> module under testbed.ran
MODULES: dict[str, str] = {
    "ueransim": "ueransim",
    "oai": "oai",
    "split": "oai",
}
RAN_ENV_KEYS = ("RAN", "RAN_READY", "RAN_UE_TUN", "RAN_UE_SESSION_LOG", "RAN_SCALE")
# the planes only the split RAN has (its F1-C, F1-U and E1 interfaces)
SPLIT_PLANES = ("f1c", "f1u", "e1")


def has_plane(variant: str, plane: str) -> bool:
    """Whether a RAN variant has the interface a plane names (every variant has n2, n3, sbi ...)."""
    return plane not in SPLIT_PLANES or variant == "split"


class RanError(ValueError):
    """An unknown RAN variant, or one its module cannot render (the message lists the valid ones)."""


@dataclasses.dataclass(frozen=True)
class RenderContext:
    """What a variant's render() gets: the values, the SIM secrets, where to write, the options."""
    values: dict[str, Any]
    subscribers: dict[str, Any]
    out_dir: Path
    header: str                      # the "rendered, do not edit" comment (without comment marks)
    uu: str | None = None            # UU=<nea>-<nia>: AS security of an OAI RAN (docs/ran.md)
    overrides: Callable[[str], dict[str, Any]] | None = None   # node -> the overlay's overrides

    def override(self, node: str) -> dict[str, Any]:
        return dict(self.overrides(node) or {}) if self.overrides is not None else {}


class RanModule(Protocol):
    def nodes(self, variant: str, values: dict[str, Any]) -> list[str]: ...
    def env_nodes(self, variant: str) -> list[str]: ...
    def render(self, variant: str, ctx: RenderContext) -> list[Path]: ...
    def compose(self, variant: str, values: dict[str, Any]) -> dict[str, Any]: ...
    def compose_env(self, variant: str, values: dict[str, Any]) -> dict[str, str]: ...
    def plan(self, variant: str, values: dict[str, Any]) -> list[str]: ...
    def images(self, variant: str) -> list[str]: ...


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
    if name not in known or name not in MODULES:
        raise RanError(f"unknown RAN {name!r}; valid: {', '.join(n for n in known if n in MODULES)} "
                       "(nf-configs/stack.yaml ran.variants; docs/ran.md)")
    return name


def get(variant: str) -> RanModule:
    if variant not in MODULES:
        raise RanError(f"unknown RAN {variant!r}; valid: {', '.join(MODULES)}")
    mod: Any = importlib.import_module(f"testbed.ran.{MODULES[variant]}")
    return mod  # type: ignore[no-any-return]


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
        for n in get(variant).nodes(variant, values):
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
