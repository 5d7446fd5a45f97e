"""Write the render dir's Kubernetes objects (<render dir>/k8s/, docs/kubernetes.md).

    k8s/objects.yaml        every object `make k8s-up` applies, in order: the Namespace, the
                            network attachments (MULTUS=1), the ConfigMaps and Secrets, the pods
    k8s/on-demand/<p>.yaml  pods of a Compose profile (ue2, scale), applied by the run that needs them
    k8s/waves.txt           the start order: one wave a line, `pod=ready|succeeded` each. A wave
                            is when its pods' programs start: `k8s.sh up` creates every pod with
                            a holder (a start gate, pods.py start_gate) at once first, so the
                            holders start together as in Compose, and opens each gate in its
                            pod's wave; a pod without a holder is created in its wave. (Before,
                            every pod was created in its wave, and an IPsec holder waited for a
                            peer of a later wave: docs/kubernetes.md.)
    k8s/values.yaml         the same objects as the values of the chart testbed/runtime/k8s/chart
                            (`helm template` renders exactly objects.yaml from it), written as JSON
    k8s/placement.yaml      the placement asked for ({NF: node or label=value})
    k8s/networks.yaml       the CNI each network of the render took ({cni: {n3: macvlan ...}, master},
                            K8S_CNI per network: networks.py) and the warnings of its check
                            against the placement (the plan prints them; the record keeps `cni`)

objects.yaml and values.yaml hold the Secrets: they are written 0600, like the keys they carry.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT, placement as placement_mod, stack
from testbed.check import compose_model as cm
from testbed.contract import RuntimeOptionError
from testbed.placement import Placement
from testbed.render import Rendered
from testbed.render import compose_env as cenv
from testbed.render import layout
from testbed.runtime.k8s import capture, data, networks, pods, probetiming

DIR = "k8s"
OBJECTS = f"{DIR}/objects.yaml"
ON_DEMAND = f"{DIR}/on-demand"
WAVES = f"{DIR}/waves.txt"
VALUES = f"{DIR}/values.yaml"
PLACEMENT = f"{DIR}/placement.yaml"
NETWORKS = f"{DIR}/networks.yaml"
MULTUS_CHOICES = ("1", "0", "auto")
# Variables Compose interpolates at `up` from the caller's environment: a driver's when it starts a
# service (scripts/run-cpu.sh: `env UES=N ... up -d --no-deps ue-scale`), and the bring-up deadline
# scripts/up.sh exports for the overlays' holders (STACK_UP_TIMEOUT: ipsec/entrypoint.sh waits that
# long for its peer; left empty, a cluster's holders gave up after READY_TIMEOUT and restarted
# while the peer's pod was still being made). The pods carry each as a Kubernetes dependent
# variable, `$(UES)` in the args, taken from the container's env, whose value is compose.env's and
# which k8s.sh up and stackctl up set from their own environment, as Compose's interpolation takes
# the environment over compose.env.
UP_VARIABLES = ("UES", "STACK_UP_TIMEOUT")


@dataclasses.dataclass
class Objects:
    ordered: list[dict[str, Any]]                  # what k8s-up applies
    on_demand: dict[str, list[dict[str, Any]]]     # Compose profile -> its pods
    waves: list[list[tuple[str, str]]]
    pods: dict[str, pods.Pod]
    cni: dict[str, str]                            # used network -> its CNI (empty: MULTUS=0)
    warnings: list[str]                            # networks.crossings' warnings
    members: dict[str, dict[str, str | None]]      # network -> {pod on it: its placement target or None}


def model_of(render_dir: Path, images: Mapping[str, str]) -> cm.ComposeModel:
    """The render's merged Compose services (its compose.files, interpolated with its compose.env
    and the image references)."""
    env = {**images, **cenv.parse_env((render_dir / layout.COMPOSE_ENV).read_text(encoding="utf-8"))}
    env.update({v: f"$({v})" for v in UP_VARIABLES if v in env})
    files = [Path(f) for f in (render_dir / layout.COMPOSE_FILES).read_text(encoding="utf-8").split() if f]
    # the probes' timing stays as written: it is the caller's at `up` (probetiming.py)
    model = cm.load(files, env, keep=probetiming.VARIABLES)
    errors = [p for p in model.problems if "required" in p.message or "does not exist" in p.message
              or "YAML" in p.message]
    if errors:
        raise RuntimeOptionError("; ".join(f"{p.file}: {p.key}: {p.message}" for p in errors))
    return model


def settings(options: Mapping[str, str]) -> pods.Settings:
    multus = (options.get("MULTUS") or "auto").strip()
    if multus not in MULTUS_CHOICES:
        raise RuntimeOptionError(f"MULTUS={multus}: one of {', '.join(MULTUS_CHOICES)} "
                                 "(auto: attachments rendered, k8s-up checks the cluster has Multus)")
    namespace = (options.get("K8S_NAMESPACE") or "g5tb").strip()
    if not placement_mod._NF.fullmatch(namespace) or len(namespace) > 11:
        raise RuntimeOptionError(f"K8S_NAMESPACE={namespace}: a DNS label of at most 11 characters "
                                 "(it prefixes the nodes' bridge names, at most 15)")
    capture.parse(options.get(capture.OPTION) or "")
    cni_choice(options)
    return pods.Settings(namespace=namespace, multus=multus != "0", prefix=namespace)


def cni_choice(options: Mapping[str, str], also: Iterable[str] = ()) -> dict[str, str]:
    """K8S_CNI as {network: CNI} over the catalogue's networks (nf-configs/stack.yaml) and `also`
    (the render's own, which take the default); RuntimeOptionError names a bad word."""
    known = dict.fromkeys([*(stack.load().get("networks") or {}), *also])
    return networks.choice(options.get("K8S_CNI") or "", options.get("K8S_MASTER") or "", known)


def up_values(pod_objects: Iterable[dict[str, Any]], values: Mapping[str, str]) -> None:
    """Each UP_VARIABLES entry of a container's env takes VALUES' value (compose.env's when
    rendered, the caller's environment in k8s.sh up and stackctl up); the args keep `$(NAME)`.
    The probes take their timing from VALUES' probetiming.VARIABLES, which compose.env never holds."""
    objs = list(pod_objects)
    for obj in objs:
        spec = obj["spec"]
        for c in spec.get("initContainers", []) + spec["containers"]:
            for e in c.get("env") or ():
                if e["name"] in UP_VARIABLES and values.get(e["name"]):
                    e["value"] = values[e["name"]]
    probetiming.apply(objs, values)


def _images(model: cm.ComposeModel, registry: str) -> None:
    if registry:
        for svc in model.services.values():
            if svc.get("image"):
                svc["image"] = f"{registry.rstrip('/')}/{svc['image']}"


def build(rendered: Rendered, placement: Placement, options: Mapping[str, str],
          images: Mapping[str, str]) -> Objects:
    s = settings(options)
    model = model_of(rendered.dir, images)
    _images(model, (options.get("REGISTRY") or "").strip())
    all_pods = pods.pods(model)
    placement_mod.check_known(placement, all_pods, pods.container_pods(all_pods))
    labels = {"testbed.profile": pods.label_value(rendered.profile.id), "testbed.plane": pods.label_value(rendered.plane)}
    compose_dir = model.files[0].parent
    store = data.Store({"render": rendered.dir, "repo": ROOT, **({"keys": Path(rendered.env["KEYS_DIR"])}
                                                                if rendered.env.get("KEYS_DIR") else {})})
    pod_objects = {name: pods.pod_object(model, pod, s, placement, store, compose_dir)
                   for name, pod in all_pods.items()}
    up_values(pod_objects.values(), cenv.parse_env((rendered.dir / layout.COMPOSE_ENV).read_text(encoding="utf-8")))
    registry = (options.get("REGISTRY") or "").strip()
    tools = images.get("TOOLS_IMAGE", "")
    capture.add(pod_objects, {name: list(cm.service_networks(model.services[pod.owner]))
                              for name, pod in all_pods.items()}, capture.parse(options.get(capture.OPTION) or ""),
                f"{registry.rstrip('/')}/{tools}" if registry and tools else tools, s.multus)
    members: dict[str, dict[str, str | None]] = {}
    if s.multus:
        for name, pod in all_pods.items():
            target = placement_mod.target_of(placement, name)
            for n in cm.service_networks(model.services[pod.owner]):
                members.setdefault(n, {})[name] = target.text() if target is not None else None
    used = sorted(members)
    chosen = cni_choice(options, used)
    cni = {n: chosen[n] for n in used}
    refusals, warnings = networks.crossings(members, cni)
    if refusals:
        raise RuntimeOptionError("PLACEMENT and K8S_CNI: " + "; ".join(refusals))
    ordered: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": s.namespace, "labels": {"testbed.stack": s.namespace}}}]
    ordered += networks.definitions(used, model.networks, s.namespace, s.prefix, cni,
                                    (options.get("K8S_MASTER") or "").strip(), labels)
    ordered += store.manifests(s.namespace, labels)
    ordered += [pod_objects[n] for n, pod in all_pods.items() if pod.on_demand is None]
    on_demand: dict[str, list[dict[str, Any]]] = {}
    for n, pod in all_pods.items():
        if pod.on_demand is not None:
            on_demand.setdefault(pod.on_demand, []).append(pod_objects[n])
    return Objects(ordered, on_demand, pods.waves(model, all_pods), all_pods, cni, warnings, members)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """No YAML anchors: every object reads on its own."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(objs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(objs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def write(rendered: Rendered, placement: Placement, options: Mapping[str, str],
          images: Mapping[str, str]) -> list[Path]:
    objs = build(rendered, placement, options, images)
    d = rendered.dir
    header = (f"# Rendered by `python -m testbed render --engine k8s` for profile {rendered.profile.id} "
              f"({rendered.plane}). Do not edit: render again. docs/kubernetes.md\n")
    out = [_write(d / OBJECTS, header + _dump(objs.ordered))]
    out += [_write(d / ON_DEMAND / f"{name}.yaml", header + _dump(o)) for name, o in sorted(objs.on_demand.items())]
    out.append(_write(d / WAVES, "".join(" ".join(f"{p}={c}" for p, c in w) + "\n" for w in objs.waves)))
    # JSON is YAML (Helm reads it as a values file) and is written many times faster
    out.append(_write(d / VALUES, json.dumps({"objects": objs.ordered}, indent=1) + "\n"))
    out.append(_write(d / PLACEMENT, yaml.safe_dump(placement_mod.as_record(placement), sort_keys=True)))
    out.append(_write(d / NETWORKS, yaml.safe_dump({"cni": objs.cni, "master": (options.get("K8S_MASTER") or "").strip()
                                                    if "macvlan" in objs.cni.values() else "",
                                                    "warnings": objs.warnings, "members": objs.members},
                                                   sort_keys=True)))
    return out


def load_objects(render_dir: Path) -> list[dict[str, Any]]:
    """objects.yaml as written (for the checks and the tests)."""
    return load_all(render_dir / OBJECTS)


def load_all(path: Path) -> list[dict[str, Any]]:
    """The objects of a YAML stream (libyaml's loader where PyYAML has it)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [o for o in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader) if o]
