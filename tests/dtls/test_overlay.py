"""dtls/overlay.py: catalogue entries, the refused DTLS 1.3 profile, relay links from
the stack data, rendered files, the gNB pointed at the relay through the render hooks."""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import render_support
from testbed import registry
from testbed import keys, profiles, ran, stack
from dtls import overlay as dtls
from testbed.render import layout
from tests.conftest import require_tools
from tests.testbed.render.helpers import compose_services, keys_root

RUNNABLE = ["dtls12-aes128gcm", "dtls12-aes256gcm", "dtls-relay-plain"]


def _values() -> dict:
    return ran.restrict(stack.load(), "ueransim")     # the default RAN's nodes (testbed/ran)


def test_catalogue_lists_the_dtls_profiles_and_refuses_dtls13_with_its_reason() -> None:
    assert registry.overlay("dtls").folder == Path(dtls.__file__).resolve().parent
    assert [p for p in profiles.names("n2") if profiles.get(p).protocol == "dtls"] == RUNNABLE
    prof = profiles.load()["dtls13-aes128gcm"]
    assert prof.refused and "OpenSSL" in prof.refused and "4.1" in prof.refused
    with pytest.raises(profiles.ProfileError, match="refused on this testbed: no DTLS 1.3 relay"):
        profiles.get("dtls13-aes128gcm", "n2")
    with pytest.raises(dtls.DtlsError, match="refused"):
        dtls.settings(prof)
    table = profiles.format_table("n2")
    # refused on n2: DTLS 1.3 and the post-quantum IPsec profile with ML-DSA authentication
    assert "REFUSED (no DTLS 1.3 relay" in table and "(2 more listed as refused)" in table
    assert "aes128gcm-x25519-mlkem768-mldsa" in table
    with pytest.raises(profiles.ProfileError, match="cannot run on the n3 plane"):
        profiles.get("dtls12-aes128gcm", "n3")


def test_settings_map_versions_and_suites_to_wire_values() -> None:
    s = dtls.settings(profiles.get("dtls12-aes256gcm"))
    assert (s.relay, s.openssl_version, s.socat_version, s.wire_version, s.suite_id) == \
        ("dtls", "DTLSv1.2", "DTLS1.2", 0xFEFD, 0xC02C)
    assert dtls.settings(profiles.get("dtls-relay-plain")).relay == "plain"
    with pytest.raises(dtls.DtlsError, match="not a DTLS profile"):
        dtls.settings(profiles.get("wireguard"))


def test_the_link_is_plane_data() -> None:
    v = _values()
    lk = dtls.link("n2", v)
    assert (lk.client, lk.server, lk.port, lk.listen) == ("gnb", "amf", int(v["ngap_port"]), "127.0.0.1")
    assert dtls.endpoints("n2", v) == ["gnb", "amf"]
    assert lk.server_address(v) == stack.address("amf", "n2", v)
    with pytest.raises(dtls.DtlsError, match="no relay link on plane 'n3'"):
        dtls.link("n3", v)
    with pytest.raises(dtls.DtlsError, match="relay_links.n2 lacks 'listen'"):
        dtls.links({**v, "relay_links": {"n2": {"relay_port": 2155}}})
    with pytest.raises(dtls.DtlsError, match="relay_links.sbi: a relay carries one client -> server link"):
        dtls.links({**v, "relay_links": {"sbi": {"listen": "127.0.0.1", "relay_port": 2155}}})


def test_render_writes_each_end_with_private_key_and_pinned_openssl_conf(tmp_path: Path) -> None:
    v = _values()
    prof = profiles.get("dtls12-aes128gcm", "n2")
    dirs = dtls.render(prof, "n2", v, keys_root(), tmp_path)
    assert sorted(dirs) == ["amf", "gnb"]
    env = yaml.safe_load((dirs["gnb"] / "overlay.env").read_text().replace("=", ": "))
    assert env["DTLS_RELAYS"] == "client n2 127.0.0.1 38412 10.100.2.5 2155 amf.localdomain"
    assert (env["DTLS_VERSION"], env["DTLS_CIPHER"]) == ("DTLS1.2", "ECDHE-ECDSA-AES128-GCM-SHA256")
    server = yaml.safe_load((dirs["amf"] / "overlay.env").read_text().replace("=", ": "))
    assert server["DTLS_RELAYS"] == "server n2 10.100.2.5 2155 10.100.2.5 38412 gnb.localdomain"
    assert stat.S_IMODE(os.stat(dirs["amf"] / "node.key").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(dirs["amf"]).st_mode) == 0o700
    conf = (dirs["amf"] / "openssl.cnf").read_text()
    assert "MinProtocol = DTLSv1.2\nMaxProtocol = DTLSv1.2\nCipherString = ECDHE-ECDSA-AES128-GCM-SHA256\n" in conf
    # the node's own certificate, verifiable against the copied CA
    require_tools("openssl")
    subprocess.run(["openssl", "verify", "-CAfile", str(dirs["gnb"] / "ca.crt"), str(dirs["gnb"] / "node.crt")],
                   check=True, capture_output=True)
    only = dtls.render(prof, "n2", v, keys_root(), tmp_path / "one", nodes=["amf"])
    assert list(only) == ["amf"]
    with pytest.raises(dtls.DtlsError, match="upf: not an end of the n2 relay link"):
        dtls.render(prof, "n2", v, keys_root(), tmp_path / "bad", nodes=["upf"])


def test_plain_relay_renders_no_key_material(tmp_path: Path) -> None:
    dirs = dtls.render(profiles.get("dtls-relay-plain"), "n2", _values(), keys_root(), tmp_path)
    assert sorted(p.name for p in dirs["gnb"].iterdir()) == ["overlay.env"]
    assert "DTLS_RELAY=plain\n" in (dirs["gnb"] / "overlay.env").read_text()


def test_the_stack_renderer_points_the_gnb_at_the_relay(tmp_path: Path) -> None:
    """testbed.render with a DTLS profile on n2: the gNB connects NGAP to the local relay, the
    AMF keeps its own address (the relay's server side connects to it), both ends rendered."""
    root = keys_root()
    v = _values()
    r = render_support.render(profiles.get("dtls12-aes128gcm", "n2"), "n2", tmp_path / "r",
                      subscribers=keys.subscribers(root), keys_dir=root, commit="test")
    gnb = yaml.safe_load((r.dir / layout.UERANSIM_DIR / "gnb.yaml").read_text())
    assert gnb["amfConfigs"] == [{"address": "127.0.0.1", "port": 38412}] and gnb["ngapIp"] == "127.0.0.1"
    amf = yaml.safe_load((r.dir / layout.OPEN5GS_DIR / "amf.yaml").read_text())
    assert amf["amf"]["ngap"]["server"][0]["address"] == stack.address("amf", "n2", v)
    assert sorted(r.overlay_dirs) == ["amf", "gnb"]
    assert dtls.nf_config_overrides("amf", profiles.get("dtls12-aes128gcm"), v) == {}


def test_host_needs_and_plaintext_tap() -> None:
    assert "sctp (kernel module)" in dtls.host_needs(profiles.get("dtls-relay-plain"), "n2")
    assert dtls.plaintext_tap("n2") == {"node": "gnb", "iface": "lo", "capture_filter": "sctp port 38412"}


def test_compose_services_turn_exactly_the_link_ends_into_relays(tmp_path: Path) -> None:
    """The render's overlay fragment: gnb-net and amf-net run dtls/entrypoint.sh with their rendered
    dir, real SCTP on the NF side, no device (socat is userspace; NET_ADMIN stays for run-sbi's
    gNB-side timing capture)."""
    from testbed import ROOT
    v = _values()
    services = dtls.compose_services(profiles.get("dtls12-aes128gcm"), "n2", v)
    assert sorted(services) == sorted(f"{n}-net" for n in dtls.endpoints("n2", v))
    base = compose_services()        # base.yaml's services and the default RAN's (testbed/ran)
    for name, svc in services.items():
        assert name in base
        assert svc["command"] == ["/opt/testbed/dtls/entrypoint.sh", "/etc/testbed/overlay"]
        assert svc["environment"] == {"DTLS_NF_TRANSPORT": "sctp"}
        # the role holder-dtls of nf-configs/privileges.yaml (cap_drop ALL and no-new-privileges
        # come with base.yaml): NET_ADMIN for the timing view, DAC_READ_SEARCH for the 0600 key
        assert svc["labels"] == {"testbed.role": "holder-dtls"}
        assert svc["cap_add"] == ["DAC_READ_SEARCH", "NET_ADMIN"] and "devices" not in svc
        assert svc["read_only"] is True
        node = name.removesuffix("-net")
        assert any(v_.endswith(f"/{node}:/etc/testbed/overlay:ro") for v_ in svc["volumes"])
        assert svc["command"][0] == "/opt/testbed/dtls/entrypoint.sh"      # in the tools image
    root = keys_root()
    r = render_support.render(profiles.get("dtls12-aes128gcm", "n2"), "n2", tmp_path / "r",
                      subscribers=keys.subscribers(root), keys_dir=root, commit="test")
    fragment = yaml.safe_load((r.dir / "overlay.compose.yaml").read_text())
    assert sorted(fragment["services"]) == ["amf-net", "gnb-net"]
    assert (ROOT / "dtls" / "entrypoint.sh").stat().st_mode & 0o111
    assert "socat" in (ROOT / "images" / "tools" / "Dockerfile").read_text()
