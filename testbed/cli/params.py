"""Check an experiment's parameters (defaults filled in) before a driver starts anything."""
from __future__ import annotations

import argparse
import json
import sys

from testbed import campaign, profiles, runparams


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("experiment", choices=runparams.EXPERIMENTS)
    parser.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                        help="Make variables (SIZES='64 1024' ...); empty = default")
    parser.add_argument("--profile", help="also check that PROFILE exists for the experiment's plane")
    parser.add_argument("--profiles", default="", help="also check these space-separated ids (a campaign's PROFILES; "
                        "secfn experiments: <function>-<engine> units)")
    parser.add_argument("--from-env", action="store_true",
                        help="take the experiment's own parameters from the environment (as Make exports them)")
    parser.add_argument("--format", choices=("shell", "json", "help"), default="shell",
                        help="shell: NAME='value' lines for eval; json: typed values; help: describe")


def run(args: argparse.Namespace) -> int:
    if args.format == "help":
        print(runparams.describe(args.experiment))
        return 0
    try:
        raw = runparams.raw_values(args.experiment, args.assignments, args.from_env)
        params = runparams.validate(args.experiment, raw, args.profile)
        if args.profiles.split():           # what the campaign will run, resolved as it does
            campaign.campaign_profiles(args.experiment, args.profiles.split(), n3_profile=args.profile or "baseline")
    except (runparams.ParamError, profiles.ProfileError) as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(params, indent=2))
    else:
        print(runparams.shell_assignments(args.experiment, params))
    return 0
