"""ipsec/overlay.py rendering: every IPsec profile on its planes, real key material
(testbed.keys through openssl), checked file by file. The namespace tests
(tests/integration/test_ipsec_netns.py) run charon on these very renderings."""
from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

import pytest

from testbed import channels, keys, profiles, ran, stack
from ipsec import keys as ipsec_keys
from ipsec import overlay as ipsec
from tests.conftest import require_tools

VALUES = ran.restrict(stack.load(), "ueransim")   # the default RAN's nodes (testbed/ran)
IPSEC = [p for p in profiles.load().values() if p.protocol == "ipsec" and not p.refused]
CASES = [(p.id, plane) for p in IPSEC for plane in p.planes]


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("openssl", "wg")
    # one state dir for every IPsec test module of the session (keys.ensure is idempotent)
    return keys.ensure(tmp_path_factory.getbasetemp() / "ipsec-keys-state")


def _conn_blocks(text: str) -> dict[str, str]:
    """Top-level connection name -> its text (two-space indented blocks under connections)."""
    body = text.split("connections {", 1)[1].split("\nsecrets {", 1)[0]
    return dict(re.findall(r"^  ([a-z0-9-]+) \{\n(.*?)^  \}$", body, flags=re.S | re.M))


def test_endpoints_follow_the_channel_map() -> None:
    assert ipsec.endpoints("n3", VALUES) == ["gnb", "upf"]
    sbi = ipsec.endpoints("sbi", VALUES)
    assert sbi == channels.nodes("sbi")
    assert "scp" not in sbi and len(sbi) == 9


def test_exactly_one_side_initiates_each_pair() -> None:
    for a, b in channels.pairs("sbi") + channels.pairs("n3"):
        assert ipsec.initiates(a, b) != ipsec.initiates(b, a)


@pytest.mark.parametrize("profile_id,plane", CASES)
def test_render_every_profile(profile_id: str, plane: str, keys_dir: Path, tmp_path: Path) -> None:
    prof = profiles.get(profile_id, plane)
    # the nodes of the RAN variant that has the plane (the split's f1c/f1u/e1, the default's others)
    values = ran.restrict(stack.load(), "ueransim" if ran.has_plane("ueransim", plane) else "split")
    out = ipsec.render(prof, plane, values, keys_dir, tmp_path)
    assert sorted(out) == ipsec.endpoints(plane, values)
    net = channels.PLANE_NETWORK[plane]
    for node, d in out.items():
        conf = (d / "swanctl.conf").read_text()
        conns = _conn_blocks(conf)
        assert sorted(conns) == sorted(link.other(node) for link in channels.peers(node, plane, values))
        for peer, block in conns.items():
            assert f"proposals = {prof.params['ike_proposal']}" in block
            assert f"esp_proposals = {prof.params['esp_proposal']}\n" in block
            assert "mode = tunnel" in block and "version = 2" in block
            assert f"local_addrs = {stack.address(node, net, values)}\n" in block
            assert f"remote_addrs = {stack.address(peer, net, values)}\n" in block
            assert f"remote_ts = {stack.address(peer, net, values)}/32" in block
            if prof.params["mode"] == "start":
                want = "start" if node < peer else "none"
            else:
                want = "trap"
            assert f"start_action = {want}\n" in block
            assert f"auth = {'pubkey' if prof.params['auth'] == 'cert' else 'psk'}" in block
        env = (d / "overlay.env").read_text()
        assert f"MODE={prof.params['mode']}\n" in env
        assert f"XFRM_LARVAL_DROP={prof.params['xfrm_larval_drop']}\n" in env
        assert stat.S_IMODE((d / "swanctl.conf").stat().st_mode) == 0o600
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
        if prof.params["auth"] == "psk":
            assert "secrets {" in conf
            for peer in conns:
                assert f"secret = 0x{ipsec_keys.psk(keys_dir, node, peer)}" in conf
            assert not (d / "private").exists()
        else:
            assert "secrets {" not in conf
            key = d / "private" / f"{node}.key"
            assert stat.S_IMODE(key.stat().st_mode) == 0o600
            assert (d / "x509" / f"{node}.crt").is_file() and (d / "x509ca" / "ca.crt").is_file()


def test_both_ends_of_a_pair_agree(keys_dir: Path, tmp_path: Path) -> None:
    """The ids, PSK and addresses one end expects are what the other end presents."""
    for profile_id in ("aes128gcm", "aes128gcm-psk"):
        out = ipsec.render(profiles.get(profile_id, "sbi"), "sbi", VALUES, keys_dir, tmp_path / profile_id)
        a = _conn_blocks((out["ausf"] / "swanctl.conf").read_text())["nrf"]
        b = _conn_blocks((out["nrf"] / "swanctl.conf").read_text())["ausf"]
        ids = lambda block: re.findall(r'id = "([^"]+)"', block)  # noqa: E731
        assert ids(a) == list(reversed(ids(b)))
        if profile_id == "aes128gcm":
            subject = subprocess.run(["openssl", "x509", "-in", str(out["ausf"] / "x509" / "ausf.crt"), "-noout",
                                      "-subject", "-nameopt", "RFC2253"], capture_output=True, text=True,
                                     check=True).stdout.strip().removeprefix("subject=")
            assert ids(a)[0] == subject


def test_strongswan_conf_datapaths() -> None:
    kernel = ipsec.strongswan_conf("kernel")
    libipsec = ipsec.strongswan_conf("libipsec")
    for text in (kernel, libipsec):
        load = re.search(r"^  load = (.*)$", text, flags=re.M).group(1).split()
        assert "kdf" in load and "vici" in load and "kernel-netlink" in load
    assert "kernel-libipsec" not in kernel and "allow_peer_ts" not in kernel
    assert "allow_peer_ts = yes" in libipsec and "fwmark = 0x42" in libipsec and "fwmark = !0x42" in libipsec
    load = re.search(r"^  load = (.*)$", libipsec, flags=re.M).group(1).split()
    assert load.index("kernel-libipsec") < load.index("kernel-netlink")


def test_nftables_conf_is_fail_closed_for_the_planes_subnet() -> None:
    text = ipsec.nftables_conf("n3", VALUES)
    assert f"ip daddr != {VALUES['networks']['n3']['subnet']} accept" in text
    assert text.count("counter drop") == 2 and "chain ike_gate" in text


def test_render_rejects_wrong_inputs(keys_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ipsec.IpsecRenderError, match="not ipsec"):
        ipsec.render(profiles.get("wireguard"), "n3", VALUES, keys_dir, tmp_path)
    with pytest.raises(ipsec.IpsecRenderError, match="does not run on the n3 plane"):
        ipsec.render(profiles.get("aes128gcm-trap"), "n3", VALUES, keys_dir, tmp_path)
    with pytest.raises(ipsec.IpsecRenderError, match="not an endpoint"):
        ipsec.render(profiles.get("aes128gcm"), "n3", VALUES, keys_dir, tmp_path, nodes=["amf"])
    with pytest.raises(ipsec.IpsecRenderError, match="make keys"):
        ipsec.render(profiles.get("aes128gcm"), "n3", VALUES, tmp_path / "nokeys", tmp_path / "out")


def test_limited_nodes_render_only_their_pairs(keys_dir: Path, tmp_path: Path) -> None:
    out = ipsec.render(profiles.get("aes256gcm", "sbi"), "sbi", VALUES, keys_dir, tmp_path, nodes=["ausf", "nrf"])
    assert sorted(out) == ["ausf", "nrf"]
    assert sorted(_conn_blocks((out["nrf"] / "swanctl.conf").read_text())) == ["ausf"]


def test_compose_env_and_host_needs() -> None:
    assert ipsec.compose_env(profiles.get("aes128gcm-trap-queue"), "sbi", VALUES) == {"IPSEC_XFRM_LARVAL_DROP": "0"}
    assert ipsec.compose_env(profiles.get("aes128gcm"), "n3", VALUES) == {"IPSEC_XFRM_LARVAL_DROP": "1"}
    assert any("libipsec" in n for n in ipsec.host_needs(profiles.get("aes128gcm"), "n3"))


def test_trap_mode_switches_on_the_patched_wait_for_sbi_nfs_only() -> None:
    from testbed import profiles, stack
    from ipsec import overlay as ipsec_overlay
    values = ran.restrict(stack.load(), "ueransim")
    trap = profiles.get("aes256gcm-trap", "sbi")
    assert ipsec_overlay.nf_environment("amf", trap, values) == {"OGS_SBI_WAIT_PEER_MS": "2000"}
    assert ipsec_overlay.nf_environment("upf", trap, values) == {}      # not on the SBI
    for other in ("aes256gcm", "aes256gcm-trap-drop", "aes256gcm-psk-trap-queue"):
        assert ipsec_overlay.nf_environment("amf", profiles.get(other, "sbi"), values) == {}
