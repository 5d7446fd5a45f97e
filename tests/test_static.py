"""The tree's static checks, run by `make test` (so by CI): ruff over the whole tree, mypy over the
core and every registered plug-in's folder (strict on the plug-in contract and the plug-ins;
pyproject.toml says which: strict by default, the core outside the contract relaxed). Each names
what it found. (shellcheck runs in tests/scripts/.)"""
from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import ROOT


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_finds_nothing() -> None:
    res = _run(sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def _mypy_files() -> list[str]:
    """What mypy checks: pyproject.toml's `files`, plus the folder of every registered plug-in that
    is not under them (a new top-level plug-in folder needs no pyproject.toml edit)."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib (Python 3.11+) reads pyproject.toml")
    from testbed import registry
    files = list(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["files"])
    for p in registry.plugins():
        rel = p.folder.relative_to(ROOT).as_posix()
        if not any(rel == f or rel.startswith(f"{f}/") for f in files):
            files.append(rel)
    return files


def test_mypy_finds_nothing() -> None:
    res = _run(sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", "/dev/null", *_mypy_files())
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout


def _strict(module: str, config: dict[str, Any]) -> bool:
    """Whether pyproject.toml types `module` strictly: the most specific override that names it
    decides (a module name before a pattern, a longer pattern before a shorter one, as mypy
    does), else the global setting."""
    best: tuple[int, dict[str, Any]] | None = None
    for o in config.get("overrides", []):
        for pat in o["module"] if isinstance(o["module"], list) else [o["module"]]:
            rank = (10_000 if pat == module else
                    len(pat) if pat.endswith(".*") and (module + ".").startswith(pat[:-1]) else -1)
            if rank >= 0 and "disallow_untyped_defs" in o and (best is None or rank > best[0]):
                best = (rank, o)
    return bool((best[1] if best else config).get("disallow_untyped_defs"))


def test_mypy_checks_every_plugin_strictly() -> None:
    """Every registered plug-in's module is checked (its folder among mypy's files) and strict
    (pyproject.toml: strict by default, the core outside the contract relaxed)."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib (Python 3.11+) reads pyproject.toml")
    from testbed import registry
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    files = _mypy_files()
    for p in registry.plugins():
        module = type(p).__module__
        assert _strict(module, config), f"{module} ({p.kind} {p.name}) is not type-checked strictly (pyproject.toml)"
        rel = p.folder.relative_to(ROOT).as_posix()
        assert any(rel == f or rel.startswith(f"{f}/") for f in files), rel
    # the rule itself: the core is relaxed, the contract and a plug-in folder unknown to the file are strict
    assert not _strict("testbed.validity", config) and not _strict("analysis.report", config)
    assert _strict("testbed.contract", config) and _strict("testbed.ran.oai.plugin", config)
    assert _strict("some_new_overlay.plugin", config)
