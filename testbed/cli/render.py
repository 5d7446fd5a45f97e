"""Render a profile's configs into $STATE/render/<planes>/<profile>/ and print what will run."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from testbed import dimensions, instance, keys, nas, planes, profiles, ran, render, stack, statelock
from testbed.render import layout, oai


def add_render_arguments(parser: argparse.ArgumentParser, plane_default: str) -> None:
    """--profile, --plane, --state, --scp, --ran, --uu: what picks a render (render and check-config)."""
    parser.add_argument("--profile", default=os.environ.get("PROFILE") or "baseline",
                        help="profile id (default: $PROFILE or baseline; `make profiles` lists them)")
    parser.add_argument("--plane", default=os.environ.get("PLANE") or None,
                        help="plane(s) the overlay covers: one, several (n2,n4,n3,sbi) or `all` of the "
                             f"profile's (default: $PLANE or {plane_default})")
    parser.add_argument("--state", type=Path, default=None, help="state dir (default: $STATE or .state)")
    parser.add_argument("--scp", action="store_true", default=os.environ.get("SCP", "") in ("1", "yes", "true"),
                        help="indirect communication through the SCP (default: $SCP, off)")
    parser.add_argument("--ran", default=os.environ.get("RAN") or "",
                        help="RAN variant: ueransim (default), oai, split (default: $RAN; docs/ran.md)")
    parser.add_argument("--uu", default=os.environ.get("UU") or "",
                        help="AS security of an OAI RAN, e.g. nea2-nia2 (default: $UU, or OAI's "
                             "preference lists; docs/ran.md)")


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    add_render_arguments(parser, "the profile's first plane")
    parser.add_argument("--nas", default=os.environ.get("NAS") or "",
                        help="NAS security algorithms, e.g. nea2-nia2 (default: $NAS, or the stack's "
                             "orders; docs/nas.md)")
    dimensions.add_arguments(parser)       # each dimension's own options (testbed/dimensions.py)
    parser.add_argument("--quiet", action="store_true", help="print only the render dir")


def resolve(profile_id: str, plane: str | None, ran_name: str = "ueransim") -> tuple[profiles.Profile, str]:
    """(profile, canonical PLANE expression) or ProfileError naming the valid choices; `all` is every
    plane of the profile that the RAN variant has (f1c, f1u, e1 only with the split)."""
    prof = profiles.get(profile_id, plane)
    covered = profiles.planes_for(prof, plane)
    if plane is not None and plane.strip() == planes.ALL:
        covered = tuple(p for p in covered if ran.has_plane(ran_name, p))
    return prof, planes.expr(covered)


def check_ran(ran_choice: str | None, uu: str | None) -> tuple[str, str | None]:
    """(RAN variant, UU choice) or RanError / OaiConfigError naming the valid values."""
    name = ran.check(os.environ.get("RAN", "") if ran_choice is None else ran_choice)
    uu = os.environ.get("UU", "") if uu is None else uu
    uu = "" if uu == "-" else uu          # '-': the stack's preference lists (run parameters' default)
    if uu:
        if name == "ueransim":
            raise ran.RanError(f"UU={uu}: the AS security choice needs an OpenAirInterface RAN "
                               "(RAN=oai or RAN=split); UERANSIM has no AS security (docs/ran.md)")
        oai.security(stack.load(), uu)
    return name, uu or None


def render_profile(profile_id: str, plane: str | None, state: Path | None, scp: bool,
                   nas_choice: str | None = None, ran_choice: str | None = None,
                   uu: str | None = None, dims: tuple[dimensions.Dimension, ...] = ()) -> render.Rendered:
    ran_name, uu = check_ran(ran_choice, uu)
    prof, pl = resolve(profile_id, plane, ran_name)
    nas_choice = os.environ.get("NAS", "") if nas_choice is None else nas_choice
    state_dir = Path(state) if state is not None else keys.default_state_dir()
    with instance.addresses_of(state_dir):              # that directory's stack addresses
        values = nas.apply(stack.load(), nas_choice)    # NasError before anything is written
    with statelock.hold(state_dir), instance.addresses_of(state_dir):   # never under a running stack
        root = keys.ensure(state_dir)
        out = layout.render_dir(state_dir, pl, prof.id, ran_name)
        return render.render(prof, pl, out, subscribers=keys.subscribers(root), keys_dir=root,
                             values=values, use_scp=scp or None, ran_variant=ran_name, uu=uu,
                             dimensions=dims)


# What rendering can fail with, and how each is told (one line; 2 = the user's input).
USAGE_ERRORS = (profiles.ProfileError, nas.NasError, ran.RanError, oai.OaiConfigError, dimensions.SelectionError)
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
        ran_name, _ = check_ran(args.ran, args.uu)
        dims = dimensions.select(args, *resolve(args.profile, args.plane, ran_name))
        r = render_profile(args.profile, args.plane, args.state, args.scp, args.nas, args.ran, args.uu, dims)
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
