"""List the profile catalogue, or check that a PROFILE is valid for a plane."""
from __future__ import annotations

import argparse
import sys

from testbed import profiles


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--plane", help="only profiles for this plane (or every plane of n2,n4,...)")
    if name == "check-profile":
        parser.add_argument("profile", help="profile id (PROFILE=...)")
    else:
        parser.add_argument("--format", choices=("table", "json", "names"), default="table")


def run(args: argparse.Namespace) -> int:
    if getattr(args, "profile", None) is not None:
        try:
            p = profiles.get(args.profile, args.plane)
        except profiles.ProfileError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{p.id}: {p.label}")
        return 0
    try:
        if args.format == "json":
            print(profiles.format_json(args.plane))
        elif args.format == "names":
            print("\n".join(profiles.names(args.plane)))
        else:
            print(profiles.format_table(args.plane))
    except profiles.ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
