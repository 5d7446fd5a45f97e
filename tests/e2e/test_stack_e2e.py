"""End to end on a Docker host (`make test-e2e`): build the images, bring the stack up,
UE 1 registers and gets a PDU session, 5 pings through the UPF to the host, down.

Skips, naming what is missing, where there is no Docker engine, no Compose v2 or no kernel
SCTP (the AMF and gNB need it). E2E_SKIP_BUILD=1 uses images already built (`make build`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.docker
BUILD_TIMEOUT = int(os.environ.get("E2E_BUILD_TIMEOUT", "5400"))
SMOKE_TIMEOUT = int(os.environ.get("E2E_SMOKE_TIMEOUT", "900"))


def _missing() -> str | None:
    if shutil.which("docker") is None:
        return "docker CLI"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode != 0:
        return "a reachable Docker engine (`docker info` fails)"
    if subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60).returncode != 0:
        return "Compose v2 (`docker compose`)"
    if not Path("/sys/module/sctp").exists():
        if os.geteuid() != 0 or subprocess.run(["modprobe", "sctp"], capture_output=True).returncode != 0:
            return "kernel SCTP (`modprobe sctp`; the AMF and gNB need it)"
    return None


@pytest.fixture(scope="module")
def docker_host() -> None:
    missing = _missing()
    if missing:
        pytest.skip(f"needs {missing}: the full stack only runs on a Docker host (see `make doctor`)")


def _make(*args: str, timeout: int, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STATE": str(state)}
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_build_up_smoke_down(docker_host: None) -> None:
    state = ROOT / ".state"          # keep the keys of this clone (make keys never replaces them)
    if os.environ.get("E2E_SKIP_BUILD") != "1":
        build = _make("build", timeout=BUILD_TIMEOUT, state=state)
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    smoke = _make("smoke", "PROFILE=baseline", timeout=SMOKE_TIMEOUT, state=state)
    out = smoke.stdout + smoke.stderr
    assert smoke.returncode == 0, out[-6000:]
    assert "SMOKE PASS" in out
    assert "UE 1 has its PDU session: uesimtun0 10.45." in out
    # nothing left behind
    ps = subprocess.run(["docker", "ps", "-a", "-q", "--filter", "label=testbed.profile"],
                        capture_output=True, text=True, timeout=60)
    assert ps.stdout.strip() == "", f"containers left after smoke: {ps.stdout}"
    assert not (state / "stack.current").exists()
