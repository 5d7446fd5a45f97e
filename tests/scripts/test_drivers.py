"""The experiment drivers without Docker: static checks, --help, parameter rejection before
anything starts, and (DRY_RUN=1) the exact commands the Docker drivers would issue.
They run for real in `make test-e2e` on a Docker host and, for run-overlay, in
tests/integration/test_run_overlay.py.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed import profiles, stack
from tests.conftest import ROOT, require_tools

SCRIPTS = ROOT / "scripts"
DRIVERS = ["run-n3.sh", "run-sbi.sh", "run-cpu.sh", "run-throughput.sh", "run-overlay.sh", "campaign.sh"]
RAN_DRIVERS = ("run-ran-procedures.sh", "run-f1u.sh")
# the RAN drivers' parameters, empty: none comes from the caller's environment
RAN_VARS = {"RAN": "", "UU": "", "REGISTRATIONS": "", "GAP": "", "SCOPE": "", "IPERF": "", "BOOTS": "",
            "COMPOSE_PROJECT": "g5tb", "BRIDGE_PREFIX": "g5tb", "STACK_SLOT": "0"}
PARAM_VARS = ("SIZES", "SETS", "PINGS", "INTERVAL", "WARMUP", "ITERATIONS", "MODE", "UES", "REPS",
              "CAMPAIGN", "SLOT", "PROFILES", "DRY_RUN", "PROFILE")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PARAM_VARS}
    env["RESULTS"] = str(tmp_path / "results")
    env.update(extra)
    return env


def _run(script: str, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPTS / script), *args], cwd=ROOT, env=_env(tmp_path, **env),
                          capture_output=True, text=True, timeout=180, check=False)


def test_shellcheck_clean() -> None:
    require_tools("shellcheck")
    files = [str(SCRIPTS / d) for d in DRIVERS] + sorted(str(f) for f in (SCRIPTS / "lib").glob("*.sh"))
    res = subprocess.run(["shellcheck", "-x", *files], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


@pytest.mark.parametrize("script", DRIVERS)
def test_help(script: str, tmp_path: Path) -> None:
    res = _run(script, tmp_path, "--help")
    assert res.returncode == 0, res.stderr
    assert "Usage:" in res.stdout and "Exit:" in res.stdout
    assert os.access(SCRIPTS / script, os.X_OK)
    assert (SCRIPTS / script).read_text().startswith("#!/usr/bin/env bash\n# ")
    assert "set -euo pipefail" in (SCRIPTS / script).read_text()


@pytest.mark.parametrize("script, env, message", [
    ("run-n3.sh", {"PROFILE": "nope"}, "unknown PROFILE 'nope'"),
    ("run-n3.sh", {"PROFILE": "tls13-aes128gcm"}, "cannot run on the n3 plane"),
    ("run-n3.sh", {"SIZES": "64 abc"}, "SIZES='64 abc': must be whole numbers"),
    ("run-sbi.sh", {"ITERATIONS": "0"}, "ITERATIONS='0': out of range"),
    ("run-sbi.sh", {"PROFILE": "aes256gcm", "MODE": "lukewarm"}, "must be one of cold, warm, both"),
    ("run-cpu.sh", {"UES": "1 5 x"}, "UES='1 5 x'"),
    ("run-throughput.sh", {"DURATION": "0"}, "DURATION='0'"),
    ("run-overlay.sh", {"PROFILE": "tls12-aes128gcm"}, "cannot run on the n3 plane"),
    # the RAN drivers (tests/scripts/test_ran_drivers.py), in a state directory of their own
    ("run-ran-procedures.sh", {"RAN": "oai"}, "RAN='oai': must be one of split"),
    ("run-ran-procedures.sh", {"REGISTRATIONS": "0"}, "REGISTRATIONS='0'"),
    ("run-f1u.sh", {"RAN": "oai"}, "SCOPE=f1u needs RAN=split"),
    ("run-f1u.sh", {"UU": "nea3-nia3"}, "UU='nea3-nia3'"),
    ("run-f1u.sh", {"PROFILE": "tls13-aes128gcm"}, "cannot run on the f1u plane"),
])
def test_wrong_parameters_are_rejected_before_anything_starts(script: str, env: dict, message: str,
                                                               tmp_path: Path) -> None:
    ran = {**RAN_VARS, "STATE": str(tmp_path / "state"), "PROFILE": "baseline"} if script in RAN_DRIVERS else {}
    res = _run(script, tmp_path, **{**ran, **env})
    assert res.returncode == 2, res.stderr
    assert message in res.stderr
    assert "rejected before anything started" in res.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "state").exists()


def test_docker_driver_refuses_a_profile_the_host_cannot_run_before_anything_starts(tmp_path: Path) -> None:
    """As run-overlay does: the overlay plug-in's cannot_run is asked before Docker or a run
    directory (here: NULL-AES-GMAC, which userspace ESP cannot run, on a host without kernel ESP)."""
    from testbed import datapath
    from tests.conftest import require_root
    require_root()
    require_tools("dumpcap", "tshark")
    if datapath.detect()["ipsec"] != "libipsec":
        pytest.skip("this host has kernel ESP: every IPsec profile can run (the refusal is for userspace ESP)")
    res = _run("run-n3.sh", tmp_path, PROFILE="nullgmac")
    assert res.returncode == 1, res.stderr
    assert "profile nullgmac cannot run on this host" in res.stderr and "kernel xfrm ESP" in res.stderr
    assert "docker" not in res.stderr.lower()
    assert not (tmp_path / "results").exists(), "refused before a run directory exists"


def test_unknown_flag_lists_the_valid_ones(tmp_path: Path) -> None:
    res = _run("run-n3.sh", tmp_path, "--colour", "red")
    assert res.returncode == 2 and "unknown option --colour" in res.stderr and "--sizes" in res.stderr


def test_flags_and_variables_are_the_same_parameters(tmp_path: Path) -> None:
    res = _run("run-n3.sh", tmp_path, "--sizes", "128", "--sets=3", DRY_RUN="1", PINGS="7", PROFILE="aes128cbc")
    assert res.returncode == 0, res.stderr
    assert "SIZES=128 SETS=3 PINGS=7" in res.stdout
    assert "results/adhoc/n3/aes128cbc/<run>/" in res.stdout


def _commands(res: subprocess.CompletedProcess[str]) -> list[str]:
    assert res.returncode == 0, res.stderr
    return [line[2:] for line in res.stdout.splitlines() if line.startswith("+ ")]


def test_run_n3_would_ping_the_host_from_ue1_through_its_pdu_session(tmp_path: Path) -> None:
    cmds = _commands(_run("run-n3.sh", tmp_path, DRY_RUN="1", PROFILE="aes256gcm", SETS="2",
                          SIZES="64 1024", PINGS="100", INTERVAL="0.1"))
    gateway = stack.load()["networks"]["n6"]["gateway"]
    ups = [c for c in cmds if "scripts/up.sh" in c]
    # created first, the whole-packet capture started on its bridge, then started
    assert ups[0].endswith("scripts/up.sh --profile aes256gcm --plane n3 --timeout 180 --create-only")
    assert ups[1].endswith("scripts/up.sh --profile aes256gcm --plane n3 --timeout 180 --start-created")
    assert cmds.index(ups[0]) < cmds.index("dumpcap -q -i g5tb-n3 -w ./n3.pcap") < cmds.index(ups[1])
    pings = [c for c in cmds if " exec -T ue1 timeout --signal=INT " in c and " env LC_ALL=C ping -D -n -c " in c]
    assert len(pings) == 1 + 2 * 2                                   # warm-up + SETS x SIZES
    # exactly -c requests (no -w: iputils would send past -c under loss); ICMP size 1024 = -s 1016
    assert not any(" -w " in c for c in pings) and all(" -W 2 " in c and "-I uesimtun0" in c for c in pings)
    assert all(c.endswith(f" {gateway}") and "docker compose -p g5tb" in c for c in pings)
    assert sum(" -c 100 -i 0.1 -W 2 -s 1016 " in c for c in pings) == 2
    assert sum(" -c 20 " in c for c in pings) == 1, "default warm-up count"
    assert not (tmp_path / "results").exists(), "a dry run writes no results"


def test_run_sbi_would_attach_cold_then_warm_on_fresh_cores(tmp_path: Path) -> None:
    cmds = _commands(_run("run-sbi.sh", tmp_path, DRY_RUN="1", PROFILE="aes256gcm-psk", ITERATIONS="2",
                          MODE="both"))
    ups = [c for c in cmds if "scripts/up.sh" in c]
    assert len(ups) == 4 and all(u.endswith("--plane sbi --timeout 180 --create-only --no-ue") for u in ups[::2])
    assert all(u.endswith("--plane sbi --timeout 180 --no-ue --start-created") for u in ups[1::2])
    assert sum("scripts/down.sh" in c for c in cmds) == 2
    assert "dumpcap -q -i g5tb-n2 -w ./it01-n2.pcap" in cmds
    assert "dumpcap -q -i g5tb-sbi -w ./it02-sbi.pcap" in cmds           # whole packets
    pos = [i for i, c in enumerate(cmds) if "scripts/up.sh" in c]
    assert pos[2] < cmds.index("dumpcap -q -i g5tb-sbi -w ./it02-sbi.pcap") < pos[3]
    starts = [c.split(" up -d --no-deps ")[1] for c in cmds if " up -d --no-deps " in c]
    assert starts == ["ue1", "ue2", "ue1", "ue2"]
    cold = _commands(_run("run-sbi.sh", tmp_path, DRY_RUN="1", PROFILE="baseline", ITERATIONS="1",
                          MODE="cold"))
    assert [c.split(" up -d --no-deps ")[1] for c in cold if " up -d --no-deps " in c] == ["ue1"]


def test_make_run_sbi_honours_mode(tmp_path: Path) -> None:
    """`make run-sbi MODE=cold` runs the cold UE only (the target once passed --mode both, which
    overrode MODE silently); without MODE both UEs attach."""
    require_tools("make")

    def started(*args: str) -> list[str]:
        r = subprocess.run(["make", "--no-print-directory", "run-sbi", "PROFILE=baseline", "ITERATIONS=1",
                            "DRY_RUN=1", "DOCTOR=0", *args], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                           text=True, timeout=180, check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        return [c.split(" up -d --no-deps ")[1] for c in _commands(r) if " up -d --no-deps " in c]

    assert started("MODE=cold") == ["ue1"]
    assert started() == ["ue1", "ue2"]


def test_run_cpu_would_scale_ues_per_count_and_repetition(tmp_path: Path) -> None:
    cmds = _commands(_run("run-cpu.sh", tmp_path, DRY_RUN="1", PROFILE="aes256gcm", UES="1 5", REPS="2"))
    scale = [c for c in cmds if "up -d --no-deps ue-scale" in c]
    assert [c.split()[1] for c in scale] == ["UES=1", "UES=1", "UES=5", "UES=5"]
    assert sum("--no-ue" in c for c in cmds) == 8                      # create + start per boot


def test_run_throughput_would_run_iperf3_from_ue1(tmp_path: Path) -> None:
    cmds = _commands(_run("run-throughput.sh", tmp_path, DRY_RUN="1", PROFILE="wireguard", REPS="1",
                          DURATION="5"))
    gateway = stack.load()["networks"]["n6"]["gateway"]
    assert f"iperf3 -s -B {gateway} -p 5201 -J" in cmds
    clients = [c for c in cmds if "exec -T ue1 timeout 35 iperf3 -c" in c]
    assert len(clients) == 2 and clients[1].endswith(" -u -b 100M") and clients[0].endswith(" -P 1")


def test_run_overlay_dry_run_needs_no_root_or_docker(tmp_path: Path) -> None:
    cmds = _commands(_run("run-overlay.sh", tmp_path, DRY_RUN="1", PROFILE="wireguard", SETS="1",
                          SIZES="64", LAB_NAME="drivers-dry"))
    assert any("-m testbed lab --name drivers-dry --plane n3 --profile wireguard" in c for c in cmds)
    assert any(c.startswith("ip netns exec drivers-dry-gnb timeout --signal=INT ") and " ping -D -n -c " in c
               for c in cmds)
    assert "ip netns exec drivers-dry-hub dumpcap -q -i br-n3 -w ./n3.pcap" in cmds


def test_campaign_dry_run_prints_the_plan(tmp_path: Path) -> None:
    res = _run("campaign.sh", tmp_path, "n3", DRY_RUN="1", BOOTS="2", SEED="3")
    assert res.returncode == 0, res.stderr
    n3 = len(profiles.names("n3"))          # every N3 profile of the catalogue, the baseline included
    lines = [line for line in res.stdout.splitlines() if line.startswith("n3.")]
    assert len(lines) == 2 * n3 and all(line.endswith("\ttodo") for line in lines)
    assert f"{2 * n3} slots, {2 * n3} to run" in res.stdout
    # randomised blocks: each block holds every profile once, in its own seeded order
    blocks = [[ln.split("\t")[1] for ln in lines if ln.split("\t")[2] == b] for b in ("1", "2")]
    assert sorted(blocks[0]) == sorted(blocks[1]) and len(set(blocks[0])) == n3 and blocks[0] != blocks[1]
    default = _run("campaign.sh", tmp_path, "n3", DRY_RUN="1", SEED="3")
    assert f"{5 * n3} slots, {5 * n3} to run" in default.stdout, "default: the experiment's BOOTS (5) blocks"
    again = _run("campaign.sh", tmp_path, "n3", DRY_RUN="1", BOOTS="2", SEED="3")
    assert again.stdout == res.stdout, "seeded order"
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("args, env, message", [
    ((), {}, "Usage:"),
    (("nonsense",), {}, "unknown experiment 'nonsense'"),
    (("n3",), {"BOOTS": "0"}, "BOOTS='0'"),
    (("n3",), {"PROFILES": "baseline tls13-aes128gcm"}, "cannot run on the n3 plane"),
    (("sbi",), {"ITERATIONS": "x"}, "ITERATIONS='x'"),
])
def test_campaign_rejects_bad_input(args: tuple, env: dict, message: str, tmp_path: Path) -> None:
    res = _run("campaign.sh", tmp_path, *args, DRY_RUN="1", **env)
    assert res.returncode == 2
    assert message in res.stderr
    assert not (tmp_path / "results").exists()


def test_make_targets_exist() -> None:
    require_tools("make")
    res = subprocess.run(["make", "help"], cwd=ROOT, capture_output=True, text=True, check=False)
    for target in ("run-n3", "run-sbi", "run-sbi-cold", "run-sbi-warm", "run-cpu", "run-throughput",
                   "run-overlay", "campaign-n3", "campaign-sbi", "campaign-overlay"):
        assert f"{target} " in res.stdout, target
    assert shutil.which("bash")


@pytest.mark.parametrize("args,needle", [
    (["run-n3", "PROFILE=aes256gcm", "SIZES=64 abc"], "SIZES='64 abc'"),
    (["run-sbi", "PROFILE=aes256gcm-trap", "ITERATIONS=0"], "ITERATIONS='0'"),
    (["run-n3", "PROFILE=tls13-aes256gcm"], "cannot run on the n3 plane"),
    (["run-cpu", "PROFILE=nosuch"], "unknown PROFILE 'nosuch'"),
])
def test_make_rejects_bad_parameters_before_the_doctor(args: list[str], needle: str) -> None:
    """A usage error (exit 2) names the parameter; the host checks never run for it."""
    r = subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert needle in r.stderr
    assert "summary:" not in r.stdout + r.stderr        # doctor's summary line: it did not run


def test_stack_and_tools_are_pinned_to_disjoint_cpus(tmp_path: Path) -> None:
    """CPUSET_STACK pins every container before it starts, CPUSET_TOOLS the captures; sets that
    overlap are refused before anything starts."""
    cmds = _commands(_run("run-n3.sh", tmp_path, DRY_RUN="1", PROFILE="aes256gcm", CPUSET_STACK="1",
                          CPUSET_TOOLS="0"))
    assert any(c.startswith("docker update --cpuset-cpus 1 ") for c in cmds), cmds
    assert any(c.startswith("taskset -c 0 dumpcap ") for c in cmds), cmds
    bad = _run("run-n3.sh", tmp_path, DRY_RUN="1", PROFILE="aes256gcm", CPUSET_STACK="0-1", CPUSET_TOOLS="1")
    assert bad.returncode == 2 and "share CPU(s) 1" in bad.stderr


def test_run_sbi_keys_copies_the_key_material_before_teardown(tmp_path: Path) -> None:
    """KEYS=1: the NFs' TLS key logs (TLS) or the holders' charon key logs (IPsec) are copied
    after the captures stop and before the stack goes; without KEYS nothing is copied."""
    for profile, want in (("tls13-aes128gcm", "+ (copy /run/open5gs/tls-keys.log from {node} of "),
                          ("aes128gcm", "+ (copy /run/testbed/charon-keys.log from {node}-net of nrf into "
                                        "it01-esp-keys-nrf.log)")):
        res = _run("run-sbi.sh", tmp_path, DRY_RUN="1", PROFILE=profile, ITERATIONS="1", MODE="cold", KEYS="1")
        lines = res.stdout.splitlines()
        assert res.returncode == 0, res.stderr
        copy = next(i for i, ln in enumerate(lines) if ln.startswith(want))
        down = next(i for i, ln in enumerate(lines) if "scripts/down.sh" in ln)
        assert copy < down
        plain = _run("run-sbi.sh", tmp_path, DRY_RUN="1", PROFILE=profile, ITERATIONS="1", MODE="cold")
        assert "(copy the" not in plain.stdout


def test_run_overlay_watcher_stops_without_a_terminated_line(tmp_path: Path) -> None:
    """run-overlay's overlay_watch (a loop around `sleep 1`), stopped by watch_stop: bash printed a
    bare `Terminated` when the sleep was killed under the loop (4 of 5 aes256gcm boots), and a
    sleep could outlive it. Stopped 12 times at random moments: no such line, no process left."""
    body = (SCRIPTS / "run-overlay.sh").read_text()
    watch = body[body.index("overlay_watch() {"):]
    watch = watch[:watch.index("\n}\n") + 3]
    script = (f'source "{SCRIPTS}/lib/common.sh"\n{watch}\n'
              'overlay_ask() { echo charon; }; overlay_daemons() { echo "ns charon"; }\n'
              f'OVERLAY_DIED="{tmp_path}/died"; GNB_NS=none\n'
              'for i in $(seq 12); do\n'
              '  overlay_watch ns & WATCH_PID=$!\n'
              '  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"; kids="$(pgrep -P "$WATCH_PID" | tr "\\n" " ")"\n'
              '  watch_stop; sleep 0.05\n'
              '  for k in $kids; do kill -0 "$k" 2>/dev/null && echo "left: $k"; done\n'
              'done; echo finished\n')
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and "finished" in res.stdout, res.stderr[-800:]
    assert "Terminated" not in res.stderr and "left:" not in res.stdout, (res.stdout, res.stderr)
    assert not (tmp_path / "died").exists()


@pytest.mark.parametrize("script, env", [
    ("run-n3.sh", {}),
    ("run-sbi.sh", {"ITERATIONS": "2", "MODE": "cold"}),
    ("run-cpu.sh", {"UES": "1 5", "REPS": "2"}),
    ("run-throughput.sh", {"REPS": "1", "DURATION": "5"}),
    ("run-secfn.sh", {"SECFN": "nat", "IDS": "suricata", "RUNS": "1", "RATES": "100", "PROTOCOLS": "udp"}),
    ("run-f1u.sh", {"RAN": "split", "SCOPE": "f1u", "IPERF": "0", "SETS": "1", "PINGS": "10"}),
    ("run-ran-procedures.sh", {"RAN": "split", "REGISTRATIONS": "1"}),
])
def test_every_docker_driver_records_what_its_verdict_needs_on_every_boot(script: str, env: dict,
                                                                          tmp_path: Path) -> None:
    """run-cpu called stack_up itself and never recorded the negotiated SAs, so every IPsec cpu run
    was INVALID ('no swanctl --list-sas record'); every driver now starts through stack_run_start
    and records each boot's SAs (`swanctl --list-sas` in every endpoint's holder) before its
    teardown."""
    from testbed import ran, registry
    cmds = _commands(_run(script, tmp_path, DRY_RUN="1", PROFILE="aes256gcm", **env))
    starts = [i for i, c in enumerate(cmds) if "scripts/up.sh" in c and c.endswith("--start-created")]
    downs = [i for i, c in enumerate(cmds) if c.endswith("scripts/down.sh")]
    downs += [len(cmds)] * (len(starts) - len(downs))      # one-boot drivers: torn down by the exit trap
    assert starts and len(starts) == len(downs) and all(s < d for s, d in zip(starts, downs)), (starts, downs)
    plane = {"run-sbi.sh": "sbi", "run-cpu.sh": "sbi", "run-f1u.sh": "f1u",
             "run-ran-procedures.sh": "f1c,e1"}.get(script, "n3")
    variant = ran.restrict(stack.load(), env.get("RAN", "ueransim"))
    nodes = registry.overlay("ipsec").endpoints(plane, variant)
    assert nodes
    for start, down in zip(starts, downs):
        boot = cmds[start:down]
        listed = {c.split(" exec -T ", 1)[1].split()[0] for c in boot if c.endswith("swanctl --list-sas")}
        assert listed == {f"{n}-net" for n in nodes}, (script, listed, nodes)
