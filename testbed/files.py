"""Writing generated files: the one helper every renderer uses."""
from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str, mode: int = 0o644) -> Path:
    """Write `text` to `path` through a temporary file and a rename, so a reader (a container
    mounting it, a second render) sees the old file or the new one, never half; the mode is set
    before the file appears (secrets are never readable in between). Parents are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return path
