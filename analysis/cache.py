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


def stamped_digest(path: Path | str, folder: Path | None) -> str:
    """SHA-256 of a file's bytes, kept under `folder`/digests per (path, device, inode, size,
    modification time in ns): an unchanged file is not read again in a later process (a report
    over 216 MB of captures hashed them all each time: 0.9 s), a new or rewritten one always is."""
    st = os.stat(path)
    return _digest(os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, folder)


@lru_cache(maxsize=4096)
def _digest(path: str, dev: int, ino: int, size: int, mtime_ns: int, folder: Path | None) -> str:
    stamp = hashlib.sha256(f"{path}|{dev}|{ino}|{size}|{mtime_ns}".encode()).hexdigest()
    memo = folder / "digests" / stamp if folder is not None else None
    if memo is not None:
        try:
            text = memo.read_text(encoding="ascii").strip()
            if len(text) == 64:
                return text
        except OSError:
            pass
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if memo is not None:
        _store(memo, h.hexdigest())
    return h.hexdigest()


def _store(path: Path, text: str) -> None:
    """`text` into `path` atomically (0600 in a 0700 folder); a folder that cannot be written is
    logged, never an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")   # mode 0600
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        log.info("analysis cache not written (%s): %s", path.parent, exc)


def file_digest(path: Path | str) -> str:
    """SHA-256 of a file's bytes (kept by path, size and modification time: stamped_digest)."""
    return stamped_digest(path, directory())


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
    _store(path, json.dumps(value))
    return value
