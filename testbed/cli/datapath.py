"""Show the datapath this host offers: IPsec (kernel|libipsec), WireGuard (kernel|wireguard-go), TUN, SCTP."""
from __future__ import annotations

import argparse
import dataclasses
import json

from testbed import datapath, registry


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--json", action="store_true", help="print every fact and probe result as JSON")
    parser.add_argument("--doctor", action="store_true",
                        help="make doctor's lines: `fact <key> yes|no <reason>`, then per overlay with a kernel "
                             "datapath `overlay <key>` and its notes, one field a line")


def run(args: argparse.Namespace) -> int:
    facts = datapath.detect()
    if args.doctor:
        print(doctor_lines(facts))
        return 0
    if args.json:
        print(json.dumps(facts, indent=2, sort_keys=True))
    else:
        print(datapath.summary(facts))
        for what, why in facts["reasons"].items():
            if why != "ok":
                print(f"  {what}: {why}")
    return 0


def doctor_lines(facts: dict[str, object]) -> str:
    """scripts/doctor.sh's input: the probed facts (tun, sctp, each overlay's kernel datapath) and,
    per overlay plug-in with a kernel datapath, what to report (testbed/contract.py DoctorNotes)."""
    reasons = facts.get("reasons") or {}
    assert isinstance(reasons, dict)
    keys = ["sctp", "tun", *(k for k in facts if k.endswith("_kernel"))]
    lines = [f"fact {k} {'yes' if facts.get(k) else 'no'} {str(reasons.get(k, '')).replace(chr(10), ' ') or '-'}"
             for k in keys]
    lines.append(f"fact kernel {facts.get('kernel', '?')} -")
    for ov in registry.overlays():
        notes = ov.doctor_notes()
        if notes is not None:
            lines += [f"overlay {ov.name}_kernel", *(str(v) for v in dataclasses.astuple(notes))]
    return "\n".join(lines)
