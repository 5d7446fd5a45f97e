"""Every make target checks its parameters before it touches the host: one bad parameter per
target gives a usage error (the recipe exits 2) with one clear `error:` line, no traceback, and
no word about Docker or the doctor, on this host without a Docker engine. DRY_RUN=1 needs none of
the host's prerequisites, and a read-only RESULTS/STATE is one line too.

Targets without a parameter of their own are not walked: help, setup, host-tools, venv, lock,
test, test-e2e, test-ipsec, test-tls (their parameters go to pytest), open5gs-host-build,
datapath, channels, clean, lab-list."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_root, require_tools

# target, bad assignment, what the one error line says
CASES = [
    ("render", "PROFILE=nope", "unknown PROFILE 'nope'"),
    ("up", "PROFILE=nope", "unknown PROFILE 'nope'"),
    ("down", "PROFILE=nope", "unknown PROFILE 'nope'"),
    ("smoke", "PROFILE=nope", "unknown PROFILE 'nope'"),
    ("check-config", "PLANE=n9", "unknown plane(s) n9"),
    ("logs", "SERVICE=nope", "no service nope"),
    ("build", "IMAGES=nope", "unknown image 'nope'"),
    ("doctor", "DISK_FAIL_GIB=abc", "DISK_FAIL_GIB='abc'"),
    ("profiles", "PLANE=n9", "unknown plane(s) n9"),
    ("lab-up", "PROFILE=nope", "unknown PROFILE 'nope'"),
    ("lab-down", "LAB=bad!name", "lab name 'bad!name'"),
    ("run-n3", "SIZES=abc", "SIZES='abc'"),
    ("run-sbi", "ITERATIONS=0", "ITERATIONS='0'"),
    ("run-sbi-cold", "ATTACH_TIMEOUT=x", "ATTACH_TIMEOUT='x'"),
    ("run-sbi-warm", "WARM_GAP=x", "WARM_GAP='x'"),
    ("run-cpu", "UES=abc", "UES='abc'"),
    ("run-throughput", "TRANSPORTS=sctp", "TRANSPORTS='sctp'"),
    ("run-overlay", "PINGS=-1", "PINGS='-1'"),
    ("campaign", "EXPERIMENT=nope", "EXPERIMENT='nope'"),
    ("campaign-n3", "PROFILES=nope", "unknown PROFILE 'nope'"),
    ("campaign-sbi", "MODE=nope", "MODE='nope'"),
    ("campaign-overlay", "SEED=x", "SEED='x'"),
    ("experiment-params", "EXPERIMENT=nope", "EXPERIMENT='nope'"),
    ("bench-analysis", "BENCH_COPIES=x", "invalid int value: 'x'"),
    ("bench-crypto", "AESNI=maybe", "AESNI='maybe'"),
    ("run-secfn-lab", "RATES=abc", "abc"),
]


def make(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TESTBED_LOCK", "STACK_SLOT", "STATE_DIR",
                                                            "COMPOSE_PROJECT", "BRIDGE_PREFIX")}
    return subprocess.run(["make", "--no-print-directory", *args, f"STATE={tmp_path / 'state'}",
                           f"RESULTS={tmp_path / 'results'}"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180, check=False)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if re.search(r"error", line, re.I) and not re.match(r"make(\[\d+\])?: \*\*\*", line)]


@pytest.mark.parametrize("target,assignment,says", CASES, ids=[c[0] for c in CASES])
def test_a_bad_parameter_is_a_usage_error_before_the_host(tmp_path: Path, target: str, assignment: str,
                                                          says: str) -> None:
    res = make(tmp_path, target, assignment)
    assert res.returncode != 0, res.stdout[-500:]
    assert re.search(r"make(\[\d+\])?: \*\*\* \[.*\] Error 2$", res.stderr, re.M), \
        f"make {target} {assignment}: the recipe must exit 2 (usage error):\n{res.stderr[-1500:]}"
    lines = error_lines(res.stderr)
    assert len(lines) == 1 and says in lines[0], f"make {target} {assignment}: one clear line, got:\n{res.stderr}"
    assert "Traceback" not in res.stderr and "[FAIL]" not in res.stdout + res.stderr
    if target != "doctor":
        assert "docker" not in lines[0].lower() and "doctor" not in lines[0]


def test_dry_runs_need_none_of_the_hosts_prerequisites(tmp_path: Path) -> None:
    """On this host the doctor fails (no Docker engine, no SCTP); dry runs go through anyway."""
    for args in (["campaign-n3", "DRY_RUN=1"], ["run-n3", "DRY_RUN=1", "PROFILE=aes256gcm", "BOOTS=1", "SETS=1"],
                 ["up", "DRY_RUN=1", "PROFILE=wireguard"], ["run-sbi", "DRY_RUN=1", "ITERATIONS=1"]):
        res = make(tmp_path, *args)
        assert res.returncode == 0, f"make {' '.join(args)}:\n{res.stderr[-2000:]}"
        assert "[FAIL]" not in res.stdout + res.stderr


@pytest.mark.parametrize("target,extra,says", [
    ("run-overlay", ["PROFILE=baseline", "BOOTS=1", "SETS=1", "PINGS=3", "RESULTS={ro}"], "set RESULTS="),
    ("render", ["STATE={ro}/state"], "set STATE="),
    ("report", ["ANALYSIS_OUT={ro}/out"], "ANALYSIS_OUT="),
])
def test_a_read_only_directory_is_one_line(tmp_path: Path, target: str, extra: list[str], says: str) -> None:
    """A read-only RESULTS, STATE or ANALYSIS_OUT (a read-only tmpfs in a private mount namespace)."""
    require_root()
    require_tools("unshare", "mount", "make")
    ro = tmp_path / "ro"
    ro.mkdir()
    (tmp_path / "results" / "c").mkdir(parents=True)        # report: a results tree that exists
    args = " ".join(f"'{a.format(ro=ro)}'" for a in extra)
    script = (f"mount -t tmpfs -o ro tmpfs {ro} && exec make --no-print-directory {target} "
              f"STATE={tmp_path / 'state'} RESULTS={tmp_path / 'results'} {args}")
    res = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], cwd=ROOT,
                         capture_output=True, text=True, timeout=180, check=False)
    assert res.returncode != 0
    lines = error_lines(res.stderr)
    assert len(lines) == 1 and says in lines[0] and "Read-only" in lines[0] + res.stderr, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
