"""The security-function analysis (analysis/secfn.py) on constructed run directories."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from analysis import secfn
from testbed.secfn import run as secfn_run


def _run(root: Path, function: str, engine: str | None, rows: list[dict], valid: bool = True) -> Path:
    d = root / "c" / "secfn" / f"{function}-{engine or 'none'}" / f"r{len(list(root.rglob('manifest.json')))}"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({
        "experiment": "secfn", "state": "complete", "valid": valid,
        "validity": {"details": "ok" if valid else "NAT not proven"},
        "secfn": {"function": function, "engine": engine}}))
    with (d / "ditg.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=secfn_run.FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, 0) for k in secfn_run.FIELDS})
    return d


def _flow(rate: float, run: int, received: int, sent: int, delay_s: float, kbps: float) -> dict:
    return {"protocol": "udp", "rate": rate, "run": run, "packets": received, "sent_packets": sent,
            "sent_rate": sent, "packet_rate": received, "delay_avg_s": delay_s, "jitter_avg_s": delay_s / 2,
            "bitrate_kbps": kbps, "dropped": sent - received, "seen_source": "10.100.6.7"}


def test_table_knee_and_dropped_runs(tmp_path: Path) -> None:
    _run(tmp_path, "nat", None, [_flow(100, i, 100, 100, 0.001, 400) for i in range(3)]
         + [_flow(1000, i, 1000, 1000, 0.002, 4000) for i in range(3)])
    _run(tmp_path, "ips-nat", "suricata", [_flow(100, i, 100, 100, 0.002, 400) for i in range(3)]
         + [_flow(1000, i, 800 + i, 1000, 0.010, 3200) for i in range(3)])
    _run(tmp_path, "ids-nat", "suricata", [_flow(100, 0, 1, 1, 1, 1)], valid=False)
    use, drop = secfn.runs(tmp_path)
    assert len(use) == 2 and len(drop) == 1 and "NAT not proven" in drop[0][1]
    tab = secfn.table(secfn.load(use))
    ips = tab[(tab["config"] == "ips-nat/suricata") & (tab["rate"] == 1000)].iloc[0]
    assert ips["n_runs"] == 3
    assert ips["loss_pct"] == pytest.approx(100 * (200 + 199 + 198) / 3000)   # mean of per-run losses
    assert ips["delay_ms"] == pytest.approx(10.0)
    k = secfn.knees(tab).set_index("config")
    assert k.loc["ips-nat/suricata", "knee_rate"] == 1000 and k["knee_rate"].isna()["nat"]
    out = tmp_path / "out"
    path = secfn.write_report(tmp_path, out)
    assert path is not None and (out / "fig_secfn.png").stat().st_size > 0
    text = path.read_text()
    assert "1 run(s) left out" in text and "Beside the seed's findings" in text


def test_no_runs_no_section(tmp_path: Path) -> None:
    assert secfn.write_report(tmp_path, tmp_path / "out") is None
