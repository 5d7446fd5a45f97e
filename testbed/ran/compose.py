"""Compose services of a RAN variant, built from the stack values and compose/base.yaml's templates.

A RAN node is three services like every overlay endpoint of the core (docs/contracts.md): the
namespace's owner `<node>-ns` (its networks and addresses from nf-configs/stack.yaml), the namespace
holder `<node>-net` in it (so an overlay fragment can turn it into a tunnel endpoint) and the
program in the same namespace. The owner, the holder, the labels and the health timing are
compose/base.yaml's own `x-netns`, `x-holder`, `x-labels` and `x-health` blocks, read from that
file, so a RAN service is configured like the core's and none of it is typed twice. Addresses stay
Compose variables (`${GNB_N2_IP}`) that compose.env defines.
"""
from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT, privileges, stack
from testbed.render import compose_env as cenv
from testbed.files import comment, dump_yaml

BASE_FILE = ROOT / "compose" / "base.yaml"
# the core NFs a RAN waits for (healthy), so a UE's attach never waits for an NF
CORE_READY = ("amf", "smf", "ausf", "udm", "udr", "pcf", "bsf", "nssf")


@lru_cache(maxsize=2)
def templates(path: Path = BASE_FILE) -> dict[str, Any]:
    """compose/base.yaml's x-* blocks (anchors resolved)."""
    with open(path, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh)
    return {k: v for k, v in raw.items() if str(k).startswith("x-")}


def labels() -> dict[str, Any]:
    return copy.deepcopy(templates()["x-labels"])


def least(role: str, **extra: Any) -> dict[str, Any]:
    """A service's privilege fields from its role in nf-configs/privileges.yaml (cap_drop ALL,
    no-new-privileges, only the role's capabilities, devices, read-only root and tmpfs), its
    labels those of compose/base.yaml plus the role; then `extra`."""
    fields = privileges.role(role).compose_fields()
    fields["labels"] = {**labels(), **fields["labels"]}
    fields.update(extra)
    return fields


def health(test: list[str], **extra: Any) -> dict[str, Any]:
    return {**copy.deepcopy(templates()["x-health"]), **extra, "test": test}


def healthy(*services: str) -> dict[str, dict[str, str]]:
    return {s: {"condition": "service_healthy"} for s in services}


def node_networks(node: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Compose `networks:` of a node's namespace owner: every network stack.yaml gives it, with its
    address as the compose.env variable and the node's name as DNS alias."""
    nets = values["nodes"][node]["networks"]
    return {net: {"ipv4_address": "${" + cenv.var_name(node, net, "ip") + "}", "aliases": [node]}
            for net in nets}


def namespace(node: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The node's namespace owner `<node>-ns` (its networks) and holder `<node>-net` in it."""
    owner: dict[str, Any] = copy.deepcopy(templates()["x-netns"])
    owner["networks"] = node_networks(node, values)
    holder: dict[str, Any] = copy.deepcopy(templates()["x-holder"])
    holder["network_mode"] = in_namespace(node)
    return {stack.netns_service(node): owner, stack.holder_service(node): holder}


def in_namespace(node: str) -> str:
    """The network_mode of a service in the node's namespace."""
    return f"service:{stack.netns_service(node)}"


def network(name: str) -> dict[str, Any]:
    """A bridge network as compose/base.yaml declares them (bridge name from BRIDGE_PREFIX)."""
    key = cenv.var_name("net", name)
    return {"driver": "bridge",
            "driver_opts": {"com.docker.network.bridge.name": "${BRIDGE_PREFIX:-g5tb}-" + name},
            "ipam": {"config": [{"subnet": "${" + key + "_SUBNET}", "gateway": "${" + key + "_GATEWAY}"}]}}


def document(services: dict[str, Any], networks: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"services": services}
    if networks:
        doc["networks"] = networks
    return doc


def dump(doc: dict[str, Any], header: str) -> str:
    return dump_yaml(doc, comment(header), width=120)
