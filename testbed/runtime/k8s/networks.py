"""One network per 3GPP interface as a Multus NetworkAttachmentDefinition (k8s.cni.cncf.io/v1,
the convention of the 5G charts), each pod attached with the fixed addresses of the catalogue.

The attachment is a CNI conflist: `bridge` (a Linux bridge per interface on each node: one node,
as Compose's bridges, holding the subnet's first address as Docker's do) or `macvlan` on a node interface (K8S_MASTER: the link between nodes, so N3
crosses a real wire when the UPF and the gNB are placed apart), with `static` IPAM taking each
pod's address from its annotation (`ips`, the capability Multus passes as runtimeConfig). The
interface inside the pod is named after the network (n3, sbi): captures name it as Compose's do.
"""
from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from typing import Any

from testbed.contract import RuntimeOptionError

ANNOTATION = "k8s.v1.cni.cncf.io/networks"
STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"     # written by Multus: what each took
API_VERSION = "k8s.cni.cncf.io/v1"
CNI_VERSION = "0.4.0"
TYPES = ("bridge", "macvlan")


def attachment_name(prefix: str, network: str) -> str:
    return f"{prefix}-{network}"


def _subnet(net: str, spec: Mapping[str, Any]) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(str(spec["ipam"]["config"][0]["subnet"]))
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise RuntimeOptionError(f"networks.{net}: no IPv4 subnet in its ipam ({exc})") from None


def attachments(nets: Mapping[str, Mapping[str, Any]], declared: Mapping[str, Mapping[str, Any]],
                prefix: str) -> list[dict[str, Any]]:
    """The pod's Multus annotation: each of its Compose networks, with its fixed address."""
    out = []
    for net, spec in nets.items():
        entry: dict[str, Any] = {"name": attachment_name(prefix, net), "interface": net}
        if spec.get("ipv4_address"):
            length = _subnet(net, declared.get(net, {})).prefixlen
            entry["ips"] = [f"{spec['ipv4_address']}/{length}"]
        out.append(entry)
    return out


def config(net: str, spec: Mapping[str, Any], prefix: str, cni: str, master: str) -> dict[str, Any]:
    """The attachment's CNI conflist (as a dict)."""
    if cni not in TYPES:
        raise RuntimeOptionError(f"K8S_CNI={cni}: one of {', '.join(TYPES)}")
    _subnet(net, spec)
    name = attachment_name(prefix, net)
    plugin: dict[str, Any] = {"type": cni, "capabilities": {"ips": True}, "ipam": {"type": "static"}}
    if cni == "bridge":
        # the node's bridge takes the subnet's first address, as Docker's bridge does (the UE pings
        # the host on n6 there): the bridge plugin's isGateway, which assigns exactly that address
        plugin.update({"bridge": name[:15], "isGateway": True, "ipMasq": False})   # IFNAMSIZ
        gateway = ((spec.get("ipam") or {}).get("config") or [{}])[0].get("gateway")
        first = str(next(_subnet(net, spec).hosts()))
        if gateway and str(gateway) != first:
            raise RuntimeOptionError(f"networks.{net}: gateway {gateway} is not the subnet's first address "
                                     f"{first}, the one the bridge CNI gives the node's bridge")
    else:
        if not master:
            raise RuntimeOptionError("K8S_CNI=macvlan needs K8S_MASTER=<the node interface of the link>")
        plugin.update({"master": master, "mode": "bridge"})
    return {"cniVersion": CNI_VERSION, "name": name, "plugins": [plugin]}


def definitions(used: list[str], declared: Mapping[str, Mapping[str, Any]], namespace: str, prefix: str,
                cni: str, master: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    return [{"apiVersion": API_VERSION, "kind": "NetworkAttachmentDefinition",
             "metadata": {"name": attachment_name(prefix, net), "namespace": namespace, "labels": labels},
             "spec": {"config": json.dumps(config(net, declared.get(net, {}), prefix, cni, master), sort_keys=True)}}
            for net in used]
