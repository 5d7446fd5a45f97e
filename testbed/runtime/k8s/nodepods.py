"""Pods a driver starts on the stack's nodes beside the render: in the node's namespaces, not the stack's.

Two drivers need the node itself, where Compose uses the Docker host (docs/kubernetes.md, "The
experiment drivers on a cluster"):

- run-throughput's iperf3 server (`n6_server`): on Compose it runs on the host, bound to the n6
  network's gateway, the address Docker gives the host's bridge. On a cluster n6 is a bridge per
  node whose gateway address the node holds (networks.py, `isGateway`), and the UE's packets leave
  the UPF onto the bridge of the UPF's node. So the server is a pod pinned to that node, in the
  node's network namespace (hostNetwork), bound to that address: the path UE -> N3 -> UPF -> n6 ->
  the node's stack is Compose's.
- run-cpu's readers (`cpu_reader`): on Compose the driver reads /proc/stat (host-wide: kernel
  threads and softirq included) and each container's cgroup cpu.stat on the host. On a cluster a
  reader pod on each node does both: /proc/stat is host-wide in any container, and the node's
  cgroup tree is mounted read-only (hostPath), so one `kubectl exec` reads every container's
  counter of that node at one instant.

Least privilege (their roles in nf-configs/privileges.yaml, as the render's containers): nobody's
uid, no capability (iperf3's port 5201 is unprivileged; the cgroup files and /proc/stat are
world-readable), read-only root, no privilege escalation, no service account token. The node's
namespaces they use are the whole point and nothing more: the server shares the node's network
and nothing else, the reader sees the node's cgroup tree read-only and nothing else.
"""
from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from typing import Any

from testbed import environment, images, privileges
from testbed.runtime.k8s import pods

SERVER_ROLE = "n6-server"
READER_ROLE = "cpu-reader"
CGROUP_HOST = "/sys/fs/cgroup"
CGROUP_MOUNT = "/host/cgroup"          # where the reader sees the node's cgroup tree
IDLE = "trap 'exit 0' TERM; sleep 2147483647 & wait"     # the reader waits for its execs


def tools_image(roles_of: Mapping[str, Mapping[str, str]] | None = None,
                images_of: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """The tools image (iperf3, a shell): the render's own reference, taken from its provisioning
    container (role provision, the tools image) when the render is given as {pod: {container:
    role}} and {pod: {container: image}}; else images/defaults.env's, under REGISTRY= as the
    render puts it."""
    for pod, roles in (roles_of or {}).items():
        for name, role in roles.items():
            if role == "provision" and (images_of or {}).get(pod, {}).get(name):
                return (images_of or {})[pod][name]
    tools = environment.get("TOOLS_IMAGE") or images.resolve().get("TOOLS_IMAGE", "")
    registry = (environment.get("REGISTRY") or "").strip().rstrip("/")
    return f"{registry}/{tools}" if registry and tools else tools


def _security(role_name: str) -> dict[str, Any]:
    role = privileges.role(role_name)
    ctx: dict[str, Any] = {"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False,
                           "readOnlyRootFilesystem": role.read_only, "privileged": False,
                           "runAsNonRoot": True, "runAsUser": pods.NOBODY, "runAsGroup": pods.NOBODY}
    if role.capabilities:
        ctx["capabilities"]["add"] = sorted(role.capabilities)
    return ctx


def _pod(name: str, namespace: str, node: str, role: str, container: dict[str, Any],
         volumes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    tmpfs = privileges.role(role).tmpfs
    container["securityContext"] = _security(role)
    mounts = [{"name": f"tmpfs-{n}", "mountPath": path} for n, path in enumerate(tmpfs)]
    vols = [{"name": f"tmpfs-{n}", "emptyDir": {"medium": "Memory"}} for n, _ in enumerate(tmpfs)]
    container["volumeMounts"] = [*container.get("volumeMounts", []), *mounts]
    if not container["volumeMounts"]:
        del container["volumeMounts"]
    body: dict[str, Any] = {"restartPolicy": "Never", "enableServiceLinks": False,
                            "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 2,
                            "nodeSelector": {pods.HOSTNAME_LABEL: node}, **spec,
                            "containers": [container]}
    if volumes or vols:
        body["volumes"] = [*volumes, *vols]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"testbed.pod": name, "testbed.role": role},
                         "annotations": {pods.ROLES_ANNOTATION: json.dumps({container["name"]: role})}},
            "spec": body}


def listening(address: str, port: int) -> list[str]:
    """A probe command true once something listens on address:port in the pod's network namespace:
    the socket's line in /proc/net/tcp (address little-endian hex, state 0A LISTEN); no tool needed."""
    hexaddr = ipaddress.IPv4Address(address).packed[::-1].hex().upper()
    return ["grep", "-q", f" {hexaddr}:{port:04X} 00000000:0000 0A ", "/proc/net/tcp"]


def n6_server(name: str, namespace: str, node: str, image: str, address: str, port: int,
              command: Sequence[str]) -> dict[str, Any]:
    """The server pod: COMMAND in the node's network namespace on NODE (the UPF's), ready once it
    listens on ADDRESS:PORT (the n6 gateway the node's bridge holds); its output is its log."""
    container = {"name": "server", "image": image, "imagePullPolicy": "IfNotPresent", "command": list(command),
                 "readinessProbe": {"exec": {"command": listening(address, port)}, "periodSeconds": 1,
                                    "timeoutSeconds": 5, "failureThreshold": 3}}
    return _pod(name, namespace, node, SERVER_ROLE, container, [], hostNetwork=True, dnsPolicy="Default")


def reader_name(node: str) -> str:
    """cpu-<node> as a pod name (a DNS subdomain of at most 63 characters here)."""
    safe = "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in node.lower())
    return f"cpu-{safe}"[:63].rstrip("-.")


def cpu_reader(namespace: str, node: str, image: str) -> dict[str, Any]:
    """The reader pod of NODE: idles until the driver execs its reads (cpu.py); the node's cgroup
    tree read-only at CGROUP_MOUNT."""
    container = {"name": "reader", "image": image, "imagePullPolicy": "IfNotPresent",
                 "command": ["/bin/sh", "-c", IDLE],
                 "volumeMounts": [{"name": "cgroup", "mountPath": CGROUP_MOUNT, "readOnly": True}]}
    return _pod(reader_name(node), namespace, node, READER_ROLE, container,
                [{"name": "cgroup", "hostPath": {"path": CGROUP_HOST, "type": "Directory"}}])
