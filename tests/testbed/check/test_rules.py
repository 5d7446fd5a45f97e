"""check-config on the real files, and one corrupted copy per kind of mistake.

Each mutation test copies the real compose files, stack.yaml and a fresh render into a
temporary tree, makes one mistake, and asserts the checker names the file and the key.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from tests import render_support
from testbed import ROOT, keys, profiles, stack
from testbed.check import Finding, check_render
from testbed.render import layout
from tests.testbed.render.helpers import keys_root


@dataclass
class Tree:
    root: Path
    compose: Path
    stack_file: Path
    render_dir: Path
    values: dict[str, Any]

    def rerender(self, profile: str = "baseline", plane: str = "n3", use_scp: bool = False,
                 ran: str | None = None) -> None:
        self.values = yaml.safe_load(self.stack_file.read_text())
        kr = keys_root()
        render_support.render(profiles.get(profile, plane), plane, self.render_dir, subscribers=keys.subscribers(kr),
                      keys_dir=kr, values=self.values, use_scp=use_scp, commit="test",
                      compose_dir=self.compose, repo_dir=self.root, ran_variant=ran)

    def check(self) -> list[Finding]:
        return check_render(self.render_dir, self.stack_file, keys_root())

    def edit_text(self, path: Path, old: str, new: str, count: int = 1) -> None:
        text = path.read_text()
        assert text.count(old) >= count, f"{old!r} not in {path}"
        path.write_text(text.replace(old, new, count))

    def edit_yaml(self, rel: str, change: Callable[[Any], None]) -> Path:
        path = self.render_dir / rel
        data = yaml.safe_load(path.read_text())
        change(data)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path


def make_tree(tmp_path: Path, profile: str = "baseline", plane: str = "n3", use_scp: bool = False,
              ran: str | None = None) -> Tree:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "compose", root / "compose")
    (root / "testbed").mkdir()
    shutil.copy(ROOT / "testbed" / "provision.py", root / "testbed" / "provision.py")
    (root / "nf-configs").mkdir()
    shutil.copy(stack.STACK_FILE, root / "nf-configs" / "stack.yaml")
    shutil.copy(stack.STACK_FILE.parent / "oai-cell.yaml", root / "nf-configs" / "oai-cell.yaml")
    t = Tree(root, root / "compose", root / "nf-configs" / "stack.yaml", tmp_path / "render", {})
    t.rerender(profile, plane, use_scp, ran)
    return t


def assert_found(findings: list[Finding], file: Path, key: str, kind: str, text: str = "") -> Finding:
    for f in findings:
        if Path(f.file).resolve() == Path(file).resolve() and f.key == key and f.kind == kind and text in f.message:
            return f
    pytest.fail(f"no {kind} finding for {file.name}: {key} ({text!r}); got:\n"
                + "\n".join(f"  {x.format()} [{x.kind}]" for x in findings))


# --- the real files --------------------------------------------------------------------------

@pytest.mark.parametrize("profile,plane,use_scp", [
    ("baseline", "n3", False), ("baseline", "sbi", False), ("baseline", "sbi", True),
    ("aes256gcm", "n3", False), ("aes128gcm-psk-trap", "sbi", False),
    ("wireguard", "n3", False), ("wireguard", "sbi", False), ("tls12-rsa-aes256gcm", "sbi", False),
    ("baseline", "n2", False), ("dtls12-aes128gcm", "n2", False), ("dtls-relay-plain", "n2", False),
])
def test_real_files_pass(profile: str, plane: str, use_scp: bool, tmp_path: Path) -> None:
    kr = keys_root()
    r = render_support.render(profiles.get(profile, plane), plane, tmp_path / "r", subscribers=keys.subscribers(kr),
                      keys_dir=kr, use_scp=use_scp, commit="test")
    findings = check_render(r.dir, keys_root=kr)
    assert findings == [], "\n".join(f.format() for f in findings)


def test_cli_passes_on_the_real_files_and_fails_on_a_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from testbed.cli import main
    state = keys_root().parent
    assert main(["check-config", "--profile", "baseline", "--state", str(state)]) == 0
    assert main(["render", "--profile", "baseline", "--state", str(state), "--quiet"]) == 0
    rdir = layout.render_dir(state, "n3", "baseline")
    gnb = rdir / "ueransim/gnb.yaml"
    data = yaml.safe_load(gnb.read_text())
    data["tac"] = 99
    gnb.write_text(yaml.safe_dump(data))
    assert main(["check-config", "--render-dir", str(rdir), "--no-render", "--state", str(state)]) == 1
    out = capsys.readouterr()
    assert "ueransim/gnb.yaml: tac: TAC 99 differs" in out.out
    assert "1 problem(s)" in out.err


# --- one mistake at a time ---------------------------------------------------------------------

def test_nf_address_on_the_wrong_network(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    n4 = stack.address("upf", "n4", t.values)
    f = t.edit_yaml("open5gs/upf.yaml", lambda d: d["upf"]["gtpu"]["server"][0].update(address=n4))
    assert_found(t.check(), f, "upf.gtpu.server[0].address", "address", "on n3")


def test_amf_ngap_address_in_gnb_config(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    f = t.edit_yaml("ueransim/gnb.yaml", lambda d: d["amfConfigs"][0].update(address="10.100.2.6"))
    assert_found(t.check(), f, "amfConfigs[0].address", "address", "10.100.2.6")


def test_gnb_past_the_n2_relay_and_relay_to_another_amf_address(tmp_path: Path) -> None:
    """DTLS relay on N2: the gNB must connect to the relay's listener (not the AMF directly),
    and the relay's server side must connect to the AMF's N2 address."""
    t = make_tree(tmp_path, "dtls12-aes128gcm", "n2")
    amf = stack.address("amf", "n2", t.values)
    f = t.edit_yaml("ueransim/gnb.yaml", lambda d: d["amfConfigs"][0].update(address=amf))
    assert_found(t.check(), f, "amfConfigs[0].address", "address", "relay's listener 127.0.0.1")
    env = t.render_dir / layout.OVERLAY_DIR / "amf" / "overlay.env"
    t.edit_text(env, f"2155 {amf} 38412", "2155 10.100.2.99 38412")
    assert_found(t.check(), env, "DTLS_RELAYS (NF side)", "address", "10.100.2.99")


def test_nrf_uri(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    f = t.edit_yaml("open5gs/ausf.yaml", lambda d: d["ausf"]["sbi"]["client"]["nrf"][0].update(
        uri=f"http://{stack.address('udm', 'sbi', t.values)}:7777"))
    assert_found(t.check(), f, "ausf.sbi.client.nrf[0].uri", "address", "NRF URI")


def test_nrf_uri_port(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    f = t.edit_yaml("open5gs/smf.yaml", lambda d: d["smf"]["sbi"]["client"]["nrf"][0].update(
        uri=f"http://{stack.address('nrf', 'sbi', t.values)}:80"))
    assert_found(t.check(), f, "smf.sbi.client.nrf[0].uri", "address", "port 80")


def test_upf_pfcp_address_in_smf(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    f = t.edit_yaml("open5gs/smf.yaml", lambda d: d["smf"]["pfcp"]["client"]["upf"][0].update(
        address=stack.address("upf", "n3", t.values)))
    assert_found(t.check(), f, "smf.pfcp.client.upf[0].address", "address", "UPF PFCP")


def test_smf_gtpu_address_missing_or_wrong(tmp_path: Path) -> None:
    """Open5GS 2.7.7's SMF exits without smf.gtpu (seen for real in the Docker guest)."""
    t = make_tree(tmp_path)
    f = t.edit_yaml("open5gs/smf.yaml", lambda d: d["smf"].pop("gtpu"))
    assert_found(t.check(), f, "smf.gtpu.server", "reference", "No smf.gtpu.address")
    t = make_tree(tmp_path / "wrong")
    f = t.edit_yaml("open5gs/smf.yaml", lambda d: d["smf"]["gtpu"]["server"][0].update(
        address=stack.address("smf", "sbi", t.values)))
    assert_found(t.check(), f, "smf.gtpu.server[0].address", "address", "SMF GTP-U")


def test_ngap_server_address_in_amf(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    f = t.edit_yaml("open5gs/amf.yaml", lambda d: d["amf"]["ngap"]["server"][0].update(address="10.100.1.5"))
    assert_found(t.check(), f, "amf.ngap.server[0].address", "address", "on n2")


def test_compose_address_differs_from_stack(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, 'n2: {ipv4_address: "${AMF_N2_IP}"', 'n2: {ipv4_address: "10.100.2.6"')
    found = t.check()
    assert_found(found, base, "services.amf-ns.networks.n2.ipv4_address", "address", "nodes.amf.networks.n2")
    # and the configs that name the AMF's stack address no longer match the container
    assert_found(found, t.render_dir / "ueransim/gnb.yaml", "amfConfigs[0].address", "address")


def test_duplicate_address_in_compose(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, 'sbi: {ipv4_address: "${UDM_SBI_IP}"', 'sbi: {ipv4_address: "${AUSF_SBI_IP}"')
    assert_found(t.check(), base, "services.udm-ns.networks.sbi.ipv4_address", "duplicate", "ausf-ns")


@pytest.mark.parametrize("old,new,node,net,kind,text", [
    ("udm:       {kind: open5gs,  networks: {sbi: 10.100.1.12}}",
     "udm:       {kind: open5gs,  networks: {sbi: 10.100.1.11}}", "udm", "sbi", "duplicate", "node ausf"),
    ("upf:       {kind: open5gs,  networks: {n3: 10.100.3.7,",
     "upf:       {kind: open5gs,  networks: {n3: 10.100.13.7,", "upf", "n3", "subnet", "outside the n3 subnet"),
], ids=["duplicate", "out-of-subnet"])
def test_a_bad_address_in_stack_yaml_is_found_there_and_in_compose(tmp_path: Path, old: str, new: str, node: str,
                                                                  net: str, kind: str, text: str) -> None:
    t = make_tree(tmp_path)
    t.edit_text(t.stack_file, old, new)
    t.rerender()
    found = t.check()
    assert_found(found, t.stack_file, f"nodes.{node}.networks.{net}", kind, text)
    assert_found(found, t.compose / "base.yaml", f"services.{node}-ns.networks.{net}.ipv4_address", kind)


def test_gateway_address_taken_by_a_node(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    t.edit_text(t.stack_file, "gnb:       {kind: ueransim, networks: {n2: 10.100.2.50,",
                "gnb:       {kind: ueransim, networks: {n2: 10.100.2.1,")
    t.rerender()
    assert_found(t.check(), t.stack_file, "nodes.gnb.networks.n2", "duplicate", "gateway")


def test_mounted_file_missing(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    (t.render_dir / "open5gs/udm.yaml").unlink()
    found = t.check()
    f = assert_found(found, t.compose / "base.yaml", "services.udm.volumes[0]", "mount", "does not exist")
    assert "open5gs/udm.yaml" in f.message


def test_mounted_repo_file_missing(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    (t.compose / "entrypoints" / "upf.sh").unlink()
    # the upf mounts the whole entrypoints dir: remove the dir to break the mount
    shutil.rmtree(t.compose / "entrypoints")
    assert_found(t.check(), t.compose / "base.yaml", "services.upf.volumes[0]", "mount", "./entrypoints")


def test_config_path_not_mounted(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, '["open5gs-bsfd", "-c", "/etc/open5gs/testbed/bsf.yaml"]',
                '["open5gs-bsfd", "-c", "/etc/open5gs/testbed/bsf2.yaml"]')
    assert_found(t.check(), base, "services.bsf.command", "mount", "bsf2.yaml")


@pytest.mark.parametrize("rel,change,key,text", [
    ("ueransim/gnb.yaml", lambda d: d.update(mcc="999"), "mcc/mnc", "PLMN 999/01"),
    ("ueransim/gnb.yaml", lambda d: d.update(slices=[{"sst": 2}]), "slices", "S-NSSAI"),
    ("open5gs/amf.yaml", lambda d: d["amf"]["tai"][0].update(tac=2), "amf.tai[0].tac", "TAC 2"),
    ("open5gs/amf.yaml", lambda d: d["amf"]["plmn_support"][0]["plmn_id"].update(mnc="70"),
     "amf.plmn_support[0].plmn_id", "PLMN 001/70"),
    ("open5gs/smf.yaml", lambda d: d["smf"]["info"][0]["s_nssai"][0].update(dnn=["ims"]),
     "smf.info[0].s_nssai[0].dnn[0]", "DNN ims"),
    ("open5gs/nssf.yaml", lambda d: d["nssf"]["sbi"]["client"]["nsi"][0].update(s_nssai={"sst": 3}),
     "nssf.sbi.client.nsi[].s_nssai", "S-NSSAI"),
    ("ueransim/ue1.yaml", lambda d: d["sessions"][0].update(apn="ims"), "sessions[0].apn", "DNN ims"),
    ("ueransim/ue2.yaml", lambda d: d.update(mnc="70"), "mcc/mnc", "PLMN 001/70"),
])
def test_plmn_tac_slice_dnn_disagreements(rel: str, change: Callable[[Any], None], key: str, text: str,
                                          tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    f = t.edit_yaml(rel, change)
    assert_found(t.check(), f, key, "plmn", text)


@pytest.mark.parametrize("change,key,text", [
    (lambda d: d.update(key="0" * 32), "key", "K differs"),
    (lambda d: d.update(op="F" * 32), "op", "OPc differs"),
    (lambda d: d.update(opType="OP"), "opType", "OPc"),
    (lambda d: d.update(supi="imsi-001010000009999"), "supi", "not among the provisioned"),
])
def test_ue_credentials_differ_from_provisioned(change: Callable[[Any], None], key: str, text: str,
                                                tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    f = t.edit_yaml("ueransim/ue1.yaml", change)
    assert_found(t.check(), f, key, "credentials", text)


def test_dependency_cycle(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, '''  nrf-net:
    <<: *holder
''', '''  nrf-net:
    <<: *holder
    depends_on:
      amf: {condition: service_healthy}
''')
    cycles = [f for f in t.check() if f.kind == "cycle"]
    assert len(cycles) == 1, cycles
    f = cycles[0]
    members = f.message.split(": ", 1)[1].split(" -> ")
    assert {"nrf-net", "amf", "nrf"} <= set(members) and members[0] == members[-1]
    assert Path(f.file).resolve() == base.resolve()
    assert f.key in {f"services.{m}.depends_on" for m in members}


def test_unknown_network_mode_target_and_unset_variable(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, "network_mode: service:pcf-ns", "network_mode: service:pcf-nsx")
    t.edit_text(base, '"${BSF_SBI_IP}"', '"${BSF_SBI_ADDR}"')
    found = t.check()
    assert_found(found, base, "services.pcf-net.network_mode", "reference", "no such service")
    assert_found(found, base, "services.bsf-ns.networks.sbi.ipv4_address", "syntax", "BSF_SBI_ADDR")


def test_every_kind_is_covered() -> None:
    """The mutation tests above exercise every finding kind the checker has."""
    import inspect
    src = inspect.getsource(inspect.getmodule(test_every_kind_is_covered))  # type: ignore[arg-type]
    for kind in ("address", "duplicate", "subnet", "mount", "plmn", "credentials", "cycle", "reference", "syntax"):
        assert f'"{kind}"' in src.split("def test_every_kind_is_covered")[0], kind


def test_render_older_than_the_sim_secrets(tmp_path: Path) -> None:
    """Keys regenerated after the render (make keys on a new state dir): the UE config's K/OPc
    no longer match .state/keys/subscribers.yaml."""
    t = make_tree(tmp_path)
    fresh = tmp_path / "keys"
    fresh.mkdir()
    subs = yaml.safe_load((keys_root() / "subscribers.yaml").read_text())
    subs["ue2"]["k"] = "0" * 32
    subs["ue2"]["opc"] = "1" * 32
    (fresh / "subscribers.yaml").write_text(yaml.safe_dump(subs))
    found = check_render(t.render_dir, t.stack_file, fresh)
    ue2 = t.render_dir / "ueransim/ue2.yaml"
    assert_found(found, ue2, "key", "credentials", "SIM secret")
    assert_found(found, ue2, "op", "credentials", "SIM secret")
