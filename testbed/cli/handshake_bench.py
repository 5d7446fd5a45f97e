"""Time and count handshakes of a profile between two namespaces, many per boot (make bench-handshake)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed import environment, handshake_bench, profiles


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--profile", required=True, help="profile id (make profiles)")
    parser.add_argument("--plane", default=None, help="plane (default: the profile's first)")
    parser.add_argument("--boots", type=int, default=handshake_bench.DEFAULT_BOOTS,
                        help=f"labs brought up afresh (replications; default {handshake_bench.DEFAULT_BOOTS})")
    parser.add_argument("--handshakes", type=int, default=handshake_bench.DEFAULT_HANDSHAKES,
                        help=f"handshakes per boot (default {handshake_bench.DEFAULT_HANDSHAKES})")
    parser.add_argument("--results", default="results", help="results root (default: results)")
    parser.add_argument("--campaign", default="", help="campaign name (default: adhoc)")
    parser.add_argument("--state", type=Path, default=None, help="state dir (default $STATE or .state)")


def run(args: argparse.Namespace) -> int:
    try:
        run_dir = handshake_bench.run(Path(args.results), args.campaign, args.profile, args.plane,
                                      args.boots, args.handshakes, args.state, environment.mapping())
    except (handshake_bench.BenchError, profiles.ProfileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, profiles.ProfileError) else 1
    print(run_dir)
    return 0
