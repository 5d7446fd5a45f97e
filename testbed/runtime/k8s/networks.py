"""One network per 3GPP interface as a Multus NetworkAttachmentDefinition (k8s.cni.cncf.io/v1,
the convention of the 5G charts), each pod attached with the fixed addresses of the catalogue.

The attachment is a CNI conflist: `bridge` (a Linux bridge per interface on each node: one node,
as Compose's bridges, holding the subnet's first address as Docker's do) or `macvlan` on a node
interface (K8S_MASTER: the link between nodes, so N3 crosses a real wire when the UPF and the gNB
are placed apart), with `static` IPAM taking each pod's address from its annotation (`ips`, the
capability Multus passes as runtimeConfig). The interface inside the pod is named after the
network (n3, sbi): captures name it as Compose's do.

The CNI is chosen per network (K8S_CNI, `choice`): a default and NET:CNI pairs, so only the
networks whose ends are placed apart cross on macvlan while n6 stays a bridge (macvlan isolates
its parent: the node could not reach the UE's ping target, the host's n6 address).

    K8S_CNI=bridge                      every network a node-local bridge (the default)
    K8S_CNI=macvlan                     every network on K8S_MASTER
    K8S_CNI="bridge n2:macvlan n3:macvlan"   the default, then NET:CNI (spaces or commas between)

`crossings` holds the choice against the placement: a bridge network whose pods are placed on
two different nodes cannot carry their link, and is refused naming the network and both pods.
"""
from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from testbed.contract import RuntimeOptionError

ANNOTATION = "k8s.v1.cni.cncf.io/networks"
STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"     # written by Multus: what each took
API_VERSION = "k8s.cni.cncf.io/v1"
CNI_VERSION = "0.4.0"
TYPES = ("bridge", "macvlan")
DEFAULT = "bridge"
MASTER_NEEDED = "needs K8S_MASTER=<the node interface of the link>"


def choice(option: str, master: str, known: Iterable[str]) -> dict[str, str]:
    """{network: CNI} for every network in `known` (the catalogue's, nf-configs/stack.yaml) from
    K8S_CNI: a default CNI (bridge when none) and NET:CNI pairs. RuntimeOptionError names every
    bad word: a CNI not in TYPES, a network not in `known`, a network or the default given twice,
    macvlan without K8S_MASTER."""
    names = list(known)
    text = option.strip()
    default, pairs, problems = "", {}, []
    for token in (t for t in re.split(r"[\s,]+", text) if t):
        net, sep, cni = token.rpartition(":")
        if cni not in TYPES:
            problems.append(f"{repr(token) + ': ' if sep else ''}{cni!r} is not a CNI ({', '.join(TYPES)})")
        elif not sep:
            if default:
                problems.append(f"{token!r}: a second default (one CNI without NET:, then NET:CNI pairs)")
            default = cni
        elif net not in names:
            problems.append(f"{token!r}: {net!r} is not a network ({', '.join(names)})")
        elif net in pairs:
            problems.append(f"{token!r}: {net} given twice")
        else:
            pairs[net] = cni
    out = {net: pairs.get(net, default or DEFAULT) for net in names}
    on_macvlan = [net for net in names if out[net] == "macvlan"]
    if on_macvlan and not master.strip():
        problems.append(f"macvlan ({', '.join(on_macvlan) if pairs else 'every network'}) {MASTER_NEEDED}")
    if problems:
        raise RuntimeOptionError(f"K8S_CNI={text}: " + "; ".join(problems)
                                 + ' (a CNI for every network, then NET:CNI: "bridge n3:macvlan")')
    return out


def crossings(members: Mapping[str, Mapping[str, str | None]], cni: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(refusals, warnings) for the placement against the CNI per network. `members`: network ->
    {pod on it: where it is placed (a node, `label=value`) or None (the scheduler's choice)}. A
    bridge is one node's: two of its pods pinned to different nodes cannot reach each other
    (refused); pods that may land apart (a label, or one placed and another not) are warned of.
    n6 on macvlan is warned of: the node, the UE's ping target there, cannot reach its pods."""
    refusals, warnings = [], []
    for net in sorted(members):
        where = members[net]
        if cni.get(net) == "macvlan":
            if net == "n6":
                warnings.append("n6 is on macvlan: the node cannot reach its pods there (macvlan isolates "
                                "its parent), so the UE's ping target, the host's n6 address, is out of reach")
            continue
        nodes = {t for t in where.values() if t is not None and "=" not in t}
        if len(nodes) > 1:
            first, second = sorted(nodes)[:2]
            a = sorted(p for p, t in where.items() if t == first)[0]
            b = sorted(p for p, t in where.items() if t == second)[0]
            refusals.append(f"{net} is a node-local bridge but {a} is placed on {first} and {b} on {second}: "
                            f"K8S_CNI=\"bridge {net}:macvlan\" (with K8S_MASTER) or place them together")
        elif len(set(where.values())) > 1:
            said = ", ".join(f"{p} on {t or 'any node'}" for p, t in sorted(where.items()))
            warnings.append(f"{net} is a node-local bridge and its pods may land on different nodes ({said})")
    return refusals, warnings


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
        raise RuntimeOptionError(f"K8S_CNI={cni}: one of {', '.join(TYPES)} ({net})")
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
            raise RuntimeOptionError(f"K8S_CNI: {net} on macvlan {MASTER_NEEDED}")
        plugin.update({"master": master, "mode": "bridge"})
    return {"cniVersion": CNI_VERSION, "name": name, "plugins": [plugin]}


def definitions(used: list[str], declared: Mapping[str, Mapping[str, Any]], namespace: str, prefix: str,
                cni: Mapping[str, str], master: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The attachment of each used network, each with its own CNI (`cni`, from `choice`)."""
    return [{"apiVersion": API_VERSION, "kind": "NetworkAttachmentDefinition",
             "metadata": {"name": attachment_name(prefix, net), "namespace": namespace, "labels": labels},
             "spec": {"config": json.dumps(config(net, declared.get(net, {}), prefix, cni.get(net, DEFAULT), master),
                                           sort_keys=True)}}
            for net in used]
