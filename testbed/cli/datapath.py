"""Show the datapath this host offers: IPsec (kernel|libipsec), WireGuard (kernel|wireguard-go), TUN, SCTP."""
from __future__ import annotations

import argparse
import json

from testbed import datapath


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--json", action="store_true", help="print every fact and probe result as JSON")


def run(args: argparse.Namespace) -> int:
    facts = datapath.detect()
    if args.json:
        print(json.dumps(facts, indent=2, sort_keys=True))
    else:
        print(datapath.summary(facts))
        for what, why in facts["reasons"].items():
            if why != "ok":
                print(f"  {what}: {why}")
    return 0
