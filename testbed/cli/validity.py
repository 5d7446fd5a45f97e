"""Check a run's capture: the claimed overlay on the wire, no plaintext; record it in the manifest."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator

from testbed import instance, manifest, profiles, validity


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("run_dir", type=Path, help="the run directory (holding manifest.json)")
    parser.add_argument("--no-record", action="store_true", help="only print; leave the manifest alone")


@contextlib.contextmanager
def _slot(slot: object) -> Iterator[None]:
    """The run's address slot for the check, and the environment as it was afterwards (a test
    calling main() twice must not inherit the first run's block)."""
    before = os.environ.get(instance.SLOT_ENV)
    if slot is not None:
        os.environ[instance.SLOT_ENV] = str(slot)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(instance.SLOT_ENV, None)
        else:
            os.environ[instance.SLOT_ENV] = before


def run(args: argparse.Namespace) -> int:
    try:
        # a stack beside another ran on its own addresses (testbed/instance.py): judge with those
        slot = (manifest.load(args.run_dir).get("instance") or {}).get("slot")
        with _slot(slot):
            verdict = validity.check_run(args.run_dir, record=not args.no_record)
    except (manifest.ManifestError, profiles.ProfileError, validity.CaptureError) as exc:
        print(f"error: validity {args.run_dir}: {exc}", file=sys.stderr)
        return 1
    if verdict.valid:
        print(f"VALID: {verdict.details}")
        return 0
    bar = "!" * 78
    print(f"{bar}\nINVALID RUN {args.run_dir}\n{verdict.details}\n"
          "Its data must not be used. The check above says why: the overlay it claims not on the wire, "
          "plaintext, other algorithms negotiated, no UE attached, ... Check the overlay and the stack "
          f"(make doctor, the run's logs) and run again.\n{bar}", file=sys.stderr)
    return 1
