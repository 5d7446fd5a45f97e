"""The NAS dimension's run-level check (testbed/contract.py check_run): what was asked
(parameters.nas) and what every Security Mode Command in the run's N2 timing captures selected.
With a requested choice, every capture must hold at least one SMC and all must carry exactly it
(another choice, or none readable, makes the run invalid); without one, the observed choice is
only recorded (the analysis groups attach times by it)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed import nas, tshark
from testbed.contract import RunCheck
from testbed.verdict import Verdict


def timing_captures(m: Mapping[str, Any]) -> list[str]:
    """The run's N2 captures the attach times come from (run-sbi: one per iteration)."""
    return [f["path"] for f in m["files"] if f["kind"] == "pcap" and f.get("iface") == "n2"
            and f.get("purpose", "timing") == "timing"]


def _seen(run_dir: Path, captures: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    per_capture: dict[str, list[str]] = {}
    problems: list[str] = []
    for rel in captures:
        pcap = run_dir / rel
        if not pcap.is_file():
            problems.append(f"{rel}: missing")
            continue
        try:
            smcs = nas.security_mode_commands(pcap)
        except tshark.TsharkError as exc:
            problems.append(f"{rel}: unreadable ({exc})")
            continue
        per_capture[rel] = [f"nea{e}-nia{i}" for _, e, i in smcs]
        if not smcs:
            problems.append(f"{rel}: no Security Mode Command readable (an N2 capture behind an overlay "
                            "must be taken at its plaintext tap)")
    return per_capture, problems


def record(run_dir: Path, m: Mapping[str, Any]) -> tuple[dict[str, Any], Verdict | None] | None:
    """(the manifest's `nas` record, the verdict or None without a requested choice); None for
    runs without N2 timing captures."""
    captures = timing_captures(m)
    if not captures:
        return None
    requested = (m.get("parameters") or {}).get("nas") or None
    per_capture, problems = _seen(run_dir, captures)
    seen = sorted({c for cs in per_capture.values() for c in cs})
    proven = seen[0] if len(seen) == 1 and not problems else None
    rec = {"requested": requested, "proven": proven, "seen": seen,
           "smc": sum(len(cs) for cs in per_capture.values()), "per_capture": per_capture}
    if requested is None:
        return rec, None
    wrong = [c for c in seen if c != requested]
    if wrong:
        problems.append(f"Security Mode Commands select {', '.join(wrong)}, not the requested {requested}")
    if problems:
        return rec, Verdict(False, 0, 0, f"NAS {requested}: " + "; ".join(problems[:4]) + " -> INVALID")
    return rec, Verdict(True, 0, 0, f"NAS {requested}: proven by {rec['smc']} Security Mode Command(s) "
                        f"in {len(per_capture)} N2 capture(s)")


def check_run(run_dir: Path, m: Mapping[str, Any]) -> list[RunCheck]:
    found = record(run_dir, m)
    if found is None:
        return []
    rec, verdict = found
    return [RunCheck(verdict, "nas", rec)]
