"""testbed/manifest.py: run directories, atomic manifest updates, schema, immutability."""
from __future__ import annotations

import json
import sys
import os
import subprocess
from pathlib import Path

import pytest

from testbed import manifest
from tests.conftest import ROOT

FACTS = {"ipsec": "libipsec", "wireguard": "wireguard-go"}   # no namespace probes in unit tests


def _create(results: Path, profile: str = "aes256gcm", experiment: str = "overlay", **params: str) -> Path:
    return manifest.create(results, experiment, profile, params, datapath_facts=FACTS)


def test_create_writes_a_running_manifest_that_matches_the_schema(tmp_path: Path) -> None:
    run = _create(tmp_path, SETS="3", CAMPAIGN="c1", SLOT="overlay.aes256gcm.r01")
    assert run.parent == tmp_path / "c1" / "overlay" / "aes256gcm"
    assert manifest.RUN_ID.match(run.name)
    m = manifest.load(run)
    assert manifest.validate(m) == []
    assert m["state"] == "running" and m["finished"] is None and m["valid"] is None
    assert m["slot"] == "overlay.aes256gcm.r01" and m["campaign"] == "c1"
    assert m["parameters"]["sets"] == 3 and m["parameters"]["sizes"] == [64, 1024]
    assert m["profile_params"]["esp_proposal"] == "aes256gcm16"
    assert m["datapath"] == {"ipsec": "libipsec", "userspace": True}
    assert set(m["host"]) == {"kernel", "cpu_model", "aes_ni", "hostname", "nproc", "governor", "turbo", "smt",
                              "cpus_allowed"}
    assert m["versions"]["testbed_commit"] is None or len(m["versions"]["testbed_commit"]) == 40
    # the namespace micro-benchmark runs no 5G stack: it claims no Open5GS/UERANSIM version
    assert m["versions"]["open5gs"] is None and m["versions"]["ueransim"] is None
    assert m["versions"]["programs_from"] == "host"
    n3 = manifest.load(_create(tmp_path, experiment="n3", CAMPAIGN="c2"))
    # a stack run's versions come from inside its images (none here: null), beside the pins
    assert n3["versions"]["open5gs_pinned"] == "v2.7.7" and n3["versions"]["programs_from"] == "images"
    assert n3["versions"]["open5gs"] is None and n3["versions"]["strongswan"] is None


def test_stack_versions_are_read_from_inside_the_images(monkeypatch: pytest.MonkeyPatch) -> None:
    contents = {
        "o:1": {"image": "open5gs", "open5gs_version": "2.7.7", "open5gs_commit": "318eeb49", "libssl3": "3.0.17-1~deb12u3",
                "libcurl3-gnutls": "8.14.1-2~bpo12+1"},
        "u:1": {"image": "ueransim", "ueransim_version": "v3.2.7", "iperf3": "3.12-1+deb12u2", "iputils-ping": "3:20221126-1"},
        "t:1": {"image": "tools", "strongswan-charon": "5.9.8-5+deb12u6", "wireguard-tools": "1.0.20210914-1+b1",
                "wireguard-go": "0.0.20220316-1+b4", "tshark": "4.0.17-0+deb12u3"},
    }
    monkeypatch.setattr(manifest, "image_facts", lambda refs: {
        r: {"id": "sha256:" + "0" * 64, "version": None, "contents": contents.get(r)} for r in refs})
    v = manifest.versions(["o:1", "u:1", "t:1", "mongo:6.0"], stack_run=True)
    assert (v["open5gs"], v["open5gs_commit"], v["openssl"], v["libcurl"]) == \
        ("2.7.7", "318eeb49", "3.0.17-1~deb12u3", "8.14.1-2~bpo12+1")
    assert (v["ueransim"], v["iperf3"], v["ping"]) == ("v3.2.7", "3.12-1+deb12u2", "3:20221126-1")
    assert (v["strongswan"], v["wireguard_tools"], v["wireguard_go"], v["image_tshark"]) == \
        ("5.9.8-5+deb12u6", "1.0.20210914-1+b1", "0.0.20220316-1+b4", "4.0.17-0+deb12u3")
    assert v["tshark"] == manifest.tool_versions()["tshark"], "the judge is the host's tshark"
    assert set(manifest.IMAGE_VERSIONS) <= set(v)


def test_the_compiled_strongswan_and_rosenpass_of_the_tools_image_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """images/tools/Dockerfile compiles strongSwan (with its ml plugin) and rosenpass and writes
    strongswan=, strongswan_plugins= and rosenpass= into its contents file."""
    tools = {"image": "tools", "strongswan": "6.0.6", "strongswan_plugins": "kernel-libipsec ml openssl vici",
             "rosenpass": "0.2.3", "wireguard-tools": "1.0.20210914-1+b1"}
    monkeypatch.setattr(manifest, "image_facts", lambda refs: {
        r: {"id": "sha256:" + "0" * 64, "version": None, "contents": tools} for r in refs})
    v = manifest.versions(["t:1"], stack_run=True)
    assert (v["strongswan"], v["strongswan_plugins"], v["rosenpass"]) == \
        ("6.0.6", "kernel-libipsec ml openssl vici", "0.2.3")


def test_baseline_has_no_datapath_choice(tmp_path: Path) -> None:
    m = manifest.load(manifest.create(tmp_path, "n3", "baseline", {}))
    assert m["datapath"] == {"userspace": False}


def test_run_ids_are_unique(tmp_path: Path) -> None:
    runs = {_create(tmp_path).name for _ in range(20)}
    assert len(runs) == 20


def test_add_file_records_kind_attributes_and_size(tmp_path: Path) -> None:
    run = _create(tmp_path)
    (run / "ping-s64-set01.txt").write_text("PING ...\n")
    manifest.add_file(run, "ping-s64-set01.txt", "ping", {"size": 64, "set": 1, "warmup": False})
    f = manifest.load(run)["files"][0]
    assert f == {"path": "ping-s64-set01.txt", "kind": "ping", "size": 64, "set": 1, "warmup": False, "bytes": 9}
    with pytest.raises(manifest.ManifestError, match="already recorded"):
        manifest.add_file(run, "ping-s64-set01.txt", "ping", {"size": 64, "set": 1, "warmup": False})
    with pytest.raises(manifest.ManifestError, match="no such file"):
        manifest.add_file(run, "missing.txt", "log", {})
    with pytest.raises(manifest.ManifestError, match="inside"):
        manifest.add_file(run, "../outside.txt", "log", {})
    with pytest.raises(manifest.ManifestError, match="unknown file kind"):
        manifest.add_file(run, "ping-s64-set01.txt", "csv", {})


def test_finished_runs_are_never_modified(tmp_path: Path) -> None:
    run = _create(tmp_path)
    manifest.add_command(run, "ping -c 1 10.100.3.7")
    m = manifest.finish(run, "complete")
    assert m["state"] == "complete" and m["finished"]
    assert manifest.validate(manifest.load(run)) == []
    before = (run / "manifest.json").read_bytes()
    for change in (lambda: manifest.add_command(run, "x"), lambda: manifest.finish(run, "failed"),
                   lambda: manifest.add_ue(run, {"name": "ue1", "imsi": "001010000000001", "role": "cold"})):
        with pytest.raises(manifest.ManifestError, match="never modified"):
            change()
    assert (run / "manifest.json").read_bytes() == before
    with pytest.raises(manifest.ManifestError, match="end state"):
        manifest.finish(_create(tmp_path), "running")


def test_writes_are_atomic_and_leave_no_temporary_file(tmp_path: Path) -> None:
    run = _create(tmp_path)
    for i in range(5):
        manifest.add_command(run, f"step {i}")
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json"]
    assert manifest.load(run)["commands"] == [f"step {i}" for i in range(5)]


def test_schema_rejects_what_the_analysis_could_not_read(tmp_path: Path) -> None:
    m = manifest.load(_create(tmp_path))
    bad = json.loads(json.dumps(m))
    bad["state"] = "done"
    bad["files"] = [{"path": "x.txt", "kind": "ping", "bytes": 1}]          # no size/set/warmup
    bad["datapath"]["ipsec"] = "userspace"
    errors = "\n".join(manifest.validate(bad))
    assert "state" in errors and "files/0" in errors and "datapath/ipsec" in errors
    finished_without_time = dict(m, state="complete")
    assert any("finished" in e for e in manifest.validate(finished_without_time))


def test_mark_stale_finishes_runs_of_dead_drivers_only(tmp_path: Path) -> None:
    alive = manifest.create(tmp_path, "overlay", "baseline", {}, driver_pid=os.getpid())
    assert manifest.mark_stale(alive) is False
    proc = subprocess.Popen(["true"])
    proc.wait()
    dead = manifest.create(tmp_path, "overlay", "baseline", {}, driver_pid=proc.pid)
    assert manifest.mark_stale(dead) is True
    m = manifest.load(dead)
    assert m["state"] == "incomplete" and "campaign resume" in m["reason"]
    assert manifest.validate(m) == []


def test_add_unlisted_logs(tmp_path: Path) -> None:
    run = _create(tmp_path)
    (run / "lab-up.log").write_text("up\n")
    (run / "ping.txt").write_text("x\n")
    manifest.add_file(run, "ping.txt", "ping", {"size": 64, "set": 1, "warmup": False})
    assert manifest.add_unlisted_logs(run) == ["lab-up.log"]
    assert manifest.add_unlisted_logs(run) == []


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "testbed", "manifest", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)


def test_cli_lifecycle(tmp_path: Path) -> None:
    res = _cli("create", str(tmp_path), "--experiment", "n3", "--profile", "baseline", "--param", "SETS=2")
    assert res.returncode == 0, res.stderr
    run = Path(res.stdout.strip())
    (run / "a.pcap").write_bytes(b"x")
    assert _cli("add-file", str(run), "--path", "a.pcap", "--kind", "pcap",
                "--attr", "iface=n3", "--attr", "purpose=validation").returncode == 0
    assert _cli("add-ue", str(run), "--attr", "name=ue1", "--attr", "imsi=001010000000001",
                "--attr", "role=cold", "--attr", "iteration=1").returncode == 0
    assert _cli("add-failure", str(run), "--attr", "ue=ue2", "--attr", "attempt=1",
                "--attr", "reason=no PDU session within 30s").returncode == 0
    assert _cli("get", str(run), "state").stdout.strip() == "running"
    assert _cli("finish", str(run), "--state", "interrupted", "--reason", "Ctrl-C").returncode == 0
    assert _cli("validate", str(run)).returncode == 0
    m = manifest.load(run)
    assert m["ues"] == [{"name": "ue1", "imsi": "001010000000001", "role": "cold", "iteration": 1}]
    assert m["attach_failures"][0]["reason"] == "no PDU session within 30s"
    assert (m["state"], m["reason"]) == ("interrupted", "Ctrl-C")


def test_cli_rejects_bad_parameters_before_creating_anything(tmp_path: Path) -> None:
    res = _cli("create", str(tmp_path), "--experiment", "sbi", "--profile", "nope", "--param", "ITERATIONS=0")
    assert res.returncode == 2
    assert "ITERATIONS='0'" in res.stderr and "unknown PROFILE 'nope'" in res.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("line", [
    "TShark (Wireshark) 4.4.19.",                                                   # Debian 13
    "TShark (Wireshark) 4.4.19 (Git v4.4.19 packaged as 4.4.19-1).",
])
def test_tshark_version_has_no_trailing_dot(line: str) -> None:
    assert manifest._version(manifest.TSHARK_VERSION, line) == "4.4.19"


def test_image_facts_fit_the_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    facts = {"id": "sha256:" + "1" * 64, "version": "1-abc", "repo_digests": [], "inputs": "abc",
             "base": "debian:bookworm-slim@sha256:" + "2" * 64, "source": None,
             "contents": {"image": "tools", "strongswan-charon": "5.9.8-5+deb12u6"}}
    monkeypatch.setattr(manifest, "image_facts", lambda refs: {r: dict(facts) for r in refs})
    run = manifest.create(tmp_path, "n3", "baseline", {}, images=["g5tb/tools:1-abc"])
    m = manifest.load(run)
    assert manifest.validate(m) == [] and m["versions"]["strongswan"] == "5.9.8-5+deb12u6"


def test_runs_on_other_planes_get_their_own_directory(tmp_path: Path) -> None:
    """run-sbi's PLANE: the SBI keeps the paths of earlier results, other plane sets are kept apart."""
    sbi = _create(tmp_path, "aes128gcm-psk", "sbi")
    assert sbi.parent == tmp_path / "adhoc" / "sbi" / "aes128gcm-psk" and manifest.load(sbi)["plane"] == "sbi"
    both = _create(tmp_path, "aes128gcm-psk", "sbi", PLANE="n4,n2")
    m = manifest.load(both)
    assert both.parent == tmp_path / "adhoc" / "sbi" / "aes128gcm-psk@n2+n4"
    assert m["plane"] == "n2,n4" and m["parameters"]["plane"] == "n2,n4" and manifest.validate(m) == []
    every = manifest.load(_create(tmp_path, "aes128gcm", "sbi", PLANE="all"))
    assert every["plane"] == "n3,sbi,n2,n4"
    with pytest.raises(Exception, match="cannot run on the n3 plane"):
        _create(tmp_path, "aes128gcm-psk", "sbi", PLANE="n3")


def test_every_protocol_of_the_catalogue_fits_the_schema(tmp_path: Path) -> None:
    # found in the guest: a DTLS run died at `manifest create` (protocol 'dtls' not in the schema)
    from testbed import profiles, registry
    run = _create(tmp_path, profile="dtls12-aes128gcm", experiment="sbi", PLANE="n2", NAS="nea2-nia2")
    m = manifest.load(run)
    assert manifest.validate(m) == [] and m["protocol"] == "dtls" and m["plane"] == "n2"
    # the protocols come from the registry, not from a list in the schema: a plug-in added to
    # testbed/registry.py is a valid protocol without a schema edit, anything else is refused
    schema = json.loads((ROOT / "testbed" / "schemas" / "manifest.schema.json").read_text())
    assert "enum" not in schema["properties"]["protocol"]
    assert {p.protocol for p in profiles.load().values()} <= set(registry.protocols())
    for protocol in registry.protocols():
        assert manifest.validate(dict(m, protocol=protocol)) == [], protocol
    errors = manifest.validate(dict(m, protocol="carrier-pigeon"))
    assert errors == [f"protocol: 'carrier-pigeon' is not one of {', '.join(registry.protocols())}"]
    assert any(e.startswith("protocol:") for e in manifest.validate(dict(m, protocol="Not A Name")))
