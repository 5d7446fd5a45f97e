"""The Kubernetes runtime's cluster side: `python -m testbed.runtime.k8s.tool <command>`.

    doctor                  check the cluster as `make doctor` checks a Docker host (ENGINE=k8s)
    preflight RENDER_DIR    before k8s-up applies anything: kubectl, the cluster, its version,
                            Multus where the render attaches networks, the placement's nodes
    record RENDER_DIR       after k8s-up: where the stack ran (k8s/placement-record.json, and with
                            --run-dir into that run's manifest as `placement`)
    cni NETWORK             the CNI K8S_CNI (and K8S_MASTER) give NETWORK, as the render takes it
                            (a driver's check before anything starts: run-throughput needs n6 a bridge)

Exit 0 fine, 1 a problem (each line says what and what to do), 2 usage. kubectl missing is a
problem named as such, before anything is started.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from testbed import environment, images, manifest
from testbed.contract import RuntimeOptionError
from testbed.runtime.k8s import cluster, render

RECORD = f"{render.DIR}/placement-record.json"
PROBE_NAMESPACE = "default"
NUMBER_OF_TRIES = 60                # of the node-info pod, one a second


def _line(level: str, what: str, detail: str, todo: str = "") -> None:
    tag = {"ok": "[ ok ]", "warn": "[WARN]", "fail": "[FAIL]", "info": "[info]"}[level]
    print(f"{tag} {what}: {detail}")
    if todo:
        print(f"       do:     {todo}")


def _connect() -> cluster.Kubectl:
    k = cluster.Kubectl(environment.get("KUBECTL", "kubectl"))
    try:
        k.run("get", "--raw=/readyz", "--request-timeout=10s")
    except cluster.ClusterError as exc:
        raise cluster.ClusterError(f"no cluster answers ({exc}); check KUBECONFIG and `kubectl cluster-info`; "
                                   "nothing was started") from None
    return k


def _version(k: cluster.Kubectl) -> tuple[int, int] | None:
    return cluster.server_version(json.loads(k.run("version", "-o", "json").stdout))


def node_info_pod(node: str, image: str, name: str) -> dict[str, Any]:
    """A one-shot pod on `node` that prints which kernel modules it has (loaded, built in or
    installed): /proc/modules is the node's, /lib/modules its, mounted read-only. No privilege."""
    script = ('k="$(uname -r)"; echo "kernel $k"; for m in ' + " ".join(cluster.MODULES) + '; do '
              'if grep -q "^$m " /proc/modules || grep -q "/$m.ko" "/lib/modules/$k/modules.builtin" 2>/dev/null '
              '|| [ -n "$(find "/lib/modules/$k" -name "$m.ko*" 2>/dev/null | head -n 1)" ]; '
              'then echo "module $m yes"; else echo "module $m no"; fi; done')
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": PROBE_NAMESPACE, "labels": {"testbed.doctor": "node-info"}},
            "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": node},
                     "containers": [{"name": "info", "image": image, "imagePullPolicy": "IfNotPresent",
                                     "command": ["/bin/sh", "-c", script],
                                     "securityContext": {"capabilities": {"drop": ["ALL"]},
                                                         "allowPrivilegeEscalation": False},
                                     "volumeMounts": [{"name": "modules", "mountPath": "/lib/modules",
                                                       "readOnly": True}]}],
                     "volumes": [{"name": "modules", "hostPath": {"path": "/lib/modules", "type": "Directory"}}]}}


def _node_modules(k: cluster.Kubectl, node: str, image: str) -> dict[str, bool] | str:
    name = f"g5tb-doctor-{node}"[:63].rstrip("-.")
    k.run("delete", "pod", "-n", PROBE_NAMESPACE, name, "--ignore-not-found", "--wait=true", check=False)
    try:
        k.run("apply", "-f", "-", stdin=json.dumps(node_info_pod(node, image, name)))
        for _ in range(NUMBER_OF_TRIES):
            phase = k.run("get", "pod", "-n", PROBE_NAMESPACE, name, "-o", "jsonpath={.status.phase}").stdout
            if phase in ("Succeeded", "Failed"):
                break
            time.sleep(1)
        else:
            return f"the node-info pod did not finish in {NUMBER_OF_TRIES} s (image {image} on the node?)"
        return cluster.modules(k.run("logs", "-n", PROBE_NAMESPACE, name).stdout)
    finally:
        k.run("delete", "pod", "-n", PROBE_NAMESPACE, name, "--ignore-not-found", "--wait=false", check=False)


def doctor() -> int:
    fails = 0
    try:
        k = _connect()
    except cluster.ClusterError as exc:
        _line("fail", "cluster", str(exc))
        return 1
    _line("ok", "kubectl", k.program)
    v = _version(k)
    if v is None or v < cluster.MIN_VERSION:
        fails += 1
        _line("fail", "Kubernetes version", f"{v or 'unknown'}: the overlay holders are native sidecars",
              f"Kubernetes >= {'.'.join(map(str, cluster.MIN_VERSION))}")
    else:
        _line("ok", "Kubernetes version", ".".join(map(str, v)))
    found = cluster.nodes(k.json("get", "nodes"))
    for n in found:
        _line("ok" if n.ready else "warn", f"node {n.name}",
              f"{'Ready' if n.ready else 'not Ready'}, kernel {n.kernel}, {n.cpus} CPUs, {n.runtime}")
    if not found:
        fails += 1
        _line("fail", "nodes", "the cluster has no node")
    multus = k.run("get", "crd", cluster.MULTUS_CRD, check=False).returncode == 0
    _line("ok" if multus else "warn", "Multus", "NetworkAttachmentDefinition CRD present" if multus
          else "no NetworkAttachmentDefinition CRD: one network per interface needs Multus",
          "" if multus else "install Multus (docs/kubernetes.md), or MULTUS=0 (the pod network)")
    image = environment.get("TOOLS_IMAGE") or images.resolve().get("TOOLS_IMAGE", "")
    for n in found:
        raw = k.run("get", "--raw", f"/api/v1/nodes/{n.name}/proxy/configz", check=False)
        allowed = cluster.unsafe_sysctls_allowed(json.loads(raw.stdout)) if raw.returncode == 0 else set()
        missing = [s for s in cluster.UNSAFE_SYSCTLS if s not in allowed]
        if missing:
            fails += 1
            _line("fail", f"node {n.name} sysctls", f"the kubelet does not allow {', '.join(missing)} "
                  "(the UPF forwards, IPsec sets its larval drop)",
                  f"kubelet --allowed-unsafe-sysctls={','.join(cluster.UNSAFE_SYSCTLS)}")
        else:
            _line("ok", f"node {n.name} sysctls", "the stack's unsafe sysctls are allowed")
        mods = _node_modules(k, n.name, image) if n.ready else "node not Ready"
        if isinstance(mods, str):
            _line("warn", f"node {n.name} kernel modules", mods)
            continue
        for m, why in cluster.MODULES.items():
            level = "ok" if mods.get(m) else ("fail" if m in cluster.NEEDED_MODULES else "warn")
            fails += level == "fail"
            _line(level, f"node {n.name} {m}", ("present" if mods.get(m) else "missing") + f" ({why})")
    return 1 if fails else 0


def preflight(render_dir: Path) -> int:
    k = _connect()
    objs = render.load_objects(render_dir)
    problems = []
    v = _version(k)
    if v is None or v < cluster.MIN_VERSION:
        problems.append(f"Kubernetes {v or 'unknown'}: the overlay holders are native sidecars, which need "
                        f">= {'.'.join(map(str, cluster.MIN_VERSION))}")
    if any(o.get("kind") == "NetworkAttachmentDefinition" for o in objs) \
            and k.run("get", "crd", cluster.MULTUS_CRD, check=False).returncode != 0:
        problems.append("the render attaches one network per interface but the cluster has no Multus "
                        "(NetworkAttachmentDefinition CRD): install it (docs/kubernetes.md) or render with MULTUS=0")
    placement = yaml.safe_load((render_dir / render.PLACEMENT).read_text(encoding="utf-8")) or {}
    found = cluster.nodes(k.json("get", "nodes"))
    problems += cluster.placement_problems(placement, found)
    nets_file = render_dir / render.NETWORKS
    nets = (yaml.safe_load(nets_file.read_text(encoding="utf-8")) or {}) if nets_file.is_file() else {}
    problems += cluster.bridge_problems(nets.get("members") or {}, nets.get("cni") or {}, found)
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    return 1 if problems else 0


# An exec goes through the API server to the kubelet: the guest's loaded cluster (load 45) let one
# take more than kubectl's usual 30 s, and the whole record was lost with it
EXEC_SECONDS = 120.0
EXEC_TRIES = 2          # pods of one node asked before its CPU model is left unknown


def _cpuinfo(k: cluster.Kubectl, ns: str, pods: dict[str, Any]) -> dict[str, str]:
    """Each node's /proc/cpuinfo, read in the first of its running pods that answers; a node none
    answers for is left out (the record says its CPU model as unknown: ""), with a warning."""
    slow = dataclasses.replace(k, timeout=EXEC_SECONDS)
    out: dict[str, str] = {}
    tried: dict[str, int] = {}
    for item in pods.get("items") or ():
        node = (item.get("spec") or {}).get("nodeName")
        if (not node or node in out or tried.get(node, 0) >= EXEC_TRIES
                or (item.get("status") or {}).get("phase") != "Running"):
            continue
        tried[node] = tried.get(node, 0) + 1
        pod, container = item["metadata"]["name"], item["spec"]["containers"][0]["name"]
        try:
            res = slow.run("exec", "-n", ns, pod, "-c", container, "--", "cat", "/proc/cpuinfo", check=False)
        except cluster.ClusterError as exc:
            why = str(exc)
        else:
            if res.returncode == 0:
                out[node] = res.stdout
                continue
            why = res.stderr.strip()
        print(f"warning: node {node}'s CPU model not read in pod {pod}: {why}", file=sys.stderr)
    return out


def record(render_dir: Path, run_dir: Path | None) -> int:
    k = _connect()
    ns = next(o["metadata"]["name"] for o in render.load_objects(render_dir) if o["kind"] == "Namespace")
    pods = k.json("get", "pods", "-n", ns)
    cpuinfo = _cpuinfo(k, ns, pods)
    placement = yaml.safe_load((render_dir / render.PLACEMENT).read_text(encoding="utf-8")) or {}
    nets = render_dir / render.NETWORKS       # absent in a render from before the CNI per network
    cni = (yaml.safe_load(nets.read_text(encoding="utf-8")) or {}).get("cni") if nets.is_file() else None
    rec = cluster.record(k.json("get", "nodes"), pods, cpuinfo, placement, cni)
    (render_dir / RECORD).write_text(json.dumps(rec, indent=2) + "\n", encoding="utf-8")
    if run_dir is not None:
        manifest.set_field(run_dir, "placement", rec)
    print(render_dir / RECORD)
    return 0


def cni(network: str) -> int:
    try:
        chosen = render.cni_choice({"K8S_CNI": environment.get("K8S_CNI") or "",
                                    "K8S_MASTER": environment.get("K8S_MASTER") or ""}, [network])
    except RuntimeOptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(chosen[network])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.runtime.k8s.tool", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor")
    for name in ("preflight", "record"):
        sp = sub.add_parser(name)
        sp.add_argument("render_dir", type=Path)
        if name == "record":
            sp.add_argument("--run-dir", type=Path)
    sub.add_parser("cni").add_argument("network")
    args = parser.parse_args(argv)
    if args.command == "cni":
        return cni(args.network)
    try:
        if args.command == "doctor":
            return doctor()
        if args.command == "preflight":
            return preflight(args.render_dir)
        return record(args.render_dir, args.run_dir)
    except cluster.ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}: render first (make render ENGINE=k8s)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
