"""The UPF security function (SECFN x IDS, docs/secfn.md): a run between namespaces, or the steps
of the stack driver (scripts/run-secfn.sh)."""
from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from testbed import manifest as mf
from testbed import environment, netns, runparams
from testbed.secfn import SecfnError, collect, ditg, lab, run as secfn_run


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    if name == "secfn":
        parser.description = ("Between namespaces: UE -> gNB -(PROFILE's N3 overlay)- UPF (NAT, engine) -> N6 "
                              "server, D-ITG sweep (make run-secfn-lab; make run-overlay PROFILE=... SECFN=...)")
        parser.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                            help="parameters of experiment secfn-lab (SECFN=ips-nat IDS=snort RATES='100 1000' ...)")
        parser.add_argument("--from-env", action="store_true", help="take the parameters from the environment (make)")
        parser.add_argument("--profile", default=os.environ.get("PROFILE") or "baseline",
                            help="the N3 profile between gnb and upf (default baseline)")
        parser.add_argument("--results", default=os.environ.get("RESULTS") or "results")
        parser.add_argument("--state", default=os.environ.get("STATE") or ".state")
    elif name == "secfn-plan":
        parser.description = ("Record a stack run's D-ITG flow order (seeded) and print one flow a line, "
                              "tab-separated: protocol, rate, run, then ITGSend's arguments")
        parser.add_argument("run_dir", type=Path)
        parser.add_argument("--server", required=True, help="the N6 server's address")
        parser.add_argument("--source", default=None, help="the UE's address (ITGSend -sa/-Ssa)")
        parser.add_argument("--log-dir", required=True, help="where sender and receiver see the ditg/ folder")
    else:   # secfn-finish
        parser.description = "Collect a stack run: D-ITG table, engine and queue counters into its manifest"
        parser.add_argument("run_dir", type=Path)
        parser.add_argument("--died", default=None, help="why the engine stopped early, if it did")


def _lab(args: argparse.Namespace) -> int:
    try:
        raw = runparams.raw_values(secfn_run.EXPERIMENT, args.assignments, args.from_env)
        runparams.validate(secfn_run.EXPERIMENT, raw, args.profile)
    except runparams.ParamError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("error: the namespace lab needs root (ip netns, iptables): sudo make run-secfn-lab", file=sys.stderr)
        return 1
    state = Path(args.state)
    try:
        run_dir = secfn_run.run(Path(args.results), raw, args.profile, state / "bin", state,
                                rerun_of=environment.get("RERUN_OF") or None)
    except (lab.LabError, netns.LabError, ditg.DitgError, SecfnError, OSError) as exc:
        print(f"error: secfn run failed: {exc}", file=sys.stderr)
        return 1
    print(run_dir)
    return 0 if mf.load(run_dir).get("valid") is True else 1


def _plan(args: argparse.Namespace) -> int:
    m = mf.load(args.run_dir)
    p = m["parameters"]
    seed = int(p["order_seed"]) or secrets.randbits(32)
    flows = ditg.plan(p["protocols"], p["rates"], p["runs"], seed)
    order = [list(f) for f in flows]
    mf.set_field(args.run_dir, "flows", {"seed": seed, "planned": len(order), "order": order})
    for proto, rate, i in flows:
        send, recv = (str(Path(args.log_dir) / Path(n).name) for n in collect.log_names(ditg.tag(proto, rate, i)))
        argv = ditg.send_command(args.server, proto, rate, float(p["duration"]), send, recv, args.source)
        print("\t".join([proto, str(rate), str(i), *argv]))
    return 0


def run(args: argparse.Namespace) -> int:
    cmd = args.command
    if cmd == "secfn":
        return _lab(args)
    try:
        if cmd == "secfn-plan":
            return _plan(args)
        problems = collect.finish(args.run_dir, args.died)
    except (mf.ManifestError, SecfnError, OSError) as exc:
        print(f"error: {cmd} {args.run_dir}: {exc}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    return 0
