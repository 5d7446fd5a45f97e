"""Issue 30 item 7: an unchanged report is known from its inputs' stamps before pandas, SciPy and
matplotlib are imported (analysis/stamps.py); a figure is drawn again only when its data change
(analysis/figures.py data_key); content hashes are kept by size and modification time
(analysis/cache.py stamped_digest). On a copy of the fixture tree's real N3 runs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import cache, figures, stamps
from analysis.cli import main
from analysis.tables import all_tables
from tests.analysis import results_tree


def test_digest_is_kept_by_size_and_modification_time(tmp_path: Path) -> None:
    f = tmp_path / "capture.pcap"
    f.write_bytes(b"a" * 4096)
    first = cache.stamped_digest(f, tmp_path / "cache")
    st = f.stat()
    # the same size and time stamp: the kept digest, the bytes not read again (a new process)
    f.write_bytes(b"b" * 4096)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    cache._digest.cache_clear()
    assert cache.stamped_digest(f, tmp_path / "cache") == first
    # a rewritten file (another time stamp) is read again
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert cache.stamped_digest(f, tmp_path / "cache") != first
    assert cache.stamped_digest(f, None) == cache.stamped_digest(f, tmp_path / "cache")


@pytest.fixture
def n3_tree(fixture_tree: results_tree.Tree, tmp_path: Path) -> Path:
    """The fixture tree's N3 ping runs (real RWTH RTTs), copied: the test changes them."""
    root = tmp_path / "results"
    shutil.copytree(fixture_tree.root / "fixture" / "n3", root / "fixture" / "n3")
    return root


def _report(results: Path, out: Path, command: str = "report") -> str:
    """`python -m analysis report` (or `figures`) in a new process; what it prints, then whether
    pandas was imported."""
    code = ("import sys; from analysis.cli import main; rc = main([sys.argv[3], sys.argv[1], '--out', sys.argv[2]]); "
            "print('pandas' in sys.modules); sys.exit(rc)")
    res = subprocess.run([sys.executable, "-c", code, str(results), str(out), command], capture_output=True,
                         text=True, check=True)
    return res.stdout


def test_unchanged_report_is_known_before_the_heavy_imports(n3_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["report", str(n3_tree), "--out", str(out)]) == 0
    report = out / "report.md"
    written = report.stat().st_mtime_ns
    assert _report(n3_tree, out).splitlines() == [str(report), "False"]
    assert report.stat().st_mtime_ns == written
    # an input changed (one ping line fewer in a run's file): built again, with pandas
    ping = next(n3_tree.rglob("ping-64-1.txt"))
    lines = ping.read_text().splitlines()
    ping.write_text("\n".join(lines[:2] + lines[3:]) + "\n")
    assert _report(n3_tree, out).splitlines() == [str(report), "True"]
    assert report.stat().st_mtime_ns != written
    # an output removed: built again
    (out / "tables" / "rtt.csv").unlink()
    assert _report(n3_tree, out).splitlines()[-1] == "True"
    assert (out / "tables" / "rtt.csv").is_file()
    # an option changed: built again
    key = stamps.key("report", n3_tree, out, {"permutations": 0})
    assert key != stamps.key("report", n3_tree, out, {"permutations": 100})
    assert stamps.up_to_date("report", out, key)
    # make figures: the same, what it drew listed again
    first = _report(n3_tree, out, "figures").splitlines()
    assert first[-1] == "True" and any(line.startswith("fig2-n3-rtt: ") for line in first)
    assert _report(n3_tree, out, "figures").splitlines() == first[:-1] + ["False"]


def test_a_figure_is_drawn_again_only_when_its_data_change(fixture_datasets, tmp_path: Path) -> None:
    tables = all_tables(fixture_datasets)
    drawn = figures.draw_all(tables, tmp_path, ["fig2-n3-rtt", "fig3-attach-time"], fixture_datasets)
    png = {n: [p for p in ps if p.suffix == ".png"][0] for n, ps in drawn.items()}
    before = {n: p.stat().st_mtime_ns for n, p in png.items()}
    again = figures.draw_all(tables, tmp_path, ["fig2-n3-rtt", "fig3-attach-time"], fixture_datasets)
    assert again == drawn and {n: p.stat().st_mtime_ns for n, p in png.items()} == before
    # other RTT means: figure 2 is drawn again, figure 3 (attach times) is not
    changed = {**tables, "rtt": tables["rtt"].assign(mean=tables["rtt"]["mean"] * 1.01)}
    figures.draw_all(changed, tmp_path, ["fig2-n3-rtt", "fig3-attach-time"], fixture_datasets)
    assert png["fig2-n3-rtt"].stat().st_mtime_ns != before["fig2-n3-rtt"]
    assert png["fig3-attach-time"].stat().st_mtime_ns == before["fig3-attach-time"]
    # a figure file removed: drawn again
    png["fig3-attach-time"].unlink()
    figures.draw_all(changed, tmp_path, ["fig3-attach-time"], fixture_datasets)
    assert png["fig3-attach-time"].is_file()
