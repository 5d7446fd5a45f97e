"""analysis/figures.py: every figure drawn from the results tree built from real data, and
checked for content (axes, labels, data), not just existence."""
from __future__ import annotations

import struct

import matplotlib.pyplot as plt
import pytest

from analysis import figures, tables
from analysis.cli import main


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def fixture_tables(fixture_datasets):
    return tables.all_tables(fixture_datasets)


def test_every_figure_is_drawn_as_png_and_pdf(fixture_tables, tmp_path):
    drawn = figures.draw_all(fixture_tables, tmp_path)
    assert set(drawn) == set(figures.FIGURES)
    for name, paths in drawn.items():
        assert [p.name for p in paths] == [f"{name}.png", f"{name}.pdf"], name
        w, h = _png_size(paths[0])
        assert w > 800 and h > 500, (name, w, h)
        assert paths[1].read_bytes()[:5] == b"%PDF-"
        assert paths[0].stat().st_size > 20_000       # a drawn chart, not an empty canvas


def test_fig2_content(fixture_tables, tmp_path, monkeypatch):
    captured = {}
    monkeypatch.setattr(figures, "_save", lambda fig, out, name: captured.setdefault(name, fig) and [])
    figures.fig2_n3_rtt(fixture_tables, tmp_path)
    fig = captured["fig2-n3-rtt"]
    ax1, ax2 = fig.axes
    labels = [t.get_text() for t in ax1.get_xticklabels()]
    # baseline first (and bold), wireguard split by datapath because its runs differ
    assert labels == ["baseline", "aes128gcm [kernel]", "wireguard [kernel]", "wireguard [userspace]"]
    assert ax1.get_xticklabels()[0].get_fontweight() == "bold"
    # one unit per figure: both panels in us
    assert "(us)" in ax1.get_ylabel() and "99 %" in ax1.get_ylabel()
    assert "(us)" in ax2.get_ylabel()
    heights = sorted(b.get_height() for b in ax1.patches if b.get_height() == b.get_height())
    rtt = fixture_tables["rtt"]
    assert heights == pytest.approx(sorted(v * 1000.0 for v in rtt["mean"]))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in (ax1, ax2):
        # the legend tells the payload sizes apart by hatch on white: it borrows no bar's colour
        legend = ax.get_legend()
        assert [h.get_facecolor()[:3] for h in legend.legend_handles] == [(1.0, 1.0, 1.0)] * 2
        assert [h.get_hatch() or "" for h in legend.legend_handles] == ["", "//"]
        # the userspace note and the legend never cover each other
        note = next(t for t in ax.texts if "userspace" in t.get_text())
        assert not note.get_window_extent(renderer).overlaps(legend.get_window_extent(renderer))
    # the overhead panel's baseline (0, dashed) sits above the bottom spine, where it can be seen
    zero = [ln for ln in ax2.get_lines() if ln.get_linestyle() == "--"]
    assert zero and zero[0].get_ydata()[0] == 0 and ax2.get_ylim()[0] < 0
    plt.close(fig)


def test_fig3_and_tls_suites_content(fixture_tables, tmp_path, monkeypatch):
    captured = {}
    monkeypatch.setattr(figures, "_save", lambda fig, out, name: captured.setdefault(name, fig) and [])
    figures.fig3_attach_time(fixture_tables, tmp_path)
    figures.fig_tls_suites(fixture_tables, tmp_path)
    cold, warm = captured["fig3-attach-time"].axes
    assert cold.get_title().startswith("cold") and warm.get_title().startswith("warm")
    # grouped by protocol, then IPsec mode: baseline, IPsec (trap, hatched), TLS
    assert [t.get_text() for t in cold.get_xticklabels()] == ["baseline", "aes128gcm-psk-trap", "tls13-aes256gcm"]
    assert [p.get_hatch() or "" for p in cold.patches] == ["", "//", ""]
    assert "IPsec trap" in [t.get_text() for t in cold.get_legend().get_texts()]
    base = fixture_tables["attach"].set_index(["profile", "role"])
    dashed = [ln.get_ydata()[0] for ln in cold.get_lines() if ln.get_linestyle() == "--"]
    assert dashed == [pytest.approx(base.loc[("baseline", "cold"), "mean"])]
    tls_cold = captured["fig-tls-suites"].axes[0]
    assert [t.get_text() for t in tls_cold.get_yticklabels()] == ["tls13-aes256gcm"]
    assert tls_cold.patches[0].get_width() == pytest.approx(base.loc[("tls13-aes256gcm", "cold"), "overhead_pct"])
    for fig in captured.values():
        plt.close(fig)


def test_no_data_means_no_figure(tmp_path):
    import pandas as pd
    empty = {k: pd.DataFrame(columns=["protocol", "profile", "datapath"]) for k in tables.TABLES}
    assert all(paths == [] for paths in figures.draw_all(empty, tmp_path).values())
    assert not list(tmp_path.iterdir())


def test_unknown_figure_lists_the_valid_names():
    with pytest.raises(KeyError, match="valid: fig2-n3-rtt"):
        figures.get("fig9")


def test_cli_list_figures_and_bad_figure(capsys, fixture_tree, tmp_path):
    assert main(["list-figures"]) == 0
    assert capsys.readouterr().out.split()[0] == "fig2-n3-rtt"
    assert main(["figures", str(fixture_tree.root), "--out", str(tmp_path), "--figure", "nope"]) == 1
    assert "unknown figure 'nope'" in capsys.readouterr().err
