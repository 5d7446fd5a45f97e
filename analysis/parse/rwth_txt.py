"""RWTH-SPICe/Internal-Ran-Security result text files -> record with a tidy value frame.

Format (see tests/data/rwth-internal-ran-security/SOURCE.md)::

    KEY = value            one line per run parameter
    <blank line>
    Results: n=<N> mean=<m> stdev=±<s> 99%conf=±<h>
    <one value per line>

``res.txt`` files have no header, only the ``Results:`` line and values. The printed summary is
kept as text and numbers for comparison; always recompute statistics from ``values``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

_RESULTS = re.compile(
    r"^Results:\s*n=(?P<n>\d+)\s+mean=(?P<mean>\S+)\s+stdev=±?(?P<sd>\S+)\s+99%conf=±?(?P<h>\S+)\s*$"
)
_FIRST_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class RwthResult:
    params: dict[str, str]
    printed: dict[str, str] = field(default_factory=dict)   # n, mean, sd, h as printed
    values: pd.DataFrame = field(default_factory=pd.DataFrame)  # columns: i, value

    def printed_number(self, key: str) -> float:
        """A printed summary number; for DTLS means such as ``3.438-0.458`` the raw mean."""
        m = _FIRST_NUMBER.match(self.printed[key])
        if not m:
            raise ValueError(f"printed {key}={self.printed[key]!r} is not a number")
        return float(m.group(0))


def looks_like_rwth(text: str) -> bool:
    """True when text is in this format (a ``Results:`` line before the values)."""
    head = text[:4096]
    return bool(re.search(r"^Results:\s*n=", head, re.M))


def parse_rwth_text(text: str, source: str = "<text>") -> RwthResult:
    params: dict[str, str] = {}
    printed: dict[str, str] = {}
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        m = _RESULTS.match(line.strip())
        if m:
            printed = m.groupdict()
            start = i + 1
            break
        if "=" in line:
            key, _, value = line.partition("=")
            params[key.strip()] = value.strip()
    if start is None:
        raise ValueError(f"{source}: no 'Results: n=... mean=...' line; is this an RWTH result file?")
    body = [ln.strip() for ln in lines[start:] if ln.strip()]
    values = np.array(body, dtype=float)
    frame = pd.DataFrame({"i": np.arange(1, len(values) + 1), "value": values})
    return RwthResult(params=params, printed=printed, values=frame)


def parse_rwth(path: Path | str) -> RwthResult:
    p = Path(path)
    return parse_rwth_text(p.read_text(encoding="utf-8"), source=str(p))
