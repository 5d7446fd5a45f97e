"""List the channel map's host pairs, or diff them against the pairs seen in a capture."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed import channels, stack


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--plane", choices=sorted(channels.PLANE_NETWORK), default="sbi")
    if name == "channels-seen":
        parser.add_argument("capture", type=Path, help="pcap/pcapng taken on the plane's network")
        parser.add_argument("--nodes", help="comma-separated nodes that ran (default: all of the map)")
    else:
        parser.add_argument("--phase", choices=channels.PHASES, help="only this phase")
        parser.add_argument("--directed", action="store_true",
                            help="list directed channels with their derivation")


def _fmt(pairs: list[channels.Pair]) -> str:
    return " ".join(f"{a}<->{b}" for a, b in pairs) or "-"


def run(args: argparse.Namespace) -> int:
    try:
        if args.command == "channels-seen":
            return _seen(args)
        if args.directed:
            for c in channels.channels(args.plane, args.phase):
                dep = " (order-dependent)" if c.order_dependent else ""
                print(f"{c.phase:8} {c.client:>5} -> {c.server:<5} {c.requests}{dep}\n"
                      f"{'':23}{c.build}")
            return 0
        pairs = channels.pairs(args.plane, args.phase)
        for a, b in pairs:
            print(f"{a} {b}")
        print(f"{len(pairs)} host pairs", file=sys.stderr)
        return 0
    except channels.ChannelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _seen(args: argparse.Namespace) -> int:
    if not args.capture.is_file():
        print(f"error: capture {args.capture} does not exist", file=sys.stderr)
        return 2
    present = args.nodes.split(",") if args.nodes else None
    seen, unknown = channels.seen_pairs(args.capture, args.plane, stack.load())
    d = channels.diff(seen, args.plane, present)
    print(f"seen       ({len(d.seen)}): {_fmt(d.seen)}")
    print(f"expected   ({len(d.expected)}): {_fmt(d.expected)}")
    print(f"missing    ({len(d.missing)}): {_fmt(d.missing)}")
    print(f"optional, not seen ({len(d.missing_optional)}): {_fmt(d.missing_optional)}")
    print(f"unexpected ({len(d.unexpected)}): {_fmt(d.unexpected)}")
    if unknown:
        print(f"addresses of no node: {' '.join(unknown)}")
    if not d.ok:
        print("channel map and capture differ: update nf-configs/sbi-channels.yaml "
              "(and docs/channels.md) or find why the pair did (not) talk", file=sys.stderr)
    return 0 if d.ok else 1
