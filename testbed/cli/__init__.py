"""Command registry for `python -m testbed`.

A command is a module in this package exposing `add_arguments(parser)` and `run(args) -> int`;
add its module name to COMMANDS (one line) to plug it in.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import NoReturn

# command name -> module (testbed.cli.<module>)
COMMANDS: dict[str, str] = {
    "profiles": "profiles",
    "check-profile": "profiles",
    "keys": "keys",
    "render": "render",
    "check-config": "check_config",
    "datapath": "datapath",
    "params": "params",
    "spec": "spec",
    "manifest": "manifest",
    "validity": "validity",
    "campaign": "campaign",
    "campaign-k8s": "campaign_k8s",
    "channels": "channels",
    "channels-seen": "channels",
    "lab": "lab",
    "bench-crypto": "bench_crypto",
    "handshake-bench": "handshake_bench",
    "bench-crypto-pq": "bench_crypto_pq",
    "secfn": "secfn",
    "secfn-plan": "secfn",
    "secfn-finish": "secfn",
    "check-capture": "check_capture",
    "images": "images",
    "instance": "instance",
    "overlay": "overlay",
    "plugins": "plugins",
}


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line on stderr (what is wrong and where the help is), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    parser = OneLineParser(prog="python -m testbed")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        mod = importlib.import_module(f"testbed.cli.{module}")
        sp = sub.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        mod.add_arguments(sp, name)
        sp.set_defaults(_run=mod.run)
    args = parser.parse_args(argv)
    try:
        return int(args._run(args))
    except KeyboardInterrupt:
        return 130
