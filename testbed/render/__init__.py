"""Render everything a profile needs to run: NF, gNB and UE configs, Compose env, overlay dirs.

`render(...)` is a pure function of the stack values, the profile and the SIM secrets: it
writes files under one render dir (.state/render/<planes>/<profile>/, see layout.py) and
returns what it wrote. `plane` is a PLANE expression (one plane, several, or `all`). The overlay
module of the profile's protocol contributes only through the typed hooks of
testbed/overlays/__init__.py (docs/contracts.md): `render`, `nf_config_overrides`,
`nf_environment`, `compose_env`, `compose_services` (the Compose overlay fragment, written by
testbed/render/compose_overlay.py). The RAN variant (RAN=ueransim|oai|split) contributes through
the plug-in interface of testbed/ran/__init__.py: its configs and its Compose services
(<render dir>/compose/ran.yaml). Dimensions orthogonal to the profile and the RAN (the UPF
security function, ...) come in as `dimensions`, chosen values that contribute only through
the typed hooks of testbed/dimensions.py: `render` (<render dir>/<name>/ and compose.env
variables), `compose_services` (<render dir>/<name>.compose.yaml, after the overlay's),
`describe`, and the overlays' `nf_config_overrides`/`nf_environment`. Nothing here names a
protocol, a plane, a RAN or a dimension.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import subprocess
from pathlib import Path
from typing import Any

from testbed import ROOT, overlays, planes, profiles, ran, stack
from testbed import dimensions as _dimensions
from testbed.dimensions import Dimension
from testbed.files import dump_yaml as _dump_yaml
from testbed.files import write_atomic as _write
from testbed.profiles import Profile
from testbed.render import compose_env as cenv
from testbed.render import compose_overlay, layout, open5gs, ueransim
from testbed.render.merge import deep_merge

log = logging.getLogger(__name__)

COMPOSE_DIR = ROOT / "compose"
BASE_FILE = COMPOSE_DIR / "base.yaml"
SCP_FILE = COMPOSE_DIR / "scp.yaml"


class RenderError(RuntimeError):
    """Rendering failed; the message names the profile/plane/file and what to do."""


@dataclasses.dataclass
class Rendered:
    dir: Path
    profile: Profile
    plane: str                                         # canonical PLANE expression ("n2,n4")
    compose_files: list[Path]
    env: dict[str, str]
    nodes: list[str]                                   # Open5GS NFs that run
    files: list[Path] = dataclasses.field(default_factory=list)
    overlay_dirs: dict[str, Path] = dataclasses.field(default_factory=dict)
    ran: str = "ueransim"                              # the RAN variant (testbed/ran/)
    ran_nodes: list[str] = dataclasses.field(default_factory=list)
    dimensions: tuple[Dimension, ...] = ()             # testbed/dimensions.py, in compose order


def compose_files(use_scp: bool, fragment: Path | None, compose_dir: Path = COMPOSE_DIR,
                  ran_file: Path | None = None, extra: list[Path] | None = None) -> list[Path]:
    """base.yaml, the RAN variant's rendered services, scp.yaml (with the SCP), then the render's
    overlay fragment if any, then the dimensions' fragments (`extra`)."""
    files = [compose_dir / "base.yaml"]
    if ran_file is not None:
        files.append(ran_file)
    if use_scp:
        files.append(compose_dir / "scp.yaml")
    if fragment is not None:
        files.append(fragment)
    return files + list(extra or [])


def git_commit(repo: Path = ROOT) -> str:
    try:
        rev = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{rev}-dirty" if dirty else rev


def provision_input(subscribers: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """What testbed/provision.py needs: every IMSI with K/OPc, slices and DNN."""
    subs = []
    for ue in ueransim.UES:
        s = subscribers[ue]
        subs.append({"name": ue, "imsi": str(s["imsi"]), "k": s["k"], "opc": s["opc"]})
    sc = subscribers["scale"]
    first, count = int(sc["imsi_first"]), int(sc.get("count", values["subscribers"]["scale"]["count"]))
    width = len(str(sc["imsi_first"]))
    for i in range(count):
        subs.append({"name": f"scale-{i + 1}", "imsi": str(first + i).zfill(width),
                     "k": sc["k"], "opc": sc["opc"]})
    return {
        "dnn": values["dnn"],
        "s_nssai": [dict(s) for s in values["s_nssai"]],
        "amf_field": str(values["ueransim"]["amf_field"]),
        "subscribers": subs,
    }


def _hook(module: Any, name: str) -> Any:
    return overlays.hook(module, name)


def overlay_module(protocol: str) -> Any:
    """The overlay module, or RenderError if its protocol has no module yet."""
    try:
        return overlays.get(protocol)
    except ModuleNotFoundError as exc:
        raise RenderError(f"overlay module for protocol {protocol!r} is not available ({exc}); "
                          "that overlay is not installed in this checkout") from exc


def render(profile: Profile, plane: str, out_dir: Path, *, subscribers: dict[str, Any],
           keys_dir: Path, values: dict[str, Any] | None = None, use_scp: bool | None = None,
           commit: str | None = None, mongo_uri: str | None = None,
           compose_dir: Path = COMPOSE_DIR, repo_dir: Path = ROOT,
           ran_variant: str | None = None, uu: str | None = None,
           dimensions: tuple[Dimension, ...] = ()) -> Rendered:
    """Write the render dir for (profile, plane, RAN variant) and return what was written.

    The dir is replaced as a whole, so no stale file of an earlier render survives.
    `dimensions`: chosen values of the dimensions orthogonal to the profile (testbed/dimensions.py).
    """
    dims = tuple(dimensions)
    _dimensions.check_names(dims)
    v = values or stack.load()
    try:
        ran_name = ran.check(ran_variant, v)
        covered = profiles.planes_for(profile, plane)
    except ran.RanError as exc:
        raise RenderError(str(exc)) from None
    except profiles.ProfileError as exc:
        raise RenderError(f"profile {profile.id!r} does not run on plane {plane!r}: {exc}") from None
    # `all`: the planes this RAN has; a plane it lacks named explicitly (f1c without the split) is an error
    if str(plane).strip() == planes.ALL:
        covered = tuple(p for p in covered if ran.has_plane(ran_name, p))
    missing = [p for p in covered if not ran.has_plane(ran_name, p)]
    if missing:
        raise RenderError(f"RAN={ran_name} has no {', '.join(missing)} interface (only RAN=split has "
                          "f1c, f1u, e1; docs/ran.md)")
    plane = planes.expr(covered)
    ran_mod = ran.get(ran_name)
    v = ran.restrict(v, ran_name)       # only the nodes this RAN runs (overlay endpoints, addresses)
    scp = bool(v.get("use_scp", False)) if use_scp is None else use_scp
    # the overlay hooks see only values: tell them about the SCP and the planes the run covers
    v = {**v, "use_scp": scp, "overlay_planes": covered}
    mod = overlay_module(profile.protocol)
    out_dir = Path(out_dir).resolve()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, mode=0o700)
    header = (f"# Rendered by `python -m testbed render` for profile {profile.id} (plane {plane}) "
              "from nf-configs/stack.yaml. Do not edit: edit stack.yaml and re-render.\n")
    written: list[Path] = []

    nodes = open5gs.nf_nodes(v, scp)
    # the overlay's, then each dimension's (same hook, same signature)
    nf_hooks = [h for h in (_hook(mod, "nf_config_overrides"),
                            *(_dimensions.hook(d, "nf_config_overrides") for d in dims)) if h is not None]

    def overrides(node: str) -> dict[str, Any]:
        """Every hook's overrides of one node's config, merged in hook order."""
        merged: dict[str, Any] = {}
        for nf_hook in nf_hooks:
            merged = deep_merge(merged, nf_hook(node, profile, v) or {})
        return merged

    for nf in nodes:
        cfg = deep_merge(open5gs.nf_config(nf, v, scp), overrides(nf))
        written.append(_write(out_dir / layout.OPEN5GS_DIR / f"{nf}.yaml", _dump_yaml(cfg, header)))

    ran_ctx = ran.RenderContext(
        values=v, subscribers=subscribers, out_dir=out_dir, header=header.lstrip("# ").rstrip("\n"), uu=uu,
        overrides=overrides if nf_hooks else None)
    written += ran_mod.render(ran_name, ran_ctx)
    ran_file = _write(out_dir / layout.RAN_COMPOSE_FILE, ran.compose_text(ran_mod.compose(ran_name, v), ran_name,
                                                                          profile.id))
    written.append(ran_file)
    written.append(_write(out_dir / layout.PROVISION_FILE,
                          json.dumps(provision_input(subscribers, v), indent=1) + "\n", 0o600))

    env_hooks = [h for h in (_hook(mod, "nf_environment"),
                             *(_dimensions.hook(d, "nf_environment") for d in dims)) if h is not None]
    for node in open5gs.OPEN5GS_NFS + tuple(ran_mod.env_nodes(ran_name)):
        extra = {k: val for env_hook in env_hooks for k, val in dict(env_hook(node, profile, v) or {}).items()}
        written.append(_write(out_dir / layout.ENV_DIR / f"{node}.env",
                              f"# extra environment of the {node} container ({profile.id})\n"
                              + (cenv.format_env(extra) if extra else "")))

    overlay_dirs: dict[str, Path] = {}
    (out_dir / layout.OVERLAY_DIR).mkdir(mode=0o700)
    render_hook = _hook(mod, "render")
    if render_hook is not None:
        overlay_dirs = {n: Path(p) for n, p in
                        render_hook(profile, plane, v, Path(keys_dir), out_dir / layout.OVERLAY_DIR).items()}

    env = cenv.compose_env(profile=profile.id, plane=plane, protocol=profile.protocol,
                           render_dir=out_dir, keys_dir=Path(keys_dir).resolve(), repo_dir=repo_dir,
                           commit=commit if commit is not None else git_commit(repo_dir),
                           mongo_uri=mongo_uri or open5gs.mongo_uri(v), values=v)
    env.update(ran_mod.compose_env(ran_name, v))
    if uu:
        env["UU"] = uu
    env_extra_hook = _hook(mod, "compose_env")
    if env_extra_hook is not None:
        env.update({str(k): str(val) for k, val in (env_extra_hook(profile, plane, v) or {}).items()})
    dim_fragments: list[Path] = []
    for d in dims:
        d_dir = out_dir / d.name
        d_dir.mkdir(mode=0o700)
        env.update({str(k): str(val) for k, val in (d.render(profile, plane, v, d_dir) or {}).items()})
        written += sorted(p for p in d_dir.rglob("*") if p.is_file())
        d_services = dict(d.compose_services(profile, plane, v) or {})
        if d_services:
            dim_fragments.append(compose_overlay.write(
                out_dir, d_services, f"{d.name} with profile {profile.id} on {plane}",
                name=compose_overlay.DIMENSION_FRAGMENT.format(d.name),
                source=f"the {d.name} dimension's compose_services hook (testbed/dimensions.py)"))
    written += dim_fragments
    written.append(_write(out_dir / layout.COMPOSE_ENV, header + cenv.format_env(env)))
    services_hook = _hook(mod, "compose_services")
    services = dict(services_hook(profile, plane, v) or {}) if services_hook is not None else {}
    fragment = (compose_overlay.write(out_dir, services, f"profile {profile.id} on {plane}")
                if services else None)
    if fragment is not None:
        written.append(fragment)
    files = compose_files(scp, fragment, compose_dir, ran_file, dim_fragments)
    written.append(_write(out_dir / layout.COMPOSE_FILES, "".join(f"{f}\n" for f in files)))
    result = Rendered(out_dir, profile, plane, files, env, nodes, written, overlay_dirs,
                      ran_name, ran_mod.nodes(ran_name, v), dims)
    written.append(_write(out_dir / layout.PLAN_FILE, plan(result)))
    log.info("rendered %s (%s) into %s: %d files", profile.id, plane, out_dir, len(written))
    return result


def plan(r: Rendered) -> str:
    """Human-readable summary of what `make up` will run for this render."""
    lines = [
        f"profile   {r.profile.id}: {r.profile.label}",
        f"plane     {r.plane}   protocol {r.profile.protocol}",
        f"render    {r.dir}",
        "compose   " + " ".join(str(f) for f in r.compose_files),
        f"core      {' '.join(r.nodes)} (each behind its <nf>-net namespace holder)",
        *ran.get(r.ran).plan(r.ran, stack.load()),
        f"database  MONGO_URI={r.env['MONGO_URI']} (provisioned by the provision service)",
        f"ping      the UE pings {r.env['PING_TARGET']} (the Docker host on n6) through the UPF",
    ]
    lines += [f"{d.name:<9} {d.describe(r.env)}" for d in r.dimensions]
    if r.overlay_dirs:
        lines.append("overlay   " + ", ".join(f"{n} -> {p}" for n, p in sorted(r.overlay_dirs.items())))
        frag = next((f for f in r.compose_files if f.name == compose_overlay.FRAGMENT), None)
        if frag is not None and "/dev/net/tun" in frag.read_text(encoding="utf-8"):
            lines.append("datapath  userspace possible on this host (holders get /dev/net/tun; "
                         "IPSEC_DATAPATH/WIREGUARD_DATAPATH=kernel to forbid it)")
    elif r.profile.protocol != "none":
        lines.append(f"overlay   {r.profile.protocol}: no per-node overlay dirs rendered")
    return "\n".join(lines) + "\n"
