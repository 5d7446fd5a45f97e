"""Read tshark's field export of a capture (one pass, testbed/tshark.py) into a frame or rows,
through a cache keyed by the capture's content (below: `export`, `use_cache`).

Every field is read as text, multi-valued fields (several NGAP PDUs bundled in one SCTP
packet) keep all occurrences joined by ``,`` (``-E occurrence=a -E aggregator=,``). No
per-packet Python dissection: tshark does the dissection, pandas reads the table.
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import logging
import os
import shutil
import threading
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from testbed import tshark

if TYPE_CHECKING:                       # pandas is imported where a frame is built (lazy: the
    import pandas as pd                 # attach-times CLI path runs without it)

# The runner is testbed/tshark.py (one for the whole repository); this module turns its field
# export into the analysis' tables.
TsharkError = tshark.TsharkError
log = logging.getLogger(__name__)


def tshark_fields(capture: Path | str, fields: Sequence[str], display_filter: str = "",
                  prefs: Mapping[str, str] | None = None,
                  decode_as: Sequence[str] = ()) -> pd.DataFrame:
    """Field table of the frames of ``capture`` matching ``display_filter``.

    Columns are ``fields`` (all ``str``; empty string where a frame lacks the field).
    """
    import pandas as pd
    text = export(capture, fields, display_filter, prefs=prefs, decode_as=decode_as)
    if not text.strip():
        return pd.DataFrame({f: pd.Series(dtype=str) for f in fields})
    return pd.read_csv(io.StringIO(text), sep="\t", header=None, names=list(fields), dtype=str,
                       keep_default_na=False, na_filter=False, quoting=3, engine="c")


def tshark_records(capture: Path | str, fields: Sequence[str], display_filter: str = "",
                   prefs: Mapping[str, str] | None = None, decode_as: Sequence[str] = ()) -> list[list[str]]:
    """The same table as ``tshark_fields`` as plain rows of strings (no pandas: for the
    command-line paths whose cost must stay near one tshark pass)."""
    return tshark.rows(export(capture, fields, display_filter, prefs=prefs, decode_as=decode_as), len(fields))


def field_values(text: str, aggregator: str = ",", keep_empty: bool = False) -> list[str]:
    """The values of one field of a frame that holds it several times (tshark -E occurrence=a,
    joined by ``aggregator``); [] for an absent field. Empty values are dropped unless
    ``keep_empty`` (where values must stay aligned with another field's, as HTTP/2 header names
    with their values)."""
    if not text:
        return []
    values = text.split(aggregator)
    return values if keep_empty else [v for v in values if v != ""]


def last_value(*texts: str, aggregator: str = ",", keep_empty: bool = False) -> str:
    """The last value of the first of ``texts`` (fields of one frame) that has one: the
    innermost header's (``ip.src``, else ``ipv6.src``) in a tunnelled frame; "" for none."""
    for text in texts:
        values = field_values(text, aggregator, keep_empty)
        if values:
            return values[-1]
    return ""


def epoch_ns_text(text: str) -> int:
    """One ``frame.time_epoch`` text -> integer nanoseconds (exact)."""
    secs, _, frac = text.partition(".")
    return int(secs) * 1_000_000_000 + int((frac[:9]).ljust(9, "0"))


def ns_epoch_text(ns: object) -> str:
    """The inverse of epoch_ns_text for the CSV tables: nine digits of fraction; "" for a missing
    value (None, NaN, pandas NA: an unanswered request or an attach without its end)."""
    if ns is None or (isinstance(ns, float) and ns != ns) or type(ns).__name__ == "NAType":
        return ""
    v = int(ns)  # type: ignore[call-overload]
    return f"{v // 1_000_000_000}.{v % 1_000_000_000:09d}"


def epoch_ns(series: pd.Series) -> pd.Series:
    """``frame.time_epoch`` text -> integer nanoseconds (exact; floats lose the last digits)."""
    import pandas as pd
    parts = series.str.split(".", n=1, expand=True)
    if parts.shape[1] == 1:
        parts[1] = ""
    secs = pd.to_numeric(parts[0]).astype("int64")
    frac = parts[1].fillna("").str.slice(0, 9).str.ljust(9, "0")
    return secs * 1_000_000_000 + pd.to_numeric(frac).astype("int64")


# ------------------------------------------------------------------------ the export cache
# An export depends only on the capture's bytes, tshark and the arguments: it is kept under the
# digest of all three, so a report over an unchanged tree runs no tshark at all, and a new run
# costs one pass per capture. The CLI turns it on (python -m analysis --cache DIR); a library
# caller with `cached_in(DIR)`. A cache that cannot be written costs only the pass, never a result.

FORMAT = 1                              # bump when what is stored changes
_cache_dir: Path | None = None
_warned: set[str] = set()


def use_cache(folder: Path | None) -> None:
    """Keep exports under `folder` from now on (None: no cache)."""
    global _cache_dir
    _cache_dir = Path(folder) if folder is not None else None


@contextlib.contextmanager
def cached_in(folder: Path | None) -> Iterator[None]:
    """Exports cached under `folder` inside the block (None: not cached), as before after it."""
    before = _cache_dir
    use_cache(folder)
    try:
        yield
    finally:
        use_cache(before)


def _warn(what: str, exc: OSError) -> None:
    if what not in _warned:
        _warned.add(what)
        log.warning("tshark export cache %s: %s (the analysis goes on without it)", what, exc)


def content_digest(capture: Path, cache: Path) -> str:
    """SHA-256 of the capture's bytes, remembered per (file, size, mtime) so that an unchanged
    file is not read again (a new or rewritten file always is): analysis/cache.py stamped_digest."""
    from analysis.cache import stamped_digest
    return stamped_digest(capture, cache)


def _tshark_identity() -> str:
    """Which tshark answers (its path, size and time stamp): a new version gives new keys."""
    path = shutil.which("tshark")
    if path is None:
        return "none"
    st = os.stat(path)
    return f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}"


def _write(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        _warn("not writable", exc)


def export(capture: Path | str, fields: Sequence[str], display_filter: str = "",
           prefs: Mapping[str, str] | None = None, decode_as: Sequence[str] = ()) -> str:
    """testbed/tshark.py's field export of the capture, through the cache when one is on."""
    cache = _cache_dir
    if cache is None:
        return tshark.export(capture, fields, display_filter, prefs=prefs, decode_as=decode_as, timeout=None)
    path = Path(capture)
    if not path.is_file():
        raise TsharkError(f"capture {path} does not exist")
    args = json.dumps([FORMAT, _tshark_identity(), list(fields), display_filter, sorted((prefs or {}).items()),
                       list(decode_as)])
    try:
        key = hashlib.sha256(f"{content_digest(path, cache)}|{args}".encode()).hexdigest()
    except OSError as exc:
        _warn("unusable", exc)
        return tshark.export(capture, fields, display_filter, prefs=prefs, decode_as=decode_as, timeout=None)
    stored = cache / "exports" / key[:2] / f"{key}.gz"
    try:
        return gzip.decompress(stored.read_bytes()).decode("utf-8")
    except (OSError, EOFError, zlib.error):
        pass
    text = tshark.export(capture, fields, display_filter, prefs=prefs, decode_as=decode_as, timeout=None)
    _write(stored, gzip.compress(text.encode("utf-8"), compresslevel=1))
    return text
