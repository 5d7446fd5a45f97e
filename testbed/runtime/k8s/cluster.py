"""What the Kubernetes runtime asks a cluster, and how it reads the answers (kubectl's JSON).

The reading is pure (functions of `kubectl ... -o json` output: tested on canned answers);
`Kubectl` runs the commands. Used by the doctor (doctor.py) and by the record of where a run's
pods ran (record()), which the run's manifest keeps per node: name, kernel, CPU model and the
address each interface took.
"""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from testbed.runtime.k8s import networks

MULTUS_CRD = "network-attachment-definitions.k8s.cni.cncf.io"
# Native sidecars (an init container with restartPolicy Always, the overlay holder): beta and on
# by default from Kubernetes 1.29 (KEP-753), GA in 1.33.
MIN_VERSION = (1, 29)
# The sysctls the stack's pods set that Kubernetes counts unsafe (the kubelet's
# --allowed-unsafe-sysctls must name them): compose/base.yaml's UPF holder (ip_forward) and the
# IPsec fragment's larval drop (ipsec/overlay.py, trap modes).
UNSAFE_SYSCTLS = ("net.ipv4.ip_forward", "net.core.xfrm_larval_drop")
# Kernel modules the overlays' kernel datapaths use (docs/images.md "make doctor"); a module built
# into the kernel counts.
MODULES = {"sctp": "N2 (NGAP over SCTP)", "tun": "the UPF's ogstun, userspace overlays",
           "esp4": "IPsec ESP in the kernel", "xfrm_user": "IPsec (swanctl's kernel interface)",
           "wireguard": "WireGuard in the kernel", "macsec": "MACsec profiles"}
NEEDED_MODULES = ("sctp", "tun")


class ClusterError(RuntimeError):
    """kubectl is missing or the cluster does not answer; the message says what to do."""


def no_kubectl() -> str:
    return ("kubectl not found on PATH: ENGINE=k8s drives a cluster through kubectl; install it "
            "(Debian: `apt-get install kubernetes-client`, or the binary from the Kubernetes release) and point "
            "KUBECONFIG at the cluster (docs/kubernetes.md); nothing was started")


@dataclasses.dataclass
class Kubectl:
    program: str = "kubectl"
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if shutil.which(self.program) is None:
            raise ClusterError(no_kubectl())

    def run(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        try:
            res = subprocess.run([self.program, *args], capture_output=True, text=True, timeout=self.timeout,
                                 input=stdin)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"`kubectl {' '.join(args)}` did not answer in {self.timeout:.0f} s: is the "
                               "cluster up and KUBECONFIG right? (`kubectl cluster-info`)") from None
        if check and res.returncode != 0:
            raise ClusterError(f"`kubectl {' '.join(args)}` failed: {res.stderr.strip() or res.stdout.strip()}")
        return res

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").stdout)


# ------------------------------------------------------------------------------- reading answers

def server_version(version: Mapping[str, Any]) -> tuple[int, int] | None:
    """(major, minor) of `kubectl version -o json`'s server; None without one."""
    sv = version.get("serverVersion") or {}
    try:
        return int(str(sv["major"]).rstrip("+")), int(str(sv["minor"]).rstrip("+"))
    except (KeyError, ValueError):
        m = re.match(r"v(\d+)\.(\d+)", str(sv.get("gitVersion", "")))
        return (int(m.group(1)), int(m.group(2))) if m else None


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    ready: bool
    kernel: str
    os_image: str
    architecture: str
    kubelet: str
    runtime: str
    cpus: str
    memory: str
    labels: dict[str, str]
    addresses: dict[str, str]            # InternalIP, Hostname ...
    schedulable: bool = True             # not cordoned, no NoSchedule/NoExecute taint: takes a pod without a toleration


def nodes(node_list: Mapping[str, Any]) -> list[Node]:
    """The nodes of `kubectl get nodes -o json`."""
    out = []
    for item in node_list.get("items") or ():
        status, spec = item.get("status") or {}, item.get("spec") or {}
        info = status.get("nodeInfo") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
        out.append(Node(name=item["metadata"]["name"], ready=ready, kernel=str(info.get("kernelVersion", "")),
                        os_image=str(info.get("osImage", "")), architecture=str(info.get("architecture", "")),
                        kubelet=str(info.get("kubeletVersion", "")),
                        runtime=str(info.get("containerRuntimeVersion", "")),
                        cpus=str((status.get("capacity") or {}).get("cpu", "")),
                        memory=str((status.get("capacity") or {}).get("memory", "")),
                        labels=dict(item["metadata"].get("labels") or {}),
                        addresses={a["type"]: a["address"] for a in status.get("addresses") or ()},
                        schedulable=not spec.get("unschedulable") and not any(
                            t.get("effect") in ("NoSchedule", "NoExecute") for t in spec.get("taints") or ())))
    return out


def placement_problems(placement: Mapping[str, str], found: Sequence[Node]) -> list[str]:
    """Targets of a placement record ({NF: node or label=value}) no Ready node matches."""
    out = []
    for nf, target in sorted(placement.items()):
        if "=" in target:
            key, _, value = target.partition("=")
            hits = [n for n in found if n.labels.get(key) == value]
        else:
            hits = [n for n in found if n.name == target]
        if not hits:
            known = ", ".join(n.name for n in found) or "none"
            out.append(f"{nf}:{target}: no node {'carries that label' if '=' in target else 'of that name'} "
                       f"(nodes: {known})")
        elif not any(n.ready for n in hits):
            out.append(f"{nf}:{target}: {', '.join(n.name for n in hits)} not Ready")
    return out


def bridge_problems(members: Mapping[str, Mapping[str, str | None]], cni: Mapping[str, str],
                    found: Sequence[Node]) -> list[str]:
    """Node-local bridges whose pods may land on different nodes of this cluster, where they would
    not reach each other. `members`: network -> {pod: its placement target (node, label=value) or
    None: any schedulable Ready node}, as the render's networks.yaml holds it. The render refuses
    two pods pinned apart; only the cluster says where unpinned or labelled pods may go (a
    run-sbi with no PLACEMENT on the guest's two nodes put the AMF on node-b and the NRF on node-a,
    and the AMF never reached the NRF)."""
    usable = [n for n in found if n.ready and n.schedulable]
    out = []
    for net in sorted(members):
        if cni.get(net, "bridge") != "bridge":
            continue
        where: set[str] = set()
        for target in members[net].values():
            if target is None:
                where |= {n.name for n in usable}
            elif "=" in target:
                key, _, value = target.partition("=")
                where |= {n.name for n in usable if n.labels.get(key) == value}
            else:
                where.add(target)
        if len(where) > 1:
            out.append(f"{net} is a node-local bridge and its pods may land on different nodes "
                       f"({', '.join(sorted(where))}), where they would not reach each other: "
                       "PLACEMENT=\"*:<node>\" keeps the stack on one node, or K8S_CNI=\"bridge "
                       f"{net}:macvlan\" (with K8S_MASTER) spans them")
    return out


def unsafe_sysctls_allowed(configz: Mapping[str, Any]) -> set[str]:
    """The kubelet's allowedUnsafeSysctls (`kubectl get --raw /api/v1/nodes/<n>/proxy/configz`)."""
    cfg = configz.get("kubeletconfig") or configz
    return {str(s) for s in cfg.get("allowedUnsafeSysctls") or ()}


def modules(text: str) -> dict[str, bool]:
    """What the node-info pod printed (`module <name> yes|no` lines) -> {module: present}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "module":
            out[parts[1]] = parts[2] == "yes"
    return out


def cpu_model(cpuinfo: str) -> str:
    """The CPU model of a node's /proc/cpuinfo (x86 `model name`, Arm `Model`/`CPU part`)."""
    for key in ("model name", "Model", "cpu model", "Hardware"):
        for line in cpuinfo.splitlines():
            k, sep, v = line.partition(":")
            if sep and k.strip() == key and v.strip():
                return v.strip()
    return ""


def pod_addresses(pod: Mapping[str, Any]) -> dict[str, str]:
    """{interface: IPv4 address} a pod's interfaces took, from Multus's network-status annotation
    (the attachments are named after the network: n3, n2, sbi ...); the pod network as `pod`."""
    out: dict[str, str] = {}
    status = (pod.get("metadata", {}).get("annotations") or {}).get(networks.STATUS_ANNOTATION)
    if status:
        for net in json.loads(status):
            ips = [ip for ip in net.get("ips") or () if ":" not in ip]
            if ips and net.get("interface") and not net.get("default"):
                out[str(net["interface"])] = ips[0]
    pod_ip = (pod.get("status") or {}).get("podIP")
    if pod_ip:
        out["pod"] = str(pod_ip)
    return out


def record(node_list: Mapping[str, Any], pod_list: Mapping[str, Any], cpuinfo: Mapping[str, str],
           placement: Mapping[str, str], cni: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What a run's manifest keeps of where it ran: the placement asked for, and per node that ran
    a pod of the stack its name, kernel, CPU model, OS, kubelet and runtime, and per pod its node
    and the address each interface took (N3 and N2 among them); with `cni` (the render's
    k8s/networks.yaml) the CNI each network took, as `networks`."""
    by_name = {n.name: n for n in nodes(node_list)}
    pods_out: dict[str, Any] = {}
    used: dict[str, list[str]] = {}
    for item in pod_list.get("items") or ():
        name = item["metadata"]["name"]
        node = (item.get("spec") or {}).get("nodeName") or ""
        pods_out[name] = {"node": node, "addresses": pod_addresses(item)}
        if node:
            used.setdefault(node, []).append(name)
    nodes_out = {}
    for node, members in sorted(used.items()):
        n = by_name.get(node)
        nodes_out[node] = {"kernel": n.kernel if n else "", "cpu_model": cpu_model(cpuinfo.get(node, "")),
                           "os_image": n.os_image if n else "", "architecture": n.architecture if n else "",
                           "kubelet": n.kubelet if n else "", "container_runtime": n.runtime if n else "",
                           "cpus": n.cpus if n else "", "internal_ip": (n.addresses.get("InternalIP", "") if n else ""),
                           "pods": sorted(members)}
    out = {"engine": "k8s", "requested": dict(sorted(placement.items())), "nodes": nodes_out,
           "pods": dict(sorted(pods_out.items()))}
    if cni is not None:
        out["networks"] = dict(sorted(cni.items()))
    return out
