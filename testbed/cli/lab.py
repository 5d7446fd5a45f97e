"""Network-namespace lab: a plane's endpoints as namespaces joined by a profile's overlay."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from testbed import netns, profiles

USAGE_EXEC = "python -m testbed lab exec --name LAB NODE -- COMMAND..."


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", help="lab name (namespace prefix), e.g. lab1")
    parser.add_argument("--plane", default=None,
                        help="plane(s): n3 (default), sbi, n2, n4, several (n2,n4) or all of the profile's")
    parser.add_argument("--profile", default=None, help="profile id (PROFILE=...), default baseline")
    parser.add_argument("--nodes", help="comma-separated endpoints (default: all of the plane)")
    parser.add_argument("--state", type=Path, help="state dir (default $STATE or .state)")
    parser.add_argument("--timeout", type=float, default=None,
                        help=f"readiness deadline in seconds (up; default {netns.DEFAULT_READY_TIMEOUT_S:.0f})")


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("action", choices=("up", "down", "exec", "list"))
    _add_options(parser)
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        help=f"the options above, and for exec: NODE -- COMMAND ({USAGE_EXEC})")


def _merge_options(args: argparse.Namespace) -> list[str]:
    """Options given after the action land in `rest` (argparse REMAINDER): parse them there;
    return the words that are not options (exec: NODE and the command)."""
    sub = argparse.ArgumentParser(prog="python -m testbed lab", add_help=False)
    _add_options(sub)
    rest = list(args.rest)
    command: list[str] = []
    if "--" in rest:
        cut = rest.index("--")
        rest, command = rest[:cut], rest[cut + 1:]
    ns, words = sub.parse_known_args(rest)
    for key, value in vars(ns).items():
        if value is not None:
            setattr(args, key, value)
    unknown = [w for w in words if w.startswith("-")]
    if unknown:
        raise SystemExit(f"error: unknown option(s) {' '.join(unknown)} (for exec: {USAGE_EXEC})")
    return words + command


def run(args: argparse.Namespace) -> int:
    try:
        words = _merge_options(args)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    plane = args.plane or "n3"
    profile = args.profile or "baseline"
    timeout = args.timeout or netns.DEFAULT_READY_TIMEOUT_S
    try:
        if args.action == "list":
            print(json.dumps(netns.list_labs(args.state), indent=2))
            return 0
        if not args.name:
            print("error: --name is required", file=sys.stderr)
            return 2
        if len(args.name) > 20 or not all(c.isalnum() or c == "-" for c in args.name):
            print(f"error: lab name {args.name!r}: use 1-20 letters, digits or '-'", file=sys.stderr)
            return 2
        if args.action != "exec" and words:
            print(f"error: unexpected arguments {' '.join(words)}", file=sys.stderr)
            return 2
        if args.action == "up":
            nodes = args.nodes.split(",") if args.nodes else None
            try:
                lab = netns.Lab(args.name, plane, profile, nodes, args.state)
            except profiles.ProfileError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            ready = lab.up(timeout)
            for node in lab.nodes:
                line = (ready.get(node) or "no overlay").splitlines()[0]      # the datapath line
                addrs = ",".join(lab.address(node, n) for n in lab.node_networks(node))
                print(f"{node}\t{lab.netns(node)}\t{addrs}\t{line}")
            print(f"lab {lab.name} up; logs in {lab.dir}; "
                  f"`python -m testbed lab down --name {lab.name}` removes it", file=sys.stderr)
            return 0
        if args.action == "down":
            try:
                lab = netns.Lab.load(args.name, args.state)
            except netns.LabError:
                print(f"lab {args.name}: nothing recorded; nothing to do", file=sys.stderr)
                return 0
            lab.down()
            return 0
        if len(words) < 2:
            print(f"error: exec needs NODE and a command: {USAGE_EXEC}", file=sys.stderr)
            return 2
        lab = netns.Lab.load(args.name, args.state)
        res = lab.exec(words[0], words[1:], timeout=None)
        sys.stdout.write(res.stdout)
        sys.stderr.write(res.stderr)
        return res.returncode
    except netns.LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
