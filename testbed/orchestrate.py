"""Render a run's stack: resolve what was asked once, then call the plug-ins and write the files.

`select()` turns a request (profile, PLANE expression, RAN, UU, the dimensions' variables, SCP)
into a `Selection`: the profile resolved against its planes and the RAN (checked once), the
overlay, RAN and dimension plug-ins that take part, or a usage error naming the valid choices.
`render()` then writes one render dir (.state/render/<planes>/<profile>/, testbed/render/layout.py)
through the library in testbed/render/, which never imports a plug-in: the plug-ins are handed to
it. `render_into_state()` is the command line's whole path (the state lock, the state's stack
addresses, the keys, the render dir). Environment variables are read by the command line only
(testbed/cli/render.py); everything here comes in as arguments.
"""
from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed import ROOT, dimensions, instance, keys, planes, profiles, ran, registry, stack, statelock
from testbed.contract import DimensionChoice, OverlayPlugin, RanPlugin, RuntimePlugin, Values
from testbed.placement import Placement
from testbed.profiles import Profile
from testbed.render import RenderError, Rendered, layout
from testbed.render import steps


@dataclasses.dataclass(frozen=True)
class Selection:
    """What one render runs, resolved and checked once."""
    profile: Profile
    plane: str                                   # canonical PLANE expression ("n2,n4")
    covered: tuple[str, ...]                     # the planes, in canonical order
    overlay: OverlayPlugin
    ran: RanPlugin
    uu: str | None = None                        # AS security of an OAI RAN (docs/ran.md)
    dimensions: tuple[DimensionChoice, ...] = ()
    scp: bool | None = None                      # None: nf-configs/stack.yaml's use_scp
    runtime: RuntimePlugin | None = None         # ENGINE=: None, the Compose files alone
    placement: Placement = dataclasses.field(default_factory=dict)    # PLACEMENT= (testbed/placement.py)
    runtime_options: Mapping[str, str] = dataclasses.field(default_factory=dict)   # the runtime's variables


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What a render reads besides the selection (all of it given, nothing looked up)."""
    subscribers: dict[str, Any]
    keys_dir: Path
    values: Values
    commit: str
    mongo_uri: str | None = None
    compose_dir: Path = ROOT / "compose"
    repo_dir: Path = ROOT
    datapath_choices: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """{an overlay's datapath variable: kernel|<userspace>|auto} as the command line found them."""


def _covered(profile: Profile, plane: str | None, ran_name: str) -> tuple[str, ...]:
    """The planes of the PLANE expression; `all`: every plane of the profile this RAN has, while a
    plane the RAN lacks named explicitly (f1c without the split) is an error."""
    covered = profiles.planes_for(profile, plane)
    if plane is not None and plane.strip() == planes.ALL:
        covered = tuple(p for p in covered if ran.has_plane(ran_name, p))
    missing = [p for p in covered if not ran.has_plane(ran_name, p)]
    if missing:
        own = sorted({f"RAN={r.name}: {', '.join(r.planes)}" for r in registry.rans() if r.planes})
        raise ran.RanError(f"RAN={ran_name} has no {', '.join(missing)} interface ({'; '.join(own)}; docs/ran.md)")
    return covered


def select(profile: Profile | str, plane: str | None, *, ran_name: str | None = None, uu: str | None = None,
           options: Mapping[str, str] | None = None, dims: tuple[DimensionChoice, ...] | None = None,
           scp: bool | None = None, values: Values | None = None, runtime: RuntimePlugin | None = None,
           placement: Placement | None = None, runtime_options: Mapping[str, str] | None = None) -> Selection:
    """The checked selection; ProfileError, RanError, SelectionError, RuntimeOptionError or
    ValueError (a bad UU) name the valid choices. `options`: the dimensions' variables ({VARIABLE:
    value}); `dims`: choices already made (then `options` is not read); `runtime`, `placement`,
    `runtime_options`: ENGINE=, PLACEMENT= and the runtime's variables."""
    v = values or stack.load()
    name = ran.check(ran_name, v)
    prof = profile if isinstance(profile, Profile) else profiles.get(profile, plane)
    covered = _covered(prof, plane, name)
    plugin = ran.get(name)
    plugin.check_options(uu or None, v)
    chosen = dims if dims is not None else dimensions.select(options or {}, prof, planes.expr(covered), name)
    dimensions.check_names(chosen)
    if runtime is not None:
        runtime.check_options(placement or {}, runtime_options or {})
    elif placement:
        registry.runtime(None).check_options(placement, {})
    return Selection(prof, planes.expr(covered), covered, registry.overlay(prof.protocol), plugin,
                     uu or None, tuple(chosen), scp, runtime, dict(placement or {}), dict(runtime_options or {}))


def run_values(sel: Selection, values: Values, datapath_choices: Mapping[str, str] | None = None) -> Values:
    """The stack values as this selection runs them: the dimensions' changes (`apply`), only the
    nodes its RAN runs, and `use_scp`, `overlay_planes` and `datapath_choices` for the hooks that
    see only values."""
    v = ran.restrict(dimensions.apply(sel.dimensions, values), sel.ran.name)
    scp = bool(v.get("use_scp", False)) if sel.scp is None else sel.scp
    return {**v, "use_scp": scp, "overlay_planes": sel.covered, "datapath_choices": dict(datapath_choices or {})}


def render(sel: Selection, out_dir: Path, inputs: Inputs) -> Rendered:
    """Write the render dir for the selection and return what was written. The dir is replaced as
    a whole, so no stale file of an earlier render survives."""
    out_dir = Path(out_dir).resolve()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, mode=0o700)
    v = run_values(sel, inputs.values, inputs.datapath_choices)
    job = steps.Job(out_dir=out_dir, profile=sel.profile, plane=sel.plane, values=v, overlay=sel.overlay,
                    ran=sel.ran, dimensions=sel.dimensions, uu=sel.uu, subscribers=inputs.subscribers,
                    keys_dir=Path(inputs.keys_dir))
    try:
        rendered = steps.write_all(job, commit=inputs.commit, mongo_uri=inputs.mongo_uri,
                                   compose_dir=inputs.compose_dir, repo_dir=inputs.repo_dir)
    except (KeyError, ValueError) as exc:
        raise RenderError(f"render {sel.profile.id} on {sel.plane}: {exc}") from exc
    if sel.runtime is not None:
        rendered.files += sel.runtime.render(rendered, sel.placement, sel.runtime_options)
        lines = sel.runtime.plan(rendered, sel.placement, sel.runtime_options)
        if lines:
            with open(out_dir / layout.PLAN_FILE, "a", encoding="utf-8") as fh:
                fh.write("".join(f"{line}\n" for line in lines))
    return rendered


def render_into_state(sel: Selection, state_dir: Path, commit: str, datapath_choices: Mapping[str, str],
                      values: Values | None = None) -> Rendered:
    """The command line's render: under the state lock (never under a running stack), with the
    state directory's stack addresses (testbed/instance.py) and keys, into its render dir."""
    with statelock.hold(state_dir), instance.addresses_of(state_dir):
        v = values or stack.load()
        root = keys.ensure(state_dir)
        out = layout.render_dir(state_dir, sel.plane, sel.profile.id, sel.ran.name)
        return render(sel, out, Inputs(keys.subscribers(root), root, v, commit,
                                       datapath_choices=datapath_choices))
