"""The privilege table nf-configs/privileges.yaml and its accessor testbed/privileges.py."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testbed import ROOT, privileges


def test_every_role_says_what_it_is_and_why_it_holds_each_privilege() -> None:
    roles = privileges.load()
    assert {"holder", "holder-ipsec", "holder-wireguard", "nf", "nf-tls", "upf", "gnb", "ue", "db",
            "provision"} <= set(roles)
    for r in roles.values():
        assert r.what and all(r.capabilities.values()) and all(r.devices.values())
        assert "SYS_ADMIN" not in r.capabilities and "ALL" not in r.capabilities
        assert set(r.devices) <= {"/dev/net/tun"}, f"{r.name}: only a TUN device is ever handed in"
        assert r.read_only or r.writable, f"{r.name}: a writable root says why"
    # /dev/net/tun only where a TUN is made: the UPF, the UEs (UERANSIM's, OAI's) and the userspace overlays
    assert {n for n, r in roles.items() if r.devices} == {"upf", "ue", "oai-ue", "holder-ipsec", "holder-wireguard"}
    assert roles["nf"].capabilities == {} and roles["holder"].capabilities == {}


def test_compose_fields_drop_everything_first() -> None:
    fields = privileges.role("holder-ipsec").compose_fields()
    assert fields["cap_drop"] == ["ALL"] and fields["security_opt"] == [privileges.NO_NEW_PRIVILEGES]
    assert fields["cap_add"] == ["DAC_READ_SEARCH", "NET_ADMIN", "NET_BIND_SERVICE"]
    assert fields["devices"] == ["/dev/net/tun:/dev/net/tun"] and fields["read_only"] is True
    assert fields["labels"] == {privileges.ROLE_LABEL: "holder-ipsec"} and fields["tmpfs"] == ["/run", "/tmp"]
    assert "devices" not in privileges.role("holder-wireguard").compose_fields(devices=False)
    over = privileges.role("holder-ipsec").compose_fields(over_base=True)
    assert "cap_drop" not in over and "security_opt" not in over and over["cap_add"] == fields["cap_add"]
    nf = privileges.role("nf").compose_fields()
    assert "cap_add" not in nf and "devices" not in nf


def test_unknown_role_lists_the_roles() -> None:
    with pytest.raises(privileges.PrivilegeError, match="unknown role 'root'; roles in privileges.yaml: capture, cpu-reader, db, gnb"):
        privileges.role("root")


@pytest.mark.parametrize("spec,message", [
    ({"what": "x", "capabilities": {"NET_ADMIN": ""}, "read_only": True}, "say why NET_ADMIN is needed"),
    ({"what": "x", "capabilities": {"SYS_ADMIN": "mount"}, "read_only": True}, "never granted"),
    ({"what": "x", "read_only": False}, "`writable` must say why"),
    ({"capabilities": {}, "read_only": True}, "say which containers take this role"),
    ({"what": "x", "read_only": "yes"}, "must be true or false"),
])
def test_a_table_without_reasons_is_refused(tmp_path: Path, spec: dict, message: str) -> None:
    path = tmp_path / "privileges.yaml"
    path.write_text(yaml.safe_dump({"roles": {"bad": spec}}))
    with pytest.raises(privileges.PrivilegeError, match=message):
        privileges.load(path)


def test_capability_names_are_normalised() -> None:
    assert privileges.normalise_capability("cap_net_admin") == "NET_ADMIN"
    assert privileges.normalise_capability(" NET_RAW ") == "NET_RAW"


def test_docs_list_every_role_and_capability() -> None:
    """docs/stack.md documents the table per service: no role or capability missing there."""
    text = (ROOT / "docs" / "stack.md").read_text(encoding="utf-8")
    section = text.split("## Privileges", 1)[1].split("\n## ", 1)[0]
    for r in privileges.load().values():
        assert f"`{r.name}`" in section, f"docs/stack.md Privileges: role {r.name} missing"
        for cap in r.capabilities:
            assert cap in section, f"docs/stack.md Privileges: {cap} of {r.name} missing"
