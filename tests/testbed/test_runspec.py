"""testbed/runspec.py: the full run spec (defaults filled), its validation, its round trip through a
manifest, and `python -m testbed spec`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import manifest, registry, runparams, runspec
from tests.conftest import ROOT

FACTS = {"ipsec": "libipsec", "wireguard": "wireguard-go"}   # no namespace probes in unit tests


@pytest.mark.parametrize("experiment", runparams.EXPERIMENTS)
def test_every_default_is_filled_in(experiment: str) -> None:
    profile = "baseline"
    spec = runspec.build(experiment, {}, profile, {})
    defaults = runparams.validate(experiment, {}, profile)
    assert spec.parameters == {k: v for k, v in defaults.items() if k != "profile"}
    assert set(spec.parameters) == {p.key for p in runparams.SPECS[experiment]}
    assert (spec.experiment, spec.profile, spec.plane) == (experiment, profile, runparams.plane_of(experiment, defaults))
    # every dimension plug-in, with every one of its variables: asked of the registry, none named here
    assert {d: set(v) for d, v in spec.dimensions.items()} == \
        {d.name: set(d.variables) for d in registry.dimensions()}
    assert (spec.ran is None) == (experiment in runspec.NO_STACK)


def test_the_environment_gives_ran_and_dimensions_of_a_stack_run_only() -> None:
    n3 = runspec.build("n3", {"SETS": "3"}, "aes256gcm", {"RAN": "ueransim", "SECFN": "nat", "NAS": "nea2-nia2"})
    assert (n3.ran, n3.dimensions["secfn"]["SECFN"], n3.dimensions["nas"]["NAS"]) == ("ueransim", "nat", "nea2-nia2")
    assert n3.parameters["sets"] == 3
    lab = runspec.build("overlay", {}, "aes256gcm", {"RAN": "oai", "NAS": "nea2-nia2"})
    assert lab.ran is None and lab.dimensions["nas"]["NAS"] == ""
    # a dimension variable that is the experiment's parameter: the parameter's value
    sbi = runspec.build("sbi", {"NAS": "nea1-nia1"}, "baseline", {"NAS": "nea2-nia2"})
    assert sbi.dimensions["nas"]["NAS"] == "nea1-nia1" and sbi.dimensions["keylog"]["KEYS"] == "0"


def test_round_trip_and_a_partial_spec_gets_its_defaults() -> None:
    spec = runspec.build("sbi", {"PLANE": "n2,n4", "ITERATIONS": "3"}, "aes256gcm", {"KEYS": "1"})
    assert runspec.from_dict(spec.to_dict()) == spec
    assert runspec.from_dict(json.loads(runspec.dump(spec, "json"))) == spec
    import yaml
    assert runspec.from_dict(yaml.safe_load(runspec.dump(spec))) == spec
    short = runspec.from_dict({"experiment": "overlay", "profile": "wireguard", "parameters": {"sets": 4}})
    assert short == runspec.build("overlay", {"SETS": "4"}, "wireguard", {})


@pytest.mark.parametrize("data, message", [
    ([1], "must be a mapping"),
    ({"experiment": "nope"}, "experiment: 'nope'"),
    ({"experiment": "overlay", "colour": "red"}, "unknown key(s) colour"),
    ({"experiment": "overlay", "parameters": {"pings_per_set": 3}}, "unknown pings_per_set"),
    ({"experiment": "overlay", "parameters": {"sets": 0}}, "SETS='0': out of range"),
    ({"experiment": "overlay", "profile": "nosuch"}, "unknown PROFILE 'nosuch'"),
    ({"experiment": "overlay", "plane": "sbi"}, "measures the n3 plane only"),
    ({"experiment": "overlay", "dimensions": {"colour": {}}}, "unknown dimension 'colour'"),
    ({"experiment": "n3", "dimensions": {"nas": {"NSA": "x"}}}, "unknown variable(s) NSA"),
    ({"experiment": "n3", "dimensions": {"nas": {"NAS": "nea9-nia9"}}}, "nea9-nia9"),
    ({"experiment": "n3", "ran": "nosuch"}, "unknown RAN 'nosuch'"),
    ({"experiment": "f1u", "ran": "oai"}, "SCOPE=f1u needs RAN=split"),
    ({"experiment": "overlay", "spec_version": 9}, "spec_version 9"),
])
def test_bad_specs_say_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(runspec.SpecError) as exc:
        runspec.from_dict(data)
    assert message in str(exc.value)


def test_spec_round_trips_through_a_manifest(tmp_path: Path) -> None:
    spec = runspec.build("overlay", {"SETS": "3", "CAMPAIGN": "c1"}, "aes256gcm", {})
    raw = {"SETS": "3", "CAMPAIGN": "c1"}
    run = manifest.create(tmp_path, "overlay", "aes256gcm", raw, datapath_facts=FACTS,
                          spec=json.loads(runspec.dump(spec, "json")), rerun_of="results/x/overlay/a/1")
    m = manifest.load(run)
    assert manifest.validate(m) == []
    assert m["spec"] == spec.to_dict()                      # verbatim
    assert runspec.from_manifest(m) == spec
    assert m["rerun_of"] == "results/x/overlay/a/1"
    # without a spec from the driver, create builds the same one from the parameters
    plain = manifest.load(manifest.create(tmp_path, "overlay", "aes256gcm", raw, datapath_facts=FACTS))
    assert plain["spec"] == m["spec"] and plain["rerun_of"] is None


def test_a_spec_that_is_not_the_runs_is_refused(tmp_path: Path) -> None:
    other = runspec.build("overlay", {"SETS": "4"}, "aes256gcm", {}).to_dict()
    with pytest.raises(manifest.ManifestError, match="not the spec of this run"):
        manifest.create(tmp_path, "overlay", "aes256gcm", {"SETS": "3"}, datapath_facts=FACTS, spec=other)
    with pytest.raises(runparams.ParamError, match="run spec"):
        manifest.create(tmp_path, "overlay", "aes256gcm", {}, datapath_facts=FACTS, spec={"experiment": "x"})
    assert list(tmp_path.rglob("manifest.json")) == []


def test_a_run_without_a_spec_says_so() -> None:
    with pytest.raises(runspec.SpecError, match="records no spec"):
        runspec.from_manifest({"experiment": "overlay"})


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "testbed", "spec", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)


def test_cli_prints_the_spec_and_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    res = _cli("overlay", "SETS=2", "--profile", "wireguard", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert runspec.from_dict(json.loads(res.stdout)) == runspec.build("overlay", {"SETS": "2"}, "wireguard", {})
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: overlay\nparameters: {sets: 0, pings: 0}\n")
    res = _cli("--file", str(bad))
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "SETS='0'" in res.stderr and "PINGS='0'" in res.stderr
    res = _cli("n3", "--file", str(bad))
    assert res.returncode == 2
