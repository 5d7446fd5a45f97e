"""scripts/lib/common.sh's run lifecycle on failure, without Docker: the exit trap judges the
capture of a run that ended early (issue 22.14), saves the stack's evidence before the teardown
(22.1), and names the first failure in time (22.12). A stand-in `docker` on PATH records its
calls and answers as the engine would; captures and the validity check are real (tshark)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from testbed import manifest
from tests.conftest import ROOT, require_tools

COMMON = ROOT / "scripts" / "lib" / "common.sh"
SAMPLE = "open5gs-docs-pcaps/5g-roaming-lbo.pcapng"


def _bash(script: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f'set -euo pipefail; source "{COMMON}"\n{script}'], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, **(env or {})})


def test_a_run_that_ends_early_still_judges_its_capture(tmp_path: Path, shared_data: Path) -> None:
    """`validity: not checked: the run ended incomplete` although the capture was there: the exit
    trap now judges it, so the run itself says whether anything leaked after the failure."""
    require_tools("tshark")
    run = manifest.create(tmp_path, "sbi", "baseline", {"ITERATIONS": "1"}, datapath_facts={})
    shutil.copy(shared_data / SAMPLE, run / "it01-sbi.pcapng")
    manifest.add_file(run, "it01-sbi.pcapng", "pcap", {"iface": "sbi", "purpose": "validation", "iteration": 1})
    res = _bash(f'RUN_DIR="{run}"; install_traps; MEASURED=1\n'
                'die "a later step failed" 1')
    assert res.returncode == 1, res.stderr[-1500:]
    m = manifest.load(run)
    assert m["state"] == "incomplete" and m["reason"] == "a later step failed"
    assert "not checked" not in m["validity"]["details"] and "it01-sbi.pcapng" in m["validity"]["details"], m["validity"]
    assert m["validity"]["plaintext_packets"] > 100 and m["valid"] is True
    assert manifest.validate(m) == []


def test_a_run_without_a_capture_says_so(tmp_path: Path) -> None:
    run = manifest.create(tmp_path, "n3", "aes256gcm", {}, datapath_facts={})
    res = _bash(f'RUN_DIR="{run}"; install_traps\ndie "the stack did not come up" 1')
    assert res.returncode == 1
    m = manifest.load(run)
    assert m["state"] == "failed" and m["valid"] is False and "not checked" in m["validity"]["details"]


# ------------------------------------------------------------------ whole drivers, stand-in engine

SWANCTL = ("gnb-upf: #1, ESTABLISHED, IKEv2, 1a2b3c4d5e6f7a8b_i* 8b7a6f5e4d3c2b1a_r\n"
           "  local  'gnb' @ 10.100.3.5[500]\n  remote 'upf' @ 10.100.3.7[500]\n"
           "  AES_GCM_16-256/PRF_HMAC_SHA2_384/ECP_384\n")


def _driver_world(ueransim_image: str, attach: bool) -> dict:
    return {
        "default": {"status": "running", "health": "healthy", "log": "started\nready\n"},
        "containers": {svc: {"status": "running", "health": "healthy", "image": ueransim_image,
                             "log": f"[{svc}] UERANSIM v3.2.7\n[nas] [error] no PDU session\n"}
                       for svc in ("gnb", "ue1", "ue-scale")},
        "sessions": {"ue-scale": 1 if attach else 0, "ue1": 1 if attach else 0},
        "exec": [["swanctl --list-sas", SWANCTL, 0], ["wg show", "interface: wg0\n", 0],
                 ["nr-cli", "== nr-cli imsi-001010000000101 -e status\ncm-state: CM-IDLE\nrm-state: RM-DEREGISTERED\n", 0]],
        "follow_hang": True,
    }


def _in_a_namespace_with_bridges(tmp_path: Path, env: dict[str, str], networks: tuple[str, ...]):
    """A throw-away network namespace holding a bridge per network the driver captures on
    (dumpcap is real: it needs the interface), named as the STATE directory's stack names them."""
    import secrets
    from tests.conftest import require_root
    require_root()
    require_tools("ip", "dumpcap", "tshark")
    out = subprocess.run([os.environ.get("PYTHON", "python3"), "-m", "testbed.cli.instance", "--env"], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=True).stdout
    prefix = next(line.split("=", 1)[1].strip("'") for line in out.splitlines() if line.startswith("BRIDGE_PREFIX="))
    ns = f"tb-{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    for net in networks:
        subprocess.run(["ip", "-n", ns, "link", "add", f"{prefix}-{net}", "type", "bridge"], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", f"{prefix}-{net}", "up"], check=True)
    return ns


def _driver_env(tmp_path: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    drop = ("TESTBED_LOCK", "STACK_SLOT", "COMPOSE_PROJECT", "BRIDGE_PREFIX", "STATE_DIR", "DRY_RUN", "SIZES",
            "SETS", "PINGS", "UES", "REPS", "ITERATIONS", "MODE", "PLANE", "CAMPAIGN", "BOOT", "BOOTS")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update({"PATH": f"{bin_dir}:{os.environ['PATH']}", "STATE": str(tmp_path / "state"),
                "RESULTS": str(tmp_path / "results"), "AUTO_BUILD": "0", "EVIDENCE_TIMEOUT": "20", **extra})
    return env


def _ueransim_image() -> str:
    return subprocess.run(["bash", "-c", f'source "{ROOT}/scripts/lib/images.sh"; load_image_defaults "{ROOT}"; '
                           'echo "$UERANSIM_IMAGE"'], capture_output=True, text=True, check=True).stdout.strip()


def _run_driver(tmp_path: Path, script: str, networks: tuple[str, ...], world: dict, **extra: str):
    from tests.scripts import fakedocker
    bin_dir, _ = fakedocker.install(tmp_path, world)
    env = _driver_env(tmp_path, bin_dir, **extra)
    ns = _in_a_namespace_with_bridges(tmp_path, env, networks)
    try:
        res = subprocess.run(["ip", "netns", "exec", ns, "bash", str(ROOT / "scripts" / script)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=900, check=False)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    runs = manifest.runs(tmp_path / "results")
    assert len(runs) == 1, (runs, res.stderr[-3000:])
    return res, runs[0], fakedocker.calls(tmp_path)


def _logs_before_teardown(calls: list[list[str]]) -> None:
    logs = [i for i, c in enumerate(calls) if c[:1] == ["compose"] and "logs" in c and "--follow" not in c]
    downs = [i for i, c in enumerate(calls) if c[:1] == ["compose"] and "down" in c]
    assert logs and downs and max(logs) < min(downs), "every log is saved before the stack goes down"


def test_run_cpu_that_fails_keeps_the_evidence_and_the_failed_attach(tmp_path: Path) -> None:
    """The guest's `make run-cpu PROFILE=aes256gcm UES="1 2" REPS=1`: `1 UE PDU sessions (u01-r01): not
    ready after 100s`, run failed, and its directory held no container log at all. Now the failed
    attach is in attach_failures (with the UEs' and gNB's logs and nr-cli views), every container's
    log, ps, states and health are kept before the teardown, and the negotiated SAs are recorded."""
    world = _driver_world(_ueransim_image(), attach=False)
    res, run, calls = _run_driver(tmp_path, "run-cpu.sh", ("sbi",), world, PROFILE="aes256gcm", UES="1 2",
                                  REPS="1", ATTACH_TIMEOUT="2", UP_TIMEOUT="60")
    assert res.returncode == 1, res.stderr[-3000:]
    m = manifest.load(run)
    assert m["state"] == "failed" and "0 of 1 UEs" in m["reason"], m["reason"]
    assert m["attach_failures"] == [{"ue": "ue-scale", "attempt": 1, "iteration": 1, "final": True, "ues": 1,
                                     "rep": 1, "evidence": "failure/u01-r01-attach",
                                     "reason": "0 of 1 UEs had a PDU session after 2s (u01-r01)"}]
    attach = run / "failure" / "u01-r01-attach"
    assert {p.name for p in (attach / "logs").iterdir()} == {"ue-scale.log", "gnb.log"}
    assert "CM-IDLE" in (attach / "nr-cli-ue-scale.txt").read_text()
    at_exit = run / "failure" / "u01-r01-at-exit"
    logs = {p.name for p in (at_exit / "logs").iterdir()}
    assert {"amf.log", "nrf.log", "upf-net.log", "gnb.log", "ue-scale.log"} <= logs, logs
    assert (at_exit / "ps.txt").read_text().strip() and "must-not-be-recorded" not in (at_exit / "states.json").read_text()
    assert json.loads((at_exit / "states.json").read_text())
    assert (run / "u01-r01-sa-after-amf.txt").read_text() == SWANCTL
    assert (run / "u01-r01-containers.log").is_file()
    listed = {f["path"] for f in m["files"]}
    assert "failure/u01-r01-at-exit/logs/amf.log" in listed and "u01-r01-sa-after-amf.txt" in listed
    _logs_before_teardown(calls)
    assert "not checked" not in m["validity"]["details"], "the capture was judged (issue 22.14)"
    assert manifest.validate(m) == []


def _render(tmp_path: Path, profile: str = "baseline", plane: str = "n3") -> Path:
    require_tools("openssl", "wg")
    out = subprocess.run([os.environ.get("PYTHON", "python3"), "-m", "testbed", "render", "--profile", profile,
                          "--plane", plane, "--state", str(tmp_path / "state"), "--quiet"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True, env={
                             k: v for k, v in os.environ.items() if k not in ("TESTBED_LOCK", "STACK_SLOT", "STATE")})
    return Path(out.stdout.strip())


def test_every_failed_attach_attempt_keeps_the_ues_and_the_gnbs_evidence(tmp_path: Path) -> None:
    """attach_ue removes a UE whose attempt failed and starts it again: its log went with it.
    Now each failed attempt keeps the UE's and the gNB's logs and nr-cli views first, and its
    attach_failures entry says where."""
    from tests.scripts import fakedocker
    render = _render(tmp_path)
    bin_dir, _ = fakedocker.install(tmp_path, _driver_world(_ueransim_image(), attach=False))
    run = manifest.create(tmp_path / "results", "sbi", "baseline", {"ITERATIONS": "1"}, datapath_facts={})
    res = _bash(f'RUN_DIR="{run}"; RENDER="{render}"; docker_begin; stack_compose_argv "$RENDER"; DC=("${{STACK_CMD[@]}}")\n'
                'RETRIES=2; ATTACH_TIMEOUT=1\n'
                'attach_ue 1 ue1 cold it01-stack.log && echo attached || echo "not attached"',
                env=_driver_env(tmp_path, bin_dir))
    assert "not attached" in res.stdout, res.stderr[-2000:]
    m = manifest.load(run)
    assert [(f["attempt"], f["final"], f["evidence"]) for f in m["attach_failures"]] == \
        [(1, False, "failure/it01-ue1-attempt1"), (2, True, "failure/it01-ue1-attempt2")]
    for attempt in (1, 2):
        ev = run / "failure" / f"it01-ue1-attempt{attempt}"
        assert {p.name for p in (ev / "logs").iterdir()} == {"ue1.log", "gnb.log"}
        assert "[nas] [error] no PDU session" in (ev / "logs" / "ue1.log").read_text()
        assert "CM-IDLE" in (ev / "nr-cli-ue1.txt").read_text() and (ev / "nr-cli-gnb.txt").is_file()
    calls = fakedocker.calls(tmp_path)
    # by container id where the listing named it (`docker logs cid-ue1`), else through compose
    kept = [i for i, c in enumerate(calls) if (c[:1] == ["logs"] and "cid-ue1" in c)
            or (c[:1] == ["compose"] and "logs" in c and "ue1" in c and "--follow" not in c and "--tail" not in c)]
    removed = [i for i, c in enumerate(calls) if c[:1] == ["compose"] and "rm" in c and "ue1" in c]
    assert len(kept) == 2 and len(removed) == 2 and all(k < r for k, r in zip(kept, removed)), (kept, removed)


def test_a_stack_that_passes_its_deadline_says_so_and_what_was_still_starting(tmp_path: Path) -> None:
    """The guest's TLS run-sbi: nothing failed, the deadline came while NFs were still starting, and
    the reason was up.sh's last lines (`evidence incomplete ...`), not its first error."""
    from tests.scripts import fakedocker
    require_tools("openssl")
    world = {"default": {"status": "running", "health": "starting"}, "containers": {"gnb": {"status": "created"}},
             "slow": {"up": 30}}
    bin_dir, _ = fakedocker.install(tmp_path, world)
    run = manifest.create(tmp_path / "results", "sbi", "baseline", {"ITERATIONS": "1"}, datapath_facts={})
    res = _bash(f'RUN_DIR="{run}"; PROFILE=baseline; PROTOCOL=none; PLANE=sbi; UP_TIMEOUT=3\n'
                'docker_begin; install_traps\n'
                'stack_run_start it01-stack-up.log --no-ue\n'
                'echo "not reached"', env=_driver_env(tmp_path, bin_dir), timeout=600)
    assert res.returncode == 1 and "not reached" not in res.stdout, res.stderr[-3000:]
    reason = manifest.load(run)["reason"]
    assert "did not come up: `docker compose up` failed or passed the 3s deadline" in reason, reason
    assert "still starting (not healthy yet): " in reason and "amf" in reason and "never started: gnb" in reason, reason


def test_a_stack_that_does_not_come_up_is_named_by_its_first_failure(tmp_path: Path) -> None:
    """`make run-sbi PROFILE=wireguard` in the guest: nssf's holder gave up first, yet the run named
    `gnb`, a container only created, and kept no log. The driver's reason is now the first failure
    in time (with its last log line), and up.sh's evidence is in the run directory."""
    from tests.scripts import fakedocker
    from tests.scripts.test_stack_scripts import _failed_wireguard_world
    require_tools("openssl", "wg")
    bin_dir, _ = fakedocker.install(tmp_path, _failed_wireguard_world())
    run = manifest.create(tmp_path / "results", "sbi", "wireguard", {"ITERATIONS": "1"}, datapath_facts={})
    res = _bash(f'RUN_DIR="{run}"; PROFILE=wireguard; PROTOCOL=wireguard; PLANE=sbi; UP_TIMEOUT=5\n'
                'docker_begin; install_traps\n'
                'stack_create it01-stack-up.log --no-ue\n'
                'stack_run_start it01-stack-up.log --no-ue\n'
                'echo "not reached"', env=_driver_env(tmp_path, bin_dir), timeout=600)
    assert res.returncode == 1 and "not reached" not in res.stdout, res.stderr[-3000:]
    m = manifest.load(run)
    assert m["state"] == "failed"
    assert "did not come up: first failure: nssf-net (g5tb-nssf-net-1) exited (code 1)" in m["reason"], m["reason"]
    assert "no WireGuard handshake within 60s with: amf nrf" in m["reason"] and "failure/it01-stack-up/" in m["reason"]
    ev = run / "failure" / "it01-stack-up"
    assert len((ev / "logs" / "nssf-net.log").read_text().splitlines()) == 201 and (ev / "states.json").is_file()
    assert not (run / "failure" / "it01-at-exit").exists(), "up.sh took the stack down: nothing left to save"
    assert sum(c[:1] == ["compose"] and "down" in c for c in fakedocker.calls(tmp_path)) == 1
