"""Run the UPF security function (SECFN x IDS) between namespaces with D-ITG (make run-secfn-lab)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from testbed import secfn
from testbed.secfn import ditg, lab, run as secfn_run


def _floats(text: str) -> list[float]:
    try:
        vals = [float(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected packet rates like '100 1000 5000', got {text!r}")
    if not vals or any(v <= 0 for v in vals):
        raise argparse.ArgumentTypeError(f"rates must be positive packets/s, got {text!r}")
    return vals


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--secfn", default=os.environ.get("SECFN") or "nat", help="none | nat | ids-nat | ips-nat")
    parser.add_argument("--ids", default=os.environ.get("IDS") or "", help="suricata | passthrough (snort: image only)")
    parser.add_argument("--results", default=os.environ.get("RESULTS") or "results")
    parser.add_argument("--campaign", default=os.environ.get("CAMPAIGN") or "")
    parser.add_argument("--protocols", default="udp,tcp", help="comma list of udp, tcp (default both)")
    parser.add_argument("--rates", type=_floats, default=[100.0, 1000.0, 5000.0, 20000.0],
                        help="mean packets/s, Poisson (default: 100 1000 5000 20000)")
    parser.add_argument("--runs", type=int, default=20, help="runs per protocol and rate (default 20)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per run (default 5)")
    parser.add_argument("--queue-maxlen", type=int, default=None, help="NFQUEUE length (default catalogue's)")
    parser.add_argument("--fail-open", action="store_true", default=None, help="NFQUEUE fail-open/bypass")
    parser.add_argument("--seed", type=int, default=None, help="order seed (default random, recorded)")


def run(args: argparse.Namespace) -> int:
    try:
        sf = secfn.resolve(args.secfn, args.ids or None, queue_maxlen=args.queue_maxlen, fail_open=args.fail_open)
        protocols = [p.strip().lower() for p in args.protocols.split(",") if p.strip()]
        if not protocols or set(protocols) - {"udp", "tcp"}:
            raise secfn.SecfnError(f"PROTOCOLS must be udp and/or tcp, got {args.protocols!r}")
        if args.runs < 1 or args.duration <= 0:
            raise secfn.SecfnError(f"RUNS >= 1 and DURATION > 0 needed, got {args.runs} and {args.duration}")
    except secfn.SecfnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("error: the namespace lab needs root (ip netns, iptables): sudo make run-secfn-lab", file=sys.stderr)
        return 1
    try:
        run_dir = secfn_run.run(Path(args.results), args.campaign, sf, protocols, args.rates, args.runs,
                                args.duration, Path(os.environ.get("STATE") or ".state") / "bin", args.seed)
    except (lab.LabError, ditg.DitgError, OSError) as exc:
        print(f"error: secfn run failed: {exc}", file=sys.stderr)
        return 1
    print(run_dir)
    return 0
