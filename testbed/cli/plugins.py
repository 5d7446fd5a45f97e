"""List every plug-in (overlays, RAN variants, dimensions, security-function engines, runtimes): kind, name, folder."""
from __future__ import annotations

import argparse
import sys

from testbed import ROOT, registry
from testbed.contract import Plugin


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--check", action="store_true",
                        help="also check each plug-in's own files (README, entrypoint); exit 1 on a problem")
    parser.add_argument("--doctor", metavar="ENGINE",
                        help="print the doctor script of that runtime (ENGINE=) and nothing else; empty: "
                             "scripts/doctor.sh's checks of the Docker host")
    parser.add_argument("--driver", metavar="ENGINE",
                        help="print the drivers' library of that runtime (ENGINE=; empty: compose) and nothing else")


def _where(plugin: Plugin) -> str:
    try:
        return str(plugin.folder.relative_to(ROOT)) + "/"
    except ValueError:
        return str(plugin.folder)


def run(args: argparse.Namespace) -> int:
    for asked, attr in ((args.doctor, "doctor"), (args.driver, "driver")):
        if asked is None:
            continue
        try:
            rt = registry.runtime(asked)
        except registry.UnknownPlugin as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if getattr(rt, attr):
            print(rt.folder / getattr(rt, attr))
        return 0
    found = registry.plugins()
    width = max(len(p.name) for p in found)
    problems: list[str] = []
    for p in found:
        print(f"{p.kind:<9}  {p.name:<{width}}  {_where(p):<34}  {p.summary}")
        if args.check:
            problems += p.problems()
    for line in problems:
        print(f"problem: {line}", file=sys.stderr)
    return 1 if problems else 0
