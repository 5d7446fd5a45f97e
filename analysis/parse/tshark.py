"""Read tshark's field export of a capture (one pass, testbed/tshark.py) into a frame or rows.

Every field is read as text, multi-valued fields (several NGAP PDUs bundled in one SCTP
packet) keep all occurrences joined by ``,`` (``-E occurrence=a -E aggregator=,``). No
per-packet Python dissection: tshark does the dissection, pandas reads the table.
"""
from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from testbed import tshark

if TYPE_CHECKING:                       # pandas is imported where a frame is built (lazy: the
    import pandas as pd                 # attach-times CLI path runs without it)

# The runner is testbed/tshark.py (one for the whole repository); this module turns its field
# export into the analysis' tables.
TsharkError = tshark.TsharkError


def tshark_fields(capture: Path | str, fields: Sequence[str], display_filter: str = "",
                  prefs: Mapping[str, str] | None = None,
                  decode_as: Sequence[str] = ()) -> pd.DataFrame:
    """Field table of the frames of ``capture`` matching ``display_filter``.

    Columns are ``fields`` (all ``str``; empty string where a frame lacks the field).
    """
    import pandas as pd
    text = tshark.export(capture, fields, display_filter, prefs=prefs, decode_as=decode_as, timeout=None)
    if not text.strip():
        return pd.DataFrame({f: pd.Series(dtype=str) for f in fields})
    return pd.read_csv(io.StringIO(text), sep="\t", header=None, names=list(fields), dtype=str,
                       keep_default_na=False, na_filter=False, quoting=3, engine="c")


def tshark_records(capture: Path | str, fields: Sequence[str], display_filter: str = "",
                   prefs: Mapping[str, str] | None = None, decode_as: Sequence[str] = ()) -> list[list[str]]:
    """The same table as ``tshark_fields`` as plain rows of strings (no pandas: for the
    command-line paths whose cost must stay near one tshark pass)."""
    n = len(fields)
    text = tshark.export(capture, fields, display_filter, prefs=prefs, decode_as=decode_as, timeout=None)
    return [(line.split("\t") + [""] * n)[:n] for line in text.splitlines() if line]


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
