"""Check compose files, NF/gNB/UE configs and subscribers for mismatches (file and key)."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from testbed import instance, keys, orchestrate, planes, privileges, profiles, programs, ran, stack
from testbed.check import check_render, summary
from testbed.cli import render as render_cli


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    render_cli.add_render_arguments(parser, "each plane the profile supports on its own, then all of them together")
    parser.add_argument("--render-dir", type=Path, default=None,
                        help="check this render dir (with --no-render: as it is on disk)")
    parser.add_argument("--no-render", action="store_true",
                        help="do not re-render first (check hand-edited rendered files)")


def _dirs(args: argparse.Namespace, into: Path) -> list[Path]:
    """The render dirs to check: the one given with --no-render, else fresh renders of every plane
    set into `into` (a temporary directory: checking never touches the state's renders, so it
    needs no state lock and runs beside a running stack)."""
    if args.render_dir is not None and args.no_render:
        return [args.render_dir]
    prof = profiles.get(args.profile, args.plane)
    variant = ran.check(args.ran or None)
    own = [p for p in prof.planes if ran.has_plane(variant, p)]      # the RAN variant's planes
    sets = [args.plane] if args.plane else own + (["all"] if len(own) > 1 else [])
    state = render_cli.state_dir(args)
    out = []
    with instance.addresses_of(state):
        root = keys.ensure(state)
        for i, pl in enumerate(sets):
            sel = render_cli.selection(args, pl)
            inputs = orchestrate.Inputs(keys.subscribers(root), root, stack.load(), programs.git_short(),
                                        datapath_choices=render_cli.datapath_choices())
            out.append(orchestrate.render(sel, into / f"{i}-{planes.key(sel.plane)}", inputs).dir)
    return out


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="check-config-") as tmp:
        try:
            dirs = _dirs(args, Path(tmp))
        except render_cli.RENDER_ERRORS as exc:
            return render_cli.report_error(exc, f"cannot render {args.profile} for checking")
        return _check(args, dirs)


def _check(args: argparse.Namespace, dirs: list[Path]) -> int:
    state = render_cli.state_dir(args)
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
