"""Render a profile with ENGINE=k8s as the command line does (orchestrate.select with the runtime,
then render), on the render tests' one set of real keys."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed import keys, orchestrate, placement, profiles, registry, stack
from testbed.render import Rendered
from testbed.runtime.k8s import render as k8s_render
from tests.testbed.render.helpers import keys_root


def render_k8s(profile_id: str, plane: str | None, out: Path, *, place: str = "",
               options: dict[str, str] | None = None, ran: str | None = None, scp: bool | None = None,
               dim_options: dict[str, str] | None = None) -> Rendered:
    root = keys_root()
    v = stack.load()
    prof = profiles.get(profile_id, plane)
    sel = orchestrate.select(prof, plane, ran_name=ran, options=dim_options or {}, scp=scp, values=v,
                             runtime=registry.runtime("k8s"), placement=placement.parse(place),
                             runtime_options=options or {})
    return orchestrate.render(sel, out, orchestrate.Inputs(keys.subscribers(root), root, v, "test"))


def objects(r: Rendered) -> list[dict[str, Any]]:
    return k8s_render.load_objects(r.dir)


def by_kind(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]}
