"""The Debian roots of other suites the post-quantum tests run their programs from (scripts/suite-root.sh:
strongSwan 6 from sid, OpenSSL 3.5 from trixie). `make pq-roots` (and .ci/run) makes them; a test that
needs one that is not made skips naming the command."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

SPECS = {"ipsec": ROOT / "ipsec" / "pq-root.env", "tls": ROOT / "tls" / "pq-root.env"}
ENV = {"ipsec": "IPSEC_ROOT", "tls": "TLS_ROOT"}


def root_path(which: str) -> Path | None:
    """The root's directory if it is made (the variable IPSEC_ROOT / TLS_ROOT wins), else None."""
    given = os.environ.get(ENV[which])
    if given:
        return Path(given)
    res = subprocess.run(["bash", str(ROOT / "scripts" / "suite-root.sh"), "--path", str(SPECS[which])],
                         capture_output=True, text=True, check=False)
    return Path(res.stdout.strip()) if res.returncode == 0 else None


def require_root_fs(which: str) -> Path:
    path = root_path(which)
    if path is None:
        spec = SPECS[which].relative_to(ROOT)
        pytest.skip(f"no {which} root ({spec}): `make pq-roots` (scripts/suite-root.sh {spec}, root + Debian mirror)")
    return path
