"""tests/conftest.py's skip helpers: a tool installed in an sbin directory (strongSwan's swanctl,
nft) is found for a user whose PATH lacks /usr/sbin: the skip said "missing swanctl: run `make
setup`" on a host that had it (issue 22.18); scripts/lib/common.sh's require_tools likewise."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def _sbin_only_tool() -> str:
    for tool in ("swanctl", "nft", "iptables", "setcap"):
        if any(os.access(Path(d) / tool, os.X_OK) for d in SBIN) \
                and not any(os.access(Path(d) / tool, os.X_OK) for d in ("/usr/bin", "/bin")):
            return tool
    pytest.skip("no tool of swanctl, nft, iptables, setcap installed in an sbin directory only here")


def test_require_tools_looks_in_the_sbin_directories() -> None:
    tool = _sbin_only_tool()
    code = f"from tests.conftest import require_tools; require_tools({tool!r}); print('found')"
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PATH": "/usr/bin:/bin"}, check=False)
    assert res.returncode == 0 and res.stdout.strip() == "found", res.stderr[-800:]


def test_the_drivers_require_tools_looks_in_the_sbin_directories() -> None:
    tool = _sbin_only_tool()
    script = f'source "{ROOT}/scripts/lib/common.sh"; require_tools {tool} && command -v {tool}'
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PATH": "/usr/bin:/bin"}, check=False)
    assert res.returncode == 0 and "/sbin/" in res.stdout, res.stderr[-800:]
    gone = subprocess.run(["bash", "-c", f'source "{ROOT}/scripts/lib/common.sh"; require_tools no-such-tool-xyz'],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert gone.returncode == 1 and "missing programs: no-such-tool-xyz" in gone.stderr
