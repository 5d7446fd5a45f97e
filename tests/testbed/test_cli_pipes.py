"""Every CLI of the project into a closed pipe (`python -m testbed profiles | head -1`) ends
quietly: no BrokenPipeError traceback, no 'Exception ignored' line, exit status 141 (128 +
SIGPIPE, what a shell reports for a writer whose reader left). argparse's --help swallows the
error itself (status 0): quiet as well."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _into_closed_pipe(*argv: str) -> subprocess.CompletedProcess[str]:
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, *argv], cwd=ROOT, stdout=w, stderr=subprocess.PIPE, text=True,
                              timeout=120, check=False)
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
def test_a_closed_pipe_ends_the_command_quietly(argv: tuple[str, ...]) -> None:
    res = _into_closed_pipe(*argv)
    assert "Traceback" not in res.stderr and "BrokenPipeError" not in res.stderr \
        and "Exception ignored" not in res.stderr, res.stderr
    assert res.returncode == (0 if "--help" in argv else 141), (res.returncode, res.stderr)
