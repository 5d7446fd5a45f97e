"""Check one capture against a profile and plane (and a NAS choice): the overlay's verdict."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed import nas, profiles, ran, validity


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("pcap", type=Path, help="a whole-packet capture of the plane's network")
    parser.add_argument("--profile", required=True, help="the profile the capture should prove")
    parser.add_argument("--plane", required=True, choices=profiles.PLANES)
    parser.add_argument("--nas", help="also prove this NAS choice from the Security Mode Commands of "
                                      "--nas-capture (default: PCAP)")
    parser.add_argument("--nas-capture", type=Path, help="the N2 capture with readable NGAP (a plaintext tap)")
    parser.add_argument("--ran", help="the RAN variant the capture was taken with (docs/ran.md; default: "
                                      "stack.yaml's): the plane's endpoints are its nodes")


def run(args: argparse.Namespace) -> int:
    try:
        prof = profiles.get(args.profile, args.plane)
        if args.nas:
            nas.get(args.nas)
        variant = ran.check(args.ran)
    except (profiles.ProfileError, nas.NasError, ran.RanError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.pcap.is_file():
        print(f"error: {args.pcap}: no such capture", file=sys.stderr)
        return 2
    try:
        v = validity.check_capture(args.pcap, {"profile": prof.id, "plane": args.plane, "experiment": "stack",
                                               "parameters": {"ran": variant}})
        ok = v.valid
        print(f"{'VALID' if v.valid else 'INVALID'}: {v.details}")
        if args.nas:
            n = nas.verify_capture(args.nas_capture or args.pcap, args.nas)
            ok = ok and n.valid
            print(f"NAS {'VALID' if n.valid else 'INVALID'}: {n.details}")
    except validity.CaptureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0 if ok else 1
