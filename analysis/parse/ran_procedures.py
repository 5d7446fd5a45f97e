"""RAN procedure times (E1, F1-C) from one capture, the RWTH-SPICe way, with one tshark call.

One value per UE registration: NGAP PDUSessionResourceSetupRequest (initiatingMessage,
procedure 29) to the next E1AP BearerContextSetupResponse (successfulOutcome, procedure 8) or
F1AP UEContextSetupResponse (successfulOutcome, procedure 5). Walk the matching frames in time
order, remember the latest start, emit stop - start at a stop and forget the start
(tests/data/rwth-internal-ran-security/SOURCE.md).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.parse.tshark import epoch_ns, tshark_fields

START = "ngap.procedureCode == 29 && ngap.initiatingMessage_element"
STOPS = {
    "e1": "e1ap.procedureCode == 8 && e1ap.successfulOutcome_element",
    "f1c": "f1ap.procedureCode == 5 && f1ap.successfulOutcome_element",
}
FIELDS = ["frame.number", "frame.time_epoch", "ngap.procedureCode"]
COLUMNS = ["frame_start", "frame_stop", "ns_start", "ns_stop", "ms", "ms_us"]


def procedure_times(capture: Path | str, interface: str) -> pd.DataFrame:
    """Columns: frame_start/stop, ns_start/stop (epoch ns), ms (exact, from the ns), ms_us (both
    times converted to whole microseconds first as the RWTH tool did, so its values match)."""
    if interface not in STOPS:
        raise ValueError(f"unknown interface {interface!r}; valid: {', '.join(sorted(STOPS))}")
    table = tshark_fields(capture, FIELDS, f"({START}) || ({STOPS[interface]})")
    return pair_starts_stops(table)


def pair_starts_stops(table: pd.DataFrame) -> pd.DataFrame:
    rows = []
    if len(table):
        ns = epoch_ns(table["frame.time_epoch"]).to_numpy(dtype=np.int64)
        us = _datetime_us(table["frame.time_epoch"])
        is_start = (table["ngap.procedureCode"] != "").to_numpy()
        frames = table["frame.number"].astype("int64").to_numpy()
        order = np.lexsort((frames, ns))
        start: tuple[int, int] | None = None
        for i in order:
            if is_start[i]:
                start = (int(frames[i]), int(ns[i]), int(us[i]))
            elif start is not None:
                rows.append((start[0], int(frames[i]), start[1], int(ns[i]), int(us[i]) - start[2]))
                start = None
    out = pd.DataFrame(rows, columns=COLUMNS[:4] + ["us"], dtype="int64")
    out["ms"] = (out["ns_stop"] - out["ns_start"]) / 1e6
    out["ms_us"] = out.pop("us") / 1e3
    return out[COLUMNS]


def _datetime_us(epoch: pd.Series) -> np.ndarray:
    """Epoch text -> whole microseconds exactly as ``datetime.fromtimestamp(float(text))`` gets
    them (float64 first, then the fraction rounded half to even), which is how the RWTH tool's
    values were made; reproduces their printed values to the last digit."""
    # Python's float() rounds correctly; pandas 2's fast text parser may be one unit in the last
    # place off, which moves a microsecond now and then (seen with pandas 2.3 on Python 3.10)
    f = np.array([float(t) for t in epoch.astype(str)], dtype=float)
    whole = np.floor(f)
    frac_us = np.round((f - whole) * 1e6)
    return whole.astype(np.int64) * 1_000_000 + frac_us.astype(np.int64)
