"""Small Markdown helpers (no extra dependency)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd


# Columns that count things (boots, samples, runs, packets, bytes added ...): printed as integers
# wherever the value is whole (pandas keeps a count column with an empty cell as floats).
COUNTS = re.compile(r"^(n|n_.*|.*_n|.*_n_boots|runs|lost|sent|points|incomplete|registrations|duplicate_copies|files"
                    r"|size|ues|count|sets|calls|repeat|.*packets|handshake_.*|added_bytes.*|relay_vs_sctp)$")


def fmt_count(value: object, digits: int = 3) -> str:
    """A count: a whole float as an integer, anything else as `fmt` prints it."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    return fmt(value, digits)


def integer_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with its count columns (COUNTS) as nullable integers where every value is whole,
    so that a CSV says 0, not 0.0."""
    whole = [c for c in frame.columns if COUNTS.match(str(c)) and pd.api.types.is_float_dtype(frame[c])
             and frame[c].dropna().apply(float.is_integer).all()]
    return frame.astype({c: "Int64" for c in whole}) if whole else frame


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


ONLY_WHERE_SET = ("placement",)


def table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A pipe table; floats with ``digits`` decimals, counts (COUNTS) as integers, NaN empty."""
    if frame.empty:
        return "_(no rows)_\n"
    # a column only some runs fill (the cluster's placement) is left out where no row has it
    frame = frame.drop(columns=[c for c in ONLY_WHERE_SET if c in frame.columns
                                and frame[c].astype(object).where(frame[c].notna(), "").eq("").all()])
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    pcols = {i for i, c in enumerate(cols) if c == "p_perm" or c.startswith("p_")}
    counts = {i for i, c in enumerate(cols) if COUNTS.match(c)}
    for row in frame.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(fmt_p(v) if i in pcols else fmt_count(v, digits) if i in counts
                                        else fmt(v, digits) for i, v in enumerate(row)) + " |")
    return "\n".join(lines) + "\n"
