"""Writing a drawn matplotlib figure to disk: ``<name>.png`` and ``<name>.pdf`` in one folder
(the PDF without its creation date, so the same data give the same bytes), then closing it, since
one report run draws many figures in one process. Every figure of the analysis is written here."""
from __future__ import annotations

import logging
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
