"""Open5GS v2.7.7 NF configurations (one YAML per NF) from the stack values.

Schema (Open5GS v2.7.7 `configs/open5gs/*.yaml.in`, `lib/sbi/context.c`): `<nf>: sbi: server: [{address, port}]`, `sbi: client: nrf: [{uri}]`
(direct communication, Model C) and, with the SCP, `client: scp: [{uri}]` (Model D; v2.7.5+
`delegated` defaults to auto, which delegates to a configured SCP). Addresses are IPs so the
baseline has no DNS lookup in the attach path; the TLS overlay switches to FQDNs through its
`nf_config_overrides` hook.
"""
from __future__ import annotations

from typing import Any

from testbed import stack

SBI_NFS = stack.SBI_NFS
OPEN5GS_NFS = SBI_NFS + ("upf",)
DB_NFS = ("udr", "pcf")                   # read MongoDB directly (db_uri)
LOG_PATH = "/run/open5gs/nf.log"          # per-start tmpfs: the healthchecks read it


def plmn_id(values: dict[str, Any]) -> dict[str, Any]:
    return {"mcc": str(values["plmn"]["mcc"]), "mnc": str(values["plmn"]["mnc"])}


def s_nssai_list(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(s) for s in values["s_nssai"]]


def sbi_uri(node: str, values: dict[str, Any]) -> str:
    return f"http://{stack.address(node, 'sbi', values)}:{values['sbi_port']}"


def mongo_uri(values: dict[str, Any]) -> str:
    return f"mongodb://{stack.address('mongo', 'db', values)}/open5gs"


def _common(values: dict[str, Any]) -> dict[str, Any]:
    o = values["open5gs"]
    return {
        "logger": {"file": {"path": LOG_PATH}, "level": o["log_level"]},
        "global": {"max": {"ue": int(o["max_ue"])}},
    }


def _sbi(node: str, values: dict[str, Any], use_scp: bool) -> dict[str, Any]:
    server = [{"address": stack.address(node, "sbi", values), "port": int(values["sbi_port"])}]
    if node == "nrf":
        return {"server": server}
    client: dict[str, Any] = {"nrf": [{"uri": sbi_uri("nrf", values)}]}
    if use_scp and node != "scp":
        client["scp"] = [{"uri": sbi_uri("scp", values)}]
    return {"server": server, "client": client}


def _amf(values: dict[str, Any]) -> dict[str, Any]:
    o, plmn = values["open5gs"], plmn_id(values)
    return {
        "ngap": {"server": [{"address": stack.address("amf", "n2", values)}]},
        "guami": [{"plmn_id": plmn, "amf_id": {"region": int(values["amf_id"]["region"]),
                                               "set": int(values["amf_id"]["set"])}}],
        "tai": [{"plmn_id": plmn, "tac": int(values["tac"])}],
        "plmn_support": [{"plmn_id": plmn, "s_nssai": s_nssai_list(values)}],
        "security": {"integrity_order": list(o["integrity_order"]),
                     "ciphering_order": list(o["ciphering_order"])},
        "network_name": dict(o["network_name"]),
        "amf_name": o["amf_name"],
        "time": {"t3512": {"value": int(o["t3512"])}},
    }


def _session(values: dict[str, Any], with_dev: bool) -> list[dict[str, Any]]:
    sess = {"subnet": values["ue_subnet"]["subnet"], "gateway": values["ue_subnet"]["gateway"],
            "dnn": values["dnn"]}
    if with_dev:
        sess["dev"] = values["open5gs"]["ogstun"]
    return [sess]


def _smf(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "pfcp": {"server": [{"address": stack.address("smf", "n4", values)}],
                 "client": {"upf": [{"address": stack.address("upf", "n4", values)}]}},
        # 2.7.7's smf_context_validation() refuses to start without a GTP-U server address
        # ("No smf.gtpu.address"), found by `make smoke` in the Docker guest (docs/vm-check.md)
        "gtpu": {"server": [{"address": stack.address("smf", "n4", values)}]},
        "session": _session(values, with_dev=False),
        "dns": list(values["dns"]),
        "mtu": int(values["ue_mtu"]),
        "info": [{"s_nssai": [dict(s, dnn=[values["dnn"]]) for s in values["s_nssai"]],
                  "tai": [{"plmn_id": plmn_id(values), "tac": int(values["tac"])}]}],
    }


def _upf(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "pfcp": {"server": [{"address": stack.address("upf", "n4", values)}]},
        "gtpu": {"server": [{"address": stack.address("upf", "n3", values)}]},
        "session": _session(values, with_dev=True),
    }


def _nssf_client_extra(values: dict[str, Any]) -> dict[str, Any]:
    return {"nsi": [{"uri": sbi_uri("nrf", values), "s_nssai": dict(s)} for s in values["s_nssai"]]}


def nf_config(node: str, values: dict[str, Any] | None = None, use_scp: bool | None = None) -> dict[str, Any]:
    """The Open5GS configuration of one NF as a dict (written as <node>.yaml)."""
    v = values or stack.load()
    if node not in OPEN5GS_NFS:
        raise ValueError(f"{node!r} is not an Open5GS NF; known: {', '.join(OPEN5GS_NFS)}")
    scp = bool(v.get("use_scp", False)) if use_scp is None else use_scp
    cfg = _common(v)
    if node in DB_NFS:
        cfg = {"db_uri": mongo_uri(v), **cfg}
    section: dict[str, Any] = {}
    if node in SBI_NFS:
        section["sbi"] = _sbi(node, v, scp)
    if node == "nrf":
        section["serving"] = [{"plmn_id": plmn_id(v)}]
    elif node == "nssf":
        section["sbi"]["client"].update(_nssf_client_extra(v))
    elif node == "amf":
        section.update(_amf(v))
    elif node == "smf":
        section.update(_smf(v))
    elif node == "upf":
        section.update(_upf(v))
    cfg[node] = section
    return cfg


def nf_nodes(values: dict[str, Any] | None = None, use_scp: bool | None = None) -> list[str]:
    """The Open5GS NFs that run (the SCP only with use_scp)."""
    v = values or stack.load()
    scp = bool(v.get("use_scp", False)) if use_scp is None else use_scp
    return [n for n in OPEN5GS_NFS if n != "scp" or scp]
