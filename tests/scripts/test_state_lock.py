"""One run at a time per STATE directory (scripts/lib/state.sh, testbed/statelock.py), and two
stacks side by side on different STATE directories (testbed/instance.py), through `make up
DRY_RUN=1`: no Docker needed. The first dry run is held inside its render by a gate in the
PYTHON it runs (a wrapper that waits for a file before the `render` command), so the second
one meets the lock for certain."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import instance as stack_instance
from testbed import statelock
from tests.conftest import ROOT


def gated_python(tmp_path: Path) -> tuple[Path, Path]:
    gate = tmp_path / "gate"
    wrapper = tmp_path / "python"
    wrapper.write_text("#!/usr/bin/env bash\n"
                       'for a in "$@"; do if [ "$a" = render ]; then\n'
                       f'  for _ in $(seq 600); do [ -e {gate} ] && break; sleep 0.1; done\n'
                       "fi; done\n"
                       f'exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, gate


def make_up(state: Path, python: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TESTBED_LOCK", "STACK_SLOT", "COMPOSE_PROJECT",
                                                            "BRIDGE_PREFIX", "STATE_DIR")}
    return subprocess.Popen(["make", "--no-print-directory", "up", "DRY_RUN=1", f"STATE={state}",
                             f"PYTHON={python}", *extra], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_holder(state: Path, proc: subprocess.Popen[str]) -> dict[str, str]:
    for _ in range(600):
        h = statelock.holder(state)
        if h.get("command", "").startswith("scripts/up.sh"):
            return h
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    pytest.fail("the first dry run never took the lock")


def test_two_concurrent_make_up_dry_runs_the_second_fails_naming_the_first(tmp_path: Path) -> None:
    python, gate = gated_python(tmp_path)
    state = tmp_path / "state"
    first = make_up(state, python)
    try:
        holder = wait_for_holder(state, first)
        second = make_up(state, python)
        out, err = second.communicate(timeout=120)
        assert second.returncode != 0
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, err
        assert f"is in use by pid {holder['pid']} (`scripts/up.sh --profile baseline (profile baseline, DRY_RUN=1)`)" \
            in errors[0] and f"since {holder['since']}" in errors[0] and "STATE=<dir>" in errors[0]
        assert "Traceback" not in err and "docker" not in err.lower().replace("docker compose -p", "")
    finally:
        gate.touch()
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-2000:]
    assert "DRY_RUN: nothing started" in err and "+ env -u PROFILE" in out + err
    # released with the first run: the next one goes through
    third = make_up(state, python)
    out, err = third.communicate(timeout=300)
    assert third.returncode == 0, err[-2000:]


def test_another_state_runs_its_own_stack_beside(tmp_path: Path) -> None:
    python, gate = gated_python(tmp_path)
    # the address slot comes from a hash of the directory (1 of 99, testbed/instance.py): two
    # random directories meet on one slot about once in 99, which the docs leave to STACK_SLOT,
    # so the second directory is one whose slot differs
    a = tmp_path / "a"
    b = next(d for d in (tmp_path / f"b{i}" for i in range(100))
             if stack_instance.of(d, env={}).slot != stack_instance.of(a, env={}).slot)
    first = make_up(a, python)
    try:
        wait_for_holder(a, first)
        second = make_up(b, python)
        gate.touch()
        out_b, err_b = second.communicate(timeout=300)
    finally:
        gate.touch()
    out_a, err_a = first.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, err_a[-1000:] + err_b[-1000:]

    def instance(err: str) -> tuple[str, str]:
        line = next(x for x in err.splitlines() if "DRY_RUN: nothing started" in x)
        project = line.split("project ", 1)[1].split(",", 1)[0]
        bridges = line.split("bridges ", 1)[1].split("-<network>", 1)[0]
        return project, bridges

    (pa, ba), (pb, bb) = instance(err_a), instance(err_b)
    assert pa != pb and ba != bb and pa.startswith("g5tb-") and len(f"{ba}-sbi") <= 15
    env_a = (a / "render/n3/baseline/compose.env").read_text()
    env_b = (b / "render/n3/baseline/compose.env").read_text()
    subnet = [line for line in env_a.splitlines() if line.startswith("NET_SBI_SUBNET=")][0]
    assert subnet != [line for line in env_b.splitlines() if line.startswith("NET_SBI_SUBNET=")][0]
    assert subnet != "NET_SBI_SUBNET=10.100.1.0/24", "a second STATE never takes the default addresses"
    assert f"-p {pa} " in out_a + err_a


def test_the_python_commands_honour_the_lock_and_its_holders_children(tmp_path: Path) -> None:
    with statelock.hold(tmp_path, "holder under test"):
        res = subprocess.run([sys.executable, "-m", "testbed", "render", "--state", str(tmp_path)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120,
                             env={k: v for k, v in os.environ.items() if k != statelock.HELD_ENV})
        assert res.returncode == 1 and "`holder under test`" in res.stderr and "Traceback" not in res.stderr
        child = subprocess.run([sys.executable, "-m", "testbed", "render", "--state", str(tmp_path), "--quiet"],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)   # inherits TESTBED_LOCK
        assert child.returncode == 0, child.stderr
    with pytest.raises(statelock.Busy, match="no longer running"):
        fd = os.open(tmp_path / statelock.LOCK, os.O_RDWR)
        import fcntl
        fcntl.flock(fd, fcntl.LOCK_EX)
        statelock.write_holder(tmp_path, "gone", pid=2 ** 22 + 7)
        try:
            with statelock.hold(tmp_path):
                pass
        finally:
            os.close(fd)


def test_read_only_commands_never_wait_for_a_run(tmp_path: Path) -> None:
    """`make check-config` was refused with "state directory .state is in use" while a run held
    the lock (issue 22.5). Checks (rendering into a temporary directory), `profiles`, `help` and
    the analysis need no lock and write nothing into the state directory; `make render`, which
    writes it, is still refused."""
    state = tmp_path / "state"
    env0 = {k: v for k, v in os.environ.items() if k not in (statelock.HELD_ENV, "STATE")}
    # the keys a run has (check-config reads them; it makes missing ones as `make keys` would)
    subprocess.run([sys.executable, "-m", "testbed", "keys", "--state", str(state)], cwd=ROOT, env=env0,
                   capture_output=True, text=True, timeout=300, check=True)
    statelock.write_holder(state, "a run under test", pid=os.getpid())
    holder = subprocess.Popen(["flock", str(state / statelock.LOCK), "sleep", "600"])   # another process's lock
    env = {k: v for k, v in os.environ.items() if k not in (statelock.HELD_ENV, "PROFILE", "PLANE", "STATE")}
    try:
        for _ in range(100):
            probe = subprocess.run(["flock", "-n", str(state / statelock.LOCK), "true"], check=False)
            if probe.returncode != 0:
                break
            time.sleep(0.05)
        before = sorted(p.relative_to(state) for p in state.rglob("*"))

        def run(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(list(argv), cwd=ROOT, capture_output=True, text=True, timeout=600, env=env,
                                  check=False)

        for argv in ([sys.executable, "-m", "testbed", "check-config", "--profile", "aes256gcm", "--plane", "n3",
                      "--state", str(state)],
                     ["make", "--no-print-directory", "check-config", "PROFILE=wireguard", "PLANE=n3", f"STATE={state}"],
                     ["make", "--no-print-directory", "profiles", f"STATE={state}"],
                     ["make", "--no-print-directory", "help", f"STATE={state}"],
                     [sys.executable, "-m", "analysis", "list-figures"]):
            res = run(*argv)
            assert res.returncode == 0 and "in use" not in res.stderr, (argv, res.stderr[-1500:])
        assert sorted(p.relative_to(state) for p in state.rglob("*")) == before, "nothing written into STATE"
        refused = run("make", "--no-print-directory", "render", "PROFILE=baseline", f"STATE={state}")
        assert refused.returncode != 0 and "`a run under test`" in refused.stderr
    finally:
        holder.kill()
        holder.wait()
