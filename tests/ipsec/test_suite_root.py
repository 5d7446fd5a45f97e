"""The strongSwan the manifest records when charon runs from a Debian root (IPSEC_ROOT, read through
testbed/environment.py): its version from the root's package record (scripts/suite-root.sh writes
.g5tb-root) and its plugins from the root's plugin directory, not the host's."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipsec import overlay
from testbed import manifest, netns, profiles
from tests.conftest import ROOT


def test_version_and_plugins_come_from_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".g5tb-root").write_text("libstrongswan=6.1.0-1\nstrongswan-charon=6.1.0-1\n", encoding="utf-8")
    plugins = tmp_path / "usr" / "lib" / "ipsec" / "plugins"
    plugins.mkdir(parents=True)
    for name in ("openssl", "ml", "kernel-libipsec"):
        (plugins / f"libstrongswan-{name}.so").write_bytes(b"")
    monkeypatch.setenv("IPSEC_ROOT", str(tmp_path))
    assert overlay.charon_version() == "6.1.0"
    assert overlay.charon_plugins() == "kernel-libipsec ml openssl"
    (tmp_path / ".g5tb-root").write_text("openssl=3.5.0-1\n", encoding="utf-8")
    assert overlay.charon_version() is None            # a root without charon's record says nothing


def _made_root(roots: Path, charon: str) -> Path:
    """A root where scripts/suite-root.sh looks for ipsec/pq-root.env's (its name carries the spec's
    hash: asked of the script), with the package record the script writes."""
    res = subprocess.run(["bash", str(ROOT / "scripts" / "suite-root.sh"), "--path", str(overlay.PQ_ROOT_SPEC)],
                         capture_output=True, text=True, check=False, env={**os.environ, "G5TB_ROOTS": str(roots)})
    root = Path(res.stdout.strip())
    root.mkdir(parents=True)
    (root / ".g5tb-root").write_text(f"strongswan-charon={charon}-1\nopenssl=3.6.0-1\n", encoding="utf-8")
    return root


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty root cache, the host's charon 5.9.8 (Debian 12's), IPSEC_ROOT unset (empty: what a
    manifest's creation sets goes when the test ends), the probed versions forgotten after."""
    monkeypatch.setenv("G5TB_ROOTS", str(tmp_path / "roots"))
    monkeypatch.setenv("IPSEC_ROOT", "")
    monkeypatch.setattr(overlay, "_host_charon", lambda: "5.9.8")
    yield tmp_path / "roots"
    manifest.tool_versions.cache_clear()


PQ = "aes128gcm-x25519-mlkem768"


def test_the_lab_takes_the_made_root_for_a_profile_the_host_charon_is_too_old_for(roots: Path) -> None:
    """Issue 30 §3: after `make pq-roots`, run-overlay of a post-quantum profile used the host's 5.9.8
    and failed; the root is used by itself, and the run's manifest names its strongSwan."""
    root = _made_root(roots, "6.1.0")
    assert overlay.lab_environment([profiles.get(PQ, "n3")]) == {"IPSEC_ROOT": str(root)}
    lab = netns.Lab("pqsel", "n3", PQ, nodes=["gnb", "upf"], state_dir=roots.parent / "state")
    assert lab._entrypoint_environment()["IPSEC_ROOT"] == str(root)


def test_the_manifest_of_a_lab_run_names_the_roots_strongswan(roots: Path) -> None:
    root = _made_root(roots, "6.1.0")
    manifest.tool_versions.cache_clear()
    run_dir = manifest.create(roots.parent / "results", "overlay", PQ, {})
    assert manifest.load(run_dir)["versions"]["strongswan"] == "6.1.0"
    assert os.environ["IPSEC_ROOT"] == str(root), "the run's process and its children: the same charon"


@pytest.mark.parametrize(("case", "expected"), [
    ("no root made", {}), ("root too old", {}), ("classical profile", {}), ("host new enough", {}),
    ("IPSEC_ROOT given", {})])
def test_the_host_charon_or_the_given_root_otherwise(roots: Path, monkeypatch: pytest.MonkeyPatch,
                                                     case: str, expected: dict[str, str]) -> None:
    prof = PQ
    if case == "root too old":
        _made_root(roots, "6.0.1")
    elif case != "no root made":
        _made_root(roots, "6.1.0")
    if case == "classical profile":
        prof = "aes128gcm"
    if case == "host new enough":
        monkeypatch.setattr(overlay, "_host_charon", lambda: "6.0.2")
    if case == "IPSEC_ROOT given":
        monkeypatch.setenv("IPSEC_ROOT", "/elsewhere")
    assert overlay.lab_environment([profiles.get(prof, "n3")]) == expected
