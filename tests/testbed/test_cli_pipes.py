"""Every CLI of the project into a closed pipe (`python -m testbed profiles | head -1`) ends
quietly: no BrokenPipeError traceback, no 'Exception ignored' line, exit status 141 (128 +
SIGPIPE, what a shell reports for a writer whose reader left). Both stdout modes are run, set here
rather than inherited (CI's root and user halves differ in PYTHONUNBUFFERED). --help may also end
with status 0: whether argparse swallows the error of its own write depends on the stdout mode and
on the Python point release (3.11.7 does, Debian's 3.11.2 does not), and either is quiet."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _into_closed_pipe(*argv: str, unbuffered: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=120, check=False)
    finally:
        os.close(w)


@pytest.mark.parametrize("argv", [
    ("-m", "testbed", "profiles"),
    ("-m", "testbed", "channels", "--directed"),
    ("-m", "testbed", "params", "n3", "--format", "help"),
    ("-m", "testbed", "--help"),
    ("-m", "analysis", "--help"),
    ("-m", "analysis", "list-figures"),
    ("-m", "testbed.cli.manifest", "--help"),
])
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_a_closed_pipe_ends_the_command_quietly(argv: tuple[str, ...], unbuffered: bool) -> None:
    res = _into_closed_pipe(*argv, unbuffered=unbuffered)
    assert "Traceback" not in res.stderr and "BrokenPipeError" not in res.stderr \
        and "Exception ignored" not in res.stderr, res.stderr
    assert res.returncode in ((0, 141) if "--help" in argv else (141,)), (res.returncode, res.stderr)
