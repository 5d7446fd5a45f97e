"""macsec/overlay.py: the per-node rendering from stack.yaml, the channel map and the keys, and the
Compose holders; the plug-in's facts (testbed/contract.py)."""
from __future__ import annotations

import copy
import shlex
from pathlib import Path

import pytest

from macsec import keys as mkeys
from macsec import overlay
from testbed import privileges, profiles, ran, registry, stack

GNB, UPF = "10.100.3.50", "10.100.3.7"


def _values() -> dict:
    return ran.restrict(stack.load(), "ueransim")


def _env(path: Path) -> dict[str, str]:
    return {k: " ".join(shlex.split(v)) for k, v in
            (line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))}


def _sa_lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line and not line.startswith("#")]


def _render(tmp_path: Path, profile: str = "macsec-gcm-aes-128", out: str = "r", **kw: object) -> dict[str, Path]:
    return overlay.render(profiles.get(profile), "n3", _values(), tmp_path / "keys", tmp_path / out, **kw)  # type: ignore[arg-type]


def test_registered_as_the_macsec_overlay() -> None:
    ov = registry.overlay("macsec")
    assert ov.folder == Path(overlay.__file__).resolve().parent
    assert ov.datapaths == ("kernel",) and not ov.userspace_datapaths and ov.datapath_variable is None
    assert ov.entrypoint == "entrypoint.sh" and ov.daemons == ()
    assert ov.state_command == ("ip", "-s", "macsec", "show") and ov.wire_filter == "macsec || mka"
    assert ov.datapath(True, None) == "kernel" and ov.datapath(False, "/usr/bin/anything") is None
    assert ov.userspace_possible({"datapath_choices": {}}) is False


def test_identifiers_come_from_the_addresses() -> None:
    assert overlay.endpoints("n3", _values()) == ["gnb", "upf"]
    assert overlay.partners("gnb", "n3", _values()) == ["upf"]
    assert overlay.system_identifier(GNB) == "02:00:0a:64:03:32"
    assert overlay.sci_of(GNB) == "02000a6403320001" and overlay.sci_of(UPF) == "02000a6403070001"
    assert overlay.ssci_of(GNB) == 0x0A640332
    split = ran.restrict(stack.load(), "split")
    assert overlay.endpoints("n3", split) == ["cuup", "upf"]      # the split RAN's CU-UP terminates N3


def test_every_endpoint_gets_its_own_dir_with_the_saks_private(tmp_path: Path) -> None:
    out = _render(tmp_path)
    assert sorted(out) == ["gnb", "upf"]
    for node, d in out.items():
        assert d.name == node and d.stat().st_mode & 0o777 == 0o700
        assert sorted(p.name for p in d.iterdir()) == ["overlay.env", "sa.conf"]
        assert (d / "sa.conf").stat().st_mode & 0o777 == 0o600
        assert (d / "overlay.env").stat().st_mode & 0o777 == 0o644
    env = _env(out["gnb"] / "overlay.env")
    assert env == {"MACSEC_PROFILE": "macsec-gcm-aes-128", "MACSEC_NODE": "gnb", "MACSEC_PLANE": "n3",
                   "MACSEC_NETWORK": "n3", "MACSEC_IF": "macsec0", "MACSEC_ADDRESS": GNB, "MACSEC_PREFIXLEN": "24",
                   "MACSEC_SUBNET": "10.100.3.0/24", "MACSEC_SCI": "02000a6403320001",
                   "MACSEC_CIPHER": "gcm-aes-128", "MACSEC_ICV_LEN": "16", "MACSEC_REPLAY_WINDOW": "0",
                   "MACSEC_PEERS": f"upf={UPF}", "MACSEC_FALLBACK_METRIC": "4242", "MACSEC_READY_TIMEOUT": "30"}
    assert not any(len(v) >= 32 for v in env.values())               # nothing secret in overlay.env


@pytest.mark.parametrize("profile,sak_hex", [("macsec-gcm-aes-128", 32), ("macsec-gcm-aes-256", 64)])
def test_each_end_receives_with_the_key_the_other_sends_with(tmp_path: Path, profile: str, sak_hex: int) -> None:
    out = _render(tmp_path, profile)
    gnb, upf = _sa_lines(out["gnb"] / "sa.conf"), _sa_lines(out["upf"] / "sa.conf")
    # tx sa 0 pn 1 on key <id> <sak> | rx sci <sci> on | rx sci <sci> sa 0 pn 1 on key <id> <sak>
    assert gnb[0][:6] == ["tx", "sa", "0", "pn", "1", "on"] and gnb[0][6] == "key"
    assert gnb[1] == ["rx", "sci", overlay.sci_of(UPF), "on"]
    assert gnb[2][:8] == ["rx", "sci", overlay.sci_of(UPF), "sa", "0", "pn", "1", "on"]
    assert gnb[2][-2:] == upf[0][-2:] and upf[2][-2:] == gnb[0][-2:]    # key id and SAK
    assert len(gnb[0][-1]) == sak_hex and gnb[0][-1] != upf[0][-1]
    key_id = gnb[0][-2]
    assert len(key_id) == 32 and key_id.endswith(f"{overlay.ssci_of(GNB):08x}")
    assert key_id[:24] == upf[0][-2][:24]                              # one render: one nonce


def test_xpn_sas_carry_ssci_and_salt(tmp_path: Path) -> None:
    out = _render(tmp_path, "macsec-gcm-aes-xpn-256")
    gnb, upf = _sa_lines(out["gnb"] / "sa.conf"), _sa_lines(out["upf"] / "sa.conf")
    tx = gnb[0]
    assert tx[:6] == ["tx", "sa", "0", "xpn", "1", "on"]
    # iproute2 reads the SSCI as hex (10.100.3.50 -> 0a640332; in decimal, 174326578, it refused the line)
    assert tx[tx.index("ssci") + 1] == "0a640332" == f"{overlay.ssci_of(GNB):08x}" and len(tx[tx.index("salt") + 1]) == 24
    rx = upf[2]
    assert rx[rx.index("ssci") + 1] == "0a640332" and rx[rx.index("salt") + 1] == tx[tx.index("salt") + 1]
    assert len(tx[-1]) == 64 and rx[-1] == tx[-1]
    assert _env(out["gnb"] / "overlay.env")["MACSEC_CIPHER"] == "gcm-aes-xpn-256"


def test_every_render_has_fresh_saks_from_the_same_secrets(tmp_path: Path) -> None:
    a = _sa_lines(_render(tmp_path, out="a")["gnb"] / "sa.conf")
    b = _sa_lines(_render(tmp_path, out="b")["gnb"] / "sa.conf")
    assert a[1] == b[1]                                            # the SCIs stay
    assert a[0][-1] != b[0][-1] and a[0][-2] != b[0][-2]           # a new SAK and key id per render
    secrets_before = sorted(p.read_text() for p in (tmp_path / "keys" / "macsec").iterdir())
    _render(tmp_path, out="c")
    assert sorted(p.read_text() for p in (tmp_path / "keys" / "macsec").iterdir()) == secrets_before
    assert len(secrets_before) == 2 and mkeys.secret_path(tmp_path / "keys", "gnb").is_file()


def test_render_refuses_wrong_profile_plane_and_nodes(tmp_path: Path) -> None:
    values = _values()
    with pytest.raises(overlay.MacsecError, match="not a MACsec profile"):
        overlay.render(profiles.get("wireguard"), "n3", values, tmp_path, tmp_path)
    with pytest.raises(overlay.MacsecError, match="does not cover the sbi plane"):
        overlay.render(profiles.get("macsec-gcm-aes-128"), "sbi", values, tmp_path, tmp_path)
    with pytest.raises(overlay.MacsecError, match="one Ethernet network per run; n3,n4 spans n3, n4"):
        overlay.network_of("n3,n4")
    with pytest.raises(overlay.MacsecError, match="unknown plane"):
        overlay.network_of("n9")
    with pytest.raises(overlay.MacsecError, match="mongo: not a MACsec endpoint"):
        _render(tmp_path, nodes=["gnb", "mongo"])
    lonely = copy.deepcopy(values)
    del lonely["nodes"]["upf"]
    with pytest.raises(overlay.MacsecError, match="no host pairs on the n3 plane"):
        overlay.render(profiles.get("macsec-gcm-aes-128"), "n3", lonely, tmp_path, tmp_path)


def test_compose_holders_run_the_entrypoint_with_least_privilege() -> None:
    services = registry.overlay("macsec").compose_services(profiles.get("macsec-gcm-aes-128"), "n3", _values())
    assert sorted(services) == ["gnb-net", "upf-net"]
    for node, svc in (("gnb", services["gnb-net"]), ("upf", services["upf-net"])):
        assert svc["command"] == ["/opt/testbed/macsec/entrypoint.sh", "/etc/testbed/overlay"]
        assert svc["labels"] == {"testbed.role": "holder-macsec"}
        assert svc["cap_add"] == ["DAC_READ_SEARCH", "NET_ADMIN"] and "devices" not in svc
        assert svc["read_only"] is True and svc["environment"] == {} and svc["sysctls"] == {}
        assert svc["volumes"][0].endswith(f"/{node}:/etc/testbed/overlay:ro")
    role = privileges.role("holder-macsec")
    assert role.protocols == ("macsec",) and set(role.capabilities) == {"NET_ADMIN", "DAC_READ_SEARCH"}
    assert role.devices == {} and role.read_only


def test_host_needs_and_cannot_run_name_the_kernel_module() -> None:
    ov = registry.overlay("macsec")
    assert any("macsec kernel module" in n for n in ov.host_needs(profiles.get("macsec-gcm-aes-128"), "n3"))
    why = ov.cannot_run(profiles.get("macsec-gcm-aes-128"), "unavailable")
    assert why is not None and "no userspace MACsec" in why
    notes = ov.doctor_notes()
    assert notes is not None and "modprobe macsec" in notes.fix


def test_entrypoint_ready_file_is_the_holders_healthcheck_file() -> None:
    text = (Path(overlay.__file__).resolve().parent / "entrypoint.sh").read_text()
    assert 'READY_FILE="${OVERLAY_READY_FILE:-/run/testbed/overlay-ready}"' in text
