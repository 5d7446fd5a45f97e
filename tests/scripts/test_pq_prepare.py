""".ci/pq-prepare (CI's preparation of the post-quantum tools and the installer tests' Debian roots): shellcheck-clean; with everything
already in its cache it makes nothing, times each step and leaves the paths the tests look for
(tests/integration/suite_roots.py); a step that fails is named with its log and does not fail CI."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_root, require_tools
from wireguard import rosenpass

SCRIPT = ROOT / ".ci" / "pq-prepare"
APT_NEEDS = ("debootstrap", "pkg-config", "cmake", "libclang-dev", "libsodium-dev", "cargo-web", "rustc-web")


def test_shellcheck_clean() -> None:
    require_tools("shellcheck")
    res = subprocess.run(["shellcheck", str(SCRIPT), str(ROOT / ".ci" / "run"), str(ROOT / "scripts" / "suite-root.sh")],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


def _installed(pkg: str) -> bool:
    res = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True, check=False)
    return "install ok installed" in res.stdout


def _cached(cache: Path) -> None:
    """A cache as a previous run leaves it: the four roots recorded complete, rosenpass installed."""
    for spec in ("ipsec/pq-root.env", "tls/pq-root.env", "tests/scripts/setup_roots/bookworm.env",
                 "tests/scripts/setup_roots/trixie.env"):
        res = subprocess.run(["bash", str(ROOT / "scripts" / "suite-root.sh"), "--path", spec], cwd=ROOT,
                             env={**os.environ, "G5TB_CACHE": str(cache)}, capture_output=True, text=True, check=False)
        root = Path(res.stdout.strip())
        assert res.returncode == 1 and root.parent == cache / "roots", res
        root.mkdir(parents=True)
        (root / ".g5tb-root").write_text("strongswan-charon=6.1.0-2\n")
    exe = cache / f"rosenpass-{rosenpass.ROSENPASS_VERSION}" / "bin" / "rosenpass"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


def _cached_here(tmp_path: Path) -> Path:
    """A cached machine's cache under tmp_path, where the script can run (root, its apt packages)."""
    require_root()
    require_tools("dpkg-query", "make")
    missing = [p for p in APT_NEEDS if not _installed(p)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: .ci/pq-prepare would install them (root, apt)")
    cache = tmp_path / "cache"
    _cached(cache)
    return cache


def test_a_cached_machine_makes_nothing_and_times_each_step(tmp_path: Path) -> None:
    cache = _cached_here(tmp_path)
    res = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env={**os.environ, "G5TB_CACHE": str(cache)},
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    times = (cache / "ci-prepare.times").read_text().splitlines()
    assert sorted(t.split()[1] for t in times) == ["root-bookworm:", "root-ipsec:", "root-tls:", "root-trixie:",
                                                   "rosenpass:"], times
    assert all(" exit 0, " in t for t in times), times
    assert "roots/strongswan-sid-" in (cache / "ci-prepare-root-ipsec.log").read_text()


def test_a_failing_step_is_named_and_ci_goes_on(tmp_path: Path) -> None:
    """No cargo on PATH: the rosenpass step fails, is named with its log, the exit is 0 (1 with PQ_REQUIRED=1)."""
    cache = _cached_here(tmp_path)
    (cache / f"rosenpass-{rosenpass.ROSENPASS_VERSION}" / "bin" / "rosenpass").unlink()
    # the system's programs without cargo (the script installs Debian's cargo-web, so /usr/bin has one)
    nocargo = tmp_path / "bin"
    nocargo.mkdir()
    for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for prog in Path(d).iterdir():
            if prog.name != "cargo" and not (nocargo / prog.name).exists():
                (nocargo / prog.name).symlink_to(prog)
    env = {**os.environ, "G5TB_CACHE": str(cache), "PATH": str(nocargo)}
    assert shutil.which("cargo", path=env["PATH"]) is None
    res = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and "pq-prepare: rosenpass failed" in res.stderr and "no cargo" in res.stderr, res.stderr
    res = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env={**env, "PQ_REQUIRED": "1"}, capture_output=True,
                         text=True, timeout=120, check=False)
    assert res.returncode == 1, res.stderr
