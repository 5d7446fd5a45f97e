"""Run tshark once per capture and read its field export (`tshark -T fields`) into a frame.

Every field is read as text, multi-valued fields (several NGAP PDUs bundled in one SCTP
packet) keep all occurrences joined by ``,`` (``-E occurrence=a -E aggregator=,``). No
per-packet Python dissection: tshark does the dissection, pandas reads the table.
"""
from __future__ import annotations

import io
import logging
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:                       # pandas is imported where a frame is built (lazy: the
    import pandas as pd                 # attach-times CLI path runs without it)

log = logging.getLogger(__name__)

TSHARK = "tshark"


class TsharkError(RuntimeError):
    """tshark is missing or failed on a capture."""


def tshark_fields(capture: Path | str, fields: Sequence[str], display_filter: str = "",
                  prefs: Mapping[str, str] | None = None,
                  decode_as: Sequence[str] = ()) -> pd.DataFrame:
    """Field table of the frames of ``capture`` matching ``display_filter``.

    Columns are ``fields`` (all ``str``; empty string where a frame lacks the field).
    """
    import pandas as pd
    text = _run_fields(capture, fields, display_filter, prefs, decode_as)
    if not text.strip():
        return pd.DataFrame({f: pd.Series(dtype=str) for f in fields})
    return pd.read_csv(io.StringIO(text), sep="\t", header=None, names=list(fields), dtype=str,
                       keep_default_na=False, na_filter=False, quoting=3, engine="c")


def tshark_records(capture: Path | str, fields: Sequence[str], display_filter: str = "",
                   prefs: Mapping[str, str] | None = None, decode_as: Sequence[str] = ()) -> list[list[str]]:
    """The same table as ``tshark_fields`` as plain rows of strings (no pandas: for the
    command-line paths whose cost must stay near one tshark pass)."""
    n = len(fields)
    return [(line.split("\t") + [""] * n)[:n]
            for line in _run_fields(capture, fields, display_filter, prefs, decode_as).splitlines() if line]


def _run_fields(capture: Path | str, fields: Sequence[str], display_filter: str,
                prefs: Mapping[str, str] | None, decode_as: Sequence[str]) -> str:
    path = Path(capture)
    if shutil.which(TSHARK) is None:
        raise TsharkError(f"tshark not found (needed to read {path}): run `make setup` or install tshark")
    if not path.is_file():
        raise TsharkError(f"capture {path} does not exist")
    cmd = [TSHARK, "-r", str(path), "-n", "-T", "fields", "-E", "header=n", "-E", "separator=/t",
           "-E", "occurrence=a", "-E", "aggregator=,", "-E", "quote=n"]
    for key, value in (prefs or {}).items():
        cmd += ["-o", f"{key}:{value}"]
    for rule in decode_as:
        cmd += ["-d", rule]
    if display_filter:
        cmd += ["-Y", display_filter]
    for f in fields:
        cmd += ["-e", f]
    log.debug("running %s", " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = "; ".join(line for line in err if "Running as user" not in line)[-600:]
        raise TsharkError(f"tshark failed on {path} (exit {proc.returncode}): {detail}")
    return proc.stdout.decode("utf-8", "replace")


def epoch_ns_text(text: str) -> int:
    """One ``frame.time_epoch`` text -> integer nanoseconds (exact)."""
    secs, _, frac = text.partition(".")
    return int(secs) * 1_000_000_000 + int((frac[:9]).ljust(9, "0"))


def epoch_ns(series: pd.Series) -> pd.Series:
    """``frame.time_epoch`` text -> integer nanoseconds (exact; floats lose the last digits)."""
    import pandas as pd
    parts = series.str.split(".", n=1, expand=True)
    if parts.shape[1] == 1:
        parts[1] = ""
    secs = pd.to_numeric(parts[0]).astype("int64")
    frac = parts[1].fillna("").str.slice(0, 9).str.ljust(9, "0")
    return secs * 1_000_000_000 + pd.to_numeric(frac).astype("int64")
