"""Every registered plug-in against the contract (testbed/contract.py, testbed/registry.py), and
the boundary the contract promises: a plug-in's name and rules live in its folder, not in the core."""
from __future__ import annotations

import importlib
import inspect
import os
import pathlib
import re
import subprocess
import sys

import pytest

from testbed import ROOT, privileges, profiles, registry
from testbed.contract import BASES, KINDS, DeclarationError, OverlayPlugin, Plugin

PLUGINS = registry.plugins()


def _id(p: Plugin) -> str:
    return f"{p.kind}-{p.name}"


def test_registry_holds_every_kind_once_per_name() -> None:
    assert {p.kind for p in PLUGINS} == set(KINDS)
    assert len({(p.kind, p.name) for p in PLUGINS}) == len(PLUGINS)
    assert [p.name for p in registry.overlays()] == ["ipsec", "wireguard", "tls", "dtls", *[
        p.name for p in registry.overlays()][4:]]


@pytest.mark.parametrize("plugin", PLUGINS, ids=_id)
def test_each_plugin_keeps_the_contract(plugin: Plugin) -> None:
    base = BASES[plugin.kind]
    assert isinstance(plugin, base)
    assert re.fullmatch(r"[a-z][a-z0-9-]*", plugin.name) and plugin.summary, plugin
    assert plugin.problems() == []
    # every hook it overrides keeps the base's signature (names, kinds, defaults)
    for name, member in inspect.getmembers(type(plugin), inspect.isfunction):
        if name.startswith("_") or not hasattr(base, name):
            continue
        want = inspect.signature(getattr(base, name))
        got = inspect.signature(member)
        assert [(p.name, p.kind) for p in got.parameters.values()] == \
            [(p.name, p.kind) for p in want.parameters.values()], f"{plugin.name}.{name}{got} != {want}"
    # nothing public beyond the contract: a hook the core does not know would never be called
    extra = [n for n, _ in inspect.getmembers(type(plugin), inspect.isfunction)
             if not n.startswith("_") and not hasattr(base, n)]
    assert extra == [], f"{plugin.name}: methods outside the contract: {extra}"


@pytest.mark.parametrize("overlay", registry.overlays(), ids=lambda p: p.name)
def test_each_overlay_brings_everything_it_needs(overlay: OverlayPlugin) -> None:
    mine = [p for p in profiles.load().values() if p.protocol == overlay.name]
    assert mine, f"{overlay.name}: no profile in profiles.yaml"
    assert overlay.label and overlay.wire_filter or not overlay.entrypoint
    assert overlay.userspace_datapaths <= set(overlay.datapaths)
    if overlay.entrypoint:
        entry = overlay.folder / overlay.entrypoint
        assert entry.is_file() and os.access(entry, os.X_OK), entry
        assert entry.read_text(encoding="utf-8").startswith("#!/usr/bin/env bash\n")
        role = privileges.role(f"holder-{overlay.name}")
        assert role.protocols == (overlay.name,)
    if overlay.datapaths:
        assert overlay.datapath(True, None) == overlay.datapaths[0]


def test_plugins_command_lists_kind_name_and_folder() -> None:
    res = subprocess.run([sys.executable, "-m", "testbed", "plugins", "--check"], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == len(PLUGINS)
    for line, p in zip(lines, PLUGINS):
        kind, name, folder = line.split()[:3]
        assert (kind, name) == (p.kind, p.name)
        assert (ROOT / folder).resolve() == p.folder


# Code files outside a plug-in's folder that may still spell its name quoted (tests and docs aside):
# the bound, with the files it is spent on today.
QUOTED_LIMIT = 3


# Generated or foreign trees (.gitignore's entries, VCS and caches) are never read. A walk, not
# `git ls-files`, so that the check holds in a copy without .git (scripts/test-as-user.sh).
_NOT_CODE = {".git", ".state", "results", "build", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
             "tests", "docs"}


def _code_files() -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d not in _NOT_CODE and not d.startswith(".venv")
                             and not d.endswith(".egg-info"))
        rel = pathlib.Path(dirpath).relative_to(ROOT)
        out += [(rel / n).as_posix() for n in sorted(filenames)
                if n.endswith((".py", ".sh")) or n == "Makefile" or (rel.as_posix() == "mk" and n.endswith(".mk"))]
    return out


@pytest.mark.parametrize("overlay", registry.overlays(), ids=lambda p: p.name)
def test_an_overlays_name_stays_in_its_folder(overlay: OverlayPlugin) -> None:
    folder = overlay.folder.relative_to(ROOT).as_posix() + "/"
    quoted = re.compile(rf"""["']{re.escape(overlay.name)}["']""")
    outside = [f for f in _code_files() if not f.startswith(folder)
               and quoted.search((ROOT / f).read_text(encoding="utf-8", errors="replace"))]
    assert len(outside) <= QUOTED_LIMIT, f"'{overlay.name}' quoted in {len(outside)} files outside {folder}: {outside}"


# Declared values are data (testbed/contract.py DECLARATIONS): read into the class when it is defined,
# typed from the contract's annotations, and refused naming the file and the key.

def _toy_overlay(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, declarations: str,
                 body: str = "    pass\n") -> type[OverlayPlugin]:
    package = f"toy_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "plugin.py").write_text("from testbed.contract import OverlayPlugin\n\n\n"
                                      f"class Toy(OverlayPlugin):\n{body}")
    (folder / "plugin.yaml").write_text(declarations)
    monkeypatch.syspath_prepend(str(tmp_path))
    cls: type[OverlayPlugin] = importlib.import_module(f"{package}.plugin").Toy
    return cls


def test_declared_values_are_read_typed_into_the_class(tmp_path: pathlib.Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    toy = _toy_overlay(tmp_path, monkeypatch, "Toy:\n  name: toy\n  summary: a toy\n  entrypoint: null\n"
                       "  datapaths: [kernel, user]\n  userspace_datapaths: [user]\n  protects: false\n")
    assert (toy.name, toy.summary, toy.entrypoint, toy.protects) == ("toy", "a toy", None, False)
    assert toy.datapaths == ("kernel", "user") and toy.userspace_datapaths == frozenset({"user"})
    assert toy.kind == "overlay" and toy.wire_filter == ""          # the base's own and its defaults
    assert toy().problems() == [f"{tmp_path / toy.__module__.split('.')[0]}: no README.md"]


@pytest.mark.parametrize("declarations, body, message", [
    ("Toy:\n  name: toy\n  colours: red\n", "    pass\n", r"plugin.yaml: Toy.colours: not a declared value of a "
     # every declarable value, sorted: the post-quantum bench_responder first
     r"OverlayPlugin \(testbed/contract.py: bench_responder, colour, daemons"),
    ("Toy:\n  name: toy\n  datapaths: kernel\n", "    pass\n", r"plugin.yaml: Toy.datapaths must be "
     r"tuple\[str, \.\.\.\] \(a list for a tuple or set\), not 'kernel'"),
    ("Toy:\n  daemons: [charon, 7]\n", "    pass\n", r"plugin.yaml: Toy.daemons\[1\] must be str"),
    ("Toy:\n  protects: 'no'\n", "    pass\n", r"plugin.yaml: Toy.protects must be bool"),
    ("Toy:\n  kind: ran\n", "    pass\n", r"plugin.yaml: Toy.kind: not a declared value"),
    ("Toy:\n  label: Toy\n", "    label = 'Toy'\n", r"plugin.yaml: Toy.label: Toy sets it in its code too"),
    ("Other:\n  name: toy\n", "    pass\n", r"plugin.yaml: no entry for class Toy \(entries: Other\)"),
    ("- name: toy\n", "    pass\n", r"plugin.yaml: must map each plug-in class name to its declared values"),
    ("Toy: {name: [\n", "    pass\n", r"plugin.yaml: cannot read it"),
])
def test_a_bad_declaration_names_its_file_and_key(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                  declarations: str, body: str, message: str) -> None:
    with pytest.raises(DeclarationError, match=message):
        _toy_overlay(tmp_path, monkeypatch, declarations, body)


def test_an_entry_for_no_class_is_a_problem(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toy = _toy_overlay(tmp_path, monkeypatch, "Toy:\n  name: toy\n  summary: a toy\nTyo:\n  name: typo\n")
    assert toy().problems()[-1].endswith("plugin.yaml: Tyo: no such class in " + toy.__module__)
