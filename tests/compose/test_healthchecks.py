"""The Open5GS healthchecks of compose/base.yaml on log lines in Open5GS 2.7.7's format
(lib/sbi/nf-sm.c, nnrf-handler.c, src/*/pfcp-sm.c): only the NF's own registration counts.
tests/integration/test_stack_healthchecks.py runs them on the logs of real NFs."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from testbed.check.compose_model import interpolate
from tests.conftest import ROOT

ID, PEER = "1d30f204-e60a-41f1-9ef6-4107148cae06", "5f3bb1b6-e60f-41f1-8de8-e3788ee91b7a"
OWN_UP = f"11/22 00:17:33.907: [sbi] INFO: [{ID}] NF registered [Heartbeat:10s] (../lib/sbi/nf-sm.c:341)"
OWN_DOWN = f"11/22 00:17:37.865: [sbi] INFO: [{ID}] NF de-registered (../lib/sbi/nf-sm.c:379)"
PEER_UP = f"11/22 00:17:40.001: [sbi] INFO: [{PEER}] (NRF-notify) NF registered (../lib/sbi/nnrf-handler.c:1154)"
PEER_DOWN = f"11/22 00:17:41.001: [sbi] INFO: [{PEER}] NF de-registered [type:SMF] (../lib/sbi/nf-sm.c:548)"
PFCP_UP = "11/22 00:17:42.001: [smf] INFO: PFCP associated [10.100.4.7]:8805 (../src/smf/pfcp-sm.c:189)"
PFCP_DOWN = "11/22 00:17:43.001: [smf] INFO: PFCP de-associated [10.100.4.7]:8805 (../src/smf/pfcp-sm.c:205)"


def probe(service: str, lines: list[str], tmp_path: Path) -> bool:
    svc = yaml.safe_load((ROOT / "compose" / "base.yaml").read_text())["services"][service]
    cmd = interpolate(svc["healthcheck"]["test"][1], {}, pytest.fail)
    log = tmp_path / "nf.log"
    log.write_text("".join(f"{line}\n" for line in lines))
    return subprocess.run(["sh", "-c", cmd.replace("/run/open5gs/nf.log", str(log))],
                          capture_output=True, timeout=10).returncode == 0


@pytest.mark.parametrize("lines,expect", [
    ([], False),
    ([OWN_UP], True),
    ([OWN_UP, PEER_DOWN], True),                 # a peer going away does not make this NF unhealthy
    ([OWN_UP, OWN_DOWN], False),
    ([OWN_UP, OWN_DOWN, PEER_UP], False),        # a peer registering does not make it healthy
    ([OWN_UP, OWN_DOWN, OWN_UP], True),
])
def test_nf_registration(lines: list[str], expect: bool, tmp_path: Path) -> None:
    assert probe("amf", lines, tmp_path) is expect


@pytest.mark.parametrize("lines,expect", [
    ([OWN_UP], False),
    ([OWN_UP, PFCP_UP], True),
    ([OWN_UP, PFCP_UP, PFCP_DOWN], False),
    ([PFCP_UP, OWN_UP, OWN_DOWN], False),
])
def test_smf_needs_registration_and_pfcp(lines: list[str], expect: bool, tmp_path: Path) -> None:
    assert probe("smf", lines, tmp_path) is expect
