"""Measured per-packet overheads (analysis/wire_bytes.py): protected lengths matched to the known
inner lengths. (Each protocol's analytic formula is tested beside its plug-in: tests/<plug-in>/test_overhead.py.)"""
from __future__ import annotations

import pytest

from analysis import wire_bytes


def test_matching_lengths_to_known_inner_sizes() -> None:
    assert wire_bytes.measured_overheads([140, 140, 1100, 140], [84, 1044]) == {84: 56, 1044: 56}
    with pytest.raises(ValueError, match="traffic other than"):
        wire_bytes.measured_overheads([140, 150, 1100], [84, 1044])


def test_a_few_other_packets_in_the_tunnel_are_kept_apart_from_the_measured_sizes() -> None:
    # run-overlay's WireGuard capture: 86 echoes of 84 B, 80 of 1,044 B, and the fresh handshake's
    # trigger datagram (92) and the ICMP error answering it (124)
    lengths = [156] * 86 + [1116] * 80 + [92, 124]
    assert wire_bytes.measured_lengths(lengths, 2) == ([156, 1116], [(92, 1), (124, 1)])
    assert wire_bytes.measured_lengths([156] * 4 + [1116] * 4, 2) == ([156, 1116], [])
    assert wire_bytes.measured_lengths([156, 1116], 0) == ([156, 1116], [])
