"""The stack values (nf-configs/stack.yaml): one home for PLMN, slices, networks, addresses."""
from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT, instance

STACK_FILE = ROOT / "nf-configs" / "stack.yaml"
# Every SBI NF Open5GS has in the 5GC (stack.yaml nodes of kind open5gs, minus the UPF): the one
# home of this list (the NF renderer and the TLS overlay read it).
SBI_NFS = ("nrf", "scp", "ausf", "udm", "udr", "pcf", "bsf", "nssf", "amf", "smf")


NETNS_SUFFIX = "-ns"
HOLDER_SUFFIX = "-net"


def netns_service(node: str) -> str:
    """The Compose service that owns the node's network namespace (compose/base.yaml x-netns)."""
    return f"{node}{NETNS_SUFFIX}"


def holder_service(node: str) -> str:
    """The node's namespace holder, the overlay's endpoint (compose/base.yaml x-holder)."""
    return f"{node}{HOLDER_SUFFIX}"


def load(path: Path = STACK_FILE) -> dict[str, Any]:
    """The stack values; for a stack beside another (STACK_SLOT, testbed/instance.py) with its
    addresses moved to that stack's own block."""
    return _load(Path(path), instance.env_slot())


@lru_cache(maxsize=8)
def _load(path: Path, slot: int) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return instance.shift(yaml.safe_load(fh), slot)


def sbi_port(values: dict[str, Any] | None = None) -> int:
    """The port the SBI NFs serve on (over TLS with the TLS overlay): the given stack values', else
    the catalogue's."""
    return int((values or load())["sbi_port"])


def address(node: str, network: str, values: dict[str, Any] | None = None) -> str:
    """The node's IPv4 address on a network (KeyError names what is missing)."""
    v = values or load()
    try:
        return str(v["nodes"][node]["networks"][network])
    except KeyError:
        raise KeyError(f"nf-configs/stack.yaml: node {node!r} has no address on network {network!r}") from None


def fqdn(node: str, values: dict[str, Any] | None = None) -> str:
    v = values or load()
    return f"{node}.{v['fqdn_domain']}"


def prefixlen(network: str, values: dict[str, Any] | None = None) -> int:
    v = values or load()
    return ipaddress.ip_network(v["networks"][network]["subnet"]).prefixlen
