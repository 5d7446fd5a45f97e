"""Check an experiment's parameters (defaults filled in) before a driver starts anything."""
from __future__ import annotations

import argparse
import json
import os
import sys

from testbed import runparams


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("experiment", choices=runparams.EXPERIMENTS)
    parser.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                        help="Make variables (SIZES='64 1024' ...); empty = default")
    parser.add_argument("--profile", help="also check that PROFILE exists for the experiment's plane")
    parser.add_argument("--profiles", default="", help="also check these space-separated ids (a campaign's PROFILES)")
    parser.add_argument("--from-env", action="store_true",
                        help="take the experiment's own parameters from the environment (as Make exports them)")
    parser.add_argument("--format", choices=("shell", "json", "help"), default="shell",
                        help="shell: NAME='value' lines for eval; json: typed values; help: describe")


def run(args: argparse.Namespace) -> int:
    if args.format == "help":
        print(runparams.describe(args.experiment))
        return 0
    raw: dict[str, str] = {}
    if args.from_env:
        raw = {s.name: os.environ[s.name] for s in runparams.SPECS[args.experiment] if s.name in os.environ}
    for a in args.assignments:
        key, sep, value = a.partition("=")
        if not sep:
            print(f"error: {a!r} is not KEY=VALUE", file=sys.stderr)
            return 2
        raw[key] = value
    try:
        params = runparams.validate(args.experiment, raw, args.profile)
        for p in args.profiles.split():
            runparams.validate(args.experiment, {}, p)
    except runparams.ParamError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(params, indent=2))
    else:
        print(runparams.shell_assignments(args.experiment, params))
    return 0
