"""One way to ask tshark about a capture: field export and counts, never per-packet Python.

Every capture check (overlay verdicts, run validity, channels seen) goes through here, so a
missing tshark or an unreadable capture gives the same clear error everywhere.
"""
from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path


class TsharkError(RuntimeError):
    """tshark is missing or could not read a capture."""


def run(pcap: Path, args: Sequence[str], *, timeout: float = 600) -> str:
    """stdout of `tshark -n -r PCAP ARGS...`."""
    cmd = ["tshark", "-n", "-r", str(pcap), *args]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise TsharkError("tshark not found (needed to read captures): run `make setup`") from None
    if res.returncode != 0:
        raise TsharkError(f"tshark could not read {pcap} ({' '.join(cmd[4:])}): {res.stderr.strip()}")
    return res.stdout


def fields(pcap: Path, display_filter: str, names: Sequence[str], *, extra: Sequence[str] = (),
           timeout: float = 600) -> list[list[str]]:
    """One row per matching packet, one cell per field (multi-valued fields comma-joined)."""
    args = [*extra, "-Y", display_filter, "-T", "fields", "-E", "separator=\t",
            "-E", "occurrence=a", "-E", "aggregator=,"]
    for name in names:
        args += ["-e", name]
    return [line.split("\t") for line in run(pcap, args, timeout=timeout).splitlines() if line.strip()]


TRUE = frozenset({"1", "true", "True", "TRUE"})
FALSE = frozenset({"0", "false", "False", "FALSE", ""})


def flag(value: str) -> bool:
    """A boolean field as tshark prints it: 1/0 up to 4.0, True/False from 4.2 on (4.4 in
    Debian 13). Anything else is an error, never silently false."""
    v = value.split(",")[0].strip()
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    raise TsharkError(f"not a tshark boolean: {value!r}")


def version() -> str | None:
    """tshark's version (e.g. 4.0.17), or None without tshark."""
    try:
        out = subprocess.run(["tshark", "--version"], capture_output=True, text=True, timeout=30,
                             check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = out.splitlines()[0] if out else ""
    parts = [w for w in first.replace("(", " ").split() if w[:1].isdigit()]
    return parts[0].rstrip(".") if parts else None


def count(pcap: Path, display_filter: str, *, extra: Sequence[str] = (), timeout: float = 600) -> int:
    """Packets matching a display filter."""
    return len(fields(pcap, display_filter, ["frame.number"], extra=extra, timeout=timeout))
