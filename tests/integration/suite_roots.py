"""The Debian roots of other suites the post-quantum tests run their programs from (scripts/suite-root.sh:
strongSwan 6 from sid, OpenSSL 3.5 from trixie). `make pq-roots` (and .ci/run) makes them; a test that
needs one that is not made skips naming the command."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed import suite_root
from tests.conftest import ROOT

SPECS = {"ipsec": ROOT / "ipsec" / "pq-root.env", "tls": ROOT / "tls" / "pq-root.env"}
ENV = {"ipsec": "IPSEC_ROOT", "tls": "TLS_ROOT"}


def root_path(which: str) -> Path | None:
    """The root's directory if it is made (the variable IPSEC_ROOT / TLS_ROOT wins), else None."""
    given = os.environ.get(ENV[which])
    if given:
        return Path(given)
    return suite_root.built(SPECS[which])


def require_root_fs(which: str) -> Path:
    path = root_path(which)
    if path is None:
        spec = SPECS[which].relative_to(ROOT)
        pytest.skip(f"no {which} root ({spec}): `make pq-roots` (scripts/suite-root.sh {spec}, root + Debian mirror)")
    return path


def require_rosenpass(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The rosenpass daemon: on PATH, else where `make rosenpass` (and .ci/pq-prepare) installs it
    (G5TB_CACHE/rosenpass-<version>/bin), put on PATH for the test; skips naming the command."""
    import shutil

    from wireguard import rosenpass
    found = shutil.which("rosenpass")
    if found:
        return Path(found)
    cache = Path(os.environ.get("G5TB_CACHE") or "/var/cache/g5tb")
    exe = cache / f"rosenpass-{rosenpass.ROSENPASS_VERSION}" / "bin" / "rosenpass"
    if not exe.is_file():
        pytest.skip(f"no rosenpass {rosenpass.ROSENPASS_VERSION} on PATH or at {exe}: `make rosenpass` "
                    "(cargo install --locked from crates.io; cargo, libclang, libsodium)")
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return exe
