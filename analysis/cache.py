"""Results of a tshark pass cached by content: the same capture bytes, the same key material and
the same question give the stored answer instead of another pass.

The key is a SHA-256 over the capture's bytes, the bytes of every extra input file (TLS key
logs, ESP SA lists), the question (fields, filter, preferences, decode-as rules: everything that
changes tshark's output), tshark's binary (path, size, mtime) and the caller's format version.
Entries are JSON files, mode 0600 in a 0700 directory (a decrypted table is derived from secrets), under
`$ANALYSIS_CACHE` (default `~/.cache/g5tb-analysis`; `ANALYSIS_CACHE=off` disables it). A cache
that cannot be written is skipped with a log line: it never fails an analysis.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar


log = logging.getLogger(__name__)
T = TypeVar("T")
OFF = ("off", "0", "no", "false")


def directory() -> Path | None:
    value = os.environ.get("ANALYSIS_CACHE", "")
    if value.lower() in OFF:
        return None
    return Path(value) if value else Path.home() / ".cache" / "g5tb-analysis"


@lru_cache(maxsize=256)
def _file_digest(path: str, _mtime_ns: int, _size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digest(path: Path | str) -> str:
    """SHA-256 of a file's bytes (memoised per path, modification time and size)."""
    st = os.stat(path)
    return _file_digest(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=1)
def _tshark_version() -> str:
    """tshark's identity without running it (a `tshark --version` costs a second on a loaded
    host): its resolved path, size and modification time, which a package upgrade changes."""
    path = shutil.which("tshark")
    if path is None:
        return "no tshark"
    st = os.stat(os.path.realpath(path))
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def key(inputs: Iterable[Path | str], question: Any) -> str:
    h = hashlib.sha256()
    for p in inputs:
        h.update(file_digest(p).encode())
    h.update(json.dumps(question, sort_keys=True, default=str).encode())
    h.update(_tshark_version().encode())
    return h.hexdigest()


def cached(inputs: Iterable[Path | str], question: Any, compute: Callable[[], T]) -> T:
    """`compute()`'s JSON-able result for these input files and this question, from the cache
    when it holds it."""
    folder = directory()
    if folder is None:
        return compute()
    files = list(inputs)
    k = key(files, question)
    path = folder / f"{k}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))   # type: ignore[no-any-return]
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")   # mode 0600
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f)
        os.replace(tmp, path)
    except OSError as exc:
        log.info("analysis cache not written (%s): %s", folder, exc)
    return value
