"""scripts/up.sh, down.sh, logs.sh, smoke.sh and lib/compose.sh: lint, usage, and behaviour
without a Docker engine (they must say what is missing). The bring-up itself is tested by
tests/e2e on a Docker host."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_tools

SCRIPTS = ["scripts/up.sh", "scripts/down.sh", "scripts/logs.sh", "scripts/smoke.sh"]


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_shellcheck_clean() -> None:
    require_tools("shellcheck")
    res = subprocess.run(["shellcheck", "-x", *SCRIPTS, "scripts/lib/compose.sh",
                          "compose/entrypoints/holder.sh", "compose/entrypoints/upf.sh"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout


@pytest.mark.parametrize("script", SCRIPTS + ["compose/entrypoints/upf.sh", "compose/entrypoints/holder.sh"])
def test_help_and_usage_errors(script: str) -> None:
    ok = run(script, "--help")
    assert ok.returncode == 0 and "usage:" in ok.stdout
    bad = run(script, "--no-such-option")
    assert bad.returncode == 2 and "usage:" in bad.stderr


def test_up_rejects_bad_numbers_before_touching_docker() -> None:
    res = run("scripts/up.sh", "--ues", "many")
    assert res.returncode == 2 and "--ues must be a number" in res.stderr


def _engine_missing() -> str | None:
    docker = subprocess.run(["bash", "-c", "command -v docker"], capture_output=True, text=True)
    if docker.returncode != 0:
        return "docker CLI not found"
    if subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30).returncode != 0:
        return "Compose v2"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode != 0:
        return "cannot reach the Docker engine"
    return None


def test_up_without_docker_says_what_is_missing_and_starts_nothing(tmp_path) -> None:
    missing = _engine_missing()
    if missing is None:
        pytest.skip("this host has a Docker engine with Compose v2: the e2e tests cover up.sh")
    res = run("scripts/up.sh", STATE=str(tmp_path))
    assert res.returncode == 1
    assert missing in res.stderr and "make doctor" in res.stderr
    assert not (tmp_path / "stack.current").exists()


def test_up_ignores_the_cpu_experiments_ues_list_in_the_environment(tmp_path) -> None:
    """make run-cpu UES="1 5 10 20" exports UES: up.sh must not read it as its own --ues
    (it used to stop with '--ues must be a number, got 1 5 10 20')."""
    import os
    import subprocess
    from tests.conftest import ROOT
    env = {**os.environ, "UES": "1 5 10 20", "STATE": str(tmp_path)}
    res = subprocess.run(["bash", str(ROOT / "scripts" / "up.sh"), "--profile", "baseline"], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert "--ues must be a number" not in res.stderr, res.stderr[-500:]
    bad = subprocess.run(["bash", str(ROOT / "scripts" / "up.sh"), "--ues", "1 5"], env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "--ues must be a number, got 1 5" in bad.stderr


def test_wait_ue_session_blocks_on_the_log_stream_without_polling(tmp_path) -> None:
    """scripts/lib/common.sh wait_ue_session reads one `compose logs --follow` stream (here a
    stand-in for the compose command that prints UERANSIM's line, then idles): it returns as the
    line arrives, runs the compose command exactly once, and gives up at its deadline."""
    import subprocess
    import time
    from tests.conftest import ROOT
    calls = tmp_path / "calls"
    fake = tmp_path / "compose"
    fake.write_text("#!/usr/bin/env bash\necho call >> " + str(calls) + "\n"
                    "sleep 0.3; echo '[app] [info] Connection setup for PDU session[1] is successful, "
                    "TUN interface[uesimtun0, 10.45.0.2] is up.'\n"
                    "[[ \"$WITH_LINE\" == 1 ]] || exit 0\nsleep 30\n")
    fake.chmod(0o755)
    script = (f'source "{ROOT}/scripts/lib/common.sh"; DRY_RUN=0; DC=("{fake}"); STACK_ALL_PROFILES=(); '
              'wait_ue_session ue1 "$DEADLINE"')
    t0 = time.monotonic()
    ok = subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin", "WITH_LINE": "1", "DEADLINE": "20"},
                        capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert ok.returncode == 0 and took < 5, (ok.returncode, took, ok.stderr[-500:])
    assert calls.read_text().count("call") == 1
    fake.write_text("#!/usr/bin/env bash\necho '[nas] [info] still trying'\nsleep 30\n")
    t0 = time.monotonic()
    late = subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin", "DEADLINE": "2"},
                          capture_output=True, text=True, timeout=60)
    assert late.returncode == 1 and 1.5 < time.monotonic() - t0 < 10, late.stderr[-500:]


def test_make_up_checks_the_profile_before_the_host(tmp_path) -> None:
    """An unknown profile is a usage error listing the valid ones, even on a host without Docker
    (it used to say "docker compose not available")."""
    import subprocess
    from tests.conftest import ROOT
    res = subprocess.run(["make", "--no-print-directory", "up", "PROFILE=no-such-profile", f"STATE={tmp_path}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode != 0 and "unknown PROFILE 'no-such-profile'" in res.stderr, res.stderr[-500:]
    assert "aes256gcm" in res.stderr and "docker compose" not in res.stderr


def test_make_help_is_plain_text_when_piped_and_lookalike_variables_warn() -> None:
    import subprocess
    from tests.conftest import ROOT
    res = subprocess.run(["make", "--no-print-directory", "help", "PING=10"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=False)
    assert res.returncode == 0 and "\x1b[" not in res.stdout and "run-n3" in res.stdout
    assert "PING is not a variable of this Makefile: did you mean PINGS?" in res.stderr


def _stand_in_docker(tmp_path, events: str, inspect: str = "", ps: str = "") -> Path:
    """A stand-in `docker` in tmp_path that appends every call to tmp_path/calls (returned);
    `docker events` runs the shell lines `events`, then holds its output open (`exec sleep 30`)
    as the engine's stream does; `docker inspect` prints `inspect`, `docker compose ... ps -q`
    prints `ps`; anything else succeeds silently."""
    calls = tmp_path / "calls"
    (tmp_path / "docker").write_text(
        "#!/usr/bin/env bash\necho \"$*\" >> " + str(calls) + "\n"
        f"[[ \"$1\" != inspect ]] || {{ printf '%s' '{inspect}'; exit 0; }}\n"
        f"[[ \"$1 $*\" != compose*' ps -q '* ]] || {{ printf '%s' '{ps}'; exit 0; }}\n"
        "[[ \"$1\" == events ]] || exit 0\n" + events + "exec sleep 30\n")
    (tmp_path / "docker").chmod(0o755)
    return calls


def _watch(tmp_path, settings: str, then: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """scripts/lib/common.sh's overlay watcher of a run-n3 (project g5tb, UE ue1) against the
    stand-in `docker` of tmp_path, until the first failure is on file (10 s at most), then the
    shell commands `then`; `settings` are variable assignments before it starts. Returns the
    result and the seconds it took."""
    script = (f'source "{ROOT}/scripts/lib/common.sh"; DRY_RUN=0; PROTOCOL=ipsec; RUN_DIR="{tmp_path}"; '
              f'COMPOSE_PROJECT=g5tb; DC=(docker compose -p g5tb); STACK_ALL_PROFILES=(); {settings}'
              'docker_watch_start ue1; for _ in $(seq 100); do [[ -s "$OVERLAY_DIED" ]] && break; sleep 0.1; done; '
              + then)
    t0 = time.monotonic()
    res = subprocess.run(["bash", "-c", script], env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=60)
    return res, time.monotonic() - t0


def test_docker_watch_stops_the_pings_when_an_overlay_container_dies(tmp_path) -> None:
    """scripts/lib/common.sh docker_watch_start (run-n3): it reads the engine's event stream for
    the project (here a stand-in `docker` that reports a healthy event, then a holder's death),
    ignores the healthy one, writes overlay-died.txt naming the container, and interrupts the UE's
    ping through the compose exec line."""
    # the stand-in's `sleep 30` holds the test's stderr open: run() returns within 10 s only if
    # watch_stop ends the event stream (the watcher reads on after the first failure: issue 22.12)
    calls = _stand_in_docker(tmp_path, "echo '1767261600000000000|g5tb-upf-net-1|health_status: healthy'; sleep 0.5\n"
                                       "echo '1767261600500000000|g5tb-upf-net-1|die'\n")
    res, took = _watch(tmp_path, "", 'sleep 0.5; watch_stop; echo "watch ended"')
    assert res.returncode == 0 and "watch ended" in res.stdout and took < 10, res.stderr[-500:]
    died = (tmp_path / "overlay-died.txt").read_text()
    assert "container g5tb-upf-net-1: die" in died and "healthy" not in died
    lines = calls.read_text().splitlines()
    assert any(ln.startswith("events ") and "label=com.docker.compose.project=g5tb" in ln for ln in lines)
    assert "compose -p g5tb exec -T ue1 pkill -INT -x ping" in lines


def test_make_help_shows_the_real_state_paths_and_every_run_sbi_knob(tmp_path) -> None:
    """`make help` printed `$(STATE)/render` unexpanded, and its run-sbi line did not mention NAS=."""
    res = subprocess.run(["make", "--no-print-directory", "help", f"STATE={tmp_path}/st"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert "$(" not in res.stdout, [line for line in res.stdout.splitlines() if "$(" in line]
    assert f"{tmp_path}/st/render" in res.stdout and f"{tmp_path}/st/keys" in res.stdout
    default = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True,
                             timeout=60, check=False, env={k: v for k, v in os.environ.items() if k != "STATE"})
    assert ".state/render" in default.stdout
    sbi = [line for line in res.stdout.splitlines() if line.split()[:1] == ["run-sbi"]]
    assert len(sbi) == 1 and "NAS=" in sbi[0], sbi


@pytest.mark.parametrize("target", ["help", "profiles"])
def test_make_listing_into_a_closed_pipe_ends_quietly(target: str) -> None:
    """`make profiles | head -1` ended in a BrokenPipeError traceback (and `make help` in make's
    'Broken pipe' error): a reader that stops early is no error of a listing."""
    r, w = os.pipe()
    os.close(r)                     # the reader is gone before anything is written
    try:
        res = subprocess.run(["make", "--no-print-directory", target], cwd=ROOT, stdout=w,
                             stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(w)
    assert res.returncode == 0 and res.stderr == "", res.stderr


def _failed_wireguard_world() -> dict:
    """The guest's WireGuard start under load (issue 22.11/22.12/22.15): nssf's holder gave up
    first, amf's 47 s later, the gNB was only created; each left 200 log lines."""
    noise = "".join(f"wireguard: waiting for the handshake ({i})\n" for i in range(200))
    return {
        "default": {"status": "running", "health": "healthy"},
        "containers": {
            "nssf-net": {"status": "exited", "exit": 1, "finished": "2026-01-01T10:00:05.250000000Z",
                         "log": noise + "wireguard: ERROR: no WireGuard handshake within 60s with: amf nrf\n"},
            "amf-net": {"status": "exited", "exit": 1, "finished": "2026-01-01T10:00:52.250000000Z",
                        "log": noise + "wireguard: ERROR: peer nssf never answered\n"},
            "gnb": {"status": "created", "log": ""},
        },
    }


def test_a_failed_bring_up_keeps_the_evidence_and_prints_a_short_summary(tmp_path) -> None:
    """up.sh printed 40 log lines of every failed service to the terminal (in the guest: 4 minutes
    of logs) and kept nothing, and its driver named `gnb`, a container only created. Now: every
    container's log, ps, states and health saved before the teardown, a few lines on the terminal
    naming the first failure in time, the later ones as consequences and what never started."""
    from tests.scripts import fakedocker
    require_tools("wg", "openssl")
    bin_dir, _ = fakedocker.install(tmp_path, _failed_wireguard_world())
    ev = tmp_path / "evidence"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STATE": str(tmp_path / "state"),
           "AUTO_BUILD": "0"}
    for k in ("TESTBED_LOCK", "STACK_SLOT", "COMPOSE_PROJECT", "BRIDGE_PREFIX", "STATE_DIR", "DRY_RUN"):
        env.pop(k, None)
    res = subprocess.run(["bash", "scripts/up.sh", "--profile", "wireguard", "--plane", "sbi", "--no-ue",
                          "--timeout", "3", "--evidence", str(ev)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600, check=False)
    assert res.returncode == 1, res.stderr[-2000:]
    after_start = res.stderr.split("starting ", 1)[-1]
    assert len(after_start.splitlines()) < 20, after_start[-3000:]
    assert "waiting for the handshake" not in res.stderr, "no log lines on the terminal"
    assert "first failure: nssf-net (g5tb-nssf-net-1) exited (code 1) at 10:00:05.250Z; its last log line: " \
           "wireguard: ERROR: no WireGuard handshake within 60s with: amf nrf" in res.stderr, res.stderr[-2000:]
    assert "then (consequences): amf-net exited (code 1) (+47.0 s)" in res.stderr
    assert "never started (waiting on the above): gnb" in res.stderr
    assert f"evidence (logs/<service>.log, ps.txt, states.json, nr-cli-<service>.txt): {ev}" in res.stderr
    assert len((ev / "logs" / "nssf-net.log").read_text().splitlines()) == 201
    assert {p.name for p in (ev / "logs").iterdir()} >= {"nssf-net.log", "amf-net.log", "gnb.log", "nrf.log"}
    assert "nssf-net" in (ev / "ps.txt").read_text()
    states = (ev / "states.json").read_text()
    assert '"exit_code": 1' in states and "must-not-be-recorded" not in states
    made = fakedocker.calls(tmp_path)
    logs = [i for i, c in enumerate(made) if c[:1] == ["logs"] or (c[:1] == ["compose"] and "logs" in c)]
    downs = [i for i, c in enumerate(made) if c[:1] == ["compose"] and "down" in c]
    assert logs and downs and max(logs) < min(downs), "the logs are saved before the teardown"


def test_the_overlay_watcher_names_the_first_failure_in_time_and_its_consequences(tmp_path) -> None:
    """Killing charon in the UPF's N3 holder mid-set: the run's reason was `container g5tb-gnb-1:
    die`, a consequence (the watcher kept one line). It now keeps every failure with the engine's
    time, stops the pings once, and the reason is the first in time, the later ones (one entry per
    container) listed as consequences."""
    calls = _stand_in_docker(tmp_path, "echo '1767261600100000000|g5tb-upf-net-1|die'; sleep 0.3\n"
                                       "echo '1767261600512000000|g5tb-gnb-1|die'; sleep 0.2\n"
                                       "echo '1767261600600000000|g5tb-gnb-1|kill'\n"
                                       "echo '1767261600700000000|g5tb-nrf-1|health_status: healthy'\n")
    res, took = _watch(tmp_path, "WATCH_SETTLE_S=4; ", 'echo "REASON: $(overlay_died_reason)"; watch_stop')
    assert res.returncode == 0 and took < 15, res.stderr[-800:]
    reason = res.stdout.split("REASON: ", 1)[1].strip()
    assert reason == ("first failure: container g5tb-upf-net-1: die at 10:00:00.100Z; "
                      "then (consequences): g5tb-gnb-1: die (+0.4 s)"), reason
    stops = [line for line in calls.read_text().splitlines() if "pkill -INT -x ping" in line]
    assert len(stops) == 1, "the pings are stopped once, at the first failure"


def test_the_overlay_watcher_reports_at_once_and_times_a_death_by_its_exit(tmp_path) -> None:
    """In the guest a killed charon's holder exited at 07:30:47.128, the engine's `die` came 2.3 s
    later and the driver's reason 9 s after that, naming both times (issue 30 item 6). The watcher
    now says so the moment the event arrives, stops the pings with a plain `docker exec` on the
    container found before the set (no Compose project load), settles counting from the last
    event (not 2 s more after the pings ended), runs no Python before the reason (the manifest
    events are written at watch_stop), and times a death once: by its exit, as the stack's
    evidence does, which then adds only the container's last log line."""
    calls = _stand_in_docker(
        tmp_path, "echo '1767261602300000000|g5tb-upf-net-1|die'; sleep 0.4\n"
                  "echo '1767261602700000000|g5tb-gnb-1|die'\n",
        inspect="/g5tb-upf-net-1 2026-01-01T10:00:00.000000000Z 1\n/g5tb-gnb-1 2026-01-01T10:00:02.650000000Z 137\n",
        ps="c0ffee\n")
    py = tmp_path / "python-calls"
    fake_python = tmp_path / "fake-python"
    fake_python.write_text(f"#!/usr/bin/env bash\necho \"$*\" >> {py}\n")
    fake_python.chmod(0o755)
    then = ('sleep 2.5; t0=$EPOCHREALTIME; r="$(overlay_died_reason)"; '
            'echo "TOOK: $(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))"; echo "REASON: $r"; '
            f'[[ ! -e {py} ]] || echo "PYTHON BEFORE THE REPORT"; '
            'RUN_REASON="the overlay died during set 1 (size 64): $r; the run is invalid"; '
            '_reason_add_stack_failure "first failure: upf-net (g5tb-upf-net-1) exited (code 1) at 10:00:00.000Z; '
            'its last log line: charon died"; echo "FINAL: $RUN_REASON"; watch_stop')
    res, took = _watch(tmp_path, f"PYTHON={fake_python}; ", then)
    assert res.returncode == 0 and took < 15, res.stderr[-800:]
    assert "overlay watcher: container g5tb-upf-net-1: die (the engine's event at 10:00:02.300Z): " \
           "stopping the pings" in res.stderr, res.stderr[-800:]
    assert "exec c0ffee pkill -INT -x ping" in calls.read_text().splitlines()
    out = dict(line.split(": ", 1) for line in res.stdout.splitlines() if ": " in line)
    assert int(out["TOOK"]) < 1000, out          # the 2 s of quiet had passed: no new wait
    assert "PYTHON BEFORE THE REPORT" not in res.stdout
    assert out["REASON"] == ("first failure: container g5tb-upf-net-1 exited (code 1) at 10:00:00.000Z; "
                             "then (consequences): g5tb-gnb-1 exited (code 137) (+2.6 s)"), out
    assert out["FINAL"] == ("the overlay died during set 1 (size 64): " + out["REASON"]
                            + "; the run is invalid; g5tb-upf-net-1's last log line: charon died"), out
    events = [line for line in py.read_text().splitlines() if " event " in line]
    assert len(events) == 2 and "g5tb-upf-net-1 exited (code 1)" in events[0], events


def test_a_stack_failure_the_watcher_did_not_name_is_added_whole() -> None:
    """scripts/lib/watch.sh _reason_add_stack_failure: another container's failure, or one with no
    watcher reason, goes into the reason whole; one already in it is not repeated."""
    line = "first failure: amf-net (g5tb-amf-net-1) exited (code 1) at 10:00:00.000Z; its last log line: x"
    script = (f'source "{ROOT}/scripts/lib/common.sh"; '
              'RUN_REASON=""; _reason_add_stack_failure "$1"; echo "A: $RUN_REASON"; '
              'RUN_REASON="ping failed"; _reason_add_stack_failure "$1"; echo "B: $RUN_REASON"; '
              '_reason_add_stack_failure "$1"; echo "C: $RUN_REASON"; '
              'RUN_REASON="first failure: container g5tb-upf-net-1 exited (code 1) at 09:00:00.000Z"; '
              '_reason_add_stack_failure "$1"; echo "D: $RUN_REASON"')
    res = subprocess.run(["bash", "-c", script, "bash", line], capture_output=True, text=True, timeout=60)
    out = dict(ln.split(": ", 1) for ln in res.stdout.splitlines())
    assert out["A"] == line and out["B"] == f"ping failed; in the stack, {line}" and out["C"] == out["B"]
    assert out["D"].endswith(f"in the stack, {line}"), res.stdout + res.stderr
