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

ROOT = Path(__file__).resolve().parent.parent
# Real data from other testbeds, copied into the repository with its provenance (tests/data/README.md).
SHARED_DATA = ROOT / "tests" / "data"


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
