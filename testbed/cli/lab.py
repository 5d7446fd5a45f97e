"""Network-namespace lab: a plane's endpoints as namespaces joined by a profile's overlay."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from testbed import netns, profiles


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("action", choices=("up", "down", "exec", "list"))
    parser.add_argument("--name", help="lab name (namespace prefix), e.g. lab1")
    parser.add_argument("--plane", choices=profiles.PLANES, default="n3")
    parser.add_argument("--profile", default="baseline", help="profile id (PROFILE=...)")
    parser.add_argument("--nodes", help="comma-separated endpoints (default: all of the plane)")
    parser.add_argument("--state", type=Path, help="state dir (default $STATE or .state)")
    parser.add_argument("--timeout", type=float, default=netns.DEFAULT_READY_TIMEOUT_S,
                        help="readiness deadline in seconds (up)")
    parser.add_argument("argv", nargs="*", help="exec: NODE COMMAND... (put `--` before the command)")


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "list":
            print(json.dumps(netns.list_labs(args.state), indent=2))
            return 0
        if not args.name:
            print("error: --name is required", file=sys.stderr)
            return 2
        if args.action == "up":
            nodes = args.nodes.split(",") if args.nodes else None
            try:
                lab = netns.Lab(args.name, args.plane, args.profile, nodes, args.state)
            except profiles.ProfileError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            ready = lab.up(args.timeout)
            for node in lab.nodes:
                print(f"{node}\t{lab.netns(node)}\t{lab.address(node)}\t{ready.get(node) or 'no overlay'}")
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
        # exec
        if len(args.argv) < 2:
            print("error: exec needs NODE and a command: lab exec --name L NODE -- CMD...", file=sys.stderr)
            return 2
        lab = netns.Lab.load(args.name, args.state)
        res = lab.exec(args.argv[0], args.argv[1:], timeout=None)
        sys.stdout.write(res.stdout)
        sys.stderr.write(res.stderr)
        return res.returncode
    except netns.LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
