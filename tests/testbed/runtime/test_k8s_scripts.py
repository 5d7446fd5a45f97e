"""The Kubernetes runtime's scripts without a cluster: make doctor ENGINE=k8s and k8s-up/down say
what is missing (kubectl, the cluster, the render) and start nothing; k8s-up's start order against
a kubectl that records its calls (every pod with a holder at once, then the gates wave by wave)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.runtime.k8s import pods, render as k8s_render
from tests.conftest import ROOT, require_tools
from tests.testbed.runtime.helpers import by_kind, render_k8s

K8S_SH = ROOT / "testbed" / "runtime" / "k8s" / "k8s.sh"


def _run(cmd: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable, **env})


def test_doctor_without_kubectl_names_it_and_checks_nothing_else() -> None:
    res = _run(["bash", "scripts/doctor.sh"], ENGINE="k8s", KUBECTL="kubectl-absent-here")
    assert res.returncode == 1
    assert "[FAIL] kubectl (kubectl-absent-here): not found on PATH" in res.stdout
    assert "nothing was checked or started" in res.stdout and "Docker" not in res.stdout


def test_doctor_refuses_an_unknown_engine() -> None:
    res = _run(["bash", "scripts/doctor.sh"], ENGINE="nomad")
    assert res.returncode == 2 and "ENGINE=nomad: not a runtime" in res.stderr


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_k8s("baseline", "n3", tmp_path_factory.mktemp("k8s") / "r").dir


def test_up_without_kubectl_starts_nothing(rendered: Path) -> None:
    res = _run(["bash", str(K8S_SH), "up", str(rendered)], KUBECTL="kubectl-absent-here")
    assert res.returncode == 1
    assert "kubectl (kubectl-absent-here) not found on PATH" in res.stderr and "nothing was started" in res.stderr
    res = _run(["bash", str(K8S_SH), "down", "g5tb"], KUBECTL="kubectl-absent-here")
    assert res.returncode == 1 and "not found on PATH" in res.stderr


def test_up_applies_nothing_when_the_cluster_does_not_answer(rendered: Path, tmp_path: Path) -> None:
    """A kubectl that records its calls and finds no cluster: the preflight stops k8s-up before
    any apply."""
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/usr/bin/env bash\necho "$*" >>"{calls}"\necho "connection refused" >&2\nexit 1\n')
    fake.chmod(0o755)
    res = _run(["bash", str(K8S_SH), "up", str(rendered)], KUBECTL=str(fake))
    assert res.returncode == 3 and "no cluster answers" in res.stderr
    assert calls.read_text().splitlines() == ["get --raw=/readyz --request-timeout=10s"]


def test_up_wants_a_render_and_usage_is_a_usage_error(tmp_path: Path) -> None:
    res = _run(["bash", str(K8S_SH), "up", str(tmp_path)])
    assert res.returncode == 1 and "render first" in res.stderr
    assert _run(["bash", str(K8S_SH), "bogus"]).returncode == 2


def test_the_scripts_are_shellcheck_clean() -> None:
    require_tools("shellcheck")
    res = subprocess.run(["shellcheck", "-x", str(K8S_SH), str(K8S_SH.parent / "doctor.sh")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout


FAKE_CLUSTER = '''#!{python}
"""kubectl as a one-node cluster with Multus would answer k8s-up: every call logged, applied
objects logged as kind/name, every wait met at once but the start gate's of the pod FAIL_GATE
names (its holder never starts)."""
import json, os, sys
import yaml
args = sys.argv[1:]
log = open({calls!r}, "a")
log.write("kubectl " + " ".join(args) + "\\n")
if "wait" in args[2:3] and f"pod/{{os.environ.get('FAIL_GATE')}}" in args and "started}}=true" in " ".join(args):
    sys.exit(1)
if "wait" in args[2:3] and f"pod/{{os.environ.get('HANG_GATE')}}" in args and "started}}=true" in " ".join(args):
    log.write("hanging\\n"); log.flush()
    import time; time.sleep(120)
if "wait" in args[2:3] and f"pod/{{os.environ.get('SLOW_GATE', ':').split(':')[0]}}" in args and "started}}=true" in " ".join(args):
    import time; time.sleep(float(os.environ["SLOW_GATE"].split(":")[1]))   # its holder starts late
if "exec" in args[2:3] and args[3:4] == [os.environ.get("EXEC_TIMEOUTS", ":").split(":")[0]] and "touch" in args:
    tries = {calls!r} + ".exec-tries"
    n = int(open(tries).read()) if os.path.exists(tries) else 0
    open(tries, "w").write(str(n + 1))
    if n < int(os.environ["EXEC_TIMEOUTS"].split(":")[1]):
        print("Error from server: error dialing backend: Internal error occurred: Timeout occurred", file=sys.stderr)
        sys.exit(1)
if "exec" in args[2:3] and args[3:4] == [os.environ.get("EXEC_RAN")] and "touch" in args:
    open({calls!r} + ".gate-opened", "w").close()      # it ran; its answer is lost
    print("Error from server: Internal error occurred: Timeout occurred", file=sys.stderr)
    sys.exit(1)
if "get" in args[2:3] and args[3:4] == [f"pod/{{os.environ.get('EXEC_RAN')}}"] and "terminated.exitCode" in args[-1]:
    print("0" if os.path.exists({calls!r} + ".gate-opened") else "", end="")
    sys.exit(0)
if "get" in args[2:3] and f"pod/{{os.environ.get('GATE_ERROR')}}" in args:
    print(json.dumps({{"spec": {{"initContainers": [{{"name": "upf-net", "restartPolicy": "Always"}}, {{"name": "start-gate"}}]}},
                      "status": {{"phase": "Pending", "initContainerStatuses": [
                          {{"name": "upf-net", "state": {{"running": {{}}}}}},
                          {{"name": "start-gate", "state": {{"terminated": {{"exitCode": 128, "reason": "StartError",
                              "message": "failed to create containerd task: lstat /proc/0/ns/ipc"}}}}}}]}}}}))
    sys.exit(0)
if "wait" in args[2:3] and f"pod/{{os.environ.get('GATE_ERROR')}}" in args:
    sys.exit(1)
if args[:1] == ["apply"] and os.environ.get("APPLY_FAILS"):
    # the first apply holding a Pod fails N times with MESSAGE (APPLY_FAILS=N:MESSAGE), as a loaded API server's
    text = sys.stdin.read()
    tries = {calls!r} + ".apply-tries"
    n = int(open(tries).read()) if os.path.exists(tries) else 0
    if "kind: Pod" in text and n < int(os.environ["APPLY_FAILS"].split(":")[0]):
        open(tries, "w").write(str(n + 1))
        print(os.environ["APPLY_FAILS"].split(":", 1)[1], file=sys.stderr)
        sys.exit(1)
    sys.stdin = __import__("io").StringIO(text)
if args[:1] == ["apply"]:
    for o in yaml.safe_load_all(sys.stdin.read()):
        if o:
            log.write(f"applied {{o['kind']}}/{{o['metadata']['name']}}\\n")
            if o["kind"] == "Pod":
                open({calls!r} + ".pods", "a").write(json.dumps(o) + "\\n")
elif args[:1] == ["version"]:
    print(json.dumps({{"serverVersion": {{"major": "1", "minor": "34"}}}}))
elif args[:2] == ["get", "nodes"]:
    print(json.dumps({{"items": [{{"metadata": {{"name": "kind", "labels": {{}}}},
                                 "status": {{"conditions": [{{"type": "Ready", "status": "True"}}],
                                            "nodeInfo": {{"kernelVersion": "6.12.57"}}}}}}]}}))
elif args[:2] == ["get", "namespace"]:
    sys.exit(1)                                       # no stack up yet
elif args[:1] == ["get"] and "pods" in args:
    print(json.dumps({{"items": [{{"metadata": {{"name": "upf", "annotations": {{}}}},
                                 "spec": {{"nodeName": "kind", "containers": [{{"name": "upf"}}]}},
                                 "status": {{"phase": "Running", "podIP": "10.244.0.9"}}}}]}}))
elif "exec" in args[:3] and args[-1] == "/proc/cpuinfo":
    print("model name\\t: Test CPU")
'''


def _fake_cluster(tmp_path: Path) -> tuple[Path, Path]:
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(FAKE_CLUSTER.format(python=sys.executable, calls=str(calls)))
    fake.chmod(0o755)
    return fake, calls


@pytest.fixture(scope="module")
def ipsec_n3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """aes256gcm: IPsec on N3, the UPF's and the gNB's holders wait for each other, and Compose's
    depends_on puts the gNB three waves after the UPF."""
    return render_k8s("aes256gcm", "n3", tmp_path_factory.mktemp("k8s") / "r").dir


def _gated(render_dir: Path) -> set[str]:
    return {n for n, o in by_kind(k8s_render.load_objects(render_dir), "Pod").items()
            if pods.GATE_ANNOTATION in o["metadata"]["annotations"]}


def _waves(render_dir: Path) -> list[list[str]]:
    return [[e.split("=")[0] for e in w.split()] for w in (render_dir / k8s_render.WAVES).read_text().splitlines()]


def test_up_creates_every_holder_pod_at_once_then_opens_their_gates_wave_by_wave(ipsec_n3: Path, tmp_path: Path) -> None:
    """The data first; then every pod with a holder in one apply, before any wave (Compose starts
    all holders at once: the UPF's IPsec holder finds the gNB's); then wave by wave each pod's
    programs start, a gate opened (its container waited for, then `touch` in it) or a pod without
    a holder applied, after the waits of the wave before; the record last."""
    fake, calls = _fake_cluster(tmp_path)
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3)], KUBECTL=str(fake))
    assert res.returncode == 0, res.stderr
    lines = calls.read_text().splitlines()
    applied = [line.split()[1] for line in lines if line.startswith("applied ")]
    pods_at = [i for i, a in enumerate(applied) if a.startswith("Pod/")]
    assert applied[0] == "Namespace/g5tb" and min(pods_at) > max(i for i, a in enumerate(applied)
                                                                 if not a.startswith("Pod/"))
    waves, gated = _waves(ipsec_n3), _gated(ipsec_n3)
    assert {"upf", "gnb"} <= gated and not {"mongo", "provision", "ue1"} & gated

    def at(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    def call_of(i: int) -> int:                  # the kubectl call a log line belongs to
        return max(j for j in range(i + 1) if lines[j].startswith("kubectl "))

    def condition_wait(pod: str) -> int:         # the wave's wait: ready, or the provisioning done
        return next(i for i, line in enumerate(lines) if f" pod/{pod} --timeout" in line
                    and ("--for=condition=Ready " in line or "=Succeeded " in line))

    # every pod with a holder in one call, in the waves' order, before any wait or gate
    created = {p: lines.index(f"applied Pod/{p}") for p in gated}
    assert len({call_of(i) for i in created.values()}) == 1
    assert max(created.values()) < min(i for i, line in enumerate(lines) if " wait " in line and "serviceaccount" not in line)
    assert sorted(gated, key=created.__getitem__) == [p for w in waves for p in w if p in gated]
    # then wave by wave: a gate opened once its container runs, a pod without a holder applied
    for p in gated:
        started = at(f'--for=jsonpath={{.status.initContainerStatuses[?(@.name=="{pods.GATE}")].started}}=true pod/{p} ')
        assert created[p] < started < at(f"exec {p} -c {pods.GATE} -- touch {pods.GATE_FILE}") < condition_wait(p), p
    start = {p: at(f"exec {p} -c {pods.GATE} --") if p in gated else lines.index(f"applied Pod/{p}")
             for w in waves for p in w}
    assert sorted(start, key=start.__getitem__) == [p for w in waves for p in w]
    for before, wave in zip(waves, waves[1:]):
        assert min(start[p] for p in wave) > max(condition_wait(p) for p in before), (before, wave)
    assert at("--for=create serviceaccount/default") < min(created.values())
    assert "=Succeeded pod/provision " in lines[condition_wait("provision")]
    record = json.loads((ipsec_n3 / "k8s" / "placement-record.json").read_text())
    assert record["nodes"]["kind"]["cpu_model"] == "Test CPU" and record["pods"]["upf"]["node"] == "kind"


def _applied_env(calls: Path, name: str) -> dict[str, list[str]]:
    """Pod -> the values of NAME in its containers' env, as k8s.sh up applied them."""
    out: dict[str, list[str]] = {}
    for line in Path(f"{calls}.pods").read_text().splitlines():
        o = json.loads(line)
        spec = o["spec"]
        out[o["metadata"]["name"]] = [e["value"] for c in spec.get("initContainers", []) + spec["containers"]
                                      for e in c.get("env") or () if e["name"] == name]
    return out


@pytest.mark.parametrize("given,expected", [("1234", "1234"), (None, "300")])
def test_up_hands_the_stack_deadline_to_the_holders(ipsec_n3: Path, tmp_path: Path, given: str | None,
                                                    expected: str) -> None:
    """As scripts/up.sh exports STACK_UP_TIMEOUT to the holders (ipsec/entrypoint.sh waits that
    long for its peer), k8s.sh up sets it in the pods it applies: its own deadline, 300 s unless
    given. Left empty, the guest cluster's UPF and gNB holders gave up after 60 s and restarted."""
    fake, calls = _fake_cluster(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "STACK_UP_TIMEOUT"}
    res = subprocess.run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--no-record"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, env={**env, "PYTHON": sys.executable, "KUBECTL": str(fake),
                                                     **({"STACK_UP_TIMEOUT": given} if given else {})})
    assert res.returncode == 0, res.stderr
    applied = _applied_env(calls, "STACK_UP_TIMEOUT")
    assert applied["upf"] and applied["gnb"], applied           # the IPsec holders carry it
    assert {v for values in applied.values() for v in values} == {expected}
    rendered = by_kind(k8s_render.load_objects(ipsec_n3), "Pod")["upf"]["spec"]
    assert {e.get("value") for c in rendered["initContainers"] + rendered["containers"]
            for e in c.get("env") or () if e["name"] == "STACK_UP_TIMEOUT"} == {""}   # the render leaves it


def _applied_timing(pods: list[dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """Container -> (startup period, startup failure threshold, readiness period) of its probes."""
    return {c["name"]: (c["startupProbe"]["periodSeconds"], c["startupProbe"]["failureThreshold"],
                        c["readinessProbe"]["periodSeconds"])
            for o in pods for c in o["spec"].get("initContainers", []) + o["spec"]["containers"] if "readinessProbe" in c}


def test_up_gives_the_probes_the_timing_of_its_environment(ipsec_n3: Path, tmp_path: Path) -> None:
    """Compose interpolates the health checks' timing at `up` (HEALTH_INTERVAL keeps probes out of
    the measured windows; a slow host raises them all, docs/stack.md); k8s.sh up gives the pods it
    applies the timing of its own environment. The render keeps Compose's defaults. Before, a
    cluster's pods probed every second while starting and every 30 s after, whatever was set: the
    guest's two stacks at once spent their CPUs on probes (load 70)."""
    fake, calls = _fake_cluster(tmp_path)
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--no-record"], KUBECTL=str(fake),
               HEALTH_INTERVAL="3600s", HEALTH_START_INTERVAL="30s", HEALTH_START_PERIOD="1500s")
    assert res.returncode == 0, res.stderr
    applied = _applied_timing([json.loads(line) for line in Path(f"{calls}.pods").read_text().splitlines()])
    assert {"upf", "upf-net", "gnb-net", "nrf", "mongo", "ue1"} <= set(applied), applied
    # 1500 s of start at one probe in 30 s, and Compose's 3 retries; ue1 starts at UE_HEALTH_START_INTERVAL
    assert {n: t for n, t in applied.items() if n != "ue1"} == dict.fromkeys(set(applied) - {"ue1"}, (30, 53, 3600))
    assert applied["ue1"] == (1, 1503, 3600)
    rendered = _applied_timing(list(by_kind(k8s_render.load_objects(ipsec_n3), "Pod").values()))
    assert set(rendered.values()) == {(1, 183, 30)}         # the defaults: 1 s, 180 s of start, 30 s


def test_up_no_record_leaves_the_record_to_the_driver(ipsec_n3: Path, tmp_path: Path) -> None:
    """--no-record (the drivers: engine_record after run-cpu's sample): nothing is read in the pods
    once they run, no node is asked for."""
    fake, calls = _fake_cluster(tmp_path)
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--no-record"], KUBECTL=str(fake))
    assert res.returncode == 0, res.stderr
    logged = calls.read_text()
    assert "cpuinfo" not in logged and "get nodes" not in logged.split("serviceaccount/default")[1]
    assert "stack up in namespace g5tb" in res.stderr


def test_a_gate_that_never_runs_stops_up_naming_the_pod_with_its_description(ipsec_n3: Path, tmp_path: Path) -> None:
    """The UPF's holder never starts: k8s.sh up stops at its gate, names the pod, shows its
    description and logs (explain_pod), opens nothing more and applies no later wave."""
    fake, calls = _fake_cluster(tmp_path)
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--skip", "ue1"], KUBECTL=str(fake), FAIL_GATE="upf",
               STACK_UP_TIMEOUT="3")
    assert res.returncode == 1
    assert "pod upf: its start gate did not run within 3 s: its holder did not start" in res.stderr
    lines = calls.read_text().splitlines()
    assert "kubectl -n g5tb describe pod upf" in lines and "kubectl -n g5tb logs upf --all-containers --tail=40" in lines
    assert not any(" exec upf " in line or "Ready pod/upf " in line for line in lines)
    assert not any(line.startswith("applied Pod/ue1") for line in lines)       # --skip: never created
    assert "applied Pod/upf" in lines and "applied Pod/gnb" in lines            # every holder pod was


def test_a_gate_that_could_not_start_stops_up_at_once_naming_why(ipsec_n3: Path, tmp_path: Path) -> None:
    """containerd could not start the UPF's gate (restartPolicy Never: that pod never will): its
    programs never ran, so k8s.sh up makes the pod once more; when that one fails the same way it
    stops at its first look, not after STACK_UP_TIMEOUT, naming the container and the cause."""
    fake, calls = _fake_cluster(tmp_path)
    started = time.monotonic()
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--skip", "ue1"], KUBECTL=str(fake), GATE_ERROR="upf",
               STACK_UP_TIMEOUT="600")
    assert res.returncode == 1 and time.monotonic() - started < 120
    assert ("pod upf failed: start-gate: StartError (exit 128): failed to create containerd task: "
            "lstat /proc/0/ns/ipc") in res.stderr
    lines = calls.read_text().splitlines()
    assert "pod upf: the runtime could not start a container" in res.stderr and "creating the pod once more" in res.stderr
    deleted = lines.index("kubectl -n g5tb delete pod upf --wait=true")
    assert lines.count("kubectl -n g5tb delete pod upf --wait=true") == 1            # once, not again
    assert "applied Pod/upf" in lines[deleted:]                                        # made again
    assert "kubectl -n g5tb describe pod upf" in lines[deleted:]


@pytest.mark.parametrize("failures, timeout, ok", [(2, "600", True), (1000, "4", False)])
def test_a_gate_whose_exec_times_out_is_opened_on_a_later_try(ipsec_n3: Path, tmp_path: Path, failures: int,
                                                                timeout: str, ok: bool) -> None:
    """The exec that opens a gate goes through the API server to the kubelet, which a loaded
    cluster lets time out (the guest's sharded campaign at load 70 stopped both stacks so): k8s.sh
    up tries again until its deadline, then names the pod and the last error."""
    fake, calls = _fake_cluster(tmp_path)
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--no-record"], KUBECTL=str(fake),
               EXEC_TIMEOUTS=f"upf:{failures}", STACK_UP_TIMEOUT=timeout, GATE_RETRY="1")
    tries = int(Path(f"{calls}.exec-tries").read_text())
    lines = calls.read_text().splitlines()
    if ok:
        assert res.returncode == 0, res.stderr
        assert tries == failures + 1 and res.stderr.count("pod upf: opening its start gate failed") == failures
        assert "Timeout occurred); trying again" in res.stderr
        assert any("Ready pod/upf " in line for line in lines)
    else:
        assert res.returncode == 1 and 2 <= tries <= 8, (tries, res.stderr)
        assert ("pod upf: its start gate did not open within 4 s: Error from server: error dialing backend: "
                "Internal error occurred: Timeout occurred") in res.stderr
        assert "kubectl -n g5tb describe pod upf" in lines and not any("Ready pod/upf " in line for line in lines)


TIMEOUT_ANSWER = ("Error from server (Timeout): Timeout: request did not complete within requested timeout - "
                  "context deadline exceeded")


@pytest.mark.parametrize("answer, ok", [(TIMEOUT_ANSWER, True), ('The Pod "upf" is invalid: spec.containers', False)])
def test_an_apply_the_api_server_let_time_out_is_tried_again(ipsec_n3: Path, tmp_path: Path, answer: str,
                                                             ok: bool) -> None:
    """The guest's loaded API server answered run-cpu's one apply of its gated pods with a Timeout, and
    the stack did not come up: k8s.sh up applies again (server-side apply is idempotent) within its
    deadline. An object the server refuses is no reason to try again: it ends at once, named."""
    fake, calls = _fake_cluster(tmp_path)
    started = time.monotonic()
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--no-record"], KUBECTL=str(fake),
               APPLY_FAILS=f"2:{answer}", STACK_UP_TIMEOUT="600", GATE_RETRY="1")
    tries = int(Path(f"{calls}.apply-tries").read_text())
    lines = calls.read_text().splitlines()
    if ok:
        assert res.returncode == 0, res.stderr
        assert tries == 2 and res.stderr.count(f"applying the pods with a holder failed ({answer}); trying again") == 2
        assert {"applied Pod/upf", "applied Pod/gnb"} <= set(lines) and any("Ready pod/ue1 " in line for line in lines)
    else:
        assert res.returncode == 1 and tries == 1 and time.monotonic() - started < 60
        assert f"error: applying the pods with a holder: {answer}" in res.stderr and "trying again" not in res.stderr
        assert not any(" exec " in line for line in lines)                   # no gate opened after it


def test_opening_a_gate_takes_one_deadline_with_the_wait_for_its_holder(ipsec_n3: Path, tmp_path: Path) -> None:
    """The holder starts 4 s into a 6 s deadline and every exec times out: the tries end with
    the 6 s, not 6 s after the holder started."""
    fake, calls = _fake_cluster(tmp_path)
    started = time.monotonic()
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--no-record"], KUBECTL=str(fake), SLOW_GATE="upf:4",
               EXEC_TIMEOUTS="upf:1000", STACK_UP_TIMEOUT="6", GATE_RETRY="1")
    tries = int(Path(f"{calls}.exec-tries").read_text())
    assert res.returncode == 1 and "pod upf: its start gate did not open within 6 s" in res.stderr
    assert 1 <= tries <= 3, (tries, time.monotonic() - started)


def test_a_gate_opened_by_an_exec_whose_answer_timed_out_is_not_opened_again(ipsec_n3: Path, tmp_path: Path) -> None:
    """The exec ran (the gate container ended with exit 0) but its answer timed out: k8s.sh up
    sees the gate ended and goes on, instead of exec'ing into a container that is gone until
    its deadline."""
    fake, calls = _fake_cluster(tmp_path)
    started = time.monotonic()
    res = _run(["bash", str(K8S_SH), "up", str(ipsec_n3), "--no-record"], KUBECTL=str(fake), EXEC_RAN="upf",
               STACK_UP_TIMEOUT="600", GATE_RETRY="30")
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - started < 60                      # no retry: the gate had ended
    lines = calls.read_text().splitlines()
    assert sum(" exec upf -c " in line for line in lines) == 1 and "trying again" not in res.stderr
    assert any("Ready pod/upf " in line for line in lines)


def test_ctrl_c_at_a_gate_says_interrupted_not_that_the_holder_failed(ipsec_n3: Path, tmp_path: Path) -> None:
    """Ctrl-C while k8s.sh waits for a gate: exit 130 and "interrupted"; the wait's failure branch
    (which blames the pod's holder and its timeout) is not taken."""
    fake, calls = _fake_cluster(tmp_path)
    env = {**os.environ, "KUBECTL": str(fake), "HANG_GATE": "upf", "PYTHON": sys.executable}
    # SIGINT back to its default, as at a terminal: a test run started in the background of a
    # non-interactive shell inherits SIGINT ignored, which bash can then never trap (as in
    # tests/integration/test_run_overlay.py)
    proc = subprocess.Popen(["bash", str(K8S_SH), "up", str(ipsec_n3), "--skip", "ue1"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while "hanging" not in (calls.read_text() if calls.exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, "k8s.sh never reached the gate's wait"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)          # as a terminal's Ctrl-C: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "error: interrupted" in err and "did not run within" not in err


def test_up_applies_a_render_without_gates_wave_by_wave(tmp_path: Path) -> None:
    """A pod without a holder has no gate: it is applied in its wave (here every pod of a render
    whose gates' annotations are taken out)."""
    r = render_k8s("baseline", "n3", tmp_path / "r")
    objs = k8s_render.load_objects(r.dir)
    for o in objs:
        if o["kind"] == "Pod":
            o["metadata"]["annotations"].pop(pods.GATE_ANNOTATION, None)
    (r.dir / k8s_render.OBJECTS).write_text(yaml.safe_dump_all(objs, sort_keys=False))
    fake, calls = _fake_cluster(tmp_path)
    res = _run(["bash", str(K8S_SH), "up", str(r.dir)], KUBECTL=str(fake))
    assert res.returncode == 0, res.stderr
    lines = calls.read_text().splitlines()
    assert not any(" exec " in line and pods.GATE in line for line in lines)
    order = [line.split()[1].split("/")[1] for line in lines if line.startswith("applied Pod/")]
    assert order == [p for w in _waves(r.dir) for p in w]


def test_the_compose_bring_up_refuses_another_engine(tmp_path: Path) -> None:
    """make up starts the Compose stack (scripts/up.sh; the drivers call it through the Compose
    runtime's driver library only): with ENGINE=k8s it stops (a stack must not land on Docker while
    its user asked for a cluster)."""
    res = _run(["bash", "scripts/up.sh", "--profile", "baseline"], ENGINE="k8s", STATE=str(tmp_path))
    assert res.returncode == 2 and "ENGINE=k8s: this starts the Docker Compose stack" in res.stderr
    assert "make k8s-up" in res.stderr and not (tmp_path / "stack.current").exists()
