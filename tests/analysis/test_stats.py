"""analysis/stats.py against scipy's own t-test machinery, on real RWTH values."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from analysis.parse.rwth_txt import parse_rwth
from analysis.stats import add_overhead, permutation_test, summarize, summarize_groups, welch_diff


@pytest.fixture(scope="module")
def f1u(shared):
    d = shared / "rwth-internal-ran-security" / "f1u-ping"
    return (parse_rwth(d / "noenc_2025-08-20-T02-45-02.txt").values["value"].to_numpy(),
            parse_rwth(d / "ipsec_2025-08-20-T04-03-31.txt").values["value"].to_numpy())


def test_summary_matches_scipy_t_interval(f1u):
    base, _ = f1u
    s = summarize(base)
    lo, hi = st.t.interval(0.99, len(base) - 1, loc=base.mean(), scale=st.sem(base))
    assert s.n == 20000
    assert s.ci_halfwidth == pytest.approx((hi - lo) / 2, rel=1e-12)
    assert s.sd == pytest.approx(np.std(base, ddof=1))


def test_welch_difference_matches_scipy(f1u):
    base, ipsec = f1u
    d, h, dof = welch_diff(len(ipsec), ipsec.mean(), ipsec.std(ddof=1), len(base), base.mean(), base.std(ddof=1))
    ci = st.ttest_ind(ipsec, base, equal_var=False).confidence_interval(0.99)
    assert d == pytest.approx(ipsec.mean() - base.mean())
    assert d - h == pytest.approx(ci.low, rel=1e-9)
    assert d + h == pytest.approx(ci.high, rel=1e-9)
    assert f"{d:.3f}" == "0.356"      # 11.626 - 11.270 as printed by the authors


def test_grouped_summary_and_overhead_table(f1u):
    base, ipsec = f1u
    frame = pd.DataFrame({"protocol": ["none"] * len(base) + ["ipsec"] * len(ipsec),
                          "size": 1024, "rtt": np.concatenate([base, ipsec])})
    table = summarize_groups(frame, ["protocol", "size"], "rtt")
    table = add_overhead(table, table["protocol"] == "none", ["size"])
    row = table.set_index("protocol").loc["ipsec"]
    assert row["overhead"] == pytest.approx(ipsec.mean() - base.mean())
    assert row["overhead_pct"] == pytest.approx(100 * (ipsec.mean() / base.mean() - 1))
    assert np.isnan(table.set_index("protocol").loc["none", "overhead"])


def test_empty_and_single_samples_do_not_crash():
    assert summarize([]).n == 0 and np.isnan(summarize([]).mean)
    one = summarize([1.0, float("nan")])
    assert one.n == 1 and one.mean == 1.0 and np.isnan(one.ci_halfwidth)


def test_permutation_test_separates_real_difference_from_none(f1u):
    base, ipsec = f1u
    assert permutation_test(base[:2000], ipsec[:2000], 500, seed=1) < 0.01
    assert permutation_test(base[:2000], base[2000:4000], 500, seed=1) > 0.01
    assert permutation_test(base[:100], base[100:200], 200, seed=3) == permutation_test(base[:100], base[100:200], 200, seed=3)


def test_intervals_over_boots_with_known_boot_effects() -> None:
    """5 boots whose means differ by a boot effect (sd 1 ms) far larger than the in-boot noise
    (sd 0.05 ms), 2,000 samples each: the interval over boots is t(4) x sd(boot means)/sqrt(5),
    tens of times the pooled one that treats 10,000 samples as independent."""
    import pandas as pd
    from scipy import stats as st

    from analysis.stats import summarize_boots

    rng = np.random.default_rng(7)
    offsets = rng.normal(0, 1.0, 5)
    rows = [{"profile": "p", "boot": b, "rtt": 10 + offsets[b] + e}
            for b in range(5) for e in rng.normal(0, 0.05, 2000)]
    frame = pd.DataFrame(rows)
    out = summarize_boots(frame, ["profile"], "rtt", "boot").iloc[0]
    means = frame.groupby("boot")["rtt"].mean().to_numpy()
    assert out["n_boots"] == out["n"] == 5 and out["n_samples"] == 10_000
    assert out["mean"] == pytest.approx(means.mean())
    assert out["sd"] == pytest.approx(means.std(ddof=1))
    assert out["ci"] == pytest.approx(st.t.ppf(0.995, 4) * means.std(ddof=1) / np.sqrt(5))
    pooled = frame["rtt"].to_numpy()
    assert out["pooled_ci"] == pytest.approx(st.t.ppf(0.995, 9999) * pooled.std(ddof=1) / 100)
    assert out["ci"] > 20 * out["pooled_ci"]


def test_one_boot_has_no_interval_over_boots() -> None:
    import pandas as pd

    from analysis.stats import summarize_boots
    frame = pd.DataFrame({"g": ["a"] * 4, "boot": ["r1"] * 4, "v": [1.0, 2.0, 3.0, 4.0]})
    out = summarize_boots(frame, ["g"], "v", "boot").iloc[0]
    assert out["n_boots"] == 1 and np.isnan(out["ci"]) and out["pooled_ci"] > 0


def test_welch_overhead_combines_both_sides_against_a_hand_calculation() -> None:
    from analysis.stats import welch_diff
    d, h, dof = welch_diff(5, 12.0, 0.8, 4, 10.0, 0.5)
    v1, v0 = 0.8 ** 2 / 5, 0.5 ** 2 / 4
    hand_dof = (v1 + v0) ** 2 / (v1 ** 2 / 4 + v0 ** 2 / 3)
    assert d == 2.0 and dof == pytest.approx(hand_dof)
    from scipy import stats as st
    assert h == pytest.approx(st.t.ppf(0.995, hand_dof) * np.sqrt(v1 + v0))


def test_runs_measured_differently_are_never_pooled() -> None:
    """A baseline pinged with INTERVAL=0 beside one with INTERVAL=0.01 (once pooled into one row,
    moving a 64 B overhead from 246 to 251 us unflagged): separate rows, and a profile's
    overhead is taken against the baseline measured like it."""
    import pandas as pd

    from analysis.datasets import Datasets
    from analysis.tables import rtt
    rows = []
    for run, profile, protocol, interval, base in (("b1", "baseline", "none", 0.01, 1.0),
                                                  ("b2", "baseline", "none", 0.0, 0.5),
                                                  ("w1", "wireguard", "wireguard", 0.01, 1.3)):
        for i in range(50):
            rows.append({"campaign": "c", "experiment": "overlay", "profile": profile, "protocol": protocol,
                         "plane": "n3", "datapath": "kernel", "run": run, "host": "h", "interval": interval,
                         "count": 50, "mode": None, "auth": None, "version": None, "cipher": None, "cert": None,
                         "size": 64, "rtt_ms": base + 0.001 * i, "lost": False, "dup": False})
    t = rtt(Datasets(runs=[], ping=pd.DataFrame(rows)))
    base = t[t["profile"] == "baseline"]
    assert len(base) == 2 and sorted(base["interval"].astype(float)) == [0.0, 0.01]
    wg = t[t["profile"] == "wireguard"].iloc[0]
    assert wg["baseline_mean"] == pytest.approx(1.0245) and wg["overhead"] == pytest.approx(0.3)


@pytest.mark.parametrize("column, values", [("sets", (2, 5)), ("cpu", ("CPU A", "CPU B")), ("count", (2000, 200))])
def test_baselines_differing_in_sets_cpu_model_or_count_are_separate_rows(column: str, values: tuple) -> None:
    """Two baselines measured with different sets per size, on different CPU models, or with
    different pings per set: two rows with their own boot statistics, never one pooled row."""
    import pandas as pd

    from analysis.datasets import Datasets
    from analysis.tables import rtt
    rows = []
    for run, value, base in (("b1", values[0], 1.0), ("b2", values[1], 2.0)):
        for i in range(20):
            row = {"campaign": "c", "experiment": "n3", "profile": "baseline", "protocol": "none", "plane": "n3",
                   "datapath": "none", "run": run, "host": "h", "cpu": "CPU A", "interval": 0.2, "count": 2000,
                   "sets": 2, "size": 64, "rtt_ms": base + 0.01 * i, "lost": False, "dup": False}
            row[column] = value
            rows.append(row)
    t = rtt(Datasets(runs=[], ping=pd.DataFrame(rows)))
    assert len(t) == 2 and sorted(t[column].tolist()) == sorted(values)
    assert sorted(t["mean"].round(3)) == [1.095, 2.095] and (t["n_boots"] == 1).all()
    assert t["ci"].isna().all()   # one boot each: no interval over boots
