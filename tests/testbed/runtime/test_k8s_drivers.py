"""The experiment drivers on a cluster without one (issue 29 part 3): the runtime's driver library
is chosen by ENGINE= through the plug-in contract, the captures render as capture containers
ahead of each pod's holder, and the kubectl command lines testbed/runtime/k8s/stackctl.py builds
for the drivers' Compose verbs. What a real cluster run showed is in docs/kubernetes.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from testbed import privileges, registry
from testbed.contract import DRIVER_FUNCTIONS, RuntimeOptionError
from testbed.runtime.k8s import capture, pods as k8s_pods, render as k8s_render, stackctl
from tests.conftest import ROOT, require_root, require_tools
from tests.testbed.runtime import k8s_schemas
from tests.testbed.runtime.helpers import by_kind, objects, render_k8s

CAPTURES = "n3.pcap=*:n3 leak-gnb.pcap=gnb:n2,n3"


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_k8s("aes256gcm", "n3", tmp_path_factory.mktemp("k8s") / "r",
                      options={capture.OPTION: CAPTURES}).dir


def _init(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list(pod["spec"].get("initContainers", []))


def test_every_runtime_has_a_driver_library_with_every_function() -> None:
    for rt in registry.runtimes():
        assert rt.problems() == [], rt.name
        lib = (rt.folder / rt.driver).read_text()
        assert all(f"\n{f}() {{" in lib for f in DRIVER_FUNCTIONS)
        assert "ENGINE_EXPERIMENTS=" in lib
    res = subprocess.run([sys.executable, "-m", "testbed", "plugins", "--driver", "k8s"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == str(ROOT / "testbed" / "runtime" / "k8s" / "driver.sh")
    res = subprocess.run([sys.executable, "-m", "testbed", "plugins", "--driver", ""], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == str(ROOT / "testbed" / "runtime" / "compose" / "driver.sh")


def test_no_core_library_or_driver_names_an_engine() -> None:
    """The drivers reach the engine through the engine_* functions only (no `ENGINE ==` test)."""
    scripts = [*sorted((ROOT / "scripts").glob("run-*.sh")), *sorted((ROOT / "scripts" / "lib").glob("*.sh"))]
    found = [f"{p.name}: {line.strip()}" for p in scripts for line in p.read_text().splitlines()
             if "ENGINE" in line and ("==" in line or "!=" in line) and "ENGINE_EXPERIMENTS" not in line]
    assert found == []


def test_captures_are_containers_that_start_before_the_holder(captured: Path) -> None:
    pods = by_kind(k8s_render.load_objects(captured), "Pod")
    gnb, upf = pods["gnb"], pods["upf"]
    # the captures first, then the holder, then its start gate (pods.py)
    assert [c["name"] for c in _init(gnb)] == ["cap-n3", "cap-leak-gnb", "gnb-net", k8s_pods.GATE]
    assert [c["name"] for c in _init(upf)] == ["cap-n3", "upf-net", k8s_pods.GATE]   # the whole n3: both ends
    cap = _init(gnb)[0]
    script = cap["command"][2]
    assert "dumpcap -q -p -i n3 -f outbound -w /captures/n3.pcap" in script   # each packet once, at its sender
    assert "-i n2 -i n3 -w /captures/leak-gnb.pcap" in _init(gnb)[1]["command"][2]   # both directions
    assert cap["restartPolicy"] == "Always" and cap["startupProbe"]["exec"]["command"] == ["test", "-s", "/captures/n3.pcap"]
    role = privileges.role(capture.ROLE)
    assert cap["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": sorted(role.capabilities)}
    assert cap["securityContext"]["readOnlyRootFilesystem"] is True
    assert cap["image"].startswith("g5tb/tools:")
    assert {"name": "captures", "emptyDir": {}} in gnb["spec"]["volumes"]
    assert [e for p in (gnb, upf) for e in k8s_schemas.errors(p)] == []
    assert not any(c["name"].startswith("cap-") for c in _init(pods["amf"]))


def test_a_capture_of_an_unknown_pod_or_a_bad_entry_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(RuntimeOptionError, match="on nobody, which the render does not have"):
        render_k8s("baseline", "n3", tmp_path / "a", options={capture.OPTION: "x.pcap=nobody:n3"})
    with pytest.raises(RuntimeOptionError, match="is not FILE.pcap=POD:INTERFACE"):
        render_k8s("baseline", "n3", tmp_path / "b", options={capture.OPTION: "x.pcap=gnb"})
    with pytest.raises(RuntimeOptionError, match="x.pcap: pod gnb is not on n6 "):
        render_k8s("baseline", "n3", tmp_path / "c", options={capture.OPTION: "x.pcap=gnb:n3,n6"})
    with pytest.raises(RuntimeOptionError, match="x.pcap asked for twice"):
        capture.parse("x.pcap=gnb:n3 x.pcap=upf:n3")
    assert not (tmp_path / "a" / "k8s").exists()


def test_a_capture_count_is_dumpcaps_c_per_pod_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    """run-throughput's n3 capture stops after VALIDATION_PACKETS on Compose; on a cluster each
    pod's capture container does (FILE=POD:INTERFACES:COUNT)."""
    r = render_k8s("baseline", "n3", tmp_path / "r", options={capture.OPTION: "n3.pcap=*:n3:200000"})
    pods = by_kind(objects(r), "Pod")
    for name in ("gnb", "upf"):
        assert "-i n3 -f outbound -c 200000 -w /captures/n3.pcap" in _init(pods[name])[0]["command"][2]
    assert capture.parse("n3.pcap=*:n3")[0].count is None
    with pytest.raises(RuntimeOptionError, match=r"INTERFACE\.\.\.\]\[:COUNT\]"):
        capture.parse("n3.pcap=*:n3:0")


def test_logs_of_every_service_asks_at_once_and_prints_in_order(captured: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A stack's logs (scripts/lib/stack.sh stack_logs: every service, within 120 s): one kubectl
    call per container, several at once, printed in the services' order. One after the other, a
    loaded guest cluster took longer than 120 s and the run kept a cut containers.log."""
    fake = tmp_path / "kubectl"
    fake.write_text('#!/usr/bin/env bash\nsleep 1\necho "one line of $6"\n')
    fake.chmod(0o755)
    st = stackctl.load(captured, str(fake))
    t0 = time.monotonic()
    assert stackctl.logs(st, []) == 0
    took = time.monotonic() - t0
    services = st.services()
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("|")[1].strip() for line in lines] == [f"one line of {s}" for s in services]
    assert [line.split("|")[0].strip() for line in lines] == services
    assert len(services) >= 16 and took < len(services) / 2, (took, len(services))


def test_up_of_a_gated_pod_opens_its_gate_on_a_later_try(captured: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """stackctl up (a driver starting a pod) opens a gate as k8s.sh up does: an exec the loaded
    API server lets time out is tried again (within the stack's deadline, stackctl.start_seconds), then the pod is waited for."""
    calls, tries = tmp_path / "calls", tmp_path / "tries"
    fake = tmp_path / "kubectl"
    fake.write_text(f'''#!/usr/bin/env bash
echo "$*" >>"{calls}"
[[ "$3" == apply ]] && cat >/dev/null
if [[ "$3" == exec ]]; then
  n=$(cat "{tries}" 2>/dev/null || echo 0); echo $((n + 1)) >"{tries}"
  ((n >= 2)) || {{ echo "Internal error occurred: Timeout occurred" >&2; exit 1; }}
fi
exit 0
''')
    fake.chmod(0o755)
    monkeypatch.setattr(stackctl, "GATE_RETRY_SECONDS", 0)
    st = stackctl.load(captured, str(fake))
    assert stackctl.up(st, ["-d", "--no-deps", "upf"]) == 0
    lines = calls.read_text().splitlines()
    assert tries.read_text().strip() == "3" and sum(" exec upf -c " in line for line in lines) == 3
    assert "phase}=Running pod/upf" in lines[-1]                      # then waited for
    # an exec whose answer was lost but which ran: the gate container ended with exit 0
    ran = tmp_path / "kubectl-ran"
    ran.write_text(f'''#!/usr/bin/env bash
echo "$*" >>"{calls}.ran"
[[ "$3" == apply ]] && cat >/dev/null
[[ "$3" == exec ]] && {{ echo "Internal error occurred: Timeout occurred" >&2; exit 1; }}
[[ "$3" == get && "$*" == *terminated.exitCode* ]] && echo 0
exit 0
''')
    ran.chmod(0o755)
    monkeypatch.setattr(stackctl, "GATE_RETRY_SECONDS", 30)
    assert stackctl.up(stackctl.load(captured, str(ran)), ["-d", "--no-deps", "upf"]) == 0
    lines = Path(f"{calls}.ran").read_text().splitlines()
    assert sum(" exec upf -c " in line for line in lines) == 1 and "phase}=Running pod/upf" in lines[-1]


def test_up_applies_a_pod_again_after_the_api_server_let_the_apply_time_out(captured: Path, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """run-sbi's UE started by stackctl up: an apply the loaded API server lets time out is tried again
    (apply.py) within the stack's deadline, then the pod is waited for."""
    calls, marker = tmp_path / "calls", tmp_path / "timed-out"
    fake = tmp_path / "kubectl"
    fake.write_text(f'''#!/usr/bin/env bash
echo "$*" >>"{calls}"
if [[ "$3" == apply ]]; then
  cat >/dev/null
  [[ -e "{marker}" ]] || {{ touch "{marker}"; echo "Error from server (Timeout): Timeout: request did not complete" >&2; exit 1; }}
fi
exit 0
''')
    fake.chmod(0o755)
    monkeypatch.setattr("testbed.runtime.k8s.apply.EVERY_SECONDS", 0)
    assert stackctl.up(stackctl.load(captured, str(fake)), ["-d", "--no-deps", "ue1"]) == 0
    lines = calls.read_text().splitlines()
    assert lines.count("-n g5tb apply -f -") == 2 and "phase}=Running pod/ue1" in lines[-1]


def test_up_of_a_ue_defers_its_probes_past_the_attach_as_compose_does(captured: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """run-sbi starts a UE with UE_HEALTH_START_INTERVAL=3600s (scripts/lib/attach.sh) so that no
    probe runs in the attach it measures; stackctl up applies the UE's pod with that start
    interval, and a capture container's own probe keeps its timing. Before, the cluster's UE was
    probed every second through its attach."""
    applied = tmp_path / "applied"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/usr/bin/env bash\n[[ "$3" == apply ]] && cat >"{applied}"\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.setenv("UE_HEALTH_START_INTERVAL", "3600s")
    assert stackctl.up(stackctl.load(captured, str(fake)), ["-d", "--no-deps", "ue1"]) == 0
    ue = json.loads(applied.read_text())["items"][0]["spec"]["containers"][0]
    assert ue["name"] == "ue1" and ue["startupProbe"]["periodSeconds"] == 3600
    assert ue["readinessProbe"]["periodSeconds"] == 30                  # HEALTH_INTERVAL not given
    monkeypatch.setenv("HEALTH_START_INTERVAL", "10s")
    assert stackctl.up(stackctl.load(captured, str(fake)), ["-d", "--no-deps", "upf"]) == 0
    upf = json.loads(applied.read_text())["items"][0]["spec"]
    timing = {c["name"]: c["startupProbe"]["periodSeconds"] for c in upf["initContainers"] + upf["containers"]
              if "startupProbe" in c}
    assert timing == {"cap-n3": 1, "upf-net": 10, "upf": 10}, timing


def test_the_pod_network_captures_eth0(tmp_path: Path) -> None:
    r = render_k8s("baseline", "n3", tmp_path / "r", options={capture.OPTION: "n3.pcap=gnb:n3", "MULTUS": "0"})
    gnb = by_kind(objects(r), "Pod")["gnb"]
    assert "-i eth0 -w /captures/n3.pcap" in _init(gnb)[0]["command"][2]


def test_the_command_lines_for_the_drivers_verbs(captured: Path) -> None:
    st = stackctl.load(captured, "kubectl")
    k = ["kubectl", "-n", "g5tb"]
    assert stackctl.exec_argv(st, "ue1", ["ping", "-c", "1", "h"]) == k + ["exec", "-i", "ue1", "-c", "ue1", "--",
                                                                           "ping", "-c", "1", "h"]
    assert stackctl.exec_argv(st, "gnb-net", ["swanctl", "--list-sas"])[3:8] == ["exec", "-i", "gnb", "-c", "gnb-net"]
    assert stackctl.logs_argv(st, "ue2", follow=True, tail="1") == k + ["logs", "ue2", "-c", "ue2", "-f", "--tail=1"]
    assert stackctl.delete_argv(st, "ue1") == k + ["delete", "pod", "ue1", "--ignore-not-found", "--wait=true"]
    assert stackctl.down_argv(st) == ["kubectl", "delete", "namespace", "g5tb", "--ignore-not-found", "--wait=true"]
    assert sorted(stackctl.capture_pods(st, "n3.pcap")) == ["gnb", "upf"]
    stop = stackctl.capture_stop_argv(st, "gnb", "cap-n3", "/captures/n3.pcap")
    assert stop[:8] == k + ["exec", "gnb", "-c", "cap-n3", "--"] and "kill -TERM" in stop[-1]
    assert stackctl.capture_copy_argv(st, "gnb", "cap-n3", "/captures/n3.pcap")[-2:] == ["cat", "/captures/n3.pcap"]
    assert "cap-n3" not in st.services() and {"ue1", "gnb-net", "upf"} <= set(st.services())
    assert k8s_pods.GATE not in st.services()                     # no Compose service either
    gate = stackctl.gate_argvs(st, "upf")
    assert gate and gate.wait == k + ["wait", '--for=jsonpath={.status.initContainerStatuses[?(@.name=="start-gate")]'
                                      '.started}=true', "pod/upf", f"--timeout={stackctl.start_seconds()}s"]
    assert gate.open == k + ["exec", "upf", "-c", k8s_pods.GATE, "--", "touch", k8s_pods.GATE_FILE]
    assert gate.ended == k + ["get", "pod/upf", "-o", 'jsonpath={.status.initContainerStatuses[?(@.name=="start-gate")]'
                              '.state.terminated.exitCode}']
    assert stackctl.gate_argvs(st, "ue1") is None              # no holder, no gate
    with pytest.raises(KeyError, match="no container nobody"):
        st.pod_of("nobody")


RECORDING_KUBECTL = '''#!/bin/sh
printf '%s\\n' "$*" >>"{calls}"
'''


def test_up_opens_the_gate_of_a_pod_with_a_holder_before_waiting_for_it_to_run(captured: Path, tmp_path: Path) -> None:
    """A driver starts a service once what it depends on is up: `up` applies its pod, opens its
    start gate (waits for the gate container, then `touch` in it), then waits for the pod to run."""
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(RECORDING_KUBECTL.format(calls=calls))
    fake.chmod(0o755)
    res = subprocess.run([sys.executable, "-m", "testbed.runtime.k8s.stackctl", "--render-dir", str(captured),
                          "up", "-d", "--no-deps", "upf"], cwd=ROOT,
                         env={**os.environ, "KUBECTL": str(fake), "STACK_UP_TIMEOUT": "1234"}, timeout=60)
    assert res.returncode == 0
    # as long as the stack's own deadline (the driver exports it): not a fixed time of its own
    assert calls.read_text().splitlines() == [
        "-n g5tb apply -f -",
        '-n g5tb wait --for=jsonpath={.status.initContainerStatuses[?(@.name=="start-gate")].started}=true pod/upf '
        "--timeout=1234s",
        f"-n g5tb exec upf -c {k8s_pods.GATE} -- touch {k8s_pods.GATE_FILE}",
        "-n g5tb wait --for=jsonpath={.status.phase}=Running pod/upf --timeout=1234s"]


def test_up_takes_ues_from_its_environment_as_compose_does(captured: Path, tmp_path: Path) -> None:
    """run-cpu's `env UES=N ... up -d --no-deps ue-scale`: Compose interpolates UES at that up;
    the render keeps `$(UES)` in the args (a Kubernetes variable of the container's env, compose.env's
    value), and up sets the env from its environment."""
    applied = tmp_path / "applied"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/bin/sh\ncase "$*" in *"apply -f -") cat >"{applied}" ;; esac\n')
    fake.chmod(0o755)
    res = subprocess.run([sys.executable, "-m", "testbed.runtime.k8s.stackctl", "--render-dir", str(captured),
                          "up", "-d", "--no-deps", "ue-scale"], cwd=ROOT,
                         env={**os.environ, "KUBECTL": str(fake), "UES": "5"}, timeout=60)
    assert res.returncode == 0
    (pod,) = json.loads(applied.read_text())["items"]
    (c,) = pod["spec"]["containers"]
    assert c["args"][-2:] == ["-n", "$(UES)"] and {"name": "UES", "value": "5"} in c["env"]
    kept = stackctl.load(captured).pods[pod["metadata"]["name"]]["spec"]["containers"][0]
    assert {"name": "UES", "value": "1"} in kept["env"]              # the render: compose.env's


def test_the_verbs_run_kubectl_as_the_drivers_call_them(captured: Path, tmp_path: Path) -> None:
    """The drivers' own lines ("${DC[@]}" --profile ue2 exec -T ...), against a kubectl that only
    records its arguments: the exec replaces stackctl, up waits for the pod to run."""
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(RECORDING_KUBECTL.format(calls=calls))
    fake.chmod(0o755)
    dc = [sys.executable, "-m", "testbed.runtime.k8s.stackctl", "--render-dir", str(captured),
          "--profile", "ue2", "--profile", "scale"]
    env = {**{k: v for k, v in os.environ.items() if k != "STACK_UP_TIMEOUT"}, "KUBECTL": str(fake)}
    for verb in (["exec", "-T", "ue1", "ip", "-4", "addr"], ["up", "-d", "--no-deps", "ue2"], ["rm", "-sf", "ue2"]):
        assert subprocess.run(dc + verb, cwd=ROOT, env=env, timeout=60).returncode == 0
    lines = calls.read_text().splitlines()
    assert lines[0] == "-n g5tb exec -i ue1 -c ue1 -- ip -4 addr"
    assert lines[1] == "-n g5tb apply -f -"
    assert lines[2] == "-n g5tb wait --for=jsonpath={.status.phase}=Running pod/ue2 --timeout=300s"      # k8s.sh up's default
    assert lines[3] == "-n g5tb delete pod ue2 --ignore-not-found --wait=true"
    res = subprocess.run(dc + ["bogus"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "not a verb it speaks" in res.stderr


def _pod(statuses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": "gnb"}, "status": {"initContainerStatuses": statuses}}


def test_the_watcher_names_a_holder_that_ended_or_turned_unready() -> None:
    up = {"name": "gnb-net", "ready": True, "restartCount": 0, "state": {"running": {}}}
    assert list(stackctl.lost(_pod([up]), _pod([up]))) == []
    assert list(stackctl.lost(_pod([up]), _pod([{**up, "restartCount": 1}]))) == [("gnb/gnb-net", "die")]
    assert list(stackctl.lost(_pod([up]), _pod([{**up, "state": {"terminated": {}}}]))) == [("gnb/gnb-net", "die")]
    assert list(stackctl.lost(_pod([up]), _pod([{**up, "ready": False}]))) == [("gnb/gnb-net", "health_status: unhealthy")]
    # the start gate ends when it opens: the programs start, nothing is lost
    gate = {"name": k8s_pods.GATE, "ready": False, "restartCount": 0, "state": {"running": {}}}
    opened = {**gate, "ready": True, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    assert list(stackctl.lost(_pod([up, gate]), _pod([up, opened]))) == []


def test_run_n3_dry_run_on_k8s_renders_the_captures_and_talks_through_stackctl(tmp_path: Path) -> None:
    require_tools("openssl", "wg")
    env = {**os.environ, "PYTHON": sys.executable, "ENGINE": "k8s", "DRY_RUN": "1", "STATE": str(tmp_path / "s"),
           "RESULTS": str(tmp_path / "res"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    res = subprocess.run(["bash", "scripts/run-n3.sh", "--profile", "aes256gcm", "--sets", "1", "--sizes", "64"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout + res.stderr
    assert "testbed/runtime/k8s/k8s.sh up " in out and "docker" not in out
    assert "stackctl --render-dir" in out and "exec -T ue1 timeout" in out and "exec -T gnb-net swanctl --list-sas" in out
    render = tmp_path / "s" / "render" / "n3" / "aes256gcm"
    pods = {o["metadata"]["name"]: o for o in stackctl.load(render).pods.values()}
    assert [c["name"] for c in _init(pods["gnb"])][:3] == ["cap-n3", "cap-leak-gnb", "gnb-net"]


def test_a_stack_the_cluster_refuses_is_said_so_and_ends_the_run_as_bad_input(tmp_path: Path) -> None:
    """k8s.sh up's preflight refuses (here: no cluster answers) before applying anything: the run
    says the cluster refused it, exits 2 (a sharded campaign stops on it), keeps no "stack up"
    evidence and deletes nothing, since nothing was made."""
    require_root()          # a driver's own check, before it reaches the cluster (scripts/lib/driver.sh)
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/usr/bin/env bash\necho "$*" >>"{calls}"\necho "connection refused" >&2\nexit 1\n')
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": sys.executable, "ENGINE": "k8s", "KUBECTL": str(fake), "DOCTOR": "0",
           "STATE": str(tmp_path / "s"), "RESULTS": str(tmp_path / "res"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    res = subprocess.run(["bash", "scripts/run-n3.sh", "--profile", "baseline", "--sets", "1", "--sizes", "64"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 2, out[-2000:]
    assert "the cluster refused the stack for baseline (n3) before applying anything: no cluster answers" in out
    assert "did not come up" not in out and "with the stack up" not in out
    assert calls.read_text().splitlines() == ["get --raw=/readyz --request-timeout=10s"]
    (manifest,) = (tmp_path / "res").rglob("manifest.json")
    run = json.loads(manifest.read_text())
    assert run["state"] == "failed" and "refused the stack" in run["reason"]
    assert not (manifest.parent / "failure").exists()


def test_a_driver_the_cluster_does_not_run_yet_is_refused_before_anything_starts(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable, "ENGINE": "k8s", "DRY_RUN": "1", "STATE": str(tmp_path / "s"),
           "RESULTS": str(tmp_path / "res")}
    res = subprocess.run(["bash", "scripts/run-f1u.sh", "--profile", "baseline"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "ENGINE=k8s runs the drivers of n3 sbi throughput cpu, not f1u yet" in res.stderr
    assert not list((tmp_path / "res").rglob("manifest.json"))


def test_the_driver_libraries_are_shellcheck_clean() -> None:
    require_tools("shellcheck")
    libs = [str(ROOT / "testbed" / "runtime" / n / "driver.sh") for n in ("k8s", "compose")]
    res = subprocess.run(["shellcheck", "-x", "-s", "bash", *libs], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stdout


def test_the_k8s_watcher_stops_the_pings_through_the_stack_command_when_a_holder_ends(tmp_path: Path) -> None:
    """engine_watch_start of the k8s library (scripts/lib/watch.sh overlay_watch): it reads `DC
    watch` (here a stand-in stackctl: a holder's death, then its stream held open), files the
    death in overlay-died.txt and stops UE 1's pings with `DC exec -T ue1 pkill`."""
    calls = tmp_path / "calls"
    dc = tmp_path / "dc"
    dc.write_text(f'#!/usr/bin/env bash\necho "$*" >>"{calls}"\n[[ "$1" == watch ]] || exit 0\n'
                  "echo '1767261600500000000|upf/upf-net|die'\nexec sleep 30\n")
    dc.chmod(0o755)
    script = (f'source "{ROOT}/scripts/lib/common.sh"; source "{ROOT}/testbed/runtime/k8s/driver.sh"; '
              f'DRY_RUN=0; PROTOCOL=ipsec; RUN_DIR="{tmp_path}"; DC=("{dc}"); STACK_ALL_PROFILES=(--profile ue2); '
              'engine_watch_start ue1; for _ in $(seq 100); do [[ -s "$OVERLAY_DIED" ]] && break; sleep 0.1; done; '
              'sleep 0.5; watch_stop; echo "watch ended"')
    res = subprocess.run(["bash", "-c", script], env={**os.environ, "TESTBED_ROOT": str(ROOT)},
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "watch ended" in res.stdout, res.stderr[-800:]
    assert "container upf/upf-net: die" in (tmp_path / "overlay-died.txt").read_text()
    assert "--profile ue2 exec -T ue1 pkill -INT -x ping" in calls.read_text().splitlines()


def _pcap(ts: int) -> bytes:
    """A classic pcap file with one 60-byte Ethernet frame at second ts."""
    import struct
    frame = bytes(12) + b"\x08\x00" + bytes(46)
    return (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
            + struct.pack("<IIII", ts, 0, len(frame), len(frame)) + frame)


def test_a_whole_network_capture_is_stopped_copied_out_of_each_pod_and_merged(captured: Path, tmp_path: Path) -> None:
    """stackctl capture-hold (capture_stop's TERM): dumpcap stopped in each pod capturing n3.pcap
    (gnb and upf), each file copied out (a kubectl that answers `cat` with a one-packet pcap) and
    merged by mergecap in time order."""
    require_tools("mergecap", "capinfos")
    import signal
    calls = tmp_path / "calls"
    for ts, pod in ((200, "gnb"), (100, "upf")):
        (tmp_path / f"{pod}.pcap").write_bytes(_pcap(ts))
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >>"{calls}"\n'
                    f'case "$*" in *" cat /captures/n3.pcap") exec cat "{tmp_path}/$4.pcap" ;; esac\n')
    fake.chmod(0o755)
    out = tmp_path / "run" / "n3.pcap"
    out.parent.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "testbed.runtime.k8s.stackctl", "--render-dir", str(captured),
                             "capture-hold", "n3.pcap", str(out)], cwd=ROOT, env={**os.environ, "KUBECTL": str(fake)},
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None and proc.stderr.readline().startswith("holding n3.pcap of ")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    lines = calls.read_text().splitlines()
    assert sorted(line.split()[3] for line in lines if "kill -TERM" in line) == ["gnb", "upf"]
    # every pod's dumpcap stopped before any file is copied (the stops end the captures together)
    last_stop = max(i for i, line in enumerate(lines) if "kill -TERM" in line)
    assert all(i > last_stop for i, line in enumerate(lines) if line.endswith(" cat /captures/n3.pcap"))
    info = subprocess.run(["capinfos", "-c", "-M", str(out)], capture_output=True, text=True, check=True).stdout
    assert "Number of packets:   2" in info or "Number of packets: 2" in info, info
    assert not list(out.parent.glob(".n3.pcap.*"))                  # the pods' parts removed


@pytest.mark.parametrize("stuck", [False, True])
def test_a_capture_is_copied_once_its_dumpcap_has_ended(captured: Path, tmp_path: Path, stuck: bool) -> None:
    """The stop of a pod's dumpcap is tried again when its exec fails (a loaded API server's
    timeout, or dumpcap still running after its grace), and the file is copied only after: a
    guest run's leak-gnb.pcap, copied while dumpcap still wrote, ended mid-packet and made the run
    invalid. A dumpcap that never ends: the file is copied all the same, as evidence, and the hold
    fails naming the pod and the cause."""
    require_tools("mergecap")
    import signal
    calls = tmp_path / "calls"
    for ts, pod in ((200, "gnb"), (100, "upf")):
        (tmp_path / f"{pod}.pcap").write_bytes(_pcap(ts))
    fake = tmp_path / "kubectl"
    failing = "true" if stuck else f'[ "$(grep -c "exec gnb .*kill -TERM" "{calls}")" -le 1 ]'
    fake.write_text(f'''#!/bin/sh
printf "%s\\n" "$*" >>"{calls}"
case "$*" in
  *" cat /captures/n3.pcap") exec cat "{tmp_path}/$4.pcap" ;;
  *"exec gnb "*"kill -TERM"*) if {failing}; then echo "dumpcap (pid 7) still runs 30 s after TERM" >&2; exit 1; fi ;;
esac
''')
    fake.chmod(0o755)
    out = tmp_path / "run" / "n3.pcap"
    out.parent.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "testbed.runtime.k8s.stackctl", "--render-dir", str(captured),
                             "capture-hold", "n3.pcap", str(out)], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "KUBECTL": str(fake), "STACK_UP_TIMEOUT": "4" if stuck else "600"})
    assert proc.stderr is not None and proc.stderr.readline().startswith("holding n3.pcap of ")
    proc.send_signal(signal.SIGTERM)
    rc, err = proc.wait(timeout=60), proc.stderr.read()
    lines = calls.read_text().splitlines()
    stops = [i for i, line in enumerate(lines) if "exec gnb" in line and "kill -TERM" in line]
    assert len(stops) >= 2 and "stopping the capture in pod gnb failed (dumpcap (pid 7) still runs" in err, err
    assert all(i > stops[-1] for i, line in enumerate(lines) if line.endswith(" cat /captures/n3.pcap"))
    assert out.exists()                                                # copied and merged either way
    if stuck:
        assert rc == 1 and "error: n3.pcap: the capture in pod gnb did not end (dumpcap (pid 7) still runs" in err
    else:
        assert rc == 0 and len(stops) == 2 and "error" not in err, err
