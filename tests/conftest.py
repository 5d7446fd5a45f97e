"""Shared pytest fixtures and skip helpers.

A test that needs something absent skips with a reason naming what is missing; the same
test runs for real where that thing exists.
"""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# CI's split by privilege and its rule on skips (options --root-tests-out, --only-listed, --allowed-skips);
# which test files share an xdist worker (tests/scheduling.py)
pytest_plugins = ["tests.skip_policy", "tests.scheduling"]

ROOT = Path(__file__).resolve().parent.parent
# Real data from other testbeds, copied into the repository with its provenance (tests/data/README.md).
SHARED_DATA = ROOT / "tests" / "data"


# A plain user's PATH often lacks the sbin directories where Debian installs swanctl, nft, ip
# and iptables: look there too (the tests' own subprocesses included), so a tool that is installed
# is never reported as missing (the tests that need root still skip naming root).
_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")
_path = os.environ.get("PATH", "").split(os.pathsep)
os.environ["PATH"] = os.pathsep.join([*_path, *(d for d in _SBIN if d not in _path and os.path.isdir(d))])


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces): run `sudo make test`")


def require_tools(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing {', '.join(missing)}: run `make setup`")


@pytest.fixture
def fresh_netns() -> Iterator[str]:
    """A new, empty network namespace (random name: parallel runs never meet), removed after."""
    require_root()
    require_tools("ip")
    name = f"tb-{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


@pytest.fixture
def shared_data() -> Path:
    """The real-data folder (tests/data): part of every clone, so never a reason to skip."""
    return SHARED_DATA


# Scripts and drivers that tests start call $PYTHON; without make (pytest run by hand from the
# venv) that is the interpreter running the tests, never a system python3 without the packages.
os.environ.setdefault("PYTHON", sys.executable)


def require_snort() -> Path:
    """The Snort 3 install tree ($SNORT_INSTALL: bin/snort, lib/libdaq.so; docs/secfn.md)."""
    path = os.environ.get("SNORT_INSTALL", "")
    if not path:
        pytest.skip("SNORT_INSTALL not set (a Snort 3 + libdaq install tree, built as images/snort/Dockerfile does)")
    if not (Path(path) / "bin" / "snort").is_file():
        pytest.skip(f"SNORT_INSTALL={path} has no bin/snort")
    return Path(path)
