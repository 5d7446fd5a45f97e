"""CI's split by privilege and its skip rule (tests/skip_policy.py, .ci/run, .ci/allowed-skips.yaml):
real pytest sessions on a small suite written here, in one process and with xdist workers."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_tools
from tests.skip_policy import ROOT_REASON, load_allowed

SUITE = '''
import pytest

def test_plain():
    pass

def test_needs_root():
    pytest.skip("needs root (network namespaces): run `sudo make test`")

@pytest.mark.parametrize("n", [1, 2])
def test_root_param(n):
    pytest.skip("needs root (a namespace)")

def test_no_engine():
    pytest.skip("no Docker engine reachable (`docker info` failed)")

def test_missing_package():
    pytest.skip("missing iperf3: run `make setup`")
'''
ALLOWED = '''
- name: Docker engine
  match: "Docker engine"
  why: no engine in CI
'''


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "allowed.yaml").write_text(ALLOWED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.skip_policy", "-p", "no:cacheprovider",
                           "-q", "-rs", "--rootdir", str(tmp_path), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_user_run_lists_root_skips_and_fails_on_a_skip_not_allowed(tmp_path: Path, workers: list[str]) -> None:
    res = _pytest(tmp_path, *workers, "--allowed-skips=allowed.yaml", "--root-tests-out=root.txt")
    out = res.stdout
    assert res.returncode == 1, out + res.stderr
    assert (tmp_path / "root.txt").read_text().splitlines() == [
        "test_suite.py::test_needs_root", "test_suite.py::test_root_param[1]", "test_suite.py::test_root_param[2]"]
    violations = out.split("skips CI does not allow")[1]
    assert "test_suite.py::test_missing_package: missing iperf3" in violations
    assert "test_no_engine" not in violations and "test_needs_root" not in violations
    assert "1 skipped for a reason no entry of allowed.yaml matches" in violations


def test_allowed_skips_alone_pass(tmp_path: Path) -> None:
    res = _pytest(tmp_path, "--allowed-skips=allowed.yaml", "-k", "plain or engine", "--root-tests-out=root.txt")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 passed, 1 skipped" in res.stdout and (tmp_path / "root.txt").read_text() == ""


def test_a_root_skip_fails_where_no_root_run_follows(tmp_path: Path) -> None:
    """Without --root-tests-out (the root run) nothing runs a root skip later: it is not allowed."""
    res = _pytest(tmp_path, "--allowed-skips=allowed.yaml", "-k", "needs_root")
    assert res.returncode == 1 and "test_suite.py::test_needs_root: needs root" in res.stdout, res.stdout


def test_the_root_run_runs_exactly_the_listed_tests(tmp_path: Path) -> None:
    (tmp_path / "list.txt").write_text("test_suite.py::test_plain\ntest_suite.py::test_root_param[2]\n")
    chosen = _pytest(tmp_path, "--only-listed=list.txt", "--collect-only")
    assert chosen.stdout.splitlines()[:2] == ["test_suite.py::test_plain", "test_suite.py::test_root_param[2]"]
    assert "2/6 tests collected (4 deselected)" in chosen.stdout, chosen.stdout
    res = _pytest(tmp_path, "-n", "2", "--only-listed=list.txt")
    assert res.returncode == 0 and "1 passed, 1 skipped" in res.stdout, res.stdout + res.stderr


def test_a_listed_test_that_is_gone_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "list.txt").write_text("test_suite.py::test_renamed\n")
    res = _pytest(tmp_path, "--only-listed=list.txt")
    assert res.returncode == 4 and "test_suite.py::test_renamed" in res.stderr, res.stdout + res.stderr


def test_the_repository_allow_list_is_well_formed_and_never_allows_root() -> None:
    entries = load_allowed(ROOT / ".ci" / "allowed-skips.yaml")
    assert entries and len({e.name for e in entries}) == len(entries)
    for e in entries:
        assert not e.pattern.search(f"{ROOT_REASON} (network namespaces): run `sudo make test`"), e.name


# skip reasons as the suite gave them on CI's machine (the first inventory, issue 30 §5)
UNAVOIDABLE = [
    "needs a reachable Docker engine (`docker info` fails): the full stack only runs on a Docker host",
    "kernel without the macsec module (modprobe macsec): runs in the full-kernel guest",
    "kernel xfrm ESP datapath missing (this kernel has no ESP): the trap modes' kernel path",
    "no Open5GS build with src/nrf/open5gs-nrfd at /work/ext/open5gs-tls-build (set OPEN5GS_BUILD; ...)",
    "no Open5GS build: $OPEN5GS_BUILD not set, none at /work/ext/open5gs-tls-build, and no finished build at "
    "/var/cache/g5tb/open5gs-host-v2.7.7-00357cb0a5ab/build (no build-info.txt): "
    "`sudo make open5gs-host-build OPEN5GS_SRC=/path/to/open5gs-v2.7.7` (...)",
    "OAI_INSTALL not set (an OpenAirInterface install tree: bin/nr-softmodem, lib/*.so)",
    "strongSwan 5.9.8's kernel-libipsec sends no acquires (5.9.11 and later do): run with IPSEC_ROOT=...",
]
AVOIDABLE = [
    "missing iperf3: run `make setup`",
    "no rosenpass program for the Rosenpass keys: `make rosenpass`, then on PATH",
    "no sid root (ipsec/pq-root.env): `make pq-roots` (scripts/suite-root.sh ipsec/pq-root.env, root + Debian mirror)",
    "cannot build against libconfig (install libconfig-dev): fatal error: libconfig.h",
    "missing shellcheck: run `make setup`",
    # make host-tools installs them (issue 30 §2): run as root in CI, no longer allowed to skip
    "suricata not found: `sudo make host-tools` installs it (sudo apt-get install suricata)",
    "missing nghttpd, curl: `sudo make host-tools` installs them",
    # .ci/run builds Compose v2 (make compose-plugin)
    "`docker compose` (Compose v2 plugin) missing (make compose-plugin): cannot run `docker compose config` here",
]


def test_the_allow_list_names_what_ci_cannot_have_and_nothing_it_can() -> None:
    entries = load_allowed(ROOT / ".ci" / "allowed-skips.yaml")
    for reason in UNAVOIDABLE:
        assert any(e.pattern.search(reason) for e in entries), reason
    for reason in AVOIDABLE:
        assert not [e.name for e in entries if e.pattern.search(reason)], reason


def test_ci_scripts_shellcheck_clean() -> None:
    require_tools("shellcheck")
    res = subprocess.run(["shellcheck", ".ci/run", "scripts/test-as-user.sh", "scripts/compose-plugin.sh"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout


def test_files_that_share_the_default_state_share_one_worker() -> None:
    """tests/scheduling.py: the files that run drivers with the default STATE (one lock) are one
    xdist scope; every other file is its own."""
    from tests.scheduling import DEFAULT_STATE, SHARES_DEFAULT_STATE, scope_of
    for path in SHARES_DEFAULT_STATE:
        assert (ROOT / path).is_file(), f"{path} is gone: update tests/scheduling.py"
        assert scope_of(f"{path}::test_x[a]") == DEFAULT_STATE
    assert scope_of("tests/test_static.py::test_ruff") == "tests/test_static.py"
