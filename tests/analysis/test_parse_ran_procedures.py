"""analysis/parse/ran_procedures.py reproduces the RWTH res.txt values from their real pcaps.

The numbered captures hold one registration each and do not overlap in time, so they are
merged (mergecap) and read with one tshark run; the pairs come out in capture-time order and
are mapped back to file numbers through each file's first-packet time.
"""
from __future__ import annotations

import pytest

from analysis.parse.ran_procedures import procedure_times
from analysis.parse.rwth_txt import parse_rwth
from tests.analysis.capture_tools import in_time_order, merge, numbered
from tests.conftest import require_tools

RW = "rwth-internal-ran-security"


@pytest.fixture(autouse=True)
def _tools():
    require_tools("tshark", "mergecap", "capinfos")


def _per_file(folder, interface, tmp_path) -> list[float]:
    files = numbered(folder)
    frame = procedure_times(merge(files, tmp_path / "all.pcapng"), interface)
    assert len(frame) == len(files)                        # exactly one pair per file
    by_file = dict(zip(in_time_order(files), frame.sort_values("ns_start")["ms_us"]))
    return [round(float(by_file[f]), 3) for f in files]


def test_single_file_exact_and_microsecond_values(shared):
    frame = procedure_times(shared / RW / "e1-socat-overhead" / "0.pcap", "e1")
    assert (int(frame["frame_start"].iloc[0]), int(frame["frame_stop"].iloc[0])) == (12, 16)
    assert f"{frame['ms'].iloc[0]:.6f}" == "3.175151"      # SOURCE.md: full ns timestamps
    assert f"{frame['ms_us'].iloc[0]:.3f}" == "3.175"      # res.txt line 1


def test_e1_files_reproduce_res_txt_lines_1_to_30(shared, tmp_path):
    folder = shared / RW / "e1-socat-overhead"
    expected = parse_rwth(folder / "res.txt").values["value"].tolist()[:30]
    assert _per_file(folder, "e1", tmp_path) == expected


def test_f1c_fast_mode_reproduces_res_txt_lines_1_to_9(shared, tmp_path):
    folder = shared / RW / "f1c-socat-overhead"
    expected = parse_rwth(folder / "res.txt").values["value"].tolist()[:9]
    values = _per_file(folder, "f1c", tmp_path)
    assert [v for v in values if v < 50] == expected       # the authors' cut (SOURCE.md)
    assert all(185 < v < 205 for v in values if v >= 50)   # the slow mode they dropped


def test_unknown_interface_is_a_clear_error(shared):
    with pytest.raises(ValueError, match="valid: e1, f1c"):
        procedure_times(shared / RW / "e1-socat-overhead" / "0.pcap", "f1u")
