"""Time ML-KEM, X25519/P-256 key agreement, ML-DSA and ECDSA per second (part of make bench-crypto)."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from testbed import crypto_pq


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--results", default="results", help="results root (default: results)")
    parser.add_argument("--campaign", default="", help="campaign name (default: adhoc)")
    parser.add_argument("--openssl", default="openssl",
                        help="command of an OpenSSL >= 3.5 for the `openssl speed` rows (default: openssl; "
                             "e.g. 'env TLS_ROOT=<root> tls/openssl.sh openssl'; '' = none)")
    parser.add_argument("--repeats", type=int, default=crypto_pq.DEFAULT_REPEATS,
                        help=f"repeats per scheme (default {crypto_pq.DEFAULT_REPEATS})")
    parser.add_argument("--seconds", type=int, default=crypto_pq.DEFAULT_SECONDS,
                        help=f"openssl speed seconds per algorithm and repeat (default {crypto_pq.DEFAULT_SECONDS})")


def run(args: argparse.Namespace) -> int:
    try:
        run_dir = crypto_pq.run(Path(args.results), args.campaign, shlex.split(args.openssl) or None,
                                args.repeats, args.seconds)
    except crypto_pq.PqBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(run_dir)
    return 0
