"""The strongSwan the manifest records when charon runs from a Debian root (IPSEC_ROOT, read through
testbed/environment.py): its version from the root's package record (scripts/suite-root.sh writes
.g5tb-root) and its plugins from the root's plugin directory, not the host's."""
from __future__ import annotations

from pathlib import Path

import pytest

from ipsec import overlay


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
