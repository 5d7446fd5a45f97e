"""testbed/instance.py: a STATE directory's stack (project, bridges, address slot) and the address
shift that lets two stacks run side by side; the renders and check-config of a shifted stack."""
from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import pytest
import yaml

from testbed import ROOT, instance, stack


def raw_values() -> dict:
    return yaml.safe_load(stack.STACK_FILE.read_text())


def test_the_default_state_keeps_the_names_and_addresses() -> None:
    inst = instance.of(ROOT / ".state", env={})
    assert (inst.project, inst.bridge_prefix, inst.slot) == ("g5tb", "g5tb", 0)
    assert instance.of(".state", env={}) == inst
    assert instance.shift(raw_values(), 0) == raw_values()


def test_another_state_gets_its_own_stack(tmp_path: Path) -> None:
    a, b = instance.of(tmp_path / "a", env={}), instance.of(tmp_path / "b", env={})
    assert a.project != b.project and a.bridge_prefix != b.bridge_prefix
    assert 1 <= a.slot <= instance.SLOTS and len(f"{a.bridge_prefix}-sbi") <= 15   # Linux interface names
    assert instance.of(tmp_path / "a", env={}) == a, "derived, so the same directory is the same stack"
    env = {"STACK_SLOT": "42", "COMPOSE_PROJECT": "mine", "BRIDGE_PREFIX": "mybr"}
    mine = instance.of(tmp_path / "a", env=env)
    assert (mine.project, mine.bridge_prefix, mine.slot) == ("mine", "mybr", 42)
    with pytest.raises(instance.InstanceError, match="a number from 0 to 99"):
        instance.of(tmp_path / "a", env={"STACK_SLOT": "100"})


def test_the_shift_moves_every_stack_address_and_nothing_else() -> None:
    v = raw_values()
    moved = instance.shift(v, 7)
    for net, spec in v["networks"].items():
        new = ipaddress.ip_network(moved["networks"][net]["subnet"])
        assert new == ipaddress.ip_network(f"{ipaddress.ip_network(spec['subnet']).network_address + 7 * 65536}/24")
        assert ipaddress.ip_address(moved["networks"][net]["gateway"]) in new
    for node, spec in v["nodes"].items():
        for net, addr in spec["networks"].items():
            assert ipaddress.ip_address(moved["nodes"][node]["networks"][net]) == ipaddress.ip_address(addr) + 7 * 65536
            assert ipaddress.ip_address(moved["nodes"][node]["networks"][net]) in \
                ipaddress.ip_network(moved["networks"][net]["subnet"])
    assert moved["ue_subnet"] == v["ue_subnet"] and moved["dns"] == v["dns"], "only the stack's own block moves"
    assert moved["dn_server"]["address"] != v["dn_server"]["address"]
    assert v == raw_values(), "the shift copies"


def test_stack_load_follows_stack_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STACK_SLOT", "3")
    assert stack.address("amf", "n2") == "10.103.2.5"
    monkeypatch.delenv("STACK_SLOT")
    assert stack.address("amf", "n2") == "10.100.2.5"


def test_a_shifted_stack_renders_and_passes_check_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from testbed.cli import main
    monkeypatch.setenv("STACK_SLOT", "9")
    assert main(["check-config", "--profile", "aes256gcm", "--plane", "n3", "--state", str(tmp_path)]) == 0
    assert not (tmp_path / "render").exists(), "check-config renders into a temporary directory"
    assert main(["render", "--profile", "aes256gcm", "--plane", "n3", "--state", str(tmp_path), "--quiet"]) == 0
    env = (tmp_path / "render/n3/aes256gcm/compose.env").read_text()
    assert "NET_N3_SUBNET=10.109.3.0/24" in env and "PING_TARGET=10.109.6.1" in env
    swanctl = (tmp_path / "render/n3/aes256gcm/overlay/gnb/swanctl.conf").read_text()
    assert "10.109.3.7" in swanctl and "10.100." not in swanctl


def test_addresses_of_leaves_no_slot_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a command given another state exports that stack's slot only while it works: a slot left
    # in the environment moved every later render of the same process (CI's 170 failures, stop 23)
    monkeypatch.delenv(instance.SLOT_ENV, raising=False)
    with instance.addresses_of(tmp_path / "state") as inst:
        assert os.environ[instance.SLOT_ENV] == str(inst.slot) and inst.slot > 0
    assert instance.SLOT_ENV not in os.environ
    monkeypatch.setenv(instance.SLOT_ENV, "7")
    with instance.addresses_of(tmp_path / "state"):
        assert os.environ[instance.SLOT_ENV] == "7"
    assert os.environ[instance.SLOT_ENV] == "7"
