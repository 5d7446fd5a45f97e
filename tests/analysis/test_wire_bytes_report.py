"""The bytes-on-the-wire section (analysis/wire_bytes_report.py, issue 22 point 9): a panel without
data is not drawn, a figure without any is not made, and the section says so in words."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from analysis import attach_bytes, wire_bytes_report

RUNS = pd.DataFrame({"experiment": ["overlay"] * 3, "profile": ["baseline", "aes128gcm", "wireguard"],
                     "protocol": ["none", "ipsec", "wireguard"], "run": ["r1", "r2", "r3"],
                     "capture": ["n3.pcap"] * 3, "handshake_packets": [None, 0, 0],
                     "handshake_frame_bytes": [None, 0, 0]})


def test_no_handshake_and_no_attach_draws_nothing_and_says_why(tmp_path) -> None:
    assert wire_bytes_report.figure(RUNS, pd.DataFrame(), tmp_path) == []
    assert not list(tmp_path.iterdir())
    words = wire_bytes_report.figure_note(RUNS, pd.DataFrame())
    assert "no overlay handshake" in words and "no UE attach" in words


def test_only_the_panels_with_data_are_drawn(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    captured = {}
    monkeypatch.setattr(wire_bytes_report, "write_figure", lambda fig, out, name: captured.setdefault(name, fig) and [])
    runs = RUNS.assign(handshake_frame_bytes=[None, 1715, 0])
    wire_bytes_report.figure(runs, pd.DataFrame(), tmp_path)
    fig = captured[wire_bytes_report.FIGURE]
    assert len(fig.axes) == 1 and fig.axes[0].get_title() == "Overlay handshakes on the wire"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["aes128gcm"]
    assert "no UE attach" in wire_bytes_report.figure_note(runs, pd.DataFrame())
    plt.close(fig)
    attach = pd.DataFrame({"profile": ["baseline"], "iface": [attach_bytes.ALL], "role": ["cold"],
                           "bytes_mean": [5000.0], "bytes_ci": [float("nan")]})
    captured.clear()
    wire_bytes_report.figure(RUNS, attach, tmp_path)
    fig = captured[wire_bytes_report.FIGURE]
    assert len(fig.axes) == 1 and fig.axes[0].get_title() == "Signalling bytes per UE attach"
    assert "no overlay handshake" in wire_bytes_report.figure_note(RUNS, attach)
    plt.close(fig)
