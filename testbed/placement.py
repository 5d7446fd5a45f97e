"""Placement as data: which NF runs on which node (PLACEMENT=, docs/kubernetes.md "Placement").

    PLACEMENT="upf:edge gnb:ran"            NF:NODE pairs (spaces or commas between them)
    PLACEMENT="upf:site=edge"               NODE as a node label: label=value
    PLACEMENT=placement.yaml                a YAML file: {upf: edge, gnb: "site=ran"}, or the pairs
    PLACEMENT="*:pool=a upf:edge"           `*`: every NF not named (a sharded campaign's node group)

An NF is a pod of the render (its overlay holder and the UPF's security function are containers of
the same pod, so they go where it goes). Parsing checks the syntax and collects every problem at
once; `check_known` refuses an NF the render does not run, naming those it does. Whether a node
exists is the cluster's to say (the runtime checks at start). The result is engine-agnostic: the
runtime turns a target into its own terms (a Kubernetes nodeSelector), the manifest records
`as_record`, and runs whose records differ are never pooled.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

# DNS-1123 subdomain (a node's name), a label's key (optional DNS prefix + name) and value
_NODE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_KEY = re.compile(rf"({_NODE.pattern}/)?{_LABEL_NAME}")
_LABEL_VALUE = re.compile(rf"({_LABEL_NAME})?")
_NF = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
EVERY = "*"                          # every NF not named otherwise
EXAMPLE = 'PLACEMENT="upf:edge gnb:ran" (NF:NODE, NODE a node name or label=value) or a YAML file of the same'


class PlacementError(ValueError):
    """A placement that cannot be honoured; the message names every bad entry and the form."""


@dataclasses.dataclass(frozen=True)
class Target:
    """Where an NF goes: a node by name, or any node carrying a label."""
    node: str | None = None
    label: tuple[str, str] | None = None

    def text(self) -> str:
        return self.node if self.node is not None else "=".join(self.label or ("", ""))


Placement = Mapping[str, Target]
"""NF (pod name) -> its target; empty: wherever the engine puts it."""


def _target(nf: str, node: str, problems: list[str]) -> Target | None:
    if nf != EVERY and not _NF.fullmatch(nf):
        problems.append(f"{nf!r}: not an NF name (lowercase letters, digits, '-')")
        return None
    if "=" in node:
        key, _, value = node.partition("=")
        if len(key.rpartition("/")[2]) > 63 or not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(value) \
                or len(value) > 63:
            problems.append(f"{nf}:{node}: {node!r} is not a node label label=value")
            return None
        return Target(label=(key, value))
    if len(node) > 253 or not _NODE.fullmatch(node):
        problems.append(f"{nf}:{node}: {node!r} is not a node name (lowercase DNS name) nor label=value")
        return None
    return Target(node=node)


def _pairs(text: str) -> list[tuple[str, str]] | str:
    """The NF:NODE pairs of a PLACEMENT string, or the first malformed token."""
    out = []
    for token in re.split(r"[\s,]+", text.strip()):
        nf, sep, node = token.partition(":")
        if not sep or not nf or not node:
            return token
        out.append((nf, node))
    return out


def _from_file(path: Path) -> list[tuple[str, str]]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PlacementError(f"PLACEMENT={path}: cannot read it: {exc}") from None
    if data is None:
        return []
    if isinstance(data, Mapping) and all(isinstance(v, (str, int)) for v in data.values()):
        return [(str(k), str(v)) for k, v in data.items()]
    if isinstance(data, str) or isinstance(data, list) and all(isinstance(x, str) for x in data):
        pairs = _pairs(data if isinstance(data, str) else " ".join(data))
        if isinstance(pairs, list):
            return pairs
    raise PlacementError(f"PLACEMENT={path}: must map each NF to a node ({{upf: edge, gnb: 'site=ran'}}) "
                         f"or list NF:NODE strings")


def parse(text: str | None) -> dict[str, Target]:
    """The placement PLACEMENT= gives (a string of pairs, or the path of a YAML file); {} for none.
    PlacementError names every bad entry."""
    text = (text or "").strip()
    if not text:
        return {}
    if ":" not in text or Path(text).is_file():
        path = Path(text)
        if not path.is_file():
            raise PlacementError(f"PLACEMENT={text}: neither NF:NODE pairs nor a file; {EXAMPLE}")
        pairs = _from_file(path)
    else:
        found = _pairs(text)
        if isinstance(found, str):
            raise PlacementError(f"PLACEMENT: {found!r} is not NF:NODE; {EXAMPLE}")
        pairs = found
    problems: list[str] = []
    out: dict[str, Target] = {}
    for nf, node in pairs:
        if nf in out:
            problems.append(f"{nf}: placed twice")
            continue
        target = _target(nf, node, problems)
        if target is not None:
            out[nf] = target
    if problems:
        raise PlacementError("PLACEMENT: " + "; ".join(problems) + f" ({EXAMPLE})")
    return out


def check_known(placement: Placement, known: Iterable[str], holders: Mapping[str, str] | None = None) -> None:
    """PlacementError for an NF the render does not run, naming those it runs; a holder or a
    security function named instead of its NF (`holders`: container -> its pod) is told where it goes."""
    names = sorted(set(known))
    problems = []
    for nf in placement:
        if nf in names or nf == EVERY:
            continue
        pod = (holders or {}).get(nf)
        problems.append(f"{nf} is a container of the {pod} pod: place {pod} (it goes with its NF)" if pod
                        else f"{nf} is not an NF of this render")
    if problems:
        raise PlacementError("PLACEMENT: " + "; ".join(problems) + f" (NFs: {', '.join(names)})")


def target_of(placement: Placement, nf: str) -> Target | None:
    """Where `nf` goes: its own entry, else the `*` entry, else None (the engine's choice)."""
    return placement.get(nf) or placement.get(EVERY)


def as_record(placement: Placement) -> dict[str, str]:
    """{NF: node or label=value}, sorted: what the manifest and the run specification keep."""
    return {nf: placement[nf].text() for nf in sorted(placement)}


def key(record: Mapping[str, Any] | None) -> str:
    """One string per placement, for grouping runs (analysis/datasets.py): from a run's placement
    record (testbed/runtime/k8s/cluster.py `record`, manifest `placement`) which pods shared a node,
    each node named by its CPU model and kernel ("amf+gnb+... @ CPU, kernel; upf @ ..."); "" without
    one (a run on one Docker host). Node names are left out: a sharded campaign's boots of one
    profile run on different nodes of one kind and pool; runs whose NFs were grouped otherwise, or
    ran on other hardware or kernels, never do. Networks the record's `networks` puts on another
    CNI than the bridge (K8S_CNI per network: a link over macvlan) are named after them ("...; macvlan
    n2,n3"): a bridge-only record keys as one from before the CNI was recorded."""
    nodes = (record or {}).get("nodes")
    if not isinstance(nodes, Mapping) or not nodes:
        return ""
    out = "; ".join(sorted(f"{'+'.join(sorted(n.get('pods') or ()))} @ {n.get('cpu_model') or '?'}, "
                            f"{n.get('kernel') or '?'}" for n in nodes.values() if isinstance(n, Mapping)))
    cni = (record or {}).get("networks")
    other: dict[str, list[str]] = {}
    for net, kind in sorted(cni.items() if isinstance(cni, Mapping) else ()):
        if kind != "bridge":
            other.setdefault(str(kind), []).append(str(net))
    return out + "".join(f"; {kind} {','.join(nets)}" for kind, nets in sorted(other.items()))
