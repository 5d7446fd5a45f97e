"""analysis/ran_authors.py on the authors' published files (tests/data/rwth-internal-ran-security):
every printed Results line to the printed digit (their z interval) beside our t ones, the one
file whose printed line does not follow from its values, DTLS printed as raw-minus-relay, boots
where the drivers say, their original folder names, and their relay-only captures."""
from __future__ import annotations

import math
import shutil

import pytest
from scipy import stats as st

from analysis import ran_authors as ra
from tests.conftest import require_tools

RW = "rwth-internal-ran-security"


@pytest.fixture(scope="module")
def files(shared):
    return ra.load(shared / RW)


@pytest.fixture(scope="module")
def ft(files):
    return ra.file_table(files).set_index("file")


def test_every_ran_result_file_is_found_and_classified(ft):
    kinds = ft["kind"].value_counts().to_dict()
    assert kinds == {"e1": 13, "f1c": 13, "f1u": 10, "f1u-iperf": 10, "e2e-split": 2, "e2e-oai": 2,
                     "e1-relay": 1, "f1c-relay": 1}
    assert ft.loc["e1-socat-overhead/res.txt", "setup"] == "relay"
    assert ft.loc["end-to-end/monolithic_no_security.txt", "ran"] == "oai"


def test_printed_lines_reproduced_to_the_digit_except_one(ft, files):
    bad = ft[~ft["printed_ok"]]
    assert list(bad.index) == ["e1-registration/ipsec_2025-07-30-T22-56-00.txt"]
    r = ft.loc["e1-registration/noenc_2025-07-16-T10-12-48.txt"]
    assert (r["printed"], f"{r['mean']:.3f}", f"{r['sd']:.3f}", f"{r['ci_z']:.3f}") == (
        "n=1000 mean=2.672 stdev=±0.335 99%conf=±0.027", "2.672", "0.335", "0.027")
    # the exception: its printed mean/sd/half-width are those of the values without the first line
    f = next(x for x in files if x.rel == bad.index[0])
    v = f.result.values["value"].to_numpy()[1:]
    z = st.norm.ppf(0.995)
    assert (f"{v.mean():.3f}", f"{v.std(ddof=1):.3f}", f"{z * v.std(ddof=1) / math.sqrt(v.size):.3f}") == (
        "2.844", "0.325", "0.026")
    assert "without the first one (999 values, while n=1000 is printed)" in ra.printed_from_subset(f)


def test_dtls_means_printed_as_raw_minus_relay(ft):
    r = ft.loc["e1-registration/dtls_2025-07-21-T21-20-02.txt"]
    assert r["printed"].startswith("n=1000 mean=3.438-0.458 ")
    assert (f"{r['mean']:.3f}", r["subtracted"], f"{r['mean_net']:.3f}") == ("3.438", 0.458, "2.980")
    r = ft.loc["f1c-registration/dtls_2025-08-17-T19-26-09.txt"]
    assert (r["n"], f"{r['mean']:.3f}", r["subtracted"]) == (844, "6.004", 0.982)
    # what they subtract is the difference of their printed, rounded means (relay-only - none);
    # the unrounded means give 0.459 and 0.981 ms
    for interface, sub, exact in (("e1", 0.458, "0.459"), ("f1c", 0.982, "0.981")):
        relay = ft[ft["kind"] == f"{interface}-relay"].iloc[0]
        base = ft[(ft["kind"] == interface) & (ft["setup"] == "noenc")].iloc[0]
        assert round(round(relay["mean"], 3) - round(base["mean"], 3), 3) == sub
        assert f"{relay['mean'] - base['mean']:.3f}" == exact


def test_intervals_over_boots_where_the_drivers_say(ft, files):
    ping = ft.loc["f1u-ping/noenc_2025-08-20-T02-45-02.txt"]
    assert ping["n_boots"] == 10 and ping["boots"].startswith("10 boots x 2000")
    f = next(x for x in files if x.rel == "f1u-ping/noenc_2025-08-20-T02-45-02.txt")
    means = f.result.values["value"].to_numpy().reshape(10, 2000).mean(axis=1)
    assert ping["ci_boots"] == pytest.approx(st.t.ppf(0.995, 9) * means.std(ddof=1) / math.sqrt(10))
    # one boot apart from the others: the interval over boots is 6x what 20,000 iid pings suggest
    odd = ft.loc["f1u-ping/ipsec_2025-08-20-T09-17-24.txt"]
    assert odd["ci_boots"] > 5 * odd["ci_z"]
    iperf = ft.loc["f1u-iperf/noenc_2025-08-29-T18-57-57.txt"]
    assert (f"{iperf['ci_z']:.3f}", f"{iperf['ci_boots']:.4f}", iperf["n_boots"]) == ("2.306", "4.1216", 5)
    reg = ft.loc["f1c-registration/noenc_2025-08-01-T15-49-41.txt"]
    assert reg["n_boots"] == 1 and math.isnan(reg["ci_boots"]) and reg["ci_t"] > reg["ci_z"]
    assert math.isnan(ft.loc["e1-socat-overhead/res.txt", "n_boots"])


def test_their_original_folder_names_are_recognised(shared, tmp_path):
    src = shared / RW
    tree = {"E1 UE Registration results/1000 repetitions/noenc_2025-07-16-T10-12-48.txt":
            "e1-registration/noenc_2025-07-16-T10-12-48.txt",
            "E1 UE Registration results/DTLS setup overhead/res.txt": "e1-socat-overhead/res.txt",
            "F1-C UE Registration results/1000 repetitions/noenc_2025-08-01-T15-49-41.txt":
            "f1c-registration/noenc_2025-08-01-T15-49-41.txt",
            "End-to-End results/Disaggragted (1024  Byte payload)/No Security.txt":
            "end-to-end/disaggregated_no_security.txt",
            "End-to-End results/Monolithic (1024 Byte payload)/No Security.txt": "end-to-end/monolithic_no_security.txt",
            "F1-U latency results/Internal RAN (1024 Byte payload)/noenc_2025-08-20-T02-45-02.txt":
            "f1u-ping/noenc_2025-08-20-T02-45-02.txt",
            "F1-U throughput results/5 sessions/noenc_2025-08-29-T18-57-57.txt":
            "f1u-iperf/noenc_2025-08-29-T18-57-57.txt", "README.md": None}
    for theirs, ours in tree.items():
        (tmp_path / "results" / theirs).parent.mkdir(parents=True, exist_ok=True)
        if ours:
            shutil.copy(src / ours, tmp_path / "results" / theirs)
    got = {f.kind for f in ra.load(tmp_path / "results")}
    assert got == {"e1", "e1-relay", "f1c", "e2e-split", "e2e-oai", "f1u", "f1u-iperf"}


def test_esp_keywords_map_to_our_profiles():
    assert [ra.esp_profile(k) for k in ("aes128gcm16", "aes128gcm128", "aes256gcm16", "aes128-sha2_256",
                                        "aes256-sha2_256", "null-sha2_256", "aes128gmac", "null-sha1")] == [
        "aes128gcm", "aes128gcm", "aes256gcm", "aes128cbc", "aes256cbc", "nullsha256", "nullgmac", ""]


def test_summary_overheads_and_net_rows(files, ft):
    s = ra.summary(files)
    f1c = s[(s["interface"] == "f1c") & (s["relay"] == "")]
    six = f1c[f1c["profile"].isin(["aes128gcm", "aes256gcm", "aes128cbc", "aes256cbc", "nullsha256", "nullgmac"])]
    base = ft[(ft["kind"] == "f1c") & (ft["setup"] == "noenc")].iloc[0]["mean"]
    assert 1000 * six["overhead"].mean() == pytest.approx(1000 * (six["mean"].mean() - base))
    assert f"{1000 * six['overhead'].mean():.1f}" == "120.3"       # the paper: ~120 us
    net = s[(s["interface"] == "e1") & (s["relay"] == "net")]
    relay = ft[ft["kind"] == "e1-relay"].iloc[0]["mean"]
    dtls = ft[(ft["kind"] == "e1") & (ft["setup"] == "dtls")]
    assert sorted(net["overhead"]) == pytest.approx(sorted(dtls["mean"] - relay))
    assert f"{1000 * net['overhead'].mean():.1f}" == "311.0"        # the paper: ~300 us
    assert set(s.loc[s["interface"] == "f1u", "overhead_basis"]) == {"boots", ""}
    assert set(s.loc[s["interface"] == "f1c", "overhead_basis"]) == {"samples", ""}


def test_relay_captures_reproduce_res_txt(files):
    require_tools("tshark")
    c = ra.relay_capture_check(files).set_index("interface")
    e1, f1c = c.loc["e1"], c.loc["f1c"]
    assert (e1["captures"], e1["with_time"], e1["below_cut"], e1["lines_compared"], e1["equal"]) == (30, 30, 30, 30, True)
    assert (f1c["captures"], f1c["with_time"], f1c["below_cut"], f1c["at_or_above_cut"], f1c["equal"]) == (
        20, 20, 9, 11, True)
    assert not e1["complete_match"] and e1["res_txt_lines"] == 928   # only 30 of their 1,000 captures here


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ra.load(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no RAN result files"):
        ra.load(tmp_path)
