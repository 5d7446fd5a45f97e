"""The steps of one render, as a library: each writes one part of the render dir from a `Job`
(the selection resolved by testbed/orchestrate.py, with the plug-ins handed in) and returns the
files it wrote. Nothing here imports a plug-in, reads the environment or resolves a profile.

Order (write_all): NF configs with the overlay's and the dimensions' overrides merged in, the
RAN's configs and Compose services, the provisioning input, each program container's extra
environment, the overlay's per-node dirs, the dimensions' dirs and fragments, compose.env, the
overlay's Compose fragment, the list of Compose files, plan.txt.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from testbed import ran as ran_helpers
from testbed.contract import DimensionChoice, OverlayPlugin, RanContext, RanPlugin, Values
from testbed.files import dump_yaml
from testbed.files import write_atomic as write
from testbed.profiles import Profile
from testbed.render import Rendered, compose_files, plan, provision_input
from testbed.render import compose_env as cenv
from testbed.render import compose_overlay, layout, open5gs
from testbed.render.merge import deep_merge


@dataclasses.dataclass(frozen=True)
class Job:
    out_dir: Path
    profile: Profile
    plane: str                                   # canonical PLANE expression
    values: Values                               # as the selection runs them (orchestrate.run_values)
    overlay: OverlayPlugin
    ran: RanPlugin
    dimensions: tuple[DimensionChoice, ...]
    uu: str | None
    subscribers: dict[str, Any]
    keys_dir: Path

    @property
    def header(self) -> str:
        return (f"# Rendered by `python -m testbed render` for profile {self.profile.id} (plane {self.plane}) "
                "from nf-configs/stack.yaml. Do not edit: edit stack.yaml and re-render.\n")

    def overrides(self, node: str) -> dict[str, Any]:
        """The overlay's, then each dimension's overrides of one node's config, merged in that order."""
        merged = deep_merge({}, self.overlay.nf_config_overrides(node, self.profile, self.values) or {})
        for d in self.dimensions:
            merged = deep_merge(merged, d.nf_config_overrides(node, self.profile, self.values) or {})
        return merged

    def environment(self, node: str) -> dict[str, str]:
        """The overlay's, then each dimension's extra environment of one program container."""
        out = dict(self.overlay.nf_environment(node, self.profile, self.values) or {})
        for d in self.dimensions:
            out.update(d.nf_environment(node, self.profile, self.values) or {})
        return out


def nf_configs(job: Job, nodes: list[str]) -> list[Path]:
    scp = bool(job.values["use_scp"])
    return [write(job.out_dir / layout.OPEN5GS_DIR / f"{nf}.yaml",
                  dump_yaml(deep_merge(open5gs.nf_config(nf, job.values, scp), job.overrides(nf)), job.header))
            for nf in nodes]


def ran_files(job: Job) -> tuple[list[Path], Path]:
    """The RAN's configs and its Compose services file (the second of compose.files)."""
    ctx = RanContext(values=job.values, subscribers=job.subscribers, out_dir=job.out_dir,
                     header=job.header.lstrip("# ").rstrip("\n"), uu=job.uu, overrides=job.overrides)
    written = job.ran.render(ctx)
    ran_file = write(job.out_dir / layout.RAN_COMPOSE_FILE,
                     ran_helpers.compose_text(job.ran.compose(job.values), job.ran.name, job.profile.id))
    provision = write(job.out_dir / layout.PROVISION_FILE,
                      json.dumps(provision_input(job.subscribers, job.values), indent=1) + "\n", 0o600)
    return [*written, ran_file, provision], ran_file


def env_files(job: Job) -> list[Path]:
    written = []
    for node in open5gs.OPEN5GS_NFS + tuple(job.ran.env_nodes()):
        extra = job.environment(node)
        written.append(write(job.out_dir / layout.ENV_DIR / f"{node}.env",
                             f"# extra environment of the {node} container ({job.profile.id})\n"
                             + (cenv.format_env(extra) if extra else "")))
    return written


def overlay_dirs(job: Job) -> dict[str, Path]:
    (job.out_dir / layout.OVERLAY_DIR).mkdir(mode=0o700)
    found = job.overlay.render(job.profile, job.plane, job.values, job.keys_dir, job.out_dir / layout.OVERLAY_DIR)
    return {n: Path(p) for n, p in found.items()}


def base_env(job: Job, commit: str, mongo_uri: str | None, repo_dir: Path) -> dict[str, str]:
    """compose.env before the dimensions: the stack's variables, the RAN's, UU, the overlay's."""
    env = cenv.compose_env(profile=job.profile.id, plane=job.plane, protocol=job.profile.protocol,
                           render_dir=job.out_dir, keys_dir=job.keys_dir.resolve(), repo_dir=repo_dir,
                           commit=commit, mongo_uri=mongo_uri or open5gs.mongo_uri(job.values), values=job.values)
    env.update(job.ran.compose_env(job.values))
    if job.uu:
        env["UU"] = job.uu
    env.update({str(k): str(val) for k, val in job.overlay.compose_env(job.profile, job.plane, job.values).items()})
    return env


def dimension_files(job: Job, env: dict[str, str]) -> tuple[list[Path], list[Path]]:
    """Each dimension's dir (removed again when it wrote nothing) and Compose fragment; its
    compose.env variables go into env. Returns (files written, fragments in compose order)."""
    written: list[Path] = []
    fragments: list[Path] = []
    for d in job.dimensions:
        d_dir = job.out_dir / d.name
        d_dir.mkdir(mode=0o700)
        env.update({str(k): str(val) for k, val in d.render(job.profile, job.plane, job.values, d_dir).items()})
        files = sorted(p for p in d_dir.rglob("*") if p.is_file())
        if not files and not any(d_dir.iterdir()):
            d_dir.rmdir()
        written += files
        services = dict(d.compose_services(job.profile, job.plane, job.values))
        if services:
            fragments.append(compose_overlay.write(
                job.out_dir, services, f"{d.name} with profile {job.profile.id} on {job.plane}",
                name=compose_overlay.DIMENSION_FRAGMENT.format(d.name),
                source=f"the {d.name} dimension's compose_services hook (testbed/contract.py)"))
    return written + fragments, fragments


def overlay_fragment(job: Job) -> Path | None:
    services = dict(job.overlay.compose_services(job.profile, job.plane, job.values))
    return compose_overlay.write(job.out_dir, services, f"profile {job.profile.id} on {job.plane}") if services else None


def write_all(job: Job, *, commit: str, mongo_uri: str | None, compose_dir: Path, repo_dir: Path) -> Rendered:
    nodes = open5gs.nf_nodes(job.values, bool(job.values["use_scp"]))
    written = nf_configs(job, nodes)
    ran_written, ran_file = ran_files(job)
    written += ran_written + env_files(job)
    dirs = overlay_dirs(job)
    env = base_env(job, commit, mongo_uri, repo_dir)
    dim_written, dim_fragments = dimension_files(job, env)
    written += dim_written
    written.append(write(job.out_dir / layout.COMPOSE_ENV, job.header + cenv.format_env(env)))
    fragment = overlay_fragment(job)
    written += [fragment] if fragment is not None else []
    files = compose_files(bool(job.values["use_scp"]), fragment, compose_dir, ran_file, dim_fragments)
    written.append(write(job.out_dir / layout.COMPOSE_FILES, "".join(f"{f}\n" for f in files)))
    result = Rendered(job.out_dir, job.profile, job.plane, files, env, nodes, written, dirs,
                      job.ran.name, job.ran.nodes(job.values), job.dimensions)
    written.append(write(job.out_dir / layout.PLAN_FILE,
                         plan(result, job.ran.plan(job.values), job.overlay)))
    return result
