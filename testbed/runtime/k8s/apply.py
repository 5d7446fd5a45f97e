"""`kubectl apply` of a stack's objects, tried again while the API server answers as a loaded one does.

    python -m testbed.runtime.k8s.apply --what WHAT --within S [--every S] -- KUBECTL ARGS... < OBJECTS

The guest's emulated cluster at load 40 answered a run-cpu stack's one apply of its gated pods
with "Error from server (Timeout): Timeout: request did not complete within requested timeout -
context deadline exceeded", and the stack did not come up. An apply of the same objects again is
idempotent (server-side or client-side alike: the objects are declared, not changed), so a
failure of the kind a loaded server gives (TRANSIENT) is tried again within the caller's deadline;
any other (an object refused) ends it at once. k8s.sh up applies through this; stackctl.py,
server.py and cpu.py through apply(). Exit 0 applied, 1 not (the error on stderr), 2 usage.
"""
from __future__ import annotations

import argparse
import subprocess
import sys

from testbed.runtime.k8s import retry

# what kubectl prints when the API server (or the way to it) is too slow or briefly away, lower case.
# A refused connection: kubectl v1.34's apply says `error validating "STDIN": ... failed to download
# openapi: Get "https://HOST/openapi/v2?timeout=1m0s": dial tcp HOST: connect: connection refused`
# (tests/k8s/cluster/test_apiserver.py), its other verbs "The connection to the server HOST was
# refused - did you specify the right host or port?"
TRANSIENT = ("timeout", "timed out", "deadline exceeded", "connection refused", "was refused - did you specify",
             "connection reset", "unable to handle the request", "too many requests", "unexpected eof",
             "to the server: eof", "etcdserver:", "client connection lost")
EVERY_SECONDS = 5.0


def transient(why: str) -> bool:
    low = why.lower()
    return any(t in low for t in TRANSIENT)


def apply(argv: list[str], objects: str, what: str, within: float, every: float | None = None) -> str:
    """Run ARGV (a `kubectl ... apply -f -`) with OBJECTS on stdin until it succeeds or fails for good
    (above), EVERY s apart (EVERY_SECONDS). Returns "" once applied, else kubectl's last error; each
    retry is said on stderr."""
    def attempt() -> str:
        res = subprocess.run(argv, input=objects, capture_output=True, text=True, check=False)
        if res.returncode == 0:
            return ""
        lines = res.stderr.strip().splitlines()
        return lines[-1] if lines else f"kubectl exited {res.returncode}"

    def retrying(why: str) -> None:
        print(f"applying {what} failed ({why}); trying again", file=sys.stderr, flush=True)
    return retry.until(attempt, within, EVERY_SECONDS if every is None else every, retryable=transient,
                       retrying=retrying)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.runtime.k8s.apply", description=__doc__.split("\n")[0])
    parser.add_argument("--what", required=True, help="what is applied, for the messages")
    parser.add_argument("--within", type=float, required=True, help="s to keep trying a transient failure")
    parser.add_argument("--every", type=float, help=f"s between tries (default {EVERY_SECONDS:g})")
    parser.add_argument("kubectl", nargs="+", help="the kubectl apply command line (-f -)")
    args = parser.parse_args(argv)
    why = apply(args.kubectl, sys.stdin.read(), args.what, args.within, args.every)
    if why:
        print(f"error: applying {args.what}: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
