"""The tree's static checks, run by `make test` (so by CI): ruff over the whole tree, mypy over the
core and every plug-in (strict on the plug-in contract and the plug-ins; pyproject.toml says
which). Each names what it found. (shellcheck runs in tests/scripts/.)"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_finds_nothing() -> None:
    res = _run(sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_finds_nothing() -> None:
    res = _run(sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", "/dev/null")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout


def test_mypy_checks_every_plugin_strictly() -> None:
    """Every registered plug-in's module is under the strict override of pyproject.toml."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib (Python 3.11+) reads pyproject.toml")
    from testbed import registry
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    strict = next(o for o in config["tool"]["mypy"]["overrides"] if o.get("disallow_untyped_defs"))
    patterns = strict["module"]
    for p in registry.plugins():
        module = type(p).__module__
        assert any(module == pat or (pat.endswith(".*") and module.startswith(pat[:-1])) for pat in patterns), \
            f"{module} ({p.kind} {p.name}) is not type-checked strictly: add it to pyproject.toml"
