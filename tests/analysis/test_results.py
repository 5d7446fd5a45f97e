"""analysis/results.py and analysis/datasets.py on the results tree built from real data."""
from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.results import discover, load_run


def test_discovery_flags_invalid_and_interrupted_runs(fixture_tree):
    runs = discover(fixture_tree.root)
    assert len(runs) == 17
    left_out = {r.run_id: r.problems for r in runs if not r.usable}
    assert set(left_out) == {"20261121T230000Z-invalid0", "20261121T230000Z-interrupted0"}
    assert "invalid" in left_out["20261121T230000Z-invalid0"][0]
    assert "interrupted" in left_out["20261121T230000Z-interrupted0"][0]
    # a campaign folder or a single run folder works as RESULTS too
    assert len(discover(fixture_tree.root / "fixture" / "n3")) == 8
    one = next(r for r in runs if r.profile == "baseline" and r.experiment == "sbi")
    assert [r.run_id for r in discover(one.directory)] == [one.run_id]


def test_a_left_out_run_is_warned_about_once_however_often_the_tree_is_read(tmp_path, caplog):
    d = tmp_path / "c" / "n3" / "baseline" / "r1"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"experiment": "n3", "profile": "baseline", "protocol": "none",
                                                  "state": "failed", "valid": None}))
    with caplog.at_level("WARNING", logger="analysis.results"):
        for _ in range(3):  # the report reads the tree once per table
            assert not discover(tmp_path)[0].usable
    warned = [m for m in caplog.messages if "left out of the statistics" in m]
    assert len(warned) == 1 and str(d) in warned[0]


def test_missing_raw_file_and_bad_manifest_are_problems(tmp_path):
    d = tmp_path / "c" / "n3" / "baseline" / "r1"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"experiment": "n3", "profile": "baseline", "protocol": "none",
                                                  "state": "complete", "valid": True,
                                                  "files": [{"path": "ping-64-1.txt", "kind": "ping"}]}))
    assert load_run(d).problems == ["missing raw file(s): ping-64-1.txt"]
    (d / "manifest.json").write_text("{not json")
    assert load_run(d).problems[0].startswith("unreadable manifest")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        discover(tmp_path / "nope")


def test_ping_dataset_leaves_out_warmup_and_unusable_runs(fixture_tree, fixture_datasets):
    p = fixture_datasets.ping
    assert set(p["profile"]) == {"baseline", "aes128gcm", "wireguard"}
    assert not (p["rtt_ms"] == 50.0).any()                  # warm-up pings
    assert not p["rtt_ms"].isin([99.0, 77.0]).any()         # invalid / interrupted runs
    base = p[(p["profile"] == "baseline") & (p["size"] == 64) & ~p["lost"]]
    assert np.allclose(np.sort(base["rtt_ms"].to_numpy()), np.sort(fixture_tree.expected["baseline_64_values"]))
    assert int(p["lost"].sum()) == 2 * fixture_tree.expected["lost"]   # both sizes of the first set
    assert set(p.loc[p["profile"] == "wireguard", "datapath"]) == {"kernel", "userspace"}


def test_attach_dataset_roles_and_failures(fixture_datasets):
    a = fixture_datasets.attach
    done = a[a["status"] == "complete"]
    assert len(done) == 26
    assert done.groupby(["profile", "role"]).size().to_dict() == {
        ("aes128gcm-psk-trap", "cold"): 3, ("aes128gcm-psk-trap", "warm"): 3,
        ("baseline", "cold"): 5, ("baseline", "warm"): 5, ("tls13-aes256gcm", "cold"): 5, ("tls13-aes256gcm", "warm"): 5}
    assert sorted(a.loc[a["status"] != "complete", "status"]) == ["failed: timeout", "missing_registration_request"]
    assert f"{done['attach_ms'].min():.1f}" == "95.7" and f"{done['attach_ms'].max():.1f}" == "132.3"


def test_roles_from_the_suci_msin_of_real_registrations(shared, tmp_path):
    """No role on the capture (as run-sbi writes it): the Registration Request's MSIN picks the UE."""
    import shutil
    from tests.conftest import require_tools
    require_tools("tshark")
    d = tmp_path / "c" / "sbi" / "baseline" / "r1"
    d.mkdir(parents=True)
    shutil.copy(shared / "rwth-internal-ran-security" / "f1c-socat-overhead" / "0.pcap", d / "it01-n2.pcap")
    shutil.copy(shared / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap", d / "it02-n2.pcap")
    manifest = {"experiment": "sbi", "profile": "baseline", "protocol": "none", "state": "complete", "valid": True,
                "ues": [{"name": "ue1", "imsi": "001010000000001", "role": "cold", "iteration": 1},
                        {"name": "ue2", "imsi": "999701234567891", "role": "warm", "iteration": 2}],
                "files": [{"path": f"it0{i}-n2.pcap", "kind": "pcap", "iface": "n2", "purpose": "timing",
                           "iteration": i} for i in (1, 2)]}
    (d / "manifest.json").write_text(json.dumps(manifest))
    from analysis.datasets import attach
    frame = attach(discover(tmp_path)).set_index("file")
    assert frame.loc["it01-n2.pcap", "role"] == "cold" and frame.loc["it01-n2.pcap", "msin"] == "0000000001"
    assert frame.loc["it02-n2.pcap", "role"] == "warm"
    assert f"{frame.loc['it02-n2.pcap', 'attach_ms']:.6f}" == "731.136847"


def test_a_cipher_benchmark_in_the_same_tree_as_stack_runs(tmp_path):
    # found on the guest's results: `make bench-crypto` writes into RESULTS like every driver, and
    # `make report` then died on its manifest (datapath "cpu", a string, not an object)
    import shutil
    import subprocess
    import sys

    from analysis.report import build
    from analysis.results import discover
    from tests.conftest import ROOT
    root = tmp_path / "results"
    shutil.copytree(ROOT / "tests" / "data" / "vm-results-n2n4", root)
    subprocess.run([sys.executable, "-m", "testbed", "bench-crypto", "--results", str(root), "--schemes",
                    "aes128gcm16", "--sizes", "64", "--repeats", "2", "--min-time", "0.001",
                    "--aesni", "on", "--speed-seconds", "0"], cwd=ROOT, check=True, capture_output=True)
    runs = {r.experiment: r for r in discover(root)}
    assert runs["crypto"].datapath == "cpu" and not runs["crypto"].notes
    assert runs["sbi"].usable and runs["sbi"].datapath == "kernel"
    out = tmp_path / "out"
    build(root, out)
    text = (out / "report.md").read_text()
    assert "crypto" in text.lower() and "n2" in text


def test_wire_bytes_leave_out_the_endpoints_plaintext_view(tmp_path):
    # the guest's N2+N4 IPsec run: n2.pcap and n4.pcap are the wire (ESP), it01-n2-gnb.pcap the
    # gNB's plaintext view for the attach timing: no wire bytes, no handshake row of its own
    import shutil

    from analysis import wire_bytes
    from tests.conftest import ROOT, require_tools
    require_tools("tshark")
    root = tmp_path / "results"
    shutil.copytree(ROOT / "tests" / "data" / "vm-results-n2n4", root)
    frame = wire_bytes.results_table(root)
    assert sorted(frame["capture"]) == ["it01-n2.pcap", "it01-n4.pcap"]
    assert (frame["handshake_packets"] > 0).all()


@pytest.mark.parametrize("protocol,facts,label", [
    ("tls", {}, "none"), ("none", {}, "none"), ("ipsec", {"ipsec": "kernel"}, "kernel"),
    ("wireguard", {"wireguard": "wireguard-go"}, "userspace"), ("ipsec", {}, "kernel"),
])
def test_a_tls_run_has_no_datapath_not_a_kernel_one(tmp_path, protocol, facts, label):
    """sbi-ops over a TLS run's directory labelled its rows `kernel` (issue 30 item 6): the manifest
    of an overlay without a kernel/userspace choice records `userspace: false` alone. The label
    comes from the datapath object the driver writes (testbed/manifest.py datapath_for)."""
    from testbed.manifest import datapath_for
    d = tmp_path / "c" / "sbi" / protocol / "r1"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({
        "experiment": "sbi", "profile": "baseline" if protocol == "none" else f"a-{protocol}-profile",
        "protocol": protocol, "state": "complete", "valid": True, "files": [],
        "datapath": datapath_for(protocol, facts)}))
    run = load_run(d)
    assert run.datapath == label and run.provenance()["datapath"] == label
    assert "datapath not recorded" not in run.notes
