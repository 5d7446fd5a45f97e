"""The analysis on real run directories: `make run-overlay` (namespaces, real WireGuard and
ping, real capture) for the baseline and WireGuard, then `make figures` and `make report` on
that results folder, checked for content."""
from __future__ import annotations

import json
import sys
import os
import secrets
import struct
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT, require_root, require_tools

pytestmark = pytest.mark.netns

SMALL = {"SETS": "2", "PINGS": "20", "INTERVAL": "0.01", "WARMUP": "3", "SIZES": "64 1024", "CAMPAIGN": "analysis",
         "BOOTS": "1"}


def _make(target: str, results: Path, out: Path | None = None, timeout: float = 300, **extra: str):
    env = {k: v for k, v in os.environ.items() if k not in ("PROFILE", "RESULTS", *SMALL)}
    env.update({"RESULTS": str(results), **extra})
    args = ["make", "--no-print-directory", target, f"RESULTS={results}"]
    if out is not None:
        args.append(f"ANALYSIS_OUT={out}")
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def overlay_results(tmp_path_factory) -> Path:
    require_root()
    require_tools("ip", "tshark", "dumpcap", "ping", "wg")
    results = tmp_path_factory.mktemp("overlay-results")
    for profile in ("baseline", "wireguard"):
        proc = _make("run-overlay", results, **SMALL, PROFILE=profile, LAB_NAME=f"analysis-{secrets.token_hex(3)}")
        if proc.returncode != 0 and profile == "wireguard" and "wireguard-go" in proc.stderr + proc.stdout:
            pytest.skip(f"WireGuard overlay could not start here: {proc.stderr[-300:]}")
        assert proc.returncode == 0, f"run-overlay {profile} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return results


def test_make_figures_and_report_on_run_overlay_output(overlay_results, tmp_path):
    out = tmp_path / "analysis"
    proc = _make("figures", overlay_results, out)
    assert proc.returncode == 0, proc.stderr
    assert "fig2-n3-rtt: " in proc.stdout and "fig3-attach-time: no data (skipped)" in proc.stdout
    png = out / "figures" / "fig2-n3-rtt.png"
    w, h = struct.unpack(">II", png.read_bytes()[16:24])
    assert w > 800 and h > 500

    proc = _make("report", overlay_results, out)
    assert proc.returncode == 0, proc.stderr
    text = (out / "report.md").read_text()
    assert "2 runs found, **2 used**" in text
    assert "![fig2-n3-rtt](figures/fig2-n3-rtt.png)" in text
    rtt = pd.read_csv(out / "tables" / "rtt.csv")
    assert set(rtt["experiment"]) == {"overlay"}
    assert sorted(zip(rtt["profile"], rtt["size"])) == [("baseline", 64), ("baseline", 1024),
                                                         ("wireguard", 64), ("wireguard", 1024)]
    assert (rtt["n_samples"] + rtt["lost"] == 2 * 20).all()   # SETS x PINGS; warm-up left out
    assert (rtt["n_boots"] == 1).all() and rtt["ci"].isna().all()   # one boot: no interval over boots
    wg = rtt[rtt["profile"] == "wireguard"].iloc[0]
    assert wg["datapath"] in ("kernel", "userspace") and wg["overhead"] == pytest.approx(wg["mean"] - wg["baseline_mean"])
    head = pd.read_csv(out / "tables" / "headline.csv")
    # two namespaces are not the paper's 5G stack: never set beside its N3 figure
    assert (head["experiment"].fillna("") != "overlay").all()
    row = head[head["result"] == "n3-wireguard-64"].iloc[0]
    assert row["paper"] == "260 us" and row["profiles"] == "not measured"
    runs = pd.read_csv(out / "tables" / "runs.csv")
    assert set(runs["state"]) == {"complete"} and runs["valid"].all()
    assert runs["commit"].notna().all()


def test_ping_stats_cli_agrees_with_the_report(overlay_results):
    run = next((overlay_results / "analysis" / "overlay" / "baseline").iterdir())
    manifest = json.loads((run / "manifest.json").read_text())
    files = [str(run / f["path"]) for f in manifest["files"]
             if f["kind"] == "ping" and not f["warmup"] and f["size"] == 64]
    proc = subprocess.run([sys.executable, "-m", "analysis", "ping-stats", *files], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    stats = json.loads(proc.stdout)
    assert set(stats) >= {"n", "mean_ms", "sd_ms", "ci99_halfwidth_ms"}
    values = [float(line.split("time=")[1].split()[0]) for f in files for line in Path(f).read_text().splitlines()
              if "time=" in line]
    assert stats["n"] == len(values) and stats["mean_ms"] == pytest.approx(sum(values) / len(values))


def test_wire_bytes_on_run_overlay_output(overlay_results, tmp_path):
    """The WireGuard run's packets are exactly the analytic overhead above the baseline's."""
    out = tmp_path / "wb"
    proc = subprocess.run([sys.executable, "-m", "analysis", "wire-bytes",
                           str(overlay_results), "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out / "wire-bytes.csv")
    wg = table[table["protocol"] == "wireguard"].iloc[0]
    assert len(str(wg["inner_lengths"]).split()) == 2           # the two ICMP sizes
    assert str(wg["overhead_measured"]) == str(wg["overhead_analytic"]), wg.to_dict()
    assert "Bytes on the wire" in (out / "wire-bytes.md").read_text()
