"""check-config on the OpenAirInterface RAN (testbed/ran/oai/rules.py): the real renders of
RAN=oai and RAN=split pass, and one mistake per rule is named with its file and key."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from testbed.ran.oai import libconfig
from tests.testbed.check.test_rules import Tree, assert_found, make_tree


def edit_conf(t: Tree, rel: str, change: Callable[[dict[str, Any]], None]) -> Path:
    path = t.render_dir / rel
    data = libconfig.loads(path.read_text())
    change(data)
    path.write_text(libconfig.dumps(data))
    return path


@pytest.mark.parametrize("ran", ["oai", "split"])
def test_real_oai_renders_pass(ran: str, tmp_path: Path) -> None:
    t = make_tree(tmp_path, ran=ran)
    found = t.check()
    assert found == [], "\n".join(f.format() for f in found)


@pytest.fixture
def split(tmp_path: Path) -> Tree:
    return make_tree(tmp_path, ran="split")


def test_e1_address_of_the_cu_up_must_be_the_cu_cps(split: Tree) -> None:
    f = edit_conf(split, "oai/cuup.conf", lambda d: d["gNBs"][0]["E1_INTERFACE"][0].update(ipv4_cucp="10.100.12.61"))
    assert_found(split.check(), f, "gNBs[0].E1_INTERFACE[0].ipv4_cucp", "address", "10.100.12.60")


def test_du_must_reach_the_cu_cp_on_f1c(split: Tree) -> None:
    f = edit_conf(split, "oai/du.conf", lambda d: d["MACRLCs"][0].update(remote_n_address="10.100.2.60"))
    assert_found(split.check(), f, "MACRLCs[0].remote_n_address", "address", "on f1c")


def test_du_f1u_address_is_its_own_on_f1u(split: Tree) -> None:
    f = edit_conf(split, "oai/du.conf", lambda d: d["MACRLCs"][0].update(local_n_address_f1u="10.100.10.62"))
    assert_found(split.check(), f, "MACRLCs[0].local_n_address_f1u", "address", "f1u")


def test_f1u_port_follows_stack_yaml(split: Tree) -> None:
    f = edit_conf(split, "oai/cuup.conf", lambda d: d["gNBs"][0].update(remote_s_portd=2153))
    assert_found(split.check(), f, "gNBs[0].remote_s_portd", "address", "2152")


def test_cu_cp_must_not_carry_a_cu_up_id(split: Tree) -> None:
    f = edit_conf(split, "oai/cucp.conf", lambda d: d["gNBs"][0].update(gNB_CU_UP_ID=3584))
    assert_found(split.check(), f, "gNBs[0].gNB_CU_UP_ID", "role")


def test_the_split_shares_one_gnb_id(split: Tree) -> None:
    f = edit_conf(split, "oai/du.conf", lambda d: d["gNBs"][0].update(gNB_ID=1))
    assert_found(split.check(), f, "gNBs[0].gNB_ID", "role", "differs")


def test_cu_cp_amf_address(split: Tree) -> None:
    f = edit_conf(split, "oai/cucp.conf", lambda d: d["gNBs"][0]["amf_ip_address"][0].update(ipv4="10.100.2.6"))
    assert_found(split.check(), f, "gNBs[0].amf_ip_address[0].ipv4", "address", "amf")


def test_plmn_and_tac_of_the_du(split: Tree) -> None:
    def change(d: dict[str, Any]) -> None:
        d["gNBs"][0]["plmn_list"][0]["mcc"] = 208
        d["gNBs"][0]["tracking_area_code"] = 7
    f = edit_conf(split, "oai/du.conf", change)
    found = split.check()
    assert_found(found, f, "gNBs[0].plmn_list[0]", "plmn", "mcc 208")
    assert_found(found, f, "gNBs[0].tracking_area_code", "plmn", "TAC 7")


def test_ue_sim_must_be_provisioned(split: Tree) -> None:
    f = edit_conf(split, "oai/ue1.conf", lambda d: d["uicc0"].update(imsi="001010000009999"))
    assert_found(split.check(), f, "uicc0.imsi", "credentials", "not among the provisioned")
    f = edit_conf(split, "oai/ue2.conf", lambda d: d["uicc0"].update(opc="00" * 16))
    assert_found(split.check(), f, "uicc0.opc", "credentials")


def test_ue_rf_simulator_server_is_the_du(split: Tree) -> None:
    ran_file = split.render_dir / "compose" / "ran.yaml"
    doc = yaml.safe_load(ran_file.read_text())
    cmd = doc["services"]["ue1"]["command"]
    cmd[cmd.index("--rfsimulator.serveraddr") + 1] = "10.100.9.50"
    ran_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert_found(split.check(), ran_file, "services.ue1.command --rfsimulator.serveraddr", "address", "du")


def test_a_conf_file_run_by_the_wrong_program(split: Tree) -> None:
    ran_file = split.render_dir / "compose" / "ran.yaml"
    doc = yaml.safe_load(ran_file.read_text())
    doc["services"]["cuup"]["command"][1] = "nr-softmodem"
    ran_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert_found(split.check(), ran_file, "services.cuup.command", "role", "nr-cuup")


def test_unparsable_conf_is_a_syntax_finding(split: Tree) -> None:
    path = split.render_dir / "oai" / "du.conf"
    path.write_text("gNBs = ( {")
    assert_found(split.check(), path, "(file)", "syntax", "libconfig")


def test_monolithic_gnb_n3_address(tmp_path: Path) -> None:
    t = make_tree(tmp_path, ran="oai")
    f = edit_conf(t, "oai/gnb.conf",
                  lambda d: d["gNBs"][0]["NETWORK_INTERFACES"].update(GNB_IPV4_ADDRESS_FOR_NGU="10.100.2.50"))
    assert_found(t.check(), f, "gNBs[0].NETWORK_INTERFACES.GNB_IPV4_ADDRESS_FOR_NGU", "address", "n3")


def test_split_nodes_must_be_in_compose_only_for_split(tmp_path: Path) -> None:
    t = make_tree(tmp_path, ran="split")
    t.edit_text(t.stack_file, "du:        {kind: oai,      networks: {f1c: 10.100.10.62,",
                "du:        {kind: oai,      networks: {f1c: 10.100.10.63,")
    found = t.check()
    assert_found(found, t.render_dir / "compose" / "ran.yaml", "services.du-ns.networks.f1c.ipv4_address",
                 "address", "10.100.10.63")


def test_dtls_relays_on_f1c_e1_n2_point_the_split_at_their_listeners(tmp_path: Path) -> None:
    """A DTLS profile on the split's F1-C, E1 and N2: the DU, the CU-UP and the CU-CP connect to their
    relay's local listener (a real address there is named), each server side's relay connects to the
    CU-CP's / AMF's real address on the plane."""
    import shutil

    from tests.conftest import ROOT
    t = make_tree(tmp_path, ran="split")
    shutil.copytree(ROOT / "dtls", t.root / "dtls")            # the relays' mounted entrypoint
    t.rerender("dtls12-aes128gcm", "f1c,e1,n2", ran="split")
    found = t.check()
    assert found == [], "\n".join(f.format() for f in found)
    f = edit_conf(t, "oai/du.conf", lambda d: d["MACRLCs"][0].update(remote_n_address="10.100.10.60"))
    assert_found(t.check(), f, "MACRLCs[0].remote_n_address", "address", "relay's listener 127.0.0.1")
    f = edit_conf(t, "oai/cuup.conf", lambda d: d["gNBs"][0]["E1_INTERFACE"][0].update(ipv4_cucp="10.100.12.60"))
    assert_found(t.check(), f, "gNBs[0].E1_INTERFACE[0].ipv4_cucp", "address", "relay_links.e1")
    f = edit_conf(t, "oai/cucp.conf", lambda d: d["gNBs"][0]["amf_ip_address"][0].update(ipv4="10.100.2.5"))
    assert_found(t.check(), f, "gNBs[0].amf_ip_address[0].ipv4", "address", "relay_links.n2")
    env = t.render_dir / "overlay" / "cucp" / "overlay.env"
    t.edit_text(env, "10.100.10.60 38472", "10.100.10.99 38472")
    assert_found(t.check(), env, "DTLS_RELAYS (f1c, NF side)", "address", "10.100.10.99")
