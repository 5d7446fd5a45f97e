"""Writing generated files: the helpers every renderer uses (atomic writes, YAML without aliases)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml


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


class _NoAliasDumper(yaml.SafeDumper):
    """Writes repeated values out in full: Open5GS's YAML reader does not resolve aliases, and a
    rendered Compose file is easier to read without them."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def comment(header: str) -> str:
    """`header` (plain lines) as '#' comment lines."""
    return "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())


def dump_yaml(data: dict[str, Any], header: str = "", width: int = 80) -> str:
    """YAML text of `data` in insertion order, without aliases, after `header` (written as given)."""
    return header + yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False,
                              width=width)
