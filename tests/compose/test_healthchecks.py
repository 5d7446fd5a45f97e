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


def _health_sets() -> list[tuple[str, dict[str, object]]]:
    found: list[tuple[str, dict[str, object]]] = []
    for name in ("base.yaml", "scp.yaml"):
        doc = yaml.safe_load((ROOT / "compose" / name).read_text())
        found += [(f"{name}:{svc}", s["healthcheck"]) for svc, s in doc["services"].items()
                  if isinstance(s.get("healthcheck"), dict) and "test" in s["healthcheck"]]
    return found


@pytest.mark.parametrize("where,check", _health_sets(), ids=[w for w, _ in _health_sets()])
def test_start_probes_follow_the_host_knobs(where: str, check: dict[str, object]) -> None:
    # a fixed 1 s start interval kept an emulated guest's runtime too busy for any container to
    # become healthy (docs/stack.md): every start probe follows HEALTH_START_INTERVAL (the RAN's and
    # the security functions' services take compose/base.yaml's x-health: testbed/ran/compose.py)
    assert interpolate(str(check["start_interval"]), {"HEALTH_START_INTERVAL": "10s"}, pytest.fail) == "10s"
    assert interpolate(str(check["start_interval"]), {}, pytest.fail) == "1s"
    assert interpolate(str(check["interval"]), {"HEALTH_INTERVAL": "3600s"}, pytest.fail) == "3600s"
