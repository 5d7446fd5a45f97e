"""scripts/run-secfn.sh (Docker) and scripts/run-secfn-lab.sh (namespaces): help, parameters
refused before anything starts, and the commands a dry run would issue (docs/secfn.md)."""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from testbed import instance, stack
from tests.conftest import ROOT, require_tools

SCRIPTS = ROOT / "scripts"
DRIVERS = ["run-secfn.sh", "run-secfn-lab.sh"]
VARS = ("SECFN", "IDS", "PROTOCOLS", "RATES", "RUNS", "DURATION", "QUEUE_MAXLEN", "FAIL_OPEN", "ORDER_SEED",
        "SECFN_UNIT", "PROFILE", "DRY_RUN", "CAMPAIGN", "SLOT")


def _run(script: str, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in VARS}
    base.update(RESULTS=str(tmp_path / "results"), STATE=str(tmp_path / "state"), **env)
    return subprocess.run(["bash", str(SCRIPTS / script), *args], cwd=ROOT, env=base, capture_output=True,
                          text=True, timeout=180, check=False)


def test_shellcheck_clean() -> None:
    require_tools("shellcheck")
    files = [str(SCRIPTS / d) for d in DRIVERS] + [str(ROOT / "testbed" / "secfn" / s)
                                                    for s in ("entrypoint.sh", "server.sh", "probe.sh")]
    res = subprocess.run(["shellcheck", "-x", *files], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


@pytest.mark.parametrize("script", DRIVERS)
def test_help(script: str, tmp_path: Path) -> None:
    res = _run(script, tmp_path, "--help")
    assert res.returncode == 0 and "Usage:" in res.stdout and "Exit:" in res.stdout, res.stderr
    assert "SECFN" in res.stdout and "ORDER_SEED" in res.stdout


@pytest.mark.parametrize("script", DRIVERS)
@pytest.mark.parametrize("env,needle", [
    ({"SECFN": "ids"}, "SECFN='ids'"),
    ({"SECFN": "ids-nat", "IDS": "passthrough"}, "valid for it: suricata, snort"),
    ({"SECFN": "ips-nat", "QUEUE_MAXLEN": "64"}, "Suricata 7 sets no queue length"),
    ({"RATES": "100 x"}, "RATES='100 x'"),
    ({"PROFILE": "tls13-aes128gcm"}, "cannot run on the n3 plane"),
    ({"SECFN_UNIT": "ips-nat-zeek"}, "unknown configuration 'ips-nat-zeek'"),
])
def test_bad_parameters_are_usage_errors(script: str, env: dict, needle: str, tmp_path: Path) -> None:
    res = _run(script, tmp_path, DRY_RUN="1", **env)
    assert res.returncode == 2, res.stdout + res.stderr
    assert needle in res.stderr


def test_stack_dry_run_sends_from_the_ue_to_the_n6_server(tmp_path: Path) -> None:
    res = _run("run-secfn.sh", tmp_path, DRY_RUN="1", PROFILE="aes128gcm", SECFN_UNIT="ips-nat-snort", DURATION="2")
    assert res.returncode == 0, res.stderr
    cmds = [line[2:] for line in res.stdout.splitlines() if line.startswith("+ ")]
    # this STATE's own stack: its bridges and address block (testbed/instance.py)
    with instance.addresses_of(tmp_path / "state") as inst:
        server = str(stack.load()["dn_server"]["address"])
    assert any(c.startswith(f"dumpcap -q -i {inst.bridge_prefix}-n6 -c 20000") for c in cmds)
    assert any(f"exec -T ue-ditg /opt/testbed/secfn/probe.sh {server} 9999 UE_IP" in c for c in cmds)
    send = next(shlex.split(c) for c in cmds if " ITGSend " in c)
    assert send[send.index("ITGSend"):][:13] == ["ITGSend", "-T", "UDP", "-a", f"::ffff:{server}",
                                                 "-sa", "::ffff:UE_IP", "-Ssa", "::ffff:UE_IP", "-c", "512",
                                                 "-O", "100"]
    assert any(c.endswith("stop -t 45 secfn dn") for c in cmds)
    assert any("/secfn.compose.yaml" in c for c in cmds)                  # the fragment is in the stack


def test_lab_dry_run_and_the_small_defaults_of_run_overlay(tmp_path: Path) -> None:
    res = _run("run-secfn-lab.sh", tmp_path, "--small", DRY_RUN="1", PROFILE="wireguard", SECFN="ips-nat",
               IDS="passthrough", RUNS="5")
    assert res.returncode == 0, res.stderr
    cmd = shlex.split(res.stdout.strip().splitlines()[-1][2:])
    assert cmd[1:4] == ["-m", "testbed", "secfn"] and "RATES=100 1000" in cmd and "RUNS=5" in cmd
    assert "DURATION=2" in cmd and cmd[cmd.index("--profile") + 1] == "wireguard"
    require_tools("make")
    env = {k: v for k, v in os.environ.items() if k not in VARS}
    res = subprocess.run(["make", "--no-print-directory", "run-overlay", "PROFILE=aes128gcm", "SECFN=ids-nat",
                          "IDS=snort", "DRY_RUN=1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "-m testbed secfn" in res.stdout and "SECFN=ids-nat IDS=snort" in res.stdout
