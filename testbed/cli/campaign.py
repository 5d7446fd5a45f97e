"""Plan a campaign: every slot (profile x repetition) in seeded shuffled order, with its status."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from testbed import campaign, profiles, runparams


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("experiment", choices=runparams.EXPERIMENTS)
    parser.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                        help="the experiment's parameters, checked and recorded with the plan")
    parser.add_argument("--results", type=Path, required=True, help="results root")
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--reps", type=int, default=1, help="repetitions of every profile")
    parser.add_argument("--seed", type=int, default=1, help="seed of the shuffled order")
    parser.add_argument("--profiles", default="", help="space-separated ids (default: all of the plane); "
                        "secfn experiments: <function>-<engine> units (default: every one)")
    parser.add_argument("--n3-profile", default=os.environ.get("PROFILE") or "baseline",
                        help="secfn experiments: the N3 profile under the function (default: $PROFILE or baseline)")
    parser.add_argument("--record", action="store_true", help="write the plan to <campaign>/plans/")
    parser.add_argument("--eta", action="store_true",
                        help="print only the expected duration of the slots to run (from the complete runs present)")
    parser.add_argument("--mark-stale", action="store_true",
                        help="mark runs left 'running' by a dead driver as incomplete")


def checked_plan(args: argparse.Namespace) -> tuple[list[campaign.Slot], dict[str, str], list[str]]:
    """The plan the arguments ask for, the experiment's parameters given, and every problem with
    them (checked before anything starts)."""
    raw = dict(a.partition("=")[::2] for a in args.assignments)
    errors = []
    if args.reps < 1:
        errors.append(f"REPS={args.reps}: must be at least 1")
    try:
        runparams.validate(args.experiment, {**raw, "CAMPAIGN": args.campaign})
    except runparams.ParamError as exc:
        errors.extend(str(exc).splitlines())
    try:
        slots = campaign.plan(args.results, args.campaign, args.experiment, max(args.reps, 1), args.seed,
                              args.profiles.split(), mark_stale=args.mark_stale,
                              plane=raw.get("PLANE") or None, n3_profile=args.n3_profile)
    except (profiles.ProfileError, ValueError) as exc:
        errors.extend(str(exc).splitlines())
        slots = []
    return slots, raw, errors


def run(args: argparse.Namespace) -> int:
    slots, raw, errors = checked_plan(args)
    if errors:
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        return 2
    if args.eta:
        print(campaign.eta(args.results, args.experiment, slots))
        return 0
    for s in slots:
        print(f"{s.id}\t{s.profile}\t{s.rep}\t{s.status}")
    if args.record:
        path = campaign.record_plan(args.results, args.campaign, args.experiment, args.seed, args.reps,
                                    slots, raw)
        print(f"plan recorded in {path}", file=sys.stderr)
    return 0
