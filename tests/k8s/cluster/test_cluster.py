"""The project's test cluster (tests/k8s/cluster/up.sh, docs/kubernetes.md "A test cluster"):
brought up from the binaries in K8S_BIN_DIR, both nodes Ready, and a pod on each node with a
Multus-attached second interface (a macvlan NetworkAttachmentDefinition on the link between the
nodes, static addresses) that the other pod reaches over that link.

Runs as root where the binaries and Debian 13's etcd-server, containerd, runc and CNI plugins are
(the full-kernel guest, docs/vm-check.md); skips naming what is absent elsewhere. A cluster that
was up before the test is left up; one the test brought up is taken down after it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_root

HERE = Path(__file__).resolve().parent
BINARIES = ("kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "multus", "pause")
DEBIAN = ("/usr/bin/etcd", "/usr/bin/containerd", "/usr/sbin/runc", "/usr/lib/cni/macvlan", "/usr/lib/cni/static")
STATE = Path(os.environ.get("K8S_CLUSTER_DIR", "/root/k8s/cluster"))
KUBECONFIG = STATE / "admin.kubeconfig"
NS = "g5tb-cluster-test"


def _bin_dir() -> Path:
    env = os.environ.get("K8S_BIN_DIR", "")
    if not env:
        pytest.skip("no Kubernetes v1.34 binaries: set K8S_BIN_DIR to a directory with "
                    f"{', '.join(BINARIES)} (docs/kubernetes.md, A test cluster)")
    absent = [b for b in BINARIES if not os.access(Path(env) / b, os.X_OK)]
    if absent:
        pytest.skip(f"no Kubernetes v1.34 binaries: {', '.join(absent)} absent from K8S_BIN_DIR={env}")
    return Path(env)


def _kubectl(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(STATE / "bin" / "kubectl"), "--kubeconfig", str(KUBECONFIG), *args],
                          input=input, capture_output=True, text=True, check=check, timeout=300)


def _cluster_answers() -> bool:
    return KUBECONFIG.exists() and (STATE / "bin" / "kubectl").exists() \
        and _kubectl("get", "--raw", "/readyz", check=False).returncode == 0


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    require_root()
    bins = _bin_dir()
    absent = [f for f in DEBIAN if not os.access(f, os.X_OK)]
    if absent or shutil.which("docker") is None:
        pytest.skip(f"no etcd-server/containerd/runc/CNI plugins/docker for the test cluster: {', '.join(absent) or 'docker'} absent")
    was_up = _cluster_answers()
    env = {**os.environ, "K8S_NODES": "2", "K8S_CLUSTER_DIR": str(STATE)}
    res = subprocess.run(["bash", str(HERE / "up.sh"), str(bins)], env=env, capture_output=True, text=True,
                         timeout=1800, check=False)
    assert res.returncode == 0, f"up.sh failed:\n{res.stderr[-4000:]}"
    assert res.stdout.strip().endswith(str(KUBECONFIG))
    try:
        yield
    finally:
        _kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true", check=False)
        if not was_up:
            subprocess.run(["bash", str(HERE / "down.sh")], env=env, check=False, timeout=600)


def test_nodes_ready(cluster: None) -> None:
    nodes = json.loads(_kubectl("get", "nodes", "-o", "json").stdout)["items"]
    ready = {n["metadata"]["name"]: next(c["status"] for c in n["status"]["conditions"] if c["type"] == "Ready")
             for n in nodes}
    assert ready == {"node-a": "True", "node-b": "True"}


def _pod(name: str, node: str, address: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "annotations": {
                "k8s.v1.cni.cncf.io/networks": json.dumps([{"name": "link", "interface": "n3",
                                                            "ips": [f"{address}/24"]}])}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "restartPolicy": "Never",
                     # an unsafe sysctl the stack's pods set: the kubelets allow it (docs/kubernetes.md,
                     # Sysctls), else the pod fails with SysctlForbidden
                     "securityContext": {"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}]},
                     "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                                     "imagePullPolicy": "Never"}]}}


def _pid_of(node_sock: str, pod: str, container: str = "") -> int:
    """The host pid of POD's sandbox (or of its CONTAINER), through the node's containerd: the
    sandbox's /var/run/netns path is a mount node-b's containerd made, not seen from the guest's
    namespace."""
    ctr = ["ctr", "-a", node_sock, "-n", "k8s.io"]
    tasks = {line.split()[0]: line.split()[1] for line in subprocess.run(
        [*ctr, "tasks", "ls"], capture_output=True, text=True, check=True).stdout.splitlines()[1:]}
    for cid in subprocess.run([*ctr, "containers", "ls", "-q"], capture_output=True, text=True, check=True).stdout.split():
        info = json.loads(subprocess.run([*ctr, "containers", "info", cid], capture_output=True, text=True,
                                         check=True).stdout)
        labels = info.get("Labels") or {}
        kind = ("container", container) if container else ("sandbox", None)
        # a deleted pod of the same name may leave a sandbox container with no task until GC
        if labels.get("io.kubernetes.pod.name") == pod and labels.get("io.kubernetes.pod.namespace") == NS \
                and labels.get("io.cri-containerd.kind") == kind[0] \
                and labels.get("io.kubernetes.container.name") == kind[1] and cid in tasks:
            return int(tasks[cid])
    raise AssertionError(f"no {container or 'sandbox'} of pod {pod} in {node_sock}")


def _netns_of(node_sock: str, pod: str) -> str:
    return f"/proc/{_pid_of(node_sock, pod)}/ns/net"


def _wait_ready(*pods: str) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if _kubectl("-n", NS, "wait", "--for=condition=Ready", *(f"pod/{p}" for p in pods), "--timeout=10s",
                    check=False).returncode == 0:
            return
    pytest.fail(_kubectl("-n", NS, "describe", "pods", check=False).stdout[-4000:])


def test_multus_pods_talk_across_the_link(cluster: None) -> None:
    nad = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
           "metadata": {"name": "link", "namespace": NS},
           "spec": {"config": json.dumps({"cniVersion": "0.4.0", "name": "link", "plugins": [
               {"type": "macvlan", "master": "k8slink", "mode": "bridge", "capabilities": {"ips": True},
                "ipam": {"type": "static"}}]})}}
    objs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, nad,
            _pod("on-a", "node-a", "10.251.0.1"), _pod("on-b", "node-b", "10.251.0.2")]
    _kubectl("apply", "-f", "-", input="\n".join(json.dumps(o) for o in objs))
    _wait_ready("on-a", "on-b")
    pods = {p["metadata"]["name"]: p for p in json.loads(_kubectl("-n", NS, "get", "pods", "-o", "json").stdout)["items"]}
    assert {n: p["spec"]["nodeName"] for n, p in pods.items()} == {"on-a": "node-a", "on-b": "node-b"}
    status = json.loads(pods["on-a"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/network-status"])
    assert [(s["interface"], s["ips"]) for s in status if s.get("interface") == "n3"] == [("n3", ["10.251.0.1"])]
    netns = _netns_of("/run/g5tb-k8s/node-a/containerd.sock", "on-a")
    ping = subprocess.run(["nsenter", f"--net={netns}", "ping", "-c", "3", "-W", "5", "10.251.0.2"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert " 0% packet loss" in ping.stdout
    back = _netns_of("/run/g5tb-k8s/node-b/containerd.sock", "on-b")
    ping = subprocess.run(["nsenter", f"--net={back}", "ping", "-c", "3", "-W", "5", "10.251.0.1"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr


@pytest.mark.parametrize("node", ["node-a", "node-b"])
def test_a_secret_volume_reaches_the_container_on_each_node(cluster: None, node: str) -> None:
    """The kubelet mounts a Secret as tmpfs; containerd must see that mount. node-b's daemons once
    ran in mount namespaces of their own (systemd's NetworkNamespacePath=), the container found its
    Secret volume empty, and the stack's IPsec holder on node-b stopped: overlay.env missing."""
    name = f"secret-{node}"
    value = os.urandom(8).hex()
    objs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
             "stringData": {"value": value}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
             "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "restartPolicy": "Never",
                      "volumes": [{"name": "s", "secret": {"secretName": name}}],
                      "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                                      "imagePullPolicy": "Never",
                                      "volumeMounts": [{"name": "s", "mountPath": "/s", "readOnly": True}]}]}}]
    _kubectl("apply", "-f", "-", input="\n".join(json.dumps(o) for o in objs))
    _wait_ready(name)
    pid = _pid_of(f"/run/g5tb-k8s/{node}/containerd.sock", name, "pause")
    seen = Path(f"/proc/{pid}/root/s/value")         # the container's own view of its volume
    assert seen.exists() and seen.read_text() == value, f"{node}: the container's /s holds {sorted(os.listdir(seen.parent))}"


def test_scripts_shellcheck_clean() -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("missing shellcheck: `sudo make host-tools` installs it")
    res = subprocess.run(["shellcheck", "-x", *sorted(str(f.relative_to(HERE.parents[2])) for f in HERE.glob("*.sh"))],
                         cwd=HERE.parents[2], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


@pytest.mark.parametrize("script", ["up.sh", "down.sh", "node.sh"])
def test_scripts_refuse_bad_usage(script: str) -> None:
    """A wrong argument stops with exit 2 and the usage before anything starts."""
    res = subprocess.run(["bash", str(HERE / script), "--bogus"], capture_output=True, text=True, check=False,
                         env={**os.environ, "K8S_CLUSTER_DIR": "/nonexistent-g5tb"}, timeout=30)
    assert res.returncode == 2, res.stderr
    assert "usage" in res.stderr.lower() or script in res.stderr
