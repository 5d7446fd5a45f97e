"""The stack of a STATE directory: its Compose project, host bridges and address slot.

    python -m testbed instance [--state DIR]        # human-readable
    python -m testbed instance --env [--state DIR]  # NAME=value lines (scripts/lib/state.sh)
"""
from __future__ import annotations

import argparse
import shlex
import sys

from testbed import instance


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--state", default=None, help="state directory (default: $STATE or .state)")
    parser.add_argument("--env", action="store_true", help="print NAME=value lines for the shell")


def run(args: argparse.Namespace) -> int:
    try:
        inst = instance.of(args.state)
    except instance.InstanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.env:
        for k, v in instance.shell_env(inst).items():
            print(f"{k}={shlex.quote(v)}")
        return 0
    first = 100 + inst.slot
    print(f"state     {inst.state}\nproject   {inst.project}\nbridges   {inst.bridge_prefix}-<network>\n"
          f"addresses slot {inst.slot}: stack.yaml's 10.100.x.y become 10.{first}.x.y")
    return 0


if __name__ == "__main__":
    # stdlib only: scripts/lib/state.sh runs this with any python3
    _parser = argparse.ArgumentParser(prog="python -m testbed instance")
    add_arguments(_parser, "instance")
    from testbed.cli.pipes import exit_with
    exit_with(lambda: run(_parser.parse_args()))
