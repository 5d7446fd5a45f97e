"""analysis/parse/cpu.py: the drivers' `service,cpu_usec` accounting file."""
from __future__ import annotations

import pytest

from analysis.parse.cpu import parse_cpu


def test_cpu_file(tmp_path):
    p = tmp_path / "cpu.csv"
    p.write_text("service,cpu_usec\namf,1250000\nsmf,830511\nnrf,15\n")
    frame = parse_cpu(p)
    assert frame["service"].tolist() == ["amf", "smf", "nrf"]
    assert frame["cpu_s"].tolist() == [1.25, 0.830511, 0.000015]


def test_wrong_header_names_the_file_and_the_format(tmp_path):
    p = tmp_path / "cpu.csv"
    p.write_text("name,usage\namf,1\n")
    with pytest.raises(ValueError, match="cpu.csv: CPU accounting file lacks column"):
        parse_cpu(p)
