"""The render's Compose services as Kubernetes pods: one pod per network namespace.

The services come from the merged Compose model of the render dir (testbed/check/compose_model.py:
compose/base.yaml, the RAN's services, the overlay and dimension fragments, interpolated with
compose.env), so the pods are the Compose stack, service for service, and nothing about an NF,
an overlay or a dimension is typed here. Each field maps as follows:

- a network namespace is a pod: the namespace holder `<nf>-net` and every service with
  `network_mode: service:<nf>-net` (the NF, the UPF's security function) are its containers;
  the pod is named after the NF. The holder is a native sidecar (an init container with
  restartPolicy Always) whose startupProbe is its health check, so the NF starts only once the
  overlay is in force, as `depends_on: service_healthy` orders it in Compose;
- the start order is Compose's: the holders have no depends_on, so Compose starts them all at
  once (an overlay's holder waits for its peers' holders, which may be a later wave's), and only
  the programs wait for their dependencies. So a pod with a holder gets a start gate (`start_gate`):
  a regular init container after the holder's sidecar, which holds the pod's programs back until
  a file on its own memory volume exists. `k8s.sh up` creates every pod with a gate at once, then
  opens the gates wave by wave (waves(): `kubectl exec POD -c start-gate -- touch FILE`, the
  pod's GATE_ANNOTATION says how), as Compose's depends_on opens them; a pod without a holder
  (mongo, provision, the UEs) has no gate and is created in its wave. The gate holds nothing
  (no capability, read-only root, nobody's uid: its role `start-gate` in nf-configs/privileges.yaml);
- bare Pods with restartPolicy Never, not Deployments: Compose runs every service with
  `restart: "no"` and each boot is a fresh stack; a controller that recreates a failed NF would
  hide the failure from the run's validity and pool a restarted NF with fresh ones;
- `command` is the container's args (the image's entrypoint stays, as in Compose), `entrypoint`
  its command; `env_file` and `environment` its env;
- `cap_drop`/`cap_add` the securityContext's capabilities, `no-new-privileges`
  allowPrivilegeEscalation false, `read_only` readOnlyRootFilesystem (nf-configs/privileges.yaml
  through the Compose fields); `tmpfs` a memory emptyDir per path; a device a hostPath CharDevice
  (runc's default device rules allow /dev/net/tun);
- `sysctls` the pod's (the kubelet must allow the unsafe ones: `make doctor ENGINE=k8s`);
- the health check the readiness probe (and the startup probe while it starts: the Compose
  start_period and start_interval), CMD as exec, CMD-SHELL through /bin/sh -c;
- the networks with their fixed addresses the Multus annotation (testbed/runtime/k8s/networks.py);
  the DNS names Compose gives on each network the pod's hostAliases;
- read-only bind mounts ConfigMaps or Secrets (testbed/runtime/k8s/data.py), writable ones
  (results written by a container) emptyDirs, annotated with where Compose writes them.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed import placement as placement_mod, privileges, stack
from testbed.check import compose_model as cm
from testbed.contract import RuntimeOptionError
from testbed.placement import Placement
from testbed.privileges import NO_NEW_PRIVILEGES, ROLE_LABEL, normalise_capability
from testbed.render import compose_env as cenv
from testbed.runtime.k8s import data, networks, probetiming

HOLDER_SUFFIX = stack.HOLDER_SUFFIX
NETNS_ROLE = "netns"
HOSTNAME_LABEL = "kubernetes.io/hostname"
OUTPUT_ANNOTATION = "testbed/outputs"         # container:path -> where Compose writes it on the host
ROLES_ANNOTATION = "testbed/roles"            # container -> its testbed.role
LABELS_ANNOTATION = "testbed/labels"          # the Compose labels as they are (a label value cannot hold ",")
GATE = "start-gate"                           # the start gate's container and role (start_gate)
GATE_MOUNT = "/run/start-gate"                # its own memory volume
GATE_FILE = f"{GATE_MOUNT}/open"              # made by whoever opens it (k8s.sh up, stackctl up)
GATE_ANNOTATION = "testbed/start-gate"        # {"container": GATE, "open": the command, in it, that opens it}
NOBODY = 65534                                # the gate's uid and gid: it needs no file of anyone's


def label_value(text: str) -> str:
    """A Compose label value as a Kubernetes label value (63 characters of [-A-Za-z0-9_.], alphanumeric
    at both ends): the plane list "n3,sbi" becomes "n3-sbi"; the exact value is in LABELS_ANNOTATION."""
    return re.sub(r"[^-A-Za-z0-9_.]", "-", text)[:63].strip("-_.")


# Every Compose key a service of the render may carry, and where it goes; a key not listed stops
# the render naming it, so a field added to a Compose fragment is never dropped unseen.
COMPOSE_KEYS = {
    "image": "the container's image", "command": "its args", "entrypoint": "its command",
    "environment": "its env", "env_file": "its env", "cap_add": "securityContext", "cap_drop": "securityContext",
    "security_opt": "securityContext (no-new-privileges only)", "read_only": "securityContext", "tmpfs": "emptyDir",
    "devices": "hostPath CharDevice", "volumes": "ConfigMap, Secret or emptyDir", "networks": "Multus annotation",
    "network_mode": "the pod", "labels": "the pod's labels", "healthcheck": "startup and readiness probes",
    "depends_on": "waves.txt", "restart": "restartPolicy Never", "stop_grace_period": "terminationGracePeriodSeconds",
    "sysctls": "the pod's sysctls", "profiles": "on-demand/<profile>.yaml",
    # Docker's init as PID 1 forwards SIGTERM to a program that ignores it as PID 1 (the secfn D-ITG
    # server's sleep); the kubelet kills it after its grace period instead
    "init": "nothing: killed after the grace period",
}


class PodError(RuntimeOptionError):
    """A Compose field the Kubernetes render cannot carry over; the message names the service."""


@dataclasses.dataclass
class Pod:
    name: str
    services: list[str]                      # its containers, the holder first
    on_demand: str | None = None             # the Compose profile that starts it (ue2, scale)
    owner: str = ""                          # the service whose namespace it is (networks, sysctls)

    def __post_init__(self) -> None:
        self.owner = self.owner or self.services[0]


def pods(model: cm.ComposeModel) -> dict[str, Pod]:
    """Pod name -> its services: one pod per network namespace, named after its NF. A namespace
    owner that only sleeps (role netns, `<node>-ns`) is no container: the pod's sandbox holds
    the namespace, as the owner does in Compose."""
    by_owner: dict[str, list[str]] = {}
    for name in model.services:
        by_owner.setdefault(cm.netns_owner(model.services, name), []).append(name)
    out: dict[str, Pod] = {}
    for owner, members in by_owner.items():
        node = owner.removesuffix(stack.NETNS_SUFFIX) if _role(model, owner) == NETNS_ROLE else owner
        holder = stack.holder_service(node)
        nf = node if holder in members and node in members else (holder if holder in members else owner)
        ordered = sorted((m for m in members if _role(model, m) != NETNS_ROLE),
                         key=lambda m: (m != holder, m != owner))
        # started on demand when its namespace's owner is (a container joining it follows it)
        profiles = sorted(model.services[owner].get("profiles") or ())
        out[nf] = Pod(nf, ordered, profiles[0] if profiles else None, owner)
    return out


def _role(model: cm.ComposeModel, service: str) -> str:
    return str((model.services[service].get("labels") or {}).get(ROLE_LABEL, ""))


def container_pods(all_pods: Mapping[str, Pod]) -> dict[str, str]:
    """Each Compose service -> its pod (a namespace owner's: the pod it is the sandbox of)."""
    return {s: p.name for p in all_pods.values() for s in (p.owner, *p.services)}


def _probe_action(test: Any, service: str) -> dict[str, Any] | None:
    if isinstance(test, str):
        test = ["CMD-SHELL", test]
    if not test or test[0] == "NONE":
        return None
    if test[0] == "CMD":
        return {"exec": {"command": [str(t) for t in test[1:]]}}
    if test[0] == "CMD-SHELL":
        return {"exec": {"command": ["/bin/sh", "-c", " ".join(str(t) for t in test[1:])]}}
    raise PodError(f"services.{service}.healthcheck.test: {test[0]!r} is neither CMD nor CMD-SHELL")


def probes(svc: Mapping[str, Any], service: str) -> dict[str, dict[str, Any]]:
    """{startupProbe, readinessProbe} from the Compose health check (probetiming.timing)."""
    hc = svc.get("healthcheck") or {}
    if hc.get("disable"):
        return {}
    action = _probe_action(hc.get("test"), service)
    if action is None:
        return {}
    # the timing's VARIABLES at their defaults here; k8s.sh up and stackctl up give the caller's
    # (probetiming.apply, from the pod's probetiming.ANNOTATION)
    timed = probetiming.timing(hc, {})
    return {"startupProbe": {**copy.deepcopy(action), **timed["startupProbe"]},
            "readinessProbe": {**action, **timed["readinessProbe"]}}


def security_context(svc: Mapping[str, Any], service: str) -> dict[str, Any]:
    """Capabilities (drop ALL, add exactly the Compose cap_add), privilege escalation, read-only root."""
    if svc.get("privileged"):
        raise PodError(f"services.{service}: privileged is never rendered (nf-configs/privileges.yaml)")
    drop = [normalise_capability(c) for c in svc.get("cap_drop") or ()]
    ctx: dict[str, Any] = {"capabilities": {"drop": drop,
                                            "add": sorted({normalise_capability(c) for c in svc.get("cap_add") or ()})},
                           "allowPrivilegeEscalation": NO_NEW_PRIVILEGES not in (svc.get("security_opt") or ()),
                           "readOnlyRootFilesystem": bool(svc.get("read_only")), "privileged": False}
    if not ctx["capabilities"]["add"]:
        del ctx["capabilities"]["add"]
    return ctx


def _env(svc: Mapping[str, Any], compose_dir: Path) -> list[dict[str, str]]:
    env: dict[str, str] = {}
    for f in svc.get("env_file") or ():
        path = Path(str(f if not isinstance(f, dict) else f["path"]))
        env.update(cenv.parse_env((path if path.is_absolute() else compose_dir / path).read_text(encoding="utf-8")))
    given = svc.get("environment") or {}
    if isinstance(given, list):
        given = {str(x).partition("=")[0]: str(x).partition("=")[2] for x in given}
    env.update({str(k): "" if v is None else str(v) for k, v in given.items()})
    return [{"name": k, "value": v} for k, v in env.items()]


def _volume_name(prefix: str, n: int) -> str:
    return f"{prefix}-{n}"


@dataclasses.dataclass
class Volumes:
    """The pod's volumes, shared by its containers; data objects referenced by name."""
    compose_dir: Path
    store: data.Store
    volumes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    outputs: dict[str, str] = dataclasses.field(default_factory=dict)

    def add(self, volume: dict[str, Any]) -> str:
        """The volume's name; a ConfigMap, Secret or device two containers mount is one volume
        (a tmpfs stays each container's own, as in Compose)."""
        if "emptyDir" not in volume:
            for v in self.volumes:
                if {k: x for k, x in v.items() if k != "name"} == volume:
                    return str(v["name"])
        volume["name"] = _volume_name("v", len(self.volumes))
        self.volumes.append(volume)
        return str(volume["name"])

    def mounts(self, svc: Mapping[str, Any], service: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for path in svc.get("tmpfs") or ():
            target = str(path).split(":", 1)[0]
            out.append({"name": self.add({"emptyDir": {"medium": "Memory"}}), "mountPath": target})
        for dev in svc.get("devices") or ():
            host, _, inside = str(dev).partition(":")
            out.append({"name": self.add({"hostPath": {"path": host, "type": "CharDevice"}}),
                        "mountPath": inside.split(":", 1)[0] or host})
        for vol in svc.get("volumes") or ():
            out.append(self._bind(vol, service))
        return out

    def _bind(self, vol: Any, service: str) -> dict[str, Any]:
        if isinstance(vol, dict):
            source, target, ro = vol.get("source"), str(vol.get("target")), bool(vol.get("read_only"))
            if vol.get("type", "bind") != "bind":
                raise PodError(f"services.{service}.volumes: only bind mounts are rendered, not {vol.get('type')}")
        else:
            parts = str(vol).split(":")
            source, target, ro = parts[0], parts[1], len(parts) > 2 and "ro" in parts[2].split(",")
        host = Path(str(source))
        host = host if host.is_absolute() else (self.compose_dir / host).resolve()
        if not ro:
            # written by the container (its results): kept in the pod until they are copied out
            self.outputs[f"{service}:{target}"] = str(host)
            return {"name": self.add({"emptyDir": {}}), "mountPath": target}
        obj = self.store.add(host, service)
        chunks = self.store.parts_of(obj)
        if len(chunks) > 1:          # a directory over one object's limit: its parts as one volume (data.py)
            volume = {"projected": {"sources": [{p.kind_key: {"name": p.name, "items": p.items()}}
                                                for p in chunks], "defaultMode": 0o444}}
            return {"name": self.add(volume), "mountPath": target, "readOnly": True}
        if host.is_dir():
            volume = {obj.kind_key: {obj.name_key: obj.name, "items": obj.items(), "defaultMode": 0o444}}
            return {"name": self.add(volume), "mountPath": target, "readOnly": True}
        volume = {obj.kind_key: {obj.name_key: obj.name, "items": obj.items()}}
        return {"name": self.add(volume), "mountPath": target, "subPath": obj.items()[0]["path"], "readOnly": True}


def container(name: str, svc: Mapping[str, Any], vols: Volumes) -> dict[str, Any]:
    unknown = sorted(set(svc) - set(COMPOSE_KEYS))
    if unknown:
        raise PodError(f"services.{name}: {', '.join(unknown)} has no Kubernetes form in "
                       "testbed/runtime/k8s/pods.py (COMPOSE_KEYS)")
    opts = [o for o in svc.get("security_opt") or () if o != NO_NEW_PRIVILEGES]
    if opts:
        raise PodError(f"services.{name}: security_opt {opts} has no Kubernetes form here")
    c: dict[str, Any] = {"name": name, "image": str(svc["image"]), "imagePullPolicy": "IfNotPresent"}
    if svc.get("entrypoint") is not None:
        ep = svc["entrypoint"]
        c["command"] = shlex.split(ep) if isinstance(ep, str) else [str(x) for x in ep]
    if svc.get("command") is not None:
        cmd = svc["command"]
        c["args"] = shlex.split(cmd) if isinstance(cmd, str) else [str(x) for x in cmd]
    env = _env(svc, vols.compose_dir)
    if env:
        c["env"] = env
    c["securityContext"] = security_context(svc, name)
    mounts = vols.mounts(svc, name)
    if mounts:
        c["volumeMounts"] = mounts
    c.update(probes(svc, name))
    return c


def start_gate(holder: Mapping[str, Any], vols: Volumes) -> dict[str, Any]:
    """The pod's start gate (module docstring): a regular init container, so the kubelet starts it
    once the holder's sidecar has started (its overlay in force) and the programs once it has
    ended. It waits, checking once a second (before any measurement), for GATE_FILE on its own memory
    volume: not the holder's tmpfs, which holds the overlay's sockets (charon's vici in /run).
    The holder's image (the tools image) has the shell it needs; TERM ends it at once."""
    role = privileges.role(GATE)
    ctx: dict[str, Any] = {"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False,
                           "readOnlyRootFilesystem": role.read_only, "privileged": False,
                           "runAsNonRoot": True, "runAsUser": NOBODY, "runAsGroup": NOBODY}
    if role.capabilities:
        ctx["capabilities"]["add"] = sorted(role.capabilities)
    script = (f"trap 'exit 143' TERM; until [ -e {GATE_FILE} ]; do sleep 1; done; "
              "echo 'start gate opened: the programs start'")
    return {"name": GATE, "image": str(holder["image"]), "imagePullPolicy": "IfNotPresent",
            "command": ["/bin/sh", "-c", script], "securityContext": ctx,
            "volumeMounts": [{"name": vols.add({"emptyDir": {"medium": "Memory"}}), "mountPath": GATE_MOUNT}]}


def gate_annotation() -> str:
    """How to open a pod's gate, for k8s.sh up and stackctl up: the container and the command in it."""
    return json.dumps({"container": GATE, "open": ["touch", GATE_FILE]})


def host_aliases(model: cm.ComposeModel, owner: str) -> list[dict[str, Any]]:
    """/etc/hosts of the pod: every name Compose's DNS answers on the networks the pod shares
    (service names and aliases), at the address it has on the first network both have."""
    svcs = model.services
    mine = cm.service_networks(svcs[owner])
    names: dict[str, str] = {}
    for net in mine:
        for other, svc in svcs.items():
            spec = cm.service_networks(svc).get(net)
            if not spec or not spec.get("ipv4_address"):
                continue
            for n in [other, *(spec.get("aliases") or ())]:
                names.setdefault(str(n), str(spec["ipv4_address"]))
    by_ip: dict[str, list[str]] = {}
    for n, ip in names.items():
        by_ip.setdefault(ip, []).append(n)
    return [{"ip": ip, "hostnames": sorted(hosts)} for ip, hosts in sorted(by_ip.items())]


def node_selector(target: Any) -> dict[str, str]:
    """A node by name through its well-known hostname label (not nodeName, which bypasses the
    scheduler and its checks), a label as it is."""
    return {HOSTNAME_LABEL: target.node} if target.node is not None else {target.label[0]: target.label[1]}


@dataclasses.dataclass(frozen=True)
class Settings:
    namespace: str
    multus: bool
    prefix: str                              # of the network attachments (the stack's bridge prefix)


def pod_sysctls(model: cm.ComposeModel, pod: Pod) -> dict[str, str]:
    """The sysctls of the pod's services (one network namespace: one set)."""
    sysctls: dict[str, str] = {}
    for s in dict.fromkeys([pod.owner, *pod.services]):
        given = model.services[s].get("sysctls") or {}
        if isinstance(given, list):                 # Compose's list form: ["net.ipv4.ip_forward=1"]
            given = {str(x).partition("=")[0]: str(x).partition("=")[2] for x in given}
        for k, v in given.items():
            if sysctls.get(k, str(v)) != str(v):
                raise PodError(f"pod {pod.name}: services disagree on sysctl {k}")
            sysctls[str(k)] = str(v)
    return sysctls


def pod_object(model: cm.ComposeModel, pod: Pod, settings: Settings, placement: Placement,
               store: data.Store, compose_dir: Path) -> dict[str, Any]:
    svcs = model.services
    owner = pod.owner
    vols = Volumes(compose_dir, store)
    holder = pod.services[0].endswith(HOLDER_SUFFIX) and len(pod.services) > 1
    if GATE in pod.services:
        raise PodError(f"services.{GATE}: the name of the pods' start gate (testbed/runtime/k8s/pods.py GATE)")
    built = [container(s, svcs[s], vols) for s in pod.services]
    gate: list[dict[str, Any]] = []
    if holder:
        built[0]["restartPolicy"] = "Always"     # native sidecar: up before, and beside, the NF
        gate = [start_gate(built[0], vols)]      # after the holder, before the programs
    compose_labels = {k: str(v) for k, v in (svcs[pod.services[-1] if holder else owner].get("labels") or {}).items()
                      if k.startswith("testbed.")}
    labels = {k: label_value(v) for k, v in compose_labels.items()}
    labels["testbed.pod"] = pod.name
    roles = {s: str((svcs[s].get("labels") or {}).get(ROLE_LABEL, "")) for s in pod.services}
    annotations: dict[str, str] = {ROLES_ANNOTATION: json.dumps(roles, sort_keys=True),
                                   LABELS_ANNOTATION: json.dumps(compose_labels, sort_keys=True)}
    nets = cm.service_networks(svcs[owner])
    if settings.multus and nets:
        annotations[networks.ANNOTATION] = json.dumps(networks.attachments(nets, model.networks, settings.prefix))
    if vols.outputs:
        annotations[OUTPUT_ANNOTATION] = json.dumps(vols.outputs, sort_keys=True)
    if gate:
        annotations[GATE_ANNOTATION] = gate_annotation()
    timed = {s: probetiming.kept(svcs[s].get("healthcheck") or {}) for s in pod.services}
    if any(timed.values()):
        annotations[probetiming.ANNOTATION] = json.dumps({s: t for s, t in timed.items() if t}, sort_keys=True)
    spec: dict[str, Any] = {"restartPolicy": "Never", "enableServiceLinks": False,
                            "terminationGracePeriodSeconds": max(probetiming.seconds(svcs[s].get("stop_grace_period"), 10)
                                                                 for s in pod.services)}
    if holder:
        spec["initContainers"] = built[:1] + gate
        spec["containers"] = built[1:]
    else:
        spec["containers"] = built
    sysctls = pod_sysctls(model, pod)
    if sysctls:
        spec["securityContext"] = {"sysctls": [{"name": k, "value": v} for k, v in sorted(sysctls.items())]}
    aliases = host_aliases(model, owner) if settings.multus else []
    if aliases:
        spec["hostAliases"] = aliases
    target = placement_mod.target_of(placement, pod.name)
    if target is not None:
        spec["nodeSelector"] = node_selector(target)
    spec["volumes"] = vols.volumes
    if not spec["volumes"]:
        del spec["volumes"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod.name, "namespace": settings.namespace, "labels": labels,
                         "annotations": annotations},
            "spec": spec}


def waves(model: cm.ComposeModel, all_pods: Mapping[str, Pod]) -> list[list[tuple[str, str]]]:
    """The start order Compose's depends_on gives, pod by pod: waves of (pod, condition), each
    pod after every pod it depends on; condition `succeeded` for a pod others need completed
    (the provisioning), else `ready`. On-demand pods are left out. A pod's wave is when its
    programs start: a pod with a start gate exists (its holder runs) from the start, and its
    wave opens the gate; a pod without one is created in its wave."""
    where = container_pods(all_pods)
    deps: dict[str, set[str]] = {p: set() for p, pod in all_pods.items() if pod.on_demand is None}
    done: set[str] = set()
    for p in deps:
        for s in all_pods[p].services:
            dep = model.services[s].get("depends_on") or {}
            for other in dep:
                target = where.get(other)
                if target is None or target == p or target not in deps:
                    continue
                deps[p].add(target)
                cond = dep[other].get("condition") if isinstance(dep, dict) and isinstance(dep[other], dict) else None
                if cond == "service_completed_successfully":
                    done.add(target)
    out: list[list[tuple[str, str]]] = []
    placed: set[str] = set()
    while len(placed) < len(deps):
        wave = sorted(p for p in deps if p not in placed and deps[p] <= placed)
        if not wave:
            raise PodError(f"depends_on has a cycle among {sorted(set(deps) - placed)}")
        out.append([(p, "succeeded" if p in done else "ready") for p in wave])
        placed.update(wave)
    return out
