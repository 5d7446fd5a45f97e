"""testbed/runparams.py: defaults, types and limits, all errors at once, plane check."""
from __future__ import annotations

import re
import sys
import subprocess

import pytest

from testbed import runparams
from tests.conftest import ROOT


def test_defaults_are_the_papers() -> None:
    n3 = runparams.validate("n3", {}, "aes256gcm")
    # the paper's 20,000 pings per size as 5 independent boots x 2 sets x 2,000
    assert (n3["boots"], n3["sets"], n3["pings"], n3["sizes"]) == (5, 2, 2000, [64, 1024])
    assert n3["boots"] * n3["sets"] * n3["pings"] == 20_000
    sbi = runparams.validate("sbi", {}, "aes256gcm")
    assert (sbi["iterations"], sbi["mode"]) == (20, "both")
    assert runparams.validate("cpu", {}, "baseline")["ues"] == [1, 5, 10, 20]
    assert runparams.validate("throughput", {}, "wireguard")["transports"] == ["tcp", "udp"]


def test_empty_means_default_and_values_are_typed() -> None:
    p = runparams.validate("overlay", {"SIZES": "", "SETS": " 3 ", "INTERVAL": "0.5"})
    assert p["sizes"] == [64, 1024] and p["sets"] == 3 and p["interval"] == 0.5


@pytest.mark.parametrize("experiment, raw, message", [
    ("n3", {"SIZES": "64 big"}, "SIZES='64 big': must be whole numbers"),
    ("n3", {"SIZES": "8"}, "out of range (24..1380)"),
    ("n3", {"SIZES": "64 64"}, "repeats a value"),
    ("n3", {"INTERVAL": "fast"}, "INTERVAL='fast': must be a number"),
    ("sbi", {"ITERATIONS": "0"}, "ITERATIONS='0': out of range"),
    ("sbi", {"MODE": "hot"}, "must be one of cold, warm, both"),
    ("sbi", {"ATTACH_TIMEOUT": "100", "WARM_GAP": "30"}, "118 s"),
    ("cpu", {"UES": "1 65"}, "out of range (1..64)"),
    ("throughput", {"TRANSPORTS": "tcp sctp"}, "one or more of tcp, udp"),
    ("overlay", {"CAMPAIGN": "../x"}, "CAMPAIGN='../x'"),
    ("overlay", {"COLOUR": "red"}, "unknown parameter(s) COLOUR"),
])
def test_bad_values_are_named_with_the_valid_ones(experiment: str, raw: dict, message: str) -> None:
    with pytest.raises(runparams.ParamError, match=re.escape(message)):
        runparams.validate(experiment, raw)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(runparams.ParamError) as exc:
        runparams.validate("n3", {"SIZES": "x", "SETS": "0"}, "tls13-aes128gcm")
    text = str(exc.value)
    assert "SIZES=" in text and "SETS=" in text and "cannot run on the n3 plane" in text


def test_profile_must_fit_the_plane() -> None:
    runparams.validate("sbi", {}, "tls13-aes128gcm")
    runparams.validate("overlay", {}, "wireguard")
    with pytest.raises(runparams.ParamError, match="unknown PROFILE 'nope'.*baseline"):
        runparams.validate("overlay", {}, "nope")


def test_shell_output_round_trips() -> None:
    res = subprocess.run(["bash", "-c", f'eval "$(\'{sys.executable}\' -m testbed params n3 SIZES="64 512" --profile '
                          'aes128gcm)"; echo "$SIZES|$SETS|$PROFILE|$PROTOCOL|$PLANE"'],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.stdout.strip() == "64 512|2|aes128gcm|ipsec|n3", res.stderr


def test_cli_exit_2_with_every_error() -> None:
    res = subprocess.run([sys.executable, "-m", "testbed", "params", "sbi", "ITERATIONS=-1", "MODE=x",
                          "--profile", "nope"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 2
    assert res.stderr.count("error:") >= 3


@pytest.mark.parametrize("experiment, plane, message", [
    ("overlay", "xyz", "PLANE='xyz': unknown plane(s) xyz"),
    ("overlay", "sbi", "PLANE='sbi': the overlay experiment measures the n3 plane only"),
    ("n3", "n2,n4", "PLANE='n2,n4': the n3 experiment measures the n3 plane only"),
    ("cpu", "n3", "PLANE='n3': the cpu experiment measures the sbi plane only"),
])
def test_a_plane_given_to_an_experiment_without_planes_is_checked(experiment: str, plane: str,
                                                                   message: str) -> None:
    """`make run-overlay PLANE=xyz` ran 5 baseline boots: PLANE was ignored by every experiment
    without a PLANE parameter. Given (the environment, as Make exports it), it must name that
    experiment's own plane, or the parameters are refused before anything starts."""
    import os
    env = {**os.environ, "PLANE": plane}
    res = subprocess.run([sys.executable, "-m", "testbed", "params", experiment, "--from-env"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 2 and message in res.stderr, res.stderr
    ok = subprocess.run([sys.executable, "-m", "testbed", "params", experiment, "--from-env"], cwd=ROOT,
                        env={**env, "PLANE": runparams.PLANE[experiment]}, capture_output=True, text=True,
                        timeout=60, check=False)
    assert ok.returncode == 0, ok.stderr
    unset = subprocess.run([sys.executable, "-m", "testbed", "params", experiment, "--from-env"], cwd=ROOT,
                           env={**env, "PLANE": ""}, capture_output=True, text=True, timeout=60, check=False)
    assert unset.returncode == 0, unset.stderr


def test_make_run_overlay_refuses_a_wrong_plane_before_anything_starts(tmp_path) -> None:
    import os
    env = {k: v for k, v in os.environ.items() if k not in ("PLANE", "PROFILE", "DRY_RUN")}
    for target in ("run-overlay", "run-n3", "campaign-overlay", "run-throughput"):
        res = subprocess.run(["make", "--no-print-directory", target, "PLANE=xyz", "DRY_RUN=1",
                              f"RESULTS={tmp_path / 'results'}", f"STATE={tmp_path / 'state'}"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120, check=False)
        assert res.returncode != 0 and "PLANE='xyz'" in res.stderr, (target, res.stdout[-800:], res.stderr[-800:])
        assert "boot 1 of" not in res.stderr and "+ " not in res.stdout, target
    assert not (tmp_path / "results").exists()
