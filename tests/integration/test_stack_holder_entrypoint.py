"""compose/entrypoints/holder.sh (baseline namespace holder): ready file at once, idles,
exits 0 on SIGTERM and removes the ready file. Run in a private mount namespace with its
own /run, as in a container."""
from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.conftest import ROOT, require_root, require_tools

pytestmark = pytest.mark.netns
HOLDER = ROOT / "compose" / "entrypoints" / "holder.sh"


def _in_ns(pid: int, *cmd: str) -> int:
    return subprocess.run(["nsenter", "-t", str(pid), "-m", *cmd], capture_output=True, timeout=10).returncode


def test_holder_ready_then_clean_exit_on_sigterm() -> None:
    require_root()
    require_tools("unshare", "nsenter")
    proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "bash", "-c",
                             f"mount -t tmpfs none /run && exec bash {HOLDER}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while _in_ns(proc.pid, "test", "-f", "/run/testbed/overlay-ready") != 0:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "holder.sh did not write /run/testbed/overlay-ready"
            time.sleep(0.1)  # polling, bounded by the deadline
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - start < 5, "SIGTERM must end the idle wait at once"
        assert "ready" in (proc.stderr.read() if proc.stderr else "")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
