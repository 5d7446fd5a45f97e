"""Time the ESP, ChaCha20 and 5G NEA2/NIA2 ciphers without the network (make bench-crypto)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed import crypto_bench, crypto_schemes


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected byte counts like '64 1024 65536', got {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--results", default="results", help="results root (default: results)")
    parser.add_argument("--campaign", default="", help="campaign name (default: adhoc)")
    parser.add_argument("--schemes", default="",
                        help=f"comma/space list (default: all): {', '.join(crypto_schemes.BY_ID)}")
    parser.add_argument("--sizes", type=_ints, default=list(crypto_bench.DEFAULT_SIZES),
                        help="buffer sizes in bytes (default: 64 B .. 64 MiB, x4 steps)")
    parser.add_argument("--repeats", type=int, default=crypto_bench.DEFAULT_REPEATS,
                        help=f"timed repeats per scheme and size (default {crypto_bench.DEFAULT_REPEATS})")
    parser.add_argument("--min-time", type=float, default=crypto_bench.DEFAULT_MIN_TIME,
                        help="shortest timed batch in seconds (default %(default)s)")
    parser.add_argument("--aesni", default="both", help="both | on | masked (default both)")
    parser.add_argument("--speed-seconds", type=int, default=1,
                        help="openssl speed cross-check seconds per scheme (0: skip; default 1)")


def run(args: argparse.Namespace) -> int:
    schemes = [s for s in args.schemes.replace(",", " ").split() if s]
    try:
        run_dir = crypto_bench.run(Path(args.results),
                                   args.campaign, schemes, args.sizes, args.repeats, args.min_time,
                                   args.aesni, args.speed_seconds)
    except (crypto_bench.BenchError, ValueError) as exc:
        print(f"error: bench-crypto: {exc}", file=sys.stderr)
        return 2 if not isinstance(exc, crypto_bench.BenchError) or "worker" not in str(exc) else 1
    print(run_dir)
    return 0
