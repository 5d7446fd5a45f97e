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


def _fig2(tables_, out, monkeypatch, ds=None):
    captured = {}
    monkeypatch.setattr(figures, "_save", lambda fig, out, name: captured.setdefault(name, fig) and [])
    figures.fig2_n3_rtt(tables_, out, ds)
    return captured["fig2-n3-rtt"]


def test_fig2_content(fixture_tables, fixture_datasets, tmp_path, monkeypatch):
    fig = _fig2(fixture_tables, tmp_path, monkeypatch, fixture_datasets)
    ax1, ax2 = fig.axes
    labels = [t.get_text() for t in ax1.get_xticklabels()]
    # baseline first (and bold), wireguard split by datapath because its runs differ
    assert labels == ["baseline", "aes128gcm [kernel]", "wireguard [kernel]", "wireguard [userspace]"]
    assert ax1.get_xticklabels()[0].get_fontweight() == "bold"
    # one unit in the figure and the tables (the RTT table is in ms): both panels in ms
    assert "(ms)" in ax1.get_ylabel() and "99 %" in ax1.get_ylabel()
    assert "(ms)" in ax2.get_ylabel()
    rtt = fixture_tables["rtt"]
    # the mean over boots of every profile and size, as a marker at the table's value (ms)
    means = sorted(y for ln in ax1.get_lines() if ln.get_gid() == "mean" for y in ln.get_ydata())
    assert means == pytest.approx(sorted(rtt["mean"]))
    # every boot's mean as a point: as many as the table's boots
    boots = [len(c.get_offsets()) for c in ax1.collections if c.get_gid() == "boots"]
    assert sorted(boots) == sorted(rtt["n_boots"].astype(int))
    # the samples' distribution: one box per profile and size
    assert sum(1 for p in ax1.patches if p.get_gid() == "samples") == len(rtt)
    # an RTT is never negative: the axis starts at 0
    assert ax1.get_ylim()[0] == 0
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in (ax1, ax2):
        # the legend tells the payload sizes apart by hatch on white: it borrows no protocol's colour
        legend = ax.get_legend()
        sizes = [h for h in legend.legend_handles if h.get_label().endswith(" B")]
        assert [h.get_facecolor()[:3] for h in sizes] == [(1.0, 1.0, 1.0)] * 2
        assert [h.get_hatch() or "" for h in sizes] == ["", "//"]
        # the userspace note and the legend never cover each other
        note = next(t for t in ax.texts if "userspace" in t.get_text())
        assert not note.get_window_extent(renderer).overlaps(legend.get_window_extent(renderer))
    # the overhead panel's baseline (0, dashed) sits above the bottom spine, where it can be seen
    zero = [ln for ln in ax2.get_lines() if ln.get_linestyle() == "--"]
    assert zero and zero[0].get_ydata()[0] == 0 and ax2.get_ylim()[0] < 0
    # two boots: the figure says the intervals rest on few boots
    assert "n_boots" in fig.get_suptitle()
    plt.close(fig)


def test_fig2_with_few_boots_never_shows_a_negative_rtt(tmp_path, monkeypatch):
    """The case of issue 22: three boots, an interval far wider than the data (mean 2.6 ms, 99 %
    half-width 18 ms): the axis starts at 0, the interval is cut there and marked."""
    import pandas as pd
    from types import SimpleNamespace
    head = {"campaign": "c", "experiment": "overlay", "datapath": "userspace", "size": 1024}
    rtt = pd.DataFrame([{**head, "profile": "baseline", "protocol": "none", "datapath": "none", "mean": 0.019,
                         "ci": 0.001, "n_boots": 3, "overhead": float("nan"), "overhead_ci": float("nan")},
                        {**head, "profile": "wireguard", "protocol": "wireguard", "mean": 2.602, "ci": 18.107,
                         "n_boots": 3, "overhead": 2.583, "overhead_ci": 18.107, "baseline_mean": 0.019}])
    ping = pd.DataFrame([{**head, "profile": p, "protocol": proto, "datapath": dp, "run": f"{p}{b}", "rtt_ms": v,
                          "dup": False} for p, proto, dp, means in (("baseline", "none", "none", (0.018, 0.019, 0.02)),
                                                                    ("wireguard", "wireguard", "userspace", (0.5, 0.8, 6.5)))
                         for b, m in enumerate(means) for v in (m * 0.9, m, m * 1.1)])
    fig = _fig2({"rtt": rtt}, tmp_path, monkeypatch, SimpleNamespace(ping=ping))
    ax1 = fig.axes[0]
    assert ax1.get_ylim()[0] == 0 and ax1.get_ylim()[1] <= 1.5 * (2.602 + 18.107)
    clipped = [ln for ln in ax1.get_lines() if ln.get_gid() == "clipped"]
    assert len(clipped) == 1 and clipped[0].get_ydata()[0] == 0
    assert "clipped at 0" in " ".join(t.get_text() for t in ax1.get_legend().get_texts())
    assert "n_boots = 3" in fig.get_suptitle()
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


def test_fig2_cuts_a_long_tail_and_writes_its_value(tmp_path, monkeypatch):
    """Issue 30 item 7: on a paper-sized namespace campaign the 99th-percentile whiskers (up to
    145 ms) flattened every mean (below 2 ms) into the axis. The axis is scaled to the means,
    boot means and quartiles; a whisker far above is cut there, marked, and its value written."""
    import numpy as np
    import pandas as pd
    from types import SimpleNamespace
    head = {"campaign": "c", "experiment": "overlay", "size": 64}
    rows, pings = [], []
    for p, proto, dp, centre in (("baseline", "none", "none", 0.03), ("wireguard", "wireguard", "userspace", 1.2)):
        values = np.full(1000, centre)
        values[-20:] = 145.0                   # 2 % of the pings in a long tail: the 99th percentile is 145 ms
        for b in range(5):
            pings += [{**head, "profile": p, "protocol": proto, "datapath": dp, "run": f"{p}{b}", "rtt_ms": v,
                       "dup": False} for v in values]
        mean = float(values.mean())
        rows.append({**head, "profile": p, "protocol": proto, "datapath": dp, "mean": mean, "ci": 0.01,
                     "n_boots": 5, "overhead": float("nan") if proto == "none" else mean - 2.93,
                     "overhead_ci": 0.02, "baseline_mean": 2.93})
    fig = _fig2({"rtt": pd.DataFrame(rows)}, tmp_path, monkeypatch, SimpleNamespace(ping=pd.DataFrame(pings)))
    ax1 = fig.axes[0]
    assert ax1.get_ylim()[1] < 10          # the means (3 to 4 ms with the tail) fill the axis, not 145 ms
    cut = [ln for ln in ax1.get_lines() if ln.get_gid() == "whisker-clipped"]
    assert len(cut) == 2 and all(ln.get_ydata()[0] < ax1.get_ylim()[1] for ln in cut)
    assert [t.get_text() for t in ax1.texts if t.get_text() == "145"] == ["145", "145"]
    assert "99th pct cut here" in " ".join(t.get_text() for t in ax1.get_legend().get_texts())
    plt.close(fig)
