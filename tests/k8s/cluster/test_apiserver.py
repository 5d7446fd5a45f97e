"""The runtime's applies against a real API server (kube-apiserver v1.34 on etcd, no node), with
real kubectl: an apply that finds the server away is applied once it answers
(testbed/runtime/k8s/apply.py reads kubectl's own words for it), an object the server refuses
ends the apply at once, and what the drivers apply, run-throughput's iperf3 server pod, run-cpu's
readers and a profile's render, is admitted as k8s.sh applies it (server-side).

Needs kube-apiserver and kubectl in K8S_BIN_DIR (docs/kubernetes.md, A test cluster) and etcd
(K8S_ETCD, else /usr/bin/etcd: Debian 13's etcd-server), and openssl; no root and no kubelet (the
pods stay Pending). Skips naming what is absent.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from testbed.runtime.k8s import nodepods
from tests.conftest import ROOT
from tests.testbed.runtime.helpers import objects, render_k8s

HERE = Path(__file__).resolve().parent
APPLY = ["apply", "--server-side", "--field-manager=g5tb", "--force-conflicts", "-f", "-"]   # k8s.sh's


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _needs() -> tuple[Path, str]:
    env = os.environ.get("K8S_BIN_DIR", "")
    absent = [b for b in ("kube-apiserver", "kubectl") if not env or not os.access(Path(env) / b, os.X_OK)]
    if absent:
        pytest.skip(f"no Kubernetes v1.34 binaries: {', '.join(absent)} absent from K8S_BIN_DIR={env or '(unset)'}"
                    " (docs/kubernetes.md, A test cluster)")
    etcd = os.environ.get("K8S_ETCD") or "/usr/bin/etcd"
    if not os.access(etcd, os.X_OK) or shutil.which("openssl") is None:
        pytest.skip(f"no etcd-server/containerd/runc/CNI plugins/docker for the test cluster: etcd ({etcd}) or "
                    "openssl absent (K8S_ETCD names an etcd 3.5)")
    return Path(env), etcd


class Server:
    """etcd up at once; the API server when start() says so."""

    def __init__(self, bins: Path, etcd: str, state: Path) -> None:
        self.bins, self.state, self.port = bins, state, _free_port()
        env = {**os.environ, "K8S_CLUSTER_DIR": str(state), "API_ADDR": "127.0.0.1", "API_PORT": str(self.port)}
        subprocess.run(["bash", str(HERE / "pki.sh")], env=env, check=True, capture_output=True, timeout=300)
        self.kubeconfig, pki = state / "admin.kubeconfig", state / "pki"
        client, peer = _free_port(), _free_port()
        self.procs = [subprocess.Popen(
            [etcd, "--name", "t", "--data-dir", str(state / "etcd"), "--unsafe-no-fsync",
             "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"t=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=open(state / "etcd.log", "w"))]
        self.apiserver = [
            str(bins / "kube-apiserver"), "--etcd-servers", f"http://127.0.0.1:{client}",
            "--bind-address", "127.0.0.1", "--secure-port", str(self.port), "--advertise-address", "127.0.0.1",
            "--cert-dir", str(state / "cert"), "--tls-cert-file", str(pki / "apiserver.crt"),
            "--tls-private-key-file", str(pki / "apiserver.key"), "--client-ca-file", str(pki / "ca.crt"),
            "--authorization-mode", "Node,RBAC", "--service-account-key-file", str(pki / "sa.pub"),
            "--service-account-signing-key-file", str(pki / "sa.key"),
            "--service-account-issuer", "https://kubernetes.default.svc", "--service-cluster-ip-range", "10.96.0.0/16",
            "--allow-privileged=false", "--profiling=false", "--enable-priority-and-fairness=false"]

    def kubectl(self, *args: str) -> list[str]:
        return [str(self.bins / "kubectl"), "--kubeconfig", str(self.kubeconfig), "--request-timeout=60s", *args]

    def run(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.kubectl(*args), input=input, capture_output=True, text=True, check=False,
                              timeout=300)

    def start(self) -> None:
        self.procs.append(subprocess.Popen(self.apiserver, stdout=subprocess.DEVNULL,
                                           stderr=open(self.state / "apiserver.log", "w")))
        end = time.monotonic() + 600
        while self.run("get", "--raw", "/readyz").returncode != 0:
            assert self.procs[-1].poll() is None, (self.state / "apiserver.log").read_text()[-3000:]
            assert time.monotonic() < end, "the API server was not ready in 600 s"
            time.sleep(1)

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()


@contextmanager
def _server(tmp_path: Path, started: bool) -> Iterator[Server]:
    bins, etcd = _needs()
    srv = Server(bins, etcd, tmp_path)
    try:
        if started:
            srv.start()
        yield srv
    finally:
        srv.stop()


def _apply(srv: Server, what: str, within: int = 600) -> list[str]:
    return [sys.executable, "-m", "testbed.runtime.k8s.apply", "--what", what, "--within", str(within),
            "--every", "1", "--", *srv.kubectl(*APPLY)]


def test_an_apply_that_finds_the_api_server_away_is_applied_once_it_answers(tmp_path: Path) -> None:
    with _server(tmp_path, started=False) as srv:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "g5tb-apply"}}
        proc = subprocess.Popen(_apply(srv, "the namespace"), cwd=ROOT, stdin=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(json.dumps(ns))
        proc.stdin.close()
        first = proc.stderr.readline()                    # kubectl's words for a server that is away
        srv.start()
        rest = proc.stderr.read()
        assert proc.wait(timeout=300) == 0, first + rest
        # kubectl apply validates against the server's OpenAPI first, and says so (kubectl v1.34.2)
        assert first.startswith('applying the namespace failed (error: error validating "STDIN": error validating '
                                "data: failed to download openapi: Get \"https://127.0.0.1:"), first
        assert "connect: connection refused" in first and first.endswith("); trying again\n")
        got = srv.run("get", "namespace", "g5tb-apply", "-o", "jsonpath={.metadata.name}")
        assert got.returncode == 0 and got.stdout == "g5tb-apply", got.stderr


def test_the_drivers_objects_are_admitted_and_a_refused_one_ends_the_apply_at_once(tmp_path: Path) -> None:
    with _server(tmp_path / "s", started=True) as srv:
        # the namespace's default service account, which a cluster's controller manager makes
        for ns in ("g5tb", "g5tb-cpu"):
            assert srv.run(*APPLY, input=json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": ns}})).returncode == 0
            assert srv.run("-n", ns, "create", "serviceaccount", "default").returncode == 0
        assert srv.run("apply", "-f", str(HERE / "nad-crd.yaml")).returncode == 0
        image = nodepods.tools_image()
        pods = [nodepods.n6_server("n6-server", "g5tb", "node-a", image, "10.182.6.1", 5201,
                                   ["iperf3", "-s", "-B", "10.182.6.1", "-p", "5201", "-J"]),
                nodepods.cpu_reader("g5tb-cpu", "node-a", image)]
        res = subprocess.run(_apply(srv, "the drivers' pods"), cwd=ROOT, capture_output=True, text=True,
                             input=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}), timeout=600)
        assert res.returncode == 0 and "trying again" not in res.stderr, res.stderr
        got = json.loads(srv.run("get", "pods", "-A", "-o", "json").stdout)["items"]
        assert sorted(p["metadata"]["name"] for p in got) == ["cpu-node-a", "n6-server"]
        # a profile's render, as k8s.sh up applies it: the data first, then the pods
        rendered = [o for o in objects(render_k8s("aes256gcm", "n3", tmp_path / "r")) if o["kind"] != "Namespace"]
        for part in ([o for o in rendered if o["kind"] != "Pod"], [o for o in rendered if o["kind"] == "Pod"]):
            res = subprocess.run(_apply(srv, "the render"), cwd=ROOT, capture_output=True, text=True,
                                 input=yaml.safe_dump_all(part), timeout=600)
            assert res.returncode == 0, res.stderr
        names = srv.run("-n", "g5tb", "get", "pods", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
        assert {"upf", "gnb", "nrf", "n6-server"} <= set(names)
        # an object the server refuses is not tried again
        bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Bad_Name", "namespace": "g5tb"},
               "spec": {"containers": [{"name": "c", "image": image}]}}
        started = time.monotonic()
        res = subprocess.run(_apply(srv, "a bad pod"), cwd=ROOT, capture_output=True, text=True,
                             input=json.dumps(bad), timeout=600)
        assert res.returncode == 1 and time.monotonic() - started < 60 and "trying again" not in res.stderr
        assert 'error: applying a bad pod: The Pod "Bad_Name" is invalid' in res.stderr, res.stderr
