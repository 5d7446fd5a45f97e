"""CPU accounting CSV (`service,cpu_usec`: cgroup cpu.stat usage_usec delta) -> tidy frame."""
from __future__ import annotations

from pathlib import Path

import pandas as pd


def parse_cpu(path: Path | str) -> pd.DataFrame:
    """Columns: service (str), cpu_usec (int), cpu_s (float)."""
    p = Path(path)
    frame = pd.read_csv(p, dtype={"service": str})
    missing = {"service", "cpu_usec"} - set(frame.columns)
    if missing:
        raise ValueError(f"{p}: CPU accounting file lacks column(s) {sorted(missing)}; "
                         "expected header 'service,cpu_usec' (docs/manifest.md)")
    frame["cpu_usec"] = pd.to_numeric(frame["cpu_usec"], errors="raise").astype("int64")
    frame["cpu_s"] = frame["cpu_usec"] / 1e6
    return frame[["service", "cpu_usec", "cpu_s"]]
