"""Small Markdown helpers (no extra dependency)."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd


def fmt(value: object, digits: int = 3) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.{digits}f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def write_page(out: Path, name: str, title: str, text: str) -> Path | None:
    """out/<name>.md with a title over ``text``; None (nothing written) when ``text`` is empty."""
    if not text:
        return None
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.md"
    path.write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    return path


def fmt_p(value: object) -> str:
    """A p-value: small ones as `< 0.001`, never as 0.000."""
    if isinstance(value, float) and not math.isnan(value) and value < 0.001:
        return "< 0.001"
    return fmt(value, 3)


def table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A pipe table; floats with ``digits`` decimals, NaN empty."""
    if frame.empty:
        return "_(no rows)_\n"
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    pcols = {i for i, c in enumerate(cols) if c == "p_perm" or c.startswith("p_")}
    for row in frame.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(fmt_p(v) if i in pcols else fmt(v, digits)
                                        for i, v in enumerate(row)) + " |")
    return "\n".join(lines) + "\n"
