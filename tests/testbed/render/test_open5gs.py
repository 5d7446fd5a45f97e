"""Open5GS v2.7.7 NF configs rendered from nf-configs/stack.yaml."""
from __future__ import annotations

import copy

import pytest

from testbed import stack
from testbed.render import open5gs


@pytest.fixture
def values() -> dict:
    return copy.deepcopy(stack.load())


def test_every_nf_has_logger_global_and_its_section(values: dict) -> None:
    for nf in open5gs.OPEN5GS_NFS:
        cfg = open5gs.nf_config(nf, values)
        assert cfg["logger"] == {"file": {"path": "/run/open5gs/nf.log"}, "level": values["open5gs"]["log_level"]}
        assert cfg["global"]["max"]["ue"] == values["open5gs"]["max_ue"]
        assert nf in cfg
        assert ("db_uri" in cfg) == (nf in ("udr", "pcf"))


def test_sbi_server_and_direct_nrf_client_use_stack_addresses(values: dict) -> None:
    for nf in ("ausf", "udm", "udr", "pcf", "bsf", "nssf", "amf", "smf"):
        sbi = open5gs.nf_config(nf, values)[nf]["sbi"]
        assert sbi["server"] == [{"address": stack.address(nf, "sbi", values), "port": values["sbi_port"]}]
        assert sbi["client"]["nrf"] == [{"uri": f"http://{stack.address('nrf', 'sbi', values)}:{values['sbi_port']}"}]
        assert "scp" not in sbi["client"], "direct communication via the NRF is the default"
        assert "discovery" not in open5gs.nf_config(nf, values)[nf], "v2.7.2 key, not parsed by 2.7.7"
    assert "client" not in open5gs.nf_config("nrf", values)["nrf"]["sbi"]


def test_scp_variant_adds_the_scp_client(values: dict) -> None:
    amf = open5gs.nf_config("amf", values, use_scp=True)["amf"]["sbi"]["client"]
    assert amf["scp"] == [{"uri": f"http://{stack.address('scp', 'sbi', values)}:{values['sbi_port']}"}]
    assert amf["nrf"], "NFs still register with the NRF"
    scp = open5gs.nf_config("scp", values, use_scp=True)["scp"]["sbi"]["client"]
    assert "scp" not in scp and scp["nrf"]
    assert "scp" in open5gs.nf_nodes(values, use_scp=True)
    assert "scp" not in open5gs.nf_nodes(values, use_scp=False)


def test_amf_plmn_tac_slices_and_ngap(values: dict) -> None:
    values["plmn"] = {"mcc": "999", "mnc": "70"}
    values["tac"] = 7
    amf = open5gs.nf_config("amf", values)["amf"]
    plmn = {"mcc": "999", "mnc": "70"}
    assert amf["guami"] == [{"plmn_id": plmn, "amf_id": {"region": values["amf_id"]["region"],
                                                          "set": values["amf_id"]["set"]}}]
    assert amf["tai"] == [{"plmn_id": plmn, "tac": 7}]
    assert amf["plmn_support"] == [{"plmn_id": plmn, "s_nssai": values["s_nssai"]}]
    assert amf["ngap"]["server"] == [{"address": stack.address("amf", "n2", values)}]
    assert amf["security"]["ciphering_order"][0] == "NEA0"


def test_mcc_mnc_stay_strings_with_leading_zeros(values: dict) -> None:
    pid = open5gs.nf_config("nrf", values)["nrf"]["serving"][0]["plmn_id"]
    assert pid == {"mcc": "001", "mnc": "01"}


def test_smf_and_upf_user_plane(values: dict) -> None:
    smf = open5gs.nf_config("smf", values)["smf"]
    upf = open5gs.nf_config("upf", values)["upf"]
    assert smf["pfcp"]["server"] == [{"address": stack.address("smf", "n4", values)}]
    assert smf["pfcp"]["client"]["upf"] == [{"address": stack.address("upf", "n4", values)}]
    assert smf["mtu"] == values["ue_mtu"]
    assert smf["session"][0]["subnet"] == values["ue_subnet"]["subnet"]
    assert smf["info"][0]["s_nssai"][0]["dnn"] == [values["dnn"]]
    assert "gtpc" not in smf and "freeDiameter" not in smf, "5G only: no GTP-C, no Diameter"
    assert upf["pfcp"]["server"] == [{"address": stack.address("upf", "n4", values)}]
    assert upf["gtpu"]["server"] == [{"address": stack.address("upf", "n3", values)}]
    assert upf["session"] == [{"subnet": values["ue_subnet"]["subnet"], "gateway": values["ue_subnet"]["gateway"],
                               "dnn": values["dnn"], "dev": values["open5gs"]["ogstun"]}]


def test_nssf_nsi_points_at_the_nrf_per_slice(values: dict) -> None:
    values["s_nssai"] = [{"sst": 1}, {"sst": 2, "sd": "000080"}]
    nsi = open5gs.nf_config("nssf", values)["nssf"]["sbi"]["client"]["nsi"]
    assert [n["s_nssai"] for n in nsi] == values["s_nssai"]
    assert {n["uri"] for n in nsi} == {open5gs.sbi_uri("nrf", values)}


def test_db_uri_names_the_mongo_address(values: dict) -> None:
    assert open5gs.nf_config("udr", values)["db_uri"] == f"mongodb://{stack.address('mongo', 'db', values)}/open5gs"


def test_a_changed_address_follows_everywhere(values: dict) -> None:
    values["nodes"]["nrf"]["networks"]["sbi"] = "10.100.1.99"
    for nf in ("amf", "smf", "nssf"):
        assert "10.100.1.99" in str(open5gs.nf_config(nf, values))


def test_unknown_nf_is_rejected(values: dict) -> None:
    with pytest.raises(ValueError, match="not an Open5GS NF"):
        open5gs.nf_config("gnb", values)
