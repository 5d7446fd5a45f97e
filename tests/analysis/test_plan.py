"""How many boots (analysis/plan.py, `python -m analysis plan`; issue 22 point 10)."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from analysis import plan
from tests.conftest import ROOT


def _half(a_p: float, a_0: float, b: int) -> float:
    """The 99 % Welch half-width with b boots a side, written out independently."""
    v1, v0 = a_p / b, a_0 / b
    dof = (v1 + v0) ** 2 / (v1 ** 2 / (b - 1) + v0 ** 2 / (b - 1))
    return float(st.t.ppf(0.995, dof) * math.sqrt(v1 + v0))


@pytest.mark.parametrize("a_p,a_0,h", [(4.0, 1.0, 1.0), (1.0, 1.0, 0.1), (0.01, 2.0, 0.5), (9.0, 0.0, 3.0)])
def test_the_boots_are_the_fewest_whose_interval_is_narrow_enough(a_p: float, a_0: float, h: float) -> None:
    b = plan.boots_needed(a_p, a_0, h)
    assert b is not None and b >= 2
    assert _half(a_p, a_0, b) <= h
    assert b == 2 or _half(a_p, a_0, b - 1) > h


def test_no_plan_without_a_variance_or_beyond_the_cap() -> None:
    assert plan.boots_needed(float("nan"), 1.0, 1.0) is None
    assert plan.boots_needed(1e6, 1e6, 1e-3) is None


class _DS:
    """A Datasets stand-in holding only the ping samples (plan reads ds.ping and ds.runs)."""
    def __init__(self, ping: pd.DataFrame) -> None:
        self.ping, self.attach, self.runs = ping, pd.DataFrame(), []


def test_the_nested_components_are_recovered() -> None:
    """Simulated two-level data with known between-boot (sd 0.2 ms) and within-boot (sd 1 ms)
    spread: the estimates come back within sampling error."""
    rng = np.random.default_rng(7)
    rows = []
    for profile, protocol, mu in (("baseline", "none", 1.0), ("p", "ipsec", 1.05)):
        for b in range(400):
            boot = mu + rng.normal(0, 0.2)
            for v in boot + rng.normal(0, 1.0, 50):
                rows.append({"campaign": "c", "experiment": "n3", "profile": profile, "protocol": protocol,
                             "datapath": "kernel" if protocol != "none" else "none", "size": 64,
                             "run": f"{profile}{b}", "rtt_ms": v, "dup": False})
    comp = plan.components(_DS(pd.DataFrame(rows)), plan.RTT).set_index("profile")
    assert comp.loc["p", "s2_within"] == pytest.approx(1.0, rel=0.05)
    assert comp.loc["p", "s2_between"] == pytest.approx(0.04, rel=0.3)
    assert comp.loc["p", "n_boots"] == 400 and comp.loc["p", "m"] == 50


def test_plan_on_the_real_pilot(fixture_datasets) -> None:
    """The fixture's real N3 pings (RWTH F1-U data, two boots of aes128gcm and of the baseline):
    the plan's variances are the boots' own, and its boots give the asked interval."""
    detail = plan.plan(fixture_datasets, plan.RTT, 0.010)
    row = detail[(detail["profile"] == "aes128gcm") & (detail["size"] == 64)].iloc[0]
    ping = fixture_datasets.ping
    ping = ping[(ping["experiment"] == "n3") & (ping["size"] == 64) & ~ping["dup"].astype(bool)
                & np.isfinite(ping["rtt_ms"].astype(float))]

    def a(profile: str) -> float:
        g = ping[ping["profile"] == profile].groupby("run")["rtt_ms"]
        n, means, var = g.count(), g.mean(), g.var(ddof=1)
        within = ((n - 1) * var).sum() / (n - 1).sum()
        between = max(0.0, means.var(ddof=1) - within / n.mean())
        return between + within / n.mean()

    assert row["n_boots"] == 2 and row["baseline_n_boots"] == 2
    b = int(row["boots_needed"])
    assert _half(a("aes128gcm"), a("baseline"), b) <= 0.010 < _half(a("aes128gcm"), a("baseline"), b - 1)
    # one boot (the fixture's wireguard): no between-boot variance, no plan, and the output says so
    wg = detail[detail["profile"] == "wireguard"]
    assert len(wg) and wg["boots_needed"].isna().all()


def test_plan_command(fixture_tree, tmp_path) -> None:
    res = subprocess.run([sys.executable, "-m", "analysis", "plan", str(fixture_tree.root), "--resolve-us", "10",
                          "--resolve-ms", "5", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stderr
    assert "## rtt: 99 % interval of +-10 us on the RTT overhead" in res.stdout
    assert "## attach: 99 % interval of +-5 ms" in res.stdout
    assert "not planned (a side has one boot" in res.stdout and "campaign time" in res.stdout
    profiles = pd.read_csv(tmp_path / "plan-rtt.csv").set_index("profile")
    # the baseline runs as many boots as its most demanding comparison
    assert profiles.loc["baseline", "boots_needed"] == profiles.loc["aes128gcm", "boots_needed"]
    assert profiles.loc["aes128gcm", "campaign_h"] == pytest.approx(
        profiles.loc["aes128gcm", "boots_needed"] * profiles.loc["aes128gcm", "s_per_boot"] / 3600)
    bad = subprocess.run([sys.executable, "-m", "analysis", "plan", str(fixture_tree.root)], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "--resolve-us" in bad.stderr and "Traceback" not in bad.stderr
