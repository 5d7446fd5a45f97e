"""Writing a drawn matplotlib figure to disk: ``<name>.png`` and ``<name>.pdf`` in one folder
(the PDF without its creation date, so the same data give the same bytes), then closing it, since
one report run draws many figures in one process. Every figure of the analysis is written here."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)

FORMATS = ("png", "pdf")


def write_figure(fig: Figure, out: Path, name: str, dpi: int = 150, tight: bool = False) -> list[Path]:
    """out/<name>.png and out/<name>.pdf (``tight``: cropped to what is drawn); their paths."""
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in FORMATS:
        p = out / f"{name}.{ext}"
        fig.savefig(p, dpi=dpi, bbox_inches="tight" if tight else None,
                    metadata={"CreationDate": None} if ext == "pdf" else None)
        paths.append(p)
    plt.close(fig)
    log.info("wrote %s", ", ".join(str(p) for p in paths))
    return paths


def _key_file(out: Path, name: str) -> Path:
    return out / f".{name}.key"


def kept(out: Path, name: str, key: str | None) -> list[Path] | None:
    """The figure's files as last drawn from data with this key (analysis/figures.py data_key),
    when each is still there as written; None when it must be drawn."""
    if key is None:
        return None
    try:
        rec = json.loads(_key_file(out, name).read_text(encoding="utf-8"))
        if rec["key"] != key:
            return None
        paths = [out / p for p in rec["files"]]
        stamps = [[p.stat().st_size, p.stat().st_mtime_ns] for p in paths]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return paths if stamps == rec["stamps"] else None


def remember(out: Path, name: str, key: str | None, paths: list[Path]) -> None:
    """After drawing: the data key and the files' stamps (nothing without a key or a file)."""
    if key is None or not paths:
        return
    out.mkdir(parents=True, exist_ok=True)
    rec = {"key": key, "files": [p.name for p in paths],
           "stamps": [[p.stat().st_size, p.stat().st_mtime_ns] for p in paths]}
    path = _key_file(out, name)
    tmp = path.with_name(f"{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(rec), encoding="utf-8")
    os.replace(tmp, path)
