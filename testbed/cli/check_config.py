"""Check compose files, NF/gNB/UE configs and subscribers for mismatches (file and key)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from testbed import keys, nas, profiles, ran, render
from testbed.check import check_render, summary
from testbed.cli import render as render_cli


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--profile", default=os.environ.get("PROFILE") or "baseline",
                        help="profile whose render is checked (default: $PROFILE or baseline)")
    parser.add_argument("--plane", default=os.environ.get("PLANE") or None,
                        help="plane(s), e.g. n2 or n2,n4 or all (default: each plane the profile "
                             "supports on its own, then all of them together)")
    parser.add_argument("--state", type=Path, default=None, help="state dir (default: $STATE or .state)")
    parser.add_argument("--scp", action="store_true", default=os.environ.get("SCP", "") in ("1", "yes", "true"),
                        help="check the SCP variant")
    parser.add_argument("--render-dir", type=Path, default=None,
                        help="check this render dir (with --no-render: as it is on disk)")
    parser.add_argument("--no-render", action="store_true",
                        help="do not re-render first (check hand-edited rendered files)")


def _dirs(args: argparse.Namespace) -> list[Path]:
    if args.render_dir is not None and args.no_render:
        return [args.render_dir]
    prof = profiles.get(args.profile, args.plane)
    variant = ran.check(os.environ.get("RAN") or None)
    own = [p for p in prof.planes if ran.has_plane(variant, p)]
    sets = [args.plane] if args.plane else own + (["all"] if len(own) > 1 else [])
    return [render_cli.render_profile(prof.id, pl, args.state, args.scp).dir for pl in sets]


def run(args: argparse.Namespace) -> int:
    try:
        dirs = _dirs(args)
    except (profiles.ProfileError, nas.NasError, ran.RanError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (render.RenderError, keys.KeysError, ValueError, KeyError) as exc:
        print(f"error: cannot render {args.profile} for checking: {exc}", file=sys.stderr)
        return 1
    state = args.state if args.state is not None else keys.default_state_dir()
    keys_root = keys.keys_root(state)
    total = 0
    for d in dirs:
        findings = check_render(d, keys_root=keys_root if keys_root.exists() else None)
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
