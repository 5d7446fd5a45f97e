"""ipsec/entrypoint.sh as a program: usage, exit codes, error messages, shellcheck.
(Its real work, charon in namespaces, is tested in tests/integration/test_ipsec_netns.py.)"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from testbed import ROOT

ENTRYPOINT = ROOT / "ipsec" / "entrypoint.sh"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ENTRYPOINT), *args], capture_output=True, text=True, timeout=30)


def test_help_exits_0_and_names_the_contract() -> None:
    res = _run("--help")
    assert res.returncode == 0
    assert "CONFIG_DIR" in res.stdout and "datapath: ipsec=kernel|libipsec" in res.stdout


@pytest.mark.parametrize("args", [[], ["--bogus", "x"], ["--datapath", "fast", "x"], ["a", "b"], ["--timeout"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    res = _run(*args)
    assert res.returncode == 2, res.stderr
    assert "usage:" in res.stderr or "must be" in res.stderr or "one CONFIG_DIR" in res.stderr


def test_missing_or_incomplete_config_dir_exits_1_with_next_step(tmp_path: Path) -> None:
    res = _run(str(tmp_path / "absent"))
    assert res.returncode == 1 and "does not exist" in res.stderr and "render" in res.stderr
    (tmp_path / "overlay.env").write_text("NODE=gnb\n")
    res = _run(str(tmp_path))
    assert res.returncode == 1 and "swanctl.conf missing" in res.stderr


def test_shellcheck_clean() -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("missing shellcheck: run `make setup`")
    res = subprocess.run(["shellcheck", str(ENTRYPOINT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout
