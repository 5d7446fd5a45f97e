"""The security-function analysis (analysis/secfn.py) on constructed run directories: per-run
means, intervals over runs, knees, the four figures, the seed's findings, runs left out."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from analysis import secfn
from testbed.secfn import collect


def _run(root: Path, function: str, engine: str | None, rows: list[dict], valid: bool = True,
         profile: str = "baseline", experiment: str = "secfn-lab") -> Path:
    unit = f"{function}-{engine or 'none'}"
    d = root / "c" / experiment / f"{profile}.{unit}" / f"r{len(list(root.rglob('manifest.json')))}"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({
        "experiment": experiment, "profile": profile, "state": "complete", "valid": valid,
        "validity": {"details": "ok" if valid else "NAT not proven"},
        "secfn": {"function": function, "engine": engine, "unit": unit,
                  "form": "namespaces" if experiment == "secfn-lab" else "stack"}}))
    with (d / "ditg.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=collect.FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, 0) for k in collect.FIELDS})
    return d


def _flow(rate: float, run: int, received: int, sent: int, delay_s: float, kbps: float, proto: str = "udp") -> dict:
    return {"protocol": proto, "rate": rate, "run": run, "packets": received, "sent_packets": sent,
            "sent_rate": sent, "packet_rate": received, "delay_avg_s": delay_s, "jitter_avg_s": delay_s / 2,
            "bitrate_kbps": kbps, "dropped": sent - received, "seen_source": "10.100.6.7"}


def _sweep(delays: tuple[float, float, float], lost: tuple[int, int, int] = (0, 0, 0)) -> list[dict]:
    rows = []
    for (rate, d, loss) in zip((100, 1000, 4000), delays, lost):
        rows += [_flow(rate, i, rate - loss - i, rate, d, 4 * (rate - loss)) for i in range(3)]
    return rows


def test_table_knee_figures_findings_and_dropped_runs(tmp_path: Path) -> None:
    _run(tmp_path, "nat", None, _sweep((0.001, 0.001, 0.0012)))
    _run(tmp_path, "ids-nat", "suricata", _sweep((0.001, 0.0011, 0.0013)))
    _run(tmp_path, "ips-nat", "suricata", _sweep((0.002, 0.004, 0.030), (0, 50, 1500)))
    _run(tmp_path, "ips-nat", "suricata", _sweep((0.003, 0.005, 0.040)), profile="aes128gcm")
    _run(tmp_path, "ips-nat", "snort", _sweep((0.002, 0.004, 0.030)), experiment="secfn")   # the stack form
    _run(tmp_path, "ids-nat", "suricata", [_flow(100, 0, 1, 1, 1, 1)], valid=False)
    use, drop = secfn.runs(tmp_path)
    assert len(use) == 5 and len(drop) == 1 and "NAT not proven" in drop[0][1]
    tab = secfn.table(secfn.load(use))
    ips = tab[(tab["series"] == "ips-nat/suricata") & (tab["rate"] == 1000)].iloc[0]
    assert ips["n_runs"] == 3 and ips["form"] == "namespaces"
    assert ips["loss_pct"] == pytest.approx(100 * (50 + 51 + 52) / 3000)      # mean of per-run losses
    assert ips["delay_ms"] == pytest.approx(4.0)
    assert set(tab["series"]) >= {"ips-nat/suricata + aes128gcm", "nat", "ips-nat/snort"}
    assert set(tab.loc[tab["series"] == "ips-nat/snort", "form"]) == {"stack"}        # never pooled
    k = secfn.knees(tab).set_index(["form", "series", "protocol"])
    assert k.loc[("namespaces", "ips-nat/suricata", "udp"), "knee_rate"] == 4000
    assert k["knee_rate"].isna()[("namespaces", "nat", "udp")]
    found = {(f, w): v for f, w, _, v in secfn.findings(tab)}
    assert found[("IDS-NAT ~ NAT", "namespaces, suricata")] == "agrees"
    assert found[("IPS-NAT loses throughput", "namespaces, suricata")] == "agrees"
    assert found[("IPS-NAT drops more", "namespaces, suricata")] == "agrees"
    assert found[("UDP latency non-linear", "namespaces, suricata")] == "agrees"
    out = tmp_path / "out"
    path = secfn.write_report(tmp_path, out)
    assert path is not None
    for metric in ("throughput", "delay", "jitter", "loss"):
        assert (out / f"fig_secfn_{metric}.png").stat().st_size > 0
        assert (out / f"fig_secfn_{metric}_stack.png").stat().st_size > 0
    text = path.read_text()
    assert "1 run(s) left out" in text and "Beside the seed's findings" in text


def test_no_runs_no_section(tmp_path: Path) -> None:
    assert secfn.write_report(tmp_path, tmp_path / "out") is None


def test_the_report_includes_the_section(tmp_path: Path) -> None:
    import pandas as pd

    from analysis.datasets import Datasets
    from analysis.report_sections import extra_sections
    from analysis.results import discover
    res, out = tmp_path / "results", tmp_path / "out"
    res.mkdir()
    ds = Datasets.load(discover(res))
    assert not any(s.startswith("## UPF security functions") for s in extra_sections(res, out, pd.DataFrame(), ds))
    _run(res, "nat", None, _sweep((0.001, 0.001, 0.0012)))
    ds = Datasets.load(discover(res))
    sections = [s for s in extra_sections(res, out, pd.DataFrame(), ds) if s.startswith("## UPF security functions")]
    assert len(sections) == 1 and "figures/fig_secfn_delay.png" in sections[0]
    assert (out / "figures" / "fig_secfn_delay.png").stat().st_size > 0
