"""Writing rendered files: atomic replacement with a mode, YAML without aliases, comment headers."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml


class _NoAliasDumper(yaml.SafeDumper):
    """Writes repeated values out in full: Open5GS's YAML reader does not resolve aliases, and a
    Compose file is easier to read without them."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def comment(header: str) -> str:
    """`header` (plain lines) as '#' comment lines."""
    return "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())


def dump_yaml(data: dict[str, Any], header: str = "", width: int = 80) -> str:
    """YAML text of `data` in insertion order, after `header` ('#' lines, written as given)."""
    return header + yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False,
                              width=width)


def write_text(path: Path, text: str, mode: int = 0o644) -> Path:
    """Write `text` to `path` atomically (temp file + rename) with `mode`; parents are created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return path
