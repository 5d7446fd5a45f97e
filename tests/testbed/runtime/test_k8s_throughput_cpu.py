"""run-throughput and run-cpu on a cluster without one: their dry runs, their refusals before
anything starts, the iperf3 server pod and the CPU readers (testbed/runtime/k8s/nodepods.py) as
objects the API schemas accept with least privilege, and what server.py, cpu.py and stackctl up
send a kubectl that records its calls and answers from canned output. What a real cluster run
showed is in docs/kubernetes.md (these two drivers: nothing yet)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed import manifest, privileges, stack
from testbed.runtime.k8s import cpu, nodepods, pods as k8s_pods, stackctl
from tests.conftest import ROOT, require_tools
from tests.testbed.runtime import k8s_schemas
from tests.testbed.runtime.helpers import render_k8s

GATEWAY = stack.load()["networks"]["n6"]["gateway"]


def _driver(script: str, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**{k: v for k, v in os.environ.items() if k not in ("PLACEMENT", "K8S_CNI", "K8S_MASTER")},
            "PYTHON": sys.executable, "ENGINE": "k8s", "DRY_RUN": "1", "STATE": str(tmp_path / "s"),
            "RESULTS": str(tmp_path / "res"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **env}
    return subprocess.run(["bash", f"scripts/{script}", *args], cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=600)


def _least_privilege(c: dict[str, Any], role: str) -> None:
    ctx = c["securityContext"]
    assert ctx["capabilities"] == {"drop": ["ALL"]} and not privileges.role(role).capabilities
    assert ctx["allowPrivilegeEscalation"] is False and ctx["privileged"] is False
    assert ctx["readOnlyRootFilesystem"] is True and ctx["runAsNonRoot"] is True
    assert ctx["runAsUser"] == ctx["runAsGroup"] == k8s_pods.NOBODY


# ------------------------------------------------------------------ the pods outside the render

def test_the_server_pod_is_on_the_node_in_its_network_with_least_privilege() -> None:
    pod = nodepods.n6_server("n6-server", "g5tb", "node-a", "g5tb/tools:x", GATEWAY, 5201,
                             ["iperf3", "-s", "-B", GATEWAY, "-p", "5201", "-J"])
    assert k8s_schemas.errors(pod) == []
    spec = pod["spec"]
    assert spec["hostNetwork"] is True and spec["nodeSelector"] == {k8s_pods.HOSTNAME_LABEL: "node-a"}
    assert spec["automountServiceAccountToken"] is False and spec["restartPolicy"] == "Never"
    assert "hostPID" not in spec and "hostIPC" not in spec
    (c,) = spec["containers"]
    _least_privilege(c, nodepods.SERVER_ROLE)
    assert [m["mountPath"] for m in c["volumeMounts"]] == list(privileges.role(nodepods.SERVER_ROLE).tmpfs) == ["/tmp"]
    assert {"name": "tmpfs-0", "emptyDir": {"medium": "Memory"}} in spec["volumes"]
    hexaddr = "".join(f"{int(o):02X}" for o in reversed(GATEWAY.split(".")))
    assert c["readinessProbe"]["exec"]["command"] == ["grep", "-q", f" {hexaddr}:1451 00000000:0000 0A ",
                                                      "/proc/net/tcp"]
    assert json.loads(pod["metadata"]["annotations"][k8s_pods.ROLES_ANNOTATION]) == {"server": "n6-server"}


def test_the_cpu_reader_sees_the_cgroup_tree_read_only_and_nothing_else() -> None:
    pod = nodepods.cpu_reader("g5tb-cpu", "node-b.example", "g5tb/tools:x")
    assert k8s_schemas.errors(pod) == []
    spec = pod["spec"]
    assert pod["metadata"]["name"] == "cpu-node-b.example" and "hostNetwork" not in spec and "hostPID" not in spec
    (c,) = spec["containers"]
    _least_privilege(c, nodepods.READER_ROLE)
    assert c["volumeMounts"] == [{"name": "cgroup", "mountPath": "/host/cgroup", "readOnly": True}]
    assert spec["volumes"] == [{"name": "cgroup", "hostPath": {"path": "/sys/fs/cgroup", "type": "Directory"}}]


# ------------------------------------------------------------------ against a recording kubectl

@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_k8s("baseline", "sbi", tmp_path_factory.mktemp("k8s") / "r").dir


def _kubectl(tmp_path: Path, body: str) -> tuple[Path, Path]:
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$*" >>"{calls}"\n'
                    f'[[ "$*" != *"apply -f -"* ]] || cat >>"{calls}.applied"\n{body}\nexit 0\n')
    fake.chmod(0o755)
    return fake, calls


def test_the_server_starts_on_the_upfs_node_records_it_and_keeps_its_log(rendered: Path, tmp_path: Path) -> None:
    fake, calls = _kubectl(tmp_path, 'case "$*" in *"get pod upf -o jsonpath"*) printf node-a ;; '
                                     '*"apply -f -") echo "pod/n6-server created" ;; '
                                     '*" wait "*) echo "pod/n6-server condition met" ;; '
                                     '*" logs n6-server") echo \'{"end": {}}\' ;; esac')
    run = manifest.create(tmp_path / "results", "throughput", "baseline", {}, datapath_facts={})
    base = [sys.executable, "-m", "testbed.runtime.k8s.server", "--render-dir", str(rendered)]
    env = {**os.environ, "KUBECTL": str(fake)}
    res = subprocess.run([*base, "start", "n6-server", GATEWAY, "5201", "--run-dir", str(run), "--",
                          "iperf3", "-s", "-B", GATEWAY, "-p", "5201", "-J"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == "node-a\n", res.stderr        # the node alone: the driver reads it
    applied = json.loads((tmp_path / "calls.applied").read_text())
    assert applied["spec"]["nodeSelector"] == {k8s_pods.HOSTNAME_LABEL: "node-a"} and applied["spec"]["hostNetwork"]
    assert applied["metadata"]["namespace"] == "g5tb" and applied["spec"]["containers"][0]["image"].startswith("g5tb/tools:")
    assert calls.read_text().splitlines() == [
        "-n g5tb get pod upf -o jsonpath={.spec.nodeName}", "-n g5tb apply -f -",
        f"-n g5tb wait --for=condition=Ready pod/n6-server --timeout={stackctl.start_seconds()}s"]
    server = manifest.load(run)["placement"]["servers"]["n6-server"]
    assert server["node"] == "node-a" and server["host_network"] is True and server["address"] == GATEWAY
    assert server["beside"] == "upf" and server["command"][:2] == ["iperf3", "-s"]
    assert manifest.validate(manifest.load(run)) == []
    res = subprocess.run([*base, "stop", "n6-server", str(run / "iperf3-server.json")], cwd=ROOT, env=env, timeout=60)
    assert res.returncode == 0 and json.loads((run / "iperf3-server.json").read_text()) == {"end": {}}
    assert calls.read_text().splitlines()[-2:] == ["-n g5tb logs n6-server",
                                                   "-n g5tb delete pod n6-server --ignore-not-found --wait=true"]


TIMEOUT_ANSWER = "Error from server (Timeout): Timeout: request did not complete within requested timeout"


def _timing_out_once(tmp_path: Path, answers: str) -> tuple[Path, Path]:
    """A kubectl whose first apply the API server lets time out (what stopped run-cpu's stack on the
    guest's loaded cluster), answering the rest from ANSWERS (a case body)."""
    marker = tmp_path / "timed-out"
    return _kubectl(tmp_path, f'if [[ "$*" == *"apply -f -"* && ! -e "{marker}" ]]; then touch "{marker}"; '
                              f'echo "{TIMEOUT_ANSWER}" >&2; exit 1; fi\ncase "$*" in {answers} esac')


def test_the_server_pod_and_the_cpu_readers_are_applied_again_after_a_timeout(rendered: Path, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "server").mkdir()
    fake, calls = _timing_out_once(tmp_path / "server", '*"get pod upf -o jsonpath"*) printf node-a ;;')
    env = {**os.environ, "KUBECTL": str(fake)}
    res = subprocess.run([sys.executable, "-m", "testbed.runtime.k8s.server", "--render-dir", str(rendered), "start",
                          "n6-server", GATEWAY, "5201", "--", "iperf3", "-s"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == "node-a\n", res.stderr
    assert f"applying the server pod n6-server failed ({TIMEOUT_ANSWER}); trying again" in res.stderr
    assert calls.read_text().splitlines().count("-n g5tb apply -f -") == 2

    (tmp_path / "cpu").mkdir()
    fake, calls = _timing_out_once(tmp_path / "cpu", "*\"get nodes -o json\"*) echo '" + json.dumps(
        {"items": [{"metadata": {"name": "node-a"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]})
        + "' ;;")
    monkeypatch.setenv("KUBECTL", str(fake))
    monkeypatch.delenv("PLACEMENT", raising=False)
    monkeypatch.setattr("testbed.runtime.k8s.apply.EVERY_SECONDS", 0)
    assert cpu.up() == 0
    lines = calls.read_text().splitlines()
    assert lines.count("apply -f -") == 3 and lines[-1].startswith(f"-n {cpu.namespace()} wait --for=condition=Ready")


STACK_PODS = {"items": [
    {"metadata": {"name": "amf"}, "spec": {"nodeName": "node-a"},
     "status": {"initContainerStatuses": [
         {"name": "cap-sbi", "state": {"running": {}}, "containerID": "containerd://c0"},
         {"name": "amf-net", "state": {"running": {}}, "containerID": "containerd://a1"},
         {"name": k8s_pods.GATE, "state": {"terminated": {}}, "containerID": "containerd://g0"}],
         "containerStatuses": [{"name": "amf", "state": {"running": {}}, "containerID": "containerd://a2"}]}},
    {"metadata": {"name": "provision"}, "spec": {"nodeName": "node-a"},
     "status": {"containerStatuses": [{"name": "provision", "state": {"terminated": {}},
                                       "containerID": "containerd://p0"}]}},
    {"metadata": {"name": "nrf"}, "spec": {"nodeName": "node-a"},
     "status": {"containerStatuses": [{"name": "nrf", "state": {"running": {}}, "containerID": "containerd://n1"}]}}]}
READERS = {"items": [{"metadata": {"name": f"cpu-{n}"}, "spec": {"nodeName": n}}
                     for n in ("node-a", "node-b", "node-c")]}


def test_a_cpu_read_writes_a_line_per_kernel_and_the_stacks_containers(tmp_path: Path) -> None:
    """node-a and node-b share a kernel (the project's test cluster), node-c has its own; the stack runs
    on node-a. Every edge reads every reader at once; the last-PDU edge writes only the stack's
    kernel and reads each running container's usage_usec from the node's tree (by container ID),
    one the tree lacks (nrf) by exec into it."""
    (tmp_path / "stack.json").write_text(json.dumps(STACK_PODS))
    (tmp_path / "readers.json").write_text(json.dumps(READERS))
    fake, calls = _kubectl(tmp_path, f'''case "$*" in
  "-n g5tb-cpu get pods -o json") cat "{tmp_path}/readers.json" ;;
  "-n g5tb get pods -o json") cat "{tmp_path}/stack.json" ;;
  *"exec cpu-node-c "*) printf 'k2\\n2000000000\\ncpu 9 0 9 900 0 0 0 0 0 0\\n' ;;
  *"exec cpu-"*) printf 'k1\\n1000000000\\ncpu 5 0 5 500 0 0 1 0 0 0\\n'
      [[ "$*" != *kubepods* ]] || printf '%s\\n' \\
        '/host/cgroup/g5tb-k8s-node-a/kubepods/besteffort/podu1/a1/cpu.stat:usage_usec 700' \\
        '/host/cgroup/g5tb-k8s-node-a/kubepods/besteffort/podu1/a2/cpu.stat:usage_usec 1500' \\
        '/host/cgroup/g5tb-k8s-node-a/kubepods/besteffort/podu1/c0/cpu.stat:usage_usec 99' ;;
  *"exec nrf -c nrf -- cat /sys/fs/cgroup/cpu.stat") printf 'usage_usec 42\\nuser_usec 40\\n' ;;
esac''')
    env = {**os.environ, "KUBECTL": str(fake), "K8S_NAMESPACE": "g5tb"}
    snaps, table = tmp_path / "hostcpu.txt", tmp_path / "cpu.csv"
    for label, more in (("boot-start", []), ("last-pdu", ["--table", str(table)])):
        res = subprocess.run([sys.executable, "-m", "testbed.runtime.k8s.cpu", "read", str(snaps), label, *more],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
    assert [line.split()[0] for line in snaps.read_text().splitlines()] == [
        "boot-start@node-a", "boot-start@node-c", "last-pdu@node-a"]
    assert table.read_text() == "service,cpu_usec\namf-net,700\namf,1500\nnrf,42\n"
    assert "read by exec after the edge: nrf" in res.stderr
    execs = [line for line in calls.read_text().splitlines() if " exec cpu-" in line]
    assert len(execs) == 6 and sum("kubepods" in e for e in execs) == 3      # every reader, each edge


def test_the_cpu_plan_names_the_readers_and_the_read(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "testbed.runtime.k8s.cpu", "plan"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PLACEMENT": "*:pool=a upf:edge",
                                                     "K8S_NAMESPACE": "g5tb-s1"})
    assert res.returncode == 0
    assert "namespace g5tb-s1-cpu, a pod cpu-NODE on each Ready node PLACEMENT's entries name (edge, pool=a)" in res.stdout
    assert "kubectl -n g5tb-s1-cpu exec cpu-NODE -c reader -- /bin/sh -c" in res.stdout
    assert cpu.wanted({}, []) == []


# ------------------------------------------------------------------ the drivers' dry runs

def _dry_run(script: str, tmp_path: Path, *args: str) -> str:
    """The driver's DRY_RUN=1 on a cluster with every pod placed on node-a: its plan, no Docker."""
    require_tools("openssl", "wg")
    res = _driver(script, tmp_path, "--profile", "aes256gcm", "--reps", "1", *args, PLACEMENT="*:node-a")
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout + res.stderr
    assert "docker" not in out and "testbed/runtime/k8s/k8s.sh up " in out
    return out


def test_run_throughput_dry_run_on_k8s_caps_the_capture_and_serves_on_the_upfs_node(tmp_path: Path) -> None:
    out = _dry_run("run-throughput.sh", tmp_path, "--duration", "5")
    assert "dumpcap -i n3 -c 200000 -w /captures/n3.pcap" in out
    server = next(line for line in out.splitlines() if line.startswith("+ pod n6-server"))
    assert "on the UPF's node, node-a by the placement: hostNetwork, uid 65534, no capability" in server
    # the n6 gateway of this STATE's address block (testbed/instance.py), the client's target too
    gateway = re.search(r"ready once ([0-9.]+):5201 listens; iperf3 -s -B ([0-9.]+) -p 5201 -J$", server)
    assert gateway and gateway[1] == gateway[2] and gateway[1].endswith(".6.1")
    clients = [line for line in out.splitlines() if "exec -T ue1 timeout 35 iperf3 -c" in line]
    assert len(clients) == 2 and all("stackctl --render-dir" in c and f"-c {gateway[1]} " in c for c in clients)
    pods = stackctl.load(tmp_path / "s" / "render" / "n3" / "aes256gcm").pods
    for name in ("gnb", "upf"):                    # each end of n3 keeps its first 200000 packets
        cap = next(c for c in pods[name]["spec"]["initContainers"] if c["name"] == "cap-n3")
        assert "-i n3 -f outbound -c 200000 -w /captures/n3.pcap" in cap["command"][2]


@pytest.mark.parametrize(("env", "message"), [
    ({"K8S_CNI": "bridge n6:macvlan", "K8S_MASTER": "eth1"},
     "serves iperf3 on the n6 gateway of the UPF's node, which n6 on macvlan does not give the node"),
    ({"K8S_CNI": "macvlan", "K8S_MASTER": "eth1"}, "n6 on macvlan does not give the node"),
    ({"K8S_CNI": "bridge n6:vxlan"}, "'vxlan' is not a CNI"),
])
def test_run_throughput_on_k8s_without_an_n6_gateway_is_refused_before_anything_starts(
        tmp_path: Path, env: dict[str, str], message: str) -> None:
    res = _driver("run-throughput.sh", tmp_path, "--profile", "baseline", KUBECTL="kubectl-absent-here", **env)
    assert res.returncode == 2, res.stderr[-1500:]
    assert message in res.stderr and "nothing was started" in res.stderr
    assert not (tmp_path / "res").exists() and not (tmp_path / "s" / "render").exists()


def test_run_cpu_dry_run_on_k8s_reads_the_nodes_at_each_edge(tmp_path: Path) -> None:
    out = _dry_run("run-cpu.sh", tmp_path, "--ues", "1 5")
    assert "/proc/stat" in out
    assert "+ cpu readers: namespace g5tb-cpu, a pod cpu-NODE on each Ready node PLACEMENT's entries name " \
           "(node-a), uid 65534, no capability, /sys/fs/cgroup read-only at /host/cgroup" in out
    assert out.count("+ cpu readers:") == 1                      # made once, kept over the boots
    reads = [line.split("testbed.runtime.k8s.cpu read ")[1] for line in out.splitlines()
             if "testbed.runtime.k8s.cpu read " in line]
    assert reads == [f"./hostcpu-{t}.txt {e}" + (f" --table ./cpu-{t}.csv" if e == "last-pdu" else "")
                     for t in ("u01-r01", "u05-r01") for e in ("boot-start", "last-pdu", "idle-start", "idle-end")]
    lines = out.splitlines()
    ups = [i for i, line in enumerate(lines) if "k8s.sh up " in line]
    assert all("--skip ue1 --no-record" in lines[i] for i in ups)
    scale = [line for line in lines if "up -d --no-deps ue-scale" in line]
    assert [s.split()[2] for s in scale] == ["UES=1", "UES=5"] and all("stackctl" in s for s in scale)
    # the window's edges around the boot: boot-start before k8s.sh up, last-pdu after the attach
    first = [i for i, line in enumerate(lines) if "hostcpu-u01-r01.txt" in line]
    assert first[0] < ups[0] < first[1]
    assert "capture container in pod(s) *: dumpcap -i sbi -w /captures/sbi-u01-r01.pcap" in out


def test_the_drivers_the_cluster_does_not_run_are_still_refused(tmp_path: Path) -> None:
    for script, exp in (("run-f1u.sh", "f1u"), ("run-ran-procedures.sh", "ran-procedures"), ("run-secfn.sh", "secfn")):
        res = _driver(script, tmp_path, "--profile", "baseline")
        assert res.returncode == 2, (script, res.stderr[-800:])
        assert f"ENGINE=k8s runs the drivers of n3 sbi throughput cpu, not {exp} yet" in res.stderr
    assert not list((tmp_path / "res").rglob("manifest.json"))
