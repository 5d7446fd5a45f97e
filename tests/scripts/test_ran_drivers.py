"""The split-RAN drivers (scripts/run-ran-procedures.sh, scripts/run-f1u.sh) without Docker: --help,
parameters refused before anything starts, and (DRY_RUN=1) the exact commands they would issue:
the OAI RAN rendered, whole-packet captures started before the first node, fresh registrations,
pings from the OAI UE's interface to the UPF, iperf3. They run for real on a Docker host with SCTP
(docs/ran.md: the full-kernel guest)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testbed import stack
from tests.conftest import ROOT, require_tools
from tests.scripts.test_drivers import RAN_VARS, _commands, _run


def run(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # a state directory of its own, under the default stack's names and addresses (testbed/instance.py)
    return _run(script, tmp_path, **{**RAN_VARS, "STATE": str(tmp_path / "state"), **env})


@pytest.mark.parametrize("script", ["run-ran-procedures.sh", "run-f1u.sh"])
def test_help_and_shellcheck(script: str, tmp_path: Path) -> None:
    res = _run(script, tmp_path, "--help")
    assert res.returncode == 0 and "EXPERIMENTAL (docs/ran.md)" in res.stdout and "RAN " in res.stdout
    require_tools("shellcheck")
    sc = subprocess.run(["shellcheck", "-x", str(ROOT / "scripts" / script)], cwd=ROOT, capture_output=True, text=True)
    assert sc.returncode == 0, sc.stdout


def test_run_ran_procedures_registers_fresh_ues_under_captures(tmp_path: Path) -> None:
    cmds = _commands(run("run-ran-procedures.sh", tmp_path, DRY_RUN="1", PROFILE="baseline", REGISTRATIONS="3"))
    ups = [c for c in cmds if "scripts/up.sh" in c]
    # PROFILE's overlay on F1-C and E1 (the interfaces whose procedures are timed)
    assert ups[0].endswith("--plane f1c,e1 --timeout 180 --create-only --no-ue")
    assert ups[1].endswith("--plane f1c,e1 --timeout 180 --no-ue --start-created")
    caps = [f"dumpcap -q -i g5tb-{i} -w ./{i}.pcap" for i in ("f1c", "e1", "n2")]
    for cap in caps:                                     # whole packets, from before the first node
        assert cmds.index(ups[0]) < cmds.index(cap) < cmds.index(ups[1])
    starts = [c for c in cmds if " up -d --no-deps ue1" in c]
    removals = [c for c in cmds if c.endswith(" rm -sf ue1")]
    assert len(starts) == len(removals) == 3
    assert all("/render/f1c+e1/baseline+split/compose/ran.yaml" in c for c in starts)
    assert not (tmp_path / "results").exists()


def test_run_f1u_pings_the_upf_from_the_oai_ue(tmp_path: Path) -> None:
    cmds = _commands(run("run-f1u.sh", tmp_path, DRY_RUN="1", PROFILE="baseline", SETS="2", PINGS="50",
                         REPS="1", DURATION="4"))
    upf = stack.load()["ue_subnet"]["gateway"]
    pings = [c for c in cmds if " exec -T ue1 timeout --signal=INT " in c and " ping -D -n " in c]
    assert len(pings) == 1 + 2
    # 1,024 B of ICMP data as the authors' `ping -s 1024`, from the nrUE's PDU session interface
    assert all(c.endswith(f" -s 1024 -I oaitun_ue1 {upf}") for c in pings)
    assert "dumpcap -q -i g5tb-f1u -c 200000 -w ./f1u.pcap" in cmds and "dumpcap -q -i g5tb-n3 -c 200000 -w ./n3.pcap" in cmds
    gateway = stack.load()["networks"]["n6"]["gateway"]
    clients = [c for c in cmds if "exec -T ue1 timeout 34 iperf3 -c " + gateway in c]
    assert len(clients) == 2 and clients[1].endswith(" -u -b 100M")
    e2e = _commands(run("run-f1u.sh", tmp_path, DRY_RUN="1", PROFILE="baseline", SCOPE="e2e", RAN="oai",
                        UU="nea2-nia2", IPERF="0", SETS="1", PINGS="5"))
    assert not any("g5tb-f1u" in c for c in e2e) and "dumpcap -q -i g5tb-n3 -c 200000 -w ./n3.pcap" in e2e
    assert not any(" iperf3 " in c for c in e2e)
    env = (tmp_path / "state" / "render" / "n3" / "baseline+oai" / "compose.env").read_text()
    assert "RAN=oai\n" in env and "UU=nea2-nia2\n" in env


def test_make_targets_exist_and_check_first() -> None:
    require_tools("make")
    res = subprocess.run(["make", "help"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert "run-ran-procedures " in res.stdout and "run-f1u " in res.stdout
    r = subprocess.run(["make", "--no-print-directory", "run-f1u", "SCOPE=f1u", "RAN=oai"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "SCOPE=f1u needs RAN=split" in r.stderr


def test_campaigns_run_the_ran_experiments(tmp_path: Path) -> None:
    res = subprocess.run(["bash", "scripts/campaign.sh", "ran-procedures"], cwd=ROOT, capture_output=True, text=True,
                         timeout=180, env={**os.environ, "DRY_RUN": "1",
                                           "RESULTS": str(tmp_path / "r"), "BOOTS": "2"})
    assert res.returncode == 0, res.stderr
    # every profile of the F1-C and E1 planes, BOOTS blocks each
    assert "ran-procedures.baseline.r02" in res.stdout and "ran-procedures.aes128gcm-psk.r01" in res.stdout


def test_protected_interfaces_are_timed_from_the_cu_cps_plaintext_view(tmp_path: Path) -> None:
    cmds = _commands(run("run-ran-procedures.sh", tmp_path, DRY_RUN="1", PROFILE="aes128gcm", REGISTRATIONS="1"))
    # F1-C and E1 are protected: their bridges validate, the CU-CP's nflog views time them; N2 is not
    assert "dumpcap -q -i g5tb-f1c -w ./f1c-wire.pcap" in cmds and "dumpcap -q -i g5tb-e1 -w ./e1-wire.pcap" in cmds
    assert "dumpcap -q -i g5tb-n2 -w ./n2.pcap" in cmds
    views = [c for c in cmds if "exec -T cucp-net dumpcap -q -i nflog:" in c]
    assert len(views) == 2 and "./f1c.pcap" in views[0] and "nflog:39" in views[0] and "nflog:40" in views[1]
    assert sum(" exec -T cucp-net nft -f -" in c for c in cmds) == 2
    up = next(i for i, c in enumerate(cmds) if "--start-created" in c)
    assert up < cmds.index(views[0])
