"""Check compose files, NF/gNB/UE configs and subscribers for mismatches (file and key)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed import instance, keys, privileges, profiles, ran
from testbed.check import check_render, summary
from testbed.cli import render as render_cli


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    render_cli.add_render_arguments(parser, "each plane the profile supports on its own, then all of them together")
    parser.add_argument("--render-dir", type=Path, default=None,
                        help="check this render dir (with --no-render: as it is on disk)")
    parser.add_argument("--no-render", action="store_true",
                        help="do not re-render first (check hand-edited rendered files)")


def _dirs(args: argparse.Namespace) -> list[Path]:
    if args.render_dir is not None and args.no_render:
        return [args.render_dir]
    prof = profiles.get(args.profile, args.plane)
    variant, uu = render_cli.check_ran(args.ran, args.uu)
    own = [p for p in prof.planes if ran.has_plane(variant, p)]      # the RAN variant's planes
    sets = [args.plane] if args.plane else own + (["all"] if len(own) > 1 else [])
    return [render_cli.render_profile(prof.id, pl, args.state, args.scp, ran_choice=variant, uu=uu).dir
            for pl in sets]


def run(args: argparse.Namespace) -> int:
    try:
        dirs = _dirs(args)
    except render_cli.RENDER_ERRORS as exc:
        return render_cli.report_error(exc, f"cannot render {args.profile} for checking")
    state = args.state if args.state is not None else keys.default_state_dir()
    keys_root = keys.keys_root(state)
    total = 0
    for d in dirs:
        try:
            with instance.addresses_of(state):          # that directory's stack addresses
                findings = check_render(d, keys_root=keys_root if keys_root.exists() else None)
        except privileges.PrivilegeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        for f in findings:
            print(f.format())
        total += len(findings)
        if findings:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(summary(findings).items()))
            print(f"check-config: {len(findings)} problem(s) in {d} ({kinds})", file=sys.stderr)
        else:
            print(f"check-config: OK {d}", file=sys.stderr)
    if total:
        print("Fix the files and keys named above (addresses and PLMN values live in "
              "nf-configs/stack.yaml), then run `make check-config` again.", file=sys.stderr)
        return 1
    return 0
