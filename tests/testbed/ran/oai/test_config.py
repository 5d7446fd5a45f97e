"""testbed/ran/oai/config.py: the OpenAirInterface configs are the stack's values in OAI v2.3.0's keys,
with the F1/E1 roles OAI requires."""
from __future__ import annotations

import copy

import pytest

from testbed import stack
from testbed.ran.oai import libconfig
from testbed.ran.oai import config as oai


def test_split_roles_and_addresses() -> None:
    v = stack.load()
    cucp, cuup, du = oai.cucp_config(v)["gNBs"][0], oai.cuup_config(v)["gNBs"][0], oai.du_config(v)
    assert cucp["tr_s_preference"] == "f1" and cucp["E1_INTERFACE"][0]["type"] == "cp"
    assert "gNB_CU_UP_ID" not in cucp                       # OAI refuses a CU-CP with it
    assert cucp["local_s_address"] == stack.address("cucp", "f1c")
    assert cucp["E1_INTERFACE"][0]["ipv4_cucp"] == stack.address("cucp", "e1")
    assert cucp["amf_ip_address"] == [{"ipv4": stack.address("amf", "n2")}]
    assert cucp["NETWORK_INTERFACES"]["GNB_IPV4_ADDRESS_FOR_NG_AMF"] == stack.address("cucp", "n2")
    assert cuup["E1_INTERFACE"][0] == {"type": "up", "ipv4_cucp": stack.address("cucp", "e1"),
                                       "ipv4_cuup": stack.address("cuup", "e1")}
    assert cuup["local_s_address"] == stack.address("cuup", "f1u")
    assert cuup["NETWORK_INTERFACES"]["GNB_IPV4_ADDRESS_FOR_NGU"] == stack.address("cuup", "n3")
    m = du["MACRLCs"][0]
    assert m["tr_n_preference"] == "f1" and m["tr_s_preference"] == "local_L1"
    assert (m["local_n_address"], m["local_n_address_f1u"], m["remote_n_address"]) == (
        stack.address("du", "f1c"), stack.address("du", "f1u"), stack.address("cucp", "f1c"))
    assert m["local_n_portd"] == m["remote_n_portd"] == cuup["local_s_portd"] == v["gtpu_port"] == 2152
    ids = {cucp["gNB_ID"], cuup["gNB_ID"], du["gNBs"][0]["gNB_ID"]}
    assert ids == {0xE00}
    assert isinstance(du["gNBs"][0]["nr_cellid"], libconfig.Int64) and du["gNBs"][0]["nr_cellid"] == cucp["nr_cellid"]


def test_monolithic_gnb_transmits_the_dus_cell() -> None:
    v = stack.load()
    gnb, du = oai.gnb_config(v), oai.du_config(v)
    assert gnb["MACRLCs"][0]["tr_n_preference"] == "local_RRC"
    assert gnb["gNBs"][0]["servingCellConfigCommon"] == du["gNBs"][0]["servingCellConfigCommon"]
    assert gnb["RUs"] == du["RUs"] and gnb["rfsimulator"] == du["rfsimulator"]
    ni = gnb["gNBs"][0]["NETWORK_INTERFACES"]
    assert (ni["GNB_IPV4_ADDRESS_FOR_NG_AMF"], ni["GNB_IPV4_ADDRESS_FOR_NGU"]) == (
        stack.address("gnb", "n2"), stack.address("gnb", "n3"))


def test_plmn_list_from_the_stack() -> None:
    v = copy.deepcopy(stack.load())
    assert oai.cucp_config(v)["gNBs"][0]["plmn_list"] == [
        {"mcc": 1, "mnc": 1, "mnc_length": 2, "snssaiList": [{"sst": 1}]}]
    v["plmn"] = {"mcc": "310", "mnc": "410"}
    v["s_nssai"] = [{"sst": 1, "sd": "000001"}]
    assert oai.du_config(v)["gNBs"][0]["plmn_list"] == [
        {"mcc": 310, "mnc": 410, "mnc_length": 3, "snssaiList": [{"sst": 1, "sd": 1}]}]


def test_ue_sim_and_command_line() -> None:
    v = stack.load()
    ue = oai.ue_config("001010000000001", "AB" * 16, "CD" * 16, v)["uicc0"]
    assert ue == {"imsi": "001010000000001", "key": "ab" * 16, "opc": "cd" * 16, "dnn": v["dnn"], "nssai_sst": 1}
    with pytest.raises(oai.OaiConfigError, match="PLMN"):
        oai.ue_config("208990000000001", "00" * 16, "00" * 16, v)
    args = oai.ue_args("du", v)
    # -C: the DL carrier centre; OAI's own rfsim setups pair this cell (point A 640008, 106 PRB at
    # 30 kHz) with -C 3619200000
    assert args[args.index("-C") + 1] == "3619200000"
    assert args[args.index("--rfsimulator.serveraddr") + 1] == stack.address("du", "ran")
    assert args[args.index("-r") + 1] == "106" and args[args.index("--numerology") + 1] == "1"


def test_as_security_choice() -> None:
    v = stack.load()
    assert oai.security(v)["ciphering_algorithms"] == ["nea0"]
    sec = oai.cucp_config(v, "nea2-nia2")["security"]
    assert sec == {"ciphering_algorithms": ["nea2"], "integrity_algorithms": ["nia2"],
                   "drb_ciphering": "yes", "drb_integrity": "yes"}
    with pytest.raises(oai.OaiConfigError, match="nea2-nia2"):
        oai.security(v, "nea9-nia9")


def test_arfcn_conversion() -> None:
    assert oai.arfcn_hz(641280) == 3_619_200_000 and oai.arfcn_hz(620040) == 3_300_600_000
    with pytest.raises(oai.OaiConfigError):
        oai.arfcn_hz(3_000_000)
