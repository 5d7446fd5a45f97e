"""The compose healthchecks of the Open5GS containers, run against the logs of real NFs:
open5gs-nrfd and open5gs-ausfd with the stack's rendered baseline configs in a namespace lab.
An NF must count as healthy only while it is registered with the NRF.

Needs root and an Open5GS build ($OPEN5GS_BUILD, docs/patches.md); skips otherwise.
"""
from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from testbed.check.compose_model import interpolate
from tests.conftest import ROOT
from tests.integration.tls_support import NfLab, nf_lab, open5gs_build, require_netns

pytestmark = [pytest.mark.netns, pytest.mark.open5gs]

LOG_IN_CONTAINER = "/run/open5gs/nf.log"


def healthcheck(service: str, log: Path) -> str:
    """The service's healthcheck command from compose/base.yaml (or scp.yaml), pointed at `log`."""
    services: dict = {}
    for f in ("scp.yaml", "base.yaml"):            # base.yaml wins; the SCP lives in scp.yaml
        services.update(yaml.safe_load((ROOT / "compose" / f).read_text())["services"])
    svc = services[service]
    kind, cmd = svc["healthcheck"]["test"][0], svc["healthcheck"]["test"][1]
    assert kind == "CMD-SHELL"
    cmd = interpolate(cmd, {}, lambda msg: pytest.fail(f"{service} healthcheck: {msg}"))
    assert LOG_IN_CONTAINER in cmd
    return cmd.replace(LOG_IN_CONTAINER, str(log))


def healthy(service: str, log: Path) -> bool:
    return subprocess.run(["sh", "-c", healthcheck(service, log)], capture_output=True, timeout=10).returncode == 0


@pytest.fixture(scope="module")
def build() -> Path:
    require_netns()
    return open5gs_build()


@pytest.fixture(scope="module")
def lab(build: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NfLab]:
    yield from nf_lab(["nrf", "ausf"], tmp_path_factory.mktemp("stack-health"))


def test_nrf_and_ausf_healthchecks_follow_registration(build: Path, lab: NfLab) -> None:
    nrf_log, ausf_log = lab.log("nrf"), lab.log("ausf")
    configs = {nf: lab.config(nf) for nf in ("nrf", "ausf")}
    try:
        lab.start("nrf", build, configs["nrf"], {})
        assert not healthy("ausf", ausf_log), "no log yet: not healthy"
        lab.wait_log("nrf", r"NRF initialize\.\.\.done", 15)
        assert healthy("nrf", nrf_log)
        lab.start("ausf", build, configs["ausf"], {})
        lab.wait_log("ausf", r"initialize\.\.\.done", 15)
        lab.wait_log("ausf", r"NF registered", 15)
        assert healthy("ausf", ausf_log)
        lab.stop("ausf")
        lab.wait_log("ausf", r"NF de-registered", 10)
        assert not healthy("ausf", ausf_log), "a de-registered NF must not count as healthy"
    finally:
        lab.stop("ausf")
        lab.stop("nrf")
