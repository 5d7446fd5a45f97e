"""Small Markdown helpers (no extra dependency)."""
from __future__ import annotations

import math

import pandas as pd


def fmt(value: object, digits: int = 3) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.{digits}f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A pipe table; floats with ``digits`` decimals, NaN empty."""
    if frame.empty:
        return "_(no rows)_\n"
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(fmt(v, digits) for v in row) + " |")
    return "\n".join(lines) + "\n"
