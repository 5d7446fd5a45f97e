"""What the drivers ask of a profile's overlay plug-in (one answer a line, for bash)."""
from __future__ import annotations

import argparse
import sys

from testbed import datapath, profiles, ran, registry, stack

ASKS = ("endpoints", "state-command", "daemons", "lab-tools", "holder-commands", "cannot-run", "plaintext-tap",
        "key-sources", "rehandshake")


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("ask", choices=ASKS, help="endpoints: the overlay's nodes on --plane (with --ran); "
                        "state-command / daemons / lab-tools: one word a line; holder-commands: "
                        "'<record> <word>...' lines for --moment; cannot-run: why the profile cannot run "
                        "on this host's datapath (exit 1), nothing when it can; plaintext-tap: "
                        "node, iface and capture filter of --plane's readable view (relay overlays); key-sources: "
                        "'<container> <path> <label> <combined>' lines of where its session keys are (KEYS=1); rehandshake: "
                        "the path of the script that makes one fresh handshake from a lab endpoint (tunnel overlays), "
                        "nothing without one")
    parser.add_argument("--profile", required=True, help="profile id")
    parser.add_argument("--plane", default="", help="PLANE expression (endpoints)")
    parser.add_argument("--ran", default="", help="RAN variant whose nodes run (endpoints)")
    parser.add_argument("--moment", default="", help="before-cold | before-warm (holder-commands)")


def run(args: argparse.Namespace) -> int:
    try:
        ov = registry.overlay(profiles.get(args.profile).protocol)
    except profiles.ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    lines: list[str] = []
    if args.ask == "endpoints":
        values = ran.restrict(stack.load(), ran.check(args.ran or None))
        lines = ov.endpoints(args.plane, values) if ov.protects else []
    elif args.ask == "state-command":
        lines = list(ov.state_command)
    elif args.ask == "daemons":
        lines = list(ov.daemons)
    elif args.ask == "lab-tools":
        lines = list(ov.lab_tools)
    elif args.ask == "holder-commands":
        lines = [" ".join((name, *cmd)) for name, cmd in ov.holder_commands(args.moment)]
    elif args.ask == "key-sources":
        lines = [f"{k.container} {k.path} {k.label} {int(k.combined)}" for k in ov.key_sources()]
    elif args.ask == "plaintext-tap":
        tap = ov.plaintext_tap(args.plane, ran.restrict(stack.load(), ran.check(args.ran or None)))
        lines = [tap["node"], tap["iface"], tap["capture_filter"]] if tap else []
    elif args.ask == "rehandshake":
        lines = [str(ov.folder / ov.rehandshake)] if ov.rehandshake and ov.entrypoint else []
    elif args.ask == "cannot-run":
        facts = datapath.detect() if ov.datapaths else {}
        why = ov.cannot_run(profiles.get(args.profile), facts.get(ov.name))
        if why:
            print(why)
            return 1
    if lines:                        # nothing at all when there is nothing: bash's mapfile reads no line
        print("\n".join(lines))
    return 0
