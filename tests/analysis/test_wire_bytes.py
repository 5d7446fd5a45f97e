"""Measured per-packet overheads (analysis/wire_bytes.py): protected lengths matched to the known
inner lengths. (Each protocol's analytic formula is tested beside its plug-in: tests/<plug-in>/test_overhead.py.)"""
from __future__ import annotations

import pytest

from analysis import wire_bytes


def test_matching_lengths_to_known_inner_sizes() -> None:
    assert wire_bytes.measured_overheads([140, 140, 1100, 140], [84, 1044]) == {84: 56, 1044: 56}
    with pytest.raises(ValueError, match="traffic other than"):
        wire_bytes.measured_overheads([140, 150, 1100], [84, 1044])
