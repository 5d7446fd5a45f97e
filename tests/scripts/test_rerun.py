"""scripts/rerun.sh (make run SPEC=..., make rerun RUN=...) without running anything: a bad spec is
refused before anything starts, and (DRY_RUN=1) the driver runs what the spec says, the Docker
drivers included. The real rerun of a run-overlay run: tests/integration/test_run_overlay.py."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testbed import manifest, runspec
from tests.conftest import ROOT, require_tools

# the experiment variables a developer's shell may hold: a spec never takes them
STRAY = {"SETS": "99", "PINGS": "99", "PROFILE": "aes128cbc", "PLANE": "sbi", "BOOTS": "7"}


def _make(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DRY_RUN", "RESULTS")}
    env.update({"RESULTS": str(tmp_path / "results"), **STRAY, **extra})
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def _spec_file(tmp_path: Path, spec: runspec.RunSpec) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(runspec.dump(spec), encoding="utf-8")
    return path


@pytest.mark.parametrize("text, message", [
    ("experiment: overlay\nparameters: {sets: 0}\n", "SETS='0': out of range"),
    ("experiment: overlay\nprofile: nosuch\n", "unknown PROFILE 'nosuch'"),
    ("experiment: n3\ndimensions: {nas: {NAS: nea9-nia9}}\n", "nea9-nia9"),
    ("experiment: [overlay\n", "not YAML/JSON"),
])
def test_a_bad_spec_is_refused_before_anything_starts(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    res = _make(tmp_path, "run", f"SPEC={bad}")
    assert res.returncode == 2, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], res.stderr
    assert "run-" not in res.stderr and res.stdout == ""          # no driver started
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("args, message", [
    (("run",), "SPEC is empty"),
    (("run", "SPEC=/nonexistent.yaml"), "cannot read it"),
    (("rerun",), "RUN is empty"),
    (("rerun", "RUN=/nonexistent"), "no manifest.json there"),
])
def test_missing_inputs_are_usage_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    res = _make(tmp_path, *args)
    assert res.returncode == 2 and message in res.stderr, res.stderr


def test_a_spec_file_drives_the_overlay_driver(tmp_path: Path) -> None:
    spec = runspec.build("overlay", {"SETS": "3", "PINGS": "5", "BOOT": "2", "BOOTS": "4"}, "wireguard", {})
    res = _make(tmp_path, "run", f"SPEC={_spec_file(tmp_path, spec)}", DRY_RUN="1")
    assert res.returncode == 0, res.stderr
    plan = res.stdout
    assert "/overlay/wireguard/<run>/" in plan and "SETS=3 PINGS=5" in plan and "BOOT=2" in plan and "BOOTS=4" in plan
    assert "--profile wireguard" in plan                     # the spec's, not the shell's PROFILE
    assert plan.count("-c 5 ") == 6                          # 2 SIZES x 3 SETS of 5 pings
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("experiment, raw, profile, options, expect", [
    ("n3", {"SETS": "2", "PINGS": "7"}, "aes256gcm", {}, "SETS=2 PINGS=7"),
    ("sbi", {"ITERATIONS": "1", "MODE": "cold", "NAS": "nea2-nia2"}, "baseline", {}, "MODE=cold ITERATIONS=1"),
])
def test_a_spec_file_drives_the_docker_drivers_dry(tmp_path: Path, experiment: str, raw: dict[str, str],
                                                   profile: str, options: dict[str, str], expect: str) -> None:
    spec = runspec.build(experiment, raw, profile, options)
    res = _make(tmp_path, "run", f"SPEC={_spec_file(tmp_path, spec)}", DRY_RUN="1")
    assert res.returncode == 0, res.stderr
    assert f"/{experiment}/{profile}/<run>/" in res.stdout and expect in res.stdout, res.stdout


def test_rerun_of_a_recorded_run_runs_its_spec(tmp_path: Path) -> None:
    """The manifest's spec, not the shell's variables: the dry plan of a recorded run's rerun."""
    raw = {"SETS": "2", "PINGS": "6", "CAMPAIGN": "orig"}
    spec = runspec.build("overlay", raw, "aes256gcm", {})
    run = manifest.create(tmp_path / "first", "overlay", "aes256gcm", raw,
                          datapath_facts={"ipsec": "libipsec", "wireguard": "wireguard-go"},
                          spec=spec.to_dict())
    before = manifest.path_of(run).read_bytes()
    res = _make(tmp_path, "rerun", f"RUN={run}", DRY_RUN="1")
    assert res.returncode == 0, res.stderr
    assert "/orig/overlay/aes256gcm/<run>/" in res.stdout and "SETS=2 PINGS=6" in res.stdout, res.stdout
    assert manifest.path_of(run).read_bytes() == before          # the original is never touched


def test_make_spec_prints_what_make_run_takes(tmp_path: Path) -> None:
    res = _make(tmp_path, "spec", "EXPERIMENT=overlay", SETS="3", PROFILE="wireguard", PLANE="")
    assert res.returncode == 0, res.stderr
    path = tmp_path / "printed.yaml"
    path.write_text(res.stdout, encoding="utf-8")
    assert runspec.load(path) == runspec.build("overlay", {"SETS": "3", "PINGS": "99", "BOOTS": "7"}, "wireguard", {})


def test_rerun_script_is_shellcheck_clean_and_strict() -> None:
    require_tools("shellcheck")
    script = ROOT / "scripts" / "rerun.sh"
    res = subprocess.run(["shellcheck", "-x", str(script)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout
    assert os.access(script, os.X_OK) and "set -euo pipefail" in script.read_text(encoding="utf-8")
