"""UERANSIM v3.2.7 gNB and UE configs."""
from __future__ import annotations

import copy

import pytest

from testbed import stack
from testbed.ran.ueransim import config as ueransim

K = "00112233445566778899AABBCCDDEEFF"
OPC = "FFEEDDCCBBAA99887766554433221100"


@pytest.fixture
def values() -> dict:
    return copy.deepcopy(stack.load())


def test_gnb_addresses_plmn_and_amf(values: dict) -> None:
    g = ueransim.gnb_config(values)
    assert (g["mcc"], g["mnc"], g["tac"]) == ("001", "01", values["tac"])
    assert g["linkIp"] == stack.address("gnb", "ran", values)
    assert g["ngapIp"] == stack.address("gnb", "n2", values)
    assert g["gtpIp"] == stack.address("gnb", "n3", values)
    assert g["amfConfigs"] == [{"address": stack.address("amf", "n2", values), "port": values["ngap_port"]}]
    assert g["slices"] == values["s_nssai"]
    assert g["idLength"] == 32 and g["nci"] == values["ueransim"]["nci"]


def test_ue_credentials_session_and_gnb(values: dict) -> None:
    u = ueransim.ue_config("001010000000001", K.lower(), OPC.lower(), values)
    assert u["supi"] == "imsi-001010000000001"
    assert (u["key"], u["op"], u["opType"]) == (K, OPC, "OPC")
    assert u["amf"] == "8000"
    assert u["gnbSearchList"] == [stack.address("gnb", "ran", values)]
    assert u["sessions"] == [{"type": "IPv4", "apn": values["dnn"], "slice": {"sst": 1}}]
    assert u["configured-nssai"] == u["default-nssai"] == values["s_nssai"]
    assert u["tunNetmask"] == "255.255.0.0"
    assert u["protectionScheme"] == 0 and "homeNetworkPublicKey" not in u
    assert len(u["imei"]) == 15 and len(u["imeiSv"]) == 16


def test_imsi_outside_the_plmn_is_rejected(values: dict) -> None:
    with pytest.raises(ValueError, match="does not start with the stack's PLMN 00101"):
        ueransim.ue_config("999700000000001", K, OPC, values)


def test_ue_configs_cover_both_ues_and_the_scaling_ues(values: dict) -> None:
    subs = {"ue1": {"imsi": "001010000000001", "k": K, "opc": OPC},
            "ue2": {"imsi": "001010000000002", "k": OPC, "opc": K},
            "scale": {"imsi_first": "001010000000100", "count": 64, "k": K, "opc": OPC}}
    cfgs = ueransim.ue_configs(subs, values)
    assert set(cfgs) == {"ue1", "ue2", "ue-scale"}
    assert cfgs["ue2"]["key"] == OPC
    assert cfgs["ue-scale"]["supi"] == "imsi-001010000000100"
