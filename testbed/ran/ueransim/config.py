"""UERANSIM v3.2.7 gNB and UE configurations from the stack values and the SIM secrets.

Keys as read in UERANSIM v3.2.7 `src/gnb.cpp` / `src/ue.cpp`. The UEs use the
null protection scheme (SUCI = cleartext MSIN), so no home-network key is needed and NAS
captures show the MSIN that correlates a UE's attach.
"""
from __future__ import annotations

import ipaddress
from typing import Any

from testbed import stack

UES = ("ue1", "ue2")             # the cold and the warm UE of the SBI experiment
SCALE_UE = "ue-scale"            # runs `nr-ue -n UES` from subscribers.scale.imsi_first
TUN_PREFIX = "uesimtun"          # UERANSIM's default: uesimtun0, uesimtun1, ... (no tunName key)


def _plmn(values: dict[str, Any]) -> tuple[str, str]:
    return str(values["plmn"]["mcc"]), str(values["plmn"]["mnc"])


def _slices(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(s) for s in values["s_nssai"]]


def gnb_config(values: dict[str, Any] | None = None) -> dict[str, Any]:
    v = values or stack.load()
    u = v["ueransim"]
    mcc, mnc = _plmn(v)
    return {
        "mcc": mcc,
        "mnc": mnc,
        "nci": str(u["nci"]),
        "idLength": int(u["id_length"]),
        "tac": int(v["tac"]),
        "linkIp": stack.address("gnb", "ran", v),
        "ngapIp": stack.address("gnb", "n2", v),
        "gtpIp": stack.address("gnb", "n3", v),
        "amfConfigs": [{"address": stack.address("amf", "n2", v), "port": int(v["ngap_port"])}],
        "slices": _slices(v),
        "ignoreStreamIds": True,
    }


def ue_config(imsi: str, k: str, opc: str, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """A UE's configuration; `nr-ue -n N` counts IMSIs up from this one."""
    v = values or stack.load()
    u = v["ueransim"]
    mcc, mnc = _plmn(v)
    if not str(imsi).startswith(mcc + mnc):
        raise ValueError(f"IMSI {imsi} does not start with the stack's PLMN {mcc}{mnc} "
                         "(nf-configs/stack.yaml: plmn / subscribers)")
    netmask = str(ipaddress.ip_network(v["ue_subnet"]["subnet"]).netmask)
    return {
        "supi": f"imsi-{imsi}",
        "mcc": mcc,
        "mnc": mnc,
        "protectionScheme": 0,       # null scheme: no homeNetworkPublicKey (v3.2.7 wants 64 hex if present)
        "routingIndicator": "0000",
        "key": str(k).upper(),
        "op": str(opc).upper(),
        "opType": "OPC",
        "amf": str(u["amf_field"]),
        "imei": str(u["imei"]),
        "imeiSv": str(u["imei_sv"]),
        "tunNetmask": netmask,
        "gnbSearchList": [stack.address("gnb", "ran", v)],
        "uacAic": {"mps": False, "mcs": False},
        "uacAcc": {"normalClass": 0, "class11": False, "class12": False, "class13": False,
                   "class14": False, "class15": False},
        "sessions": [{"type": "IPv4", "apn": v["dnn"], "slice": s} for s in _slices(v)],
        "configured-nssai": _slices(v),
        "default-nssai": _slices(v),
        "integrity": {"IA1": True, "IA2": True, "IA3": True},
        "ciphering": {"EA1": True, "EA2": True, "EA3": True},
        "integrityMaxRate": {"uplink": "full", "downlink": "full"},
    }


def ue_configs(subscribers: dict[str, Any], values: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """{ue1: cfg, ue2: cfg, ue-scale: cfg} from the SIM secrets (testbed.keys.subscribers())."""
    v = values or stack.load()
    out: dict[str, dict[str, Any]] = {}
    for ue in UES:
        s = subscribers[ue]
        out[ue] = ue_config(s["imsi"], s["k"], s["opc"], v)
    sc = subscribers["scale"]
    out[SCALE_UE] = ue_config(sc["imsi_first"], sc["k"], sc["opc"], v)
    return out
