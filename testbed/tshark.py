"""The one way to ask tshark about a capture: field export and counts, never per-packet Python.

Every capture reader goes through `run`/`export` here: the capture checks (overlay verdicts, run
validity, channels seen, NAS) through `fields`/`count`, and the analysis (analysis/parse/tshark.py
builds its tables on `export`), so a missing tshark or an unreadable capture gives the same clear
error everywhere and every field export is read the same way.
"""
from __future__ import annotations

import logging
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from testbed import host_tools

log = logging.getLogger(__name__)


class TsharkError(RuntimeError):
    """tshark is missing or could not read a capture."""


def run(pcap: Path | str, args: Sequence[str], *, timeout: float | None = 600) -> str:
    """stdout of `tshark -n -r PCAP ARGS...` (timeout None: as long as a large capture takes)."""
    path = Path(pcap)
    if not path.is_file():
        raise TsharkError(f"capture {path} does not exist")
    cmd = ["tshark", "-n", "-r", str(path), *args]
    log.debug("running %s", " ".join(cmd))
    try:
        res = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise TsharkError(f"tshark not found (needed to read {path}): {host_tools.install_hint('tshark')}") from None
    except subprocess.TimeoutExpired:
        raise TsharkError(f"tshark did not finish reading {path} within {timeout} s") from None
    if res.returncode != 0:
        err = res.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = "; ".join(line for line in err if "Running as user" not in line)[-600:]
        raise TsharkError(f"tshark could not read {path} (exit {res.returncode}, {' '.join(cmd[4:])[:200]}): {detail}")
    return res.stdout.decode("utf-8", "replace")


def export(pcap: Path | str, names: Sequence[str], display_filter: str = "", *,
           prefs: Mapping[str, str] | None = None, decode_as: Sequence[str] = (), extra: Sequence[str] = (),
           timeout: float | None = 600, aggregator: str = ",") -> str:
    """The `-T fields` table as text: one line per matching packet, the fields tab-separated,
    multi-valued fields with every occurrence joined by `aggregator` (a comma: several NGAP PDUs
    in one packet; analysis/parse/sbi_ops.py joins HTTP/2 header values, which hold commas, with
    the ASCII unit separator)."""
    args = [*extra, "-T", "fields", "-E", "header=n", "-E", "separator=/t", "-E", "occurrence=a",
            "-E", f"aggregator={aggregator}", "-E", "quote=n"]
    for key, value in (prefs or {}).items():
        args += ["-o", f"{key}:{value}"]
    for rule in decode_as:
        args += ["-d", rule]
    if display_filter:
        args += ["-Y", display_filter]
    for name in names:
        args += ["-e", name]
    return run(pcap, args, timeout=timeout)


def rows(text: str, n: int) -> list[list[str]]:
    """`export`'s text as rows of exactly `n` cells. tshark prints every field, so a short row is
    the exception and only it is padded (padding every row was a sixth of sbi-ops' Python CPU on a
    123,740-frame capture); lines end in newlines only (a field may hold other line separators)."""
    split = [line.split("\t") for line in text.split("\n") if line]
    return [r if len(r) == n else (r + [""] * n)[:n] for r in split]


def fields(pcap: Path, display_filter: str, names: Sequence[str], *, extra: Sequence[str] = (),
           timeout: float | None = 600) -> list[list[str]]:
    """One row per matching packet, one cell per field (multi-valued fields comma-joined)."""
    return [line.split("\t") for line in export(pcap, names, display_filter, extra=extra, timeout=timeout).splitlines()
            if line.strip()]


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
