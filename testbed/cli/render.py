"""Render a profile's configs into $STATE/render/<planes>/<profile>/ and print what will run."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from testbed import dimensions, images, keys, placement, profiles, programs, ran, registry, render, statelock
from testbed import orchestrate
from testbed.contract import RuntimeOptionError
from testbed.render import layout

# The environment is read here, at the command line's edge, and nowhere below it.


def _env(name: str) -> str:
    return os.environ.get(name, "") or ""


def add_render_arguments(parser: argparse.ArgumentParser, plane_default: str) -> None:
    """--profile, --plane, --state, --scp, --ran, --uu and every dimension's variables: what picks
    a render (render and check-config), defaults from the environment."""
    parser.add_argument("--profile", default=_env("PROFILE") or "baseline",
                        help="profile id (default: $PROFILE or baseline; `make profiles` lists them)")
    parser.add_argument("--plane", default=_env("PLANE") or None,
                        help="plane(s) the overlay covers: one, several (n2,n4,n3,sbi) or `all` of the "
                             f"profile's (default: $PLANE or {plane_default})")
    parser.add_argument("--state", type=Path, default=None, help="state dir (default: $STATE or .state)")
    parser.add_argument("--scp", action="store_true", default=_env("SCP") in ("1", "yes", "true"),
                        help="indirect communication through the SCP (default: $SCP, off)")
    parser.add_argument("--ran", default=_env("RAN"),
                        help="RAN variant: " + ", ".join(r.name for r in registry.rans())
                             + " (default: $RAN, or the stack's; docs/ran.md)")
    parser.add_argument("--uu", default=_env("UU"),
                        help="AS security of an OAI RAN, e.g. nea2-nia2 (default: $UU, or OAI's "
                             "preference lists; '-' the same; docs/ran.md)")
    for var, text in dimensions.variables().items():
        parser.add_argument(f"--{var.lower().replace('_', '-')}", dest=f"dim_{var}", default=_env(var),
                            help=f"{text} (default: ${var})")
    parser.add_argument("--engine", default=_env("ENGINE"),
                        help="runtime: " + ", ".join(r.name for r in registry.runtimes())
                             + " (default: $ENGINE, or compose; docs/kubernetes.md)")
    parser.add_argument("--placement", default=_env("PLACEMENT"),
                        help="NF:NODE pairs or a YAML file of them (default: $PLACEMENT; ENGINE=k8s)")
    for var, text in runtime_variables().items():
        parser.add_argument(f"--{var.lower().replace('_', '-')}", dest=f"rt_{var}", default=_env(var),
                            help=f"{text} (default: ${var})")


def runtime_variables() -> dict[str, str]:
    """Every runtime's variables -> help (a variable two runtimes share is offered once)."""
    out: dict[str, str] = {}
    for rt in registry.runtimes():
        for var, text in rt.variables.items():
            out.setdefault(var, f"ENGINE={rt.name}: {text}")
    return out


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    add_render_arguments(parser, "the profile's first plane")
    parser.add_argument("--quiet", action="store_true", help="print only the render dir")


def options(args: argparse.Namespace) -> dict[str, str]:
    """The dimensions' variables as given ({VARIABLE: value})."""
    return {var: str(getattr(args, f"dim_{var}", "") or "") for var in dimensions.variables()}


def datapath_choices() -> dict[str, str]:
    """Each overlay's datapath variable as the environment sets it (IPSEC_DATAPATH=kernel ...)."""
    return {ov.datapath_variable: _env(ov.datapath_variable) or "auto"
            for ov in registry.overlays() if ov.datapath_variable}


def state_dir(args: argparse.Namespace) -> Path:
    return Path(args.state) if args.state is not None else Path(_env("STATE") or keys.default_state_dir())


def runtime_options(args: argparse.Namespace) -> dict[str, str]:
    """The runtime's variables as given, with the image names the environment sets (as for Compose)."""
    out = {var: str(getattr(args, f"rt_{var}", "") or "") for var in runtime_variables()}
    try:
        names = images.defaults()
    except images.ImageError:
        names = {}
    return out | {k: _env(k) for k in names if k.endswith("_IMAGE") and _env(k)}


def selection(args: argparse.Namespace, plane: str | None = None) -> orchestrate.Selection:
    uu = "" if args.uu == "-" else args.uu          # '-': the stack's preference lists (run parameters' default)
    engine = getattr(args, "engine", "")
    return orchestrate.select(args.profile, plane if plane is not None else args.plane, ran_name=args.ran or None,
                              uu=uu or None, options=options(args), scp=args.scp or None,
                              runtime=registry.runtime(engine) if engine else None,
                              placement=placement.parse(getattr(args, "placement", "")),
                              runtime_options=runtime_options(args))


def render_args(args: argparse.Namespace, plane: str | None = None) -> render.Rendered:
    """Render what the arguments select into the state directory's render dir."""
    return orchestrate.render_into_state(selection(args, plane), state_dir(args), programs.git_short(),
                                         datapath_choices())


# What rendering can fail with, and how each is told (one line; 2 = the user's input).
USAGE_ERRORS = (profiles.ProfileError, ran.RanError, dimensions.SelectionError,
                registry.UnknownPlugin, placement.PlacementError, RuntimeOptionError)
RENDER_ERRORS = (*USAGE_ERRORS, statelock.Busy, OSError, render.RenderError, keys.KeysError, ValueError, KeyError)


def report_error(exc: BaseException, what: str) -> int:
    """Print one error line for a failed render of `what`; the exit status."""
    if isinstance(exc, (*USAGE_ERRORS, statelock.Busy)):
        print(f"error: {exc}", file=sys.stderr)
        return 2 if not isinstance(exc, statelock.Busy) else 1
    if isinstance(exc, OSError):
        print(f"error: {what}: cannot write {exc.filename or 'the state directory'} "
              f"({exc.strerror or exc}); set STATE=<a writable directory>", file=sys.stderr)
        return 1
    print(f"error: {what}: {exc}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    try:
        r = render_args(args)
    except RENDER_ERRORS as exc:
        return report_error(exc, f"render {args.profile}")
    if args.quiet:
        print(r.dir)
        return 0
    print((r.dir / layout.PLAN_FILE).read_text(encoding="utf-8"), end="")
    print("files     " + f"{len(r.files)} written:")
    for f in sorted(r.files):
        print(f"  {f.relative_to(r.dir)}")
    return 0
