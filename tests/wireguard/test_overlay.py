"""wireguard/overlay.py: rendering from stack.yaml + channel map, and the capture check.

Capture fixtures are built with text2pcap (real packets, dissected by the real tshark).
"""
from __future__ import annotations

import copy
import shlex
import subprocess
from pathlib import Path

import pytest

from testbed import registry
from wireguard import keys as wg_keys
from testbed import channels, profiles, ran, stack
from testbed import verdict
from wireguard import overlay as wireguard
from tests.conftest import require_tools

GNB, UPF = "10.100.3.50", "10.100.3.7"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Path]]]:
    require_tools("wg")
    tmp = tmp_path_factory.mktemp("wg-render")
    out = {plane: wireguard.render(profiles.get("wireguard", plane), plane, ran.restrict(stack.load(), "ueransim"), tmp / "keys",
                                   tmp / plane) for plane in ("n3", "sbi")}
    return tmp / "keys", out


def _env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k] = " ".join(shlex.split(v))
    return out


def _conf(path: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    sections: list[dict[str, str]] = []
    for line in path.read_text().splitlines():
        if line.startswith("["):
            sections.append({"_": line})
        elif "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            sections[-1][k.strip()] = v.strip()
    return sections[0], sections[1:]


def test_registered_as_the_wireguard_overlay() -> None:
    assert registry.overlay("wireguard").folder == Path(wireguard.__file__).resolve().parent


def test_endpoints_come_from_the_channel_map() -> None:
    values = ran.restrict(stack.load(), "ueransim")
    assert wireguard.endpoints("n3", values) == ["gnb", "upf"]
    assert wireguard.endpoints("sbi", values) == channels.nodes("sbi")
    assert "scp" not in wireguard.endpoints("sbi", values)      # no SCP channels (Model C)
    assert wireguard.pairs("sbi", values) == channels.pairs("sbi")


def test_every_endpoint_gets_its_own_dir_with_private_files(rendered) -> None:
    _, out = rendered
    for plane, dirs in out.items():
        assert sorted(dirs) == wireguard.endpoints(plane, ran.restrict(stack.load(), "ueransim"))
        for node, d in dirs.items():
            assert d.name == node and d.stat().st_mode & 0o777 == 0o700
            assert (d / "wg.conf").stat().st_mode & 0o777 == 0o600
            assert sorted(p.name for p in d.iterdir()) == ["overlay.env", "wg.conf"]


def test_peers_keys_and_addresses_match_stack_and_keys(rendered) -> None:
    keys_dir, out = rendered
    values = ran.restrict(stack.load(), "ueransim")
    for plane, dirs in out.items():
        net = channels.PLANE_NETWORK[plane]
        for node, d in dirs.items():
            iface, peers = _conf(d / "wg.conf")
            assert iface["PrivateKey"] == wg_keys.wg_keys(keys_dir, node)[0]
            assert iface["ListenPort"] == "51820" and iface["FwMark"] == "0xca6c"
            want = wireguard.partners(node, plane, values)
            assert len(peers) == len(want)
            for peer_node, peer in zip(want, peers):
                addr = stack.address(peer_node, net, values)
                assert peer["PublicKey"] == wg_keys.wg_keys(keys_dir, peer_node)[1]
                assert peer["Endpoint"] == f"{addr}:51820"
                assert peer["AllowedIPs"] == f"{addr}/32"    # the real address: fwmark keeps it loop-free
            env = _env(d / "overlay.env")
            assert env["WG_ADDRESS"] == stack.address(node, net, values)
            assert env["WG_PEERS"].split() == [f"{p}={stack.address(p, net, values)}" for p in want]
            assert env["WG_NODE"] == node and env["WG_PLANE"] == plane and env["WG_IF"] == "wg0"


def test_peerings_are_symmetric(rendered) -> None:
    _, out = rendered
    values = ran.restrict(stack.load(), "ueransim")
    for plane in out:
        for node in out[plane]:
            for peer in wireguard.partners(node, plane, values):
                assert node in wireguard.partners(peer, plane, values)


def test_rendered_config_has_only_setconf_keys(rendered) -> None:
    # `wg setconf` itself loads these files in tests/integration/test_wireguard_netns.py
    _, out = rendered
    known = {"_", "PrivateKey", "ListenPort", "FwMark", "PublicKey", "Endpoint", "AllowedIPs"}
    for dirs in out.values():
        for d in dirs.values():
            iface, peers = _conf(d / "wg.conf")
            assert iface["_"] == "[Interface]" and all(p["_"] == "[Peer]" for p in peers)
            assert all(set(s) <= known for s in [iface, *peers])


def test_render_subset_limits_peers(tmp_path: Path) -> None:
    require_tools("wg")
    out = wireguard.render(profiles.get("wireguard", "sbi"), "sbi", ran.restrict(stack.load(), "ueransim"), tmp_path / "k", tmp_path / "r",
                           nodes=["amf", "ausf", "udm"])
    assert sorted(out) == ["amf", "ausf", "udm"]
    assert _env(out["amf"] / "overlay.env")["WG_PEERS"] == "ausf=10.100.1.11 udm=10.100.1.12"


def test_render_refuses_wrong_profile_plane_and_nodes(tmp_path: Path) -> None:
    values = ran.restrict(stack.load(), "ueransim")
    with pytest.raises(wireguard.WireGuardError, match="not a WireGuard profile"):
        wireguard.render(profiles.get("baseline"), "n3", values, tmp_path, tmp_path)
    with pytest.raises(wireguard.WireGuardError, match="unknown plane"):
        wireguard.pairs("n9", values)
    with pytest.raises(wireguard.WireGuardError, match="mongo: not a WireGuard endpoint"):
        wireguard.render(profiles.get("wireguard"), "n3", values, tmp_path, tmp_path, nodes=["gnb", "mongo"])
    lonely = copy.deepcopy(values)
    del lonely["nodes"]["upf"]
    with pytest.raises(wireguard.WireGuardError, match="no host pairs on the n3 plane"):
        wireguard.render(profiles.get("wireguard"), "n3", lonely, tmp_path, tmp_path)


def test_rerender_keeps_keys(tmp_path: Path) -> None:
    require_tools("wg")
    p = profiles.get("wireguard")
    a = wireguard.render(p, "n3", ran.restrict(stack.load(), "ueransim"), tmp_path / "k", tmp_path / "r")["gnb"].joinpath("wg.conf").read_text()
    b = wireguard.render(p, "n3", ran.restrict(stack.load(), "ueransim"), tmp_path / "k", tmp_path / "r")["gnb"].joinpath("wg.conf").read_text()
    assert a == b


# --- verify_capture on packets made by text2pcap ----------------------------------------------

def _pcap(tmp: Path, name: str, packets: list[tuple[str, str, str, str]]) -> Path:
    """packets: (src, dst, '-u sport,dport' | '-i 1' (ICMP), payload hex) -> one merged pcap."""
    parts = []
    for i, (src, dst, l4, payload) in enumerate(packets):
        hexfile = tmp / f"{name}-{i}.hex"
        body = bytes.fromhex(payload)
        hexfile.write_text("".join(f"{off:04x}  {' '.join(f'{b:02x}' for b in body[off:off + 16])}\n"
                                   for off in range(0, len(body), 16)))
        part = tmp / f"{name}-{i}.pcap"
        subprocess.run(["text2pcap", "-q", "-4", f"{src},{dst}", *l4.split(), str(hexfile), str(part)], check=True)
        parts.append(str(part))
    out = tmp / f"{name}.pcap"
    subprocess.run(["mergecap", "-a", "-F", "pcap", "-w", str(out), *parts], check=True)
    return out


WG_DATA = "04000000" + "01020304" + "00" * 8 + "ab" * 32          # transport data message
GTPU = "30ff00200000000145000020" + "00" * 28                   # G-PDU header + inner bytes
ICMP_ECHO = "0800f7fe00010001" + "00" * 8


@pytest.fixture
def tools() -> None:
    require_tools("tshark", "text2pcap", "mergecap")


def test_verify_capture_accepts_wireguard_only(tools, tmp_path: Path) -> None:
    pcap = _pcap(tmp_path, "wg", [(GNB, UPF, "-u 51820,51820", WG_DATA), (UPF, GNB, "-u 51820,51820", WG_DATA)])
    v = wireguard.verify_capture(pcap, profiles.get("wireguard"), "n3", ran.restrict(stack.load(), "ueransim"))
    assert isinstance(v, verdict.Verdict)
    assert (v.valid, v.protected_packets, v.plaintext_packets) == (True, 2, 0), v.details


def test_verify_capture_rejects_plaintext_gtpu_and_icmp(tools, tmp_path: Path) -> None:
    pcap = _pcap(tmp_path, "leak", [(GNB, UPF, "-u 51820,51820", WG_DATA), (GNB, UPF, "-u 2152,2152", GTPU),
                                    (UPF, GNB, "-i 1", ICMP_ECHO)])
    v = wireguard.verify_capture(pcap, profiles.get("wireguard"), "n3", ran.restrict(stack.load(), "ueransim"))
    assert (v.valid, v.protected_packets, v.plaintext_packets) == (False, 1, 2)
    assert "INVALID" in v.details and "2 plaintext packets of the n3 plane" in v.details


def test_verify_capture_rejects_a_baseline_capture(tools, tmp_path: Path) -> None:
    pcap = _pcap(tmp_path, "base", [(GNB, UPF, "-u 2152,2152", GTPU)])
    v = wireguard.verify_capture(pcap, profiles.get("wireguard"), "n3", ran.restrict(stack.load(), "ueransim"))
    assert not v.valid and v.protected_packets == 0 and "no WireGuard packets" in v.details


def test_verify_capture_sbi_counts_tcp_on_the_sbi_port(tools, tmp_path: Path) -> None:
    values = ran.restrict(stack.load(), "ueransim")
    amf, nrf = stack.address("amf", "sbi", values), stack.address("nrf", "sbi", values)
    other = "10.100.1.99"                 # not an endpoint: ignored either way
    pcap = _pcap(tmp_path, "sbi", [(amf, nrf, "-u 51820,51820", WG_DATA),
                                   (amf, nrf, f"-T 40000,{values['sbi_port']}", "00" * 8),
                                   (other, nrf, f"-T 40001,{values['sbi_port']}", "00" * 8)])
    v = wireguard.verify_capture(pcap, profiles.get("wireguard"), "sbi", values)
    assert (v.valid, v.protected_packets, v.plaintext_packets) == (False, 1, 1), v.details


def test_verify_capture_names_an_unreadable_file(tools, tmp_path: Path) -> None:
    bad = tmp_path / "not.pcap"
    bad.write_text("not a capture")
    with pytest.raises(RuntimeError, match="tshark could not read"):
        wireguard.verify_capture(bad, profiles.get("wireguard"), "n3", ran.restrict(stack.load(), "ueransim"))


# --- the entrypoint as the holder runs it (the fragment: tests/testbed/render/test_compose_overlay.py)

def test_entrypoint_ready_file_is_the_holders_healthcheck_file() -> None:
    text = (Path(wireguard.__file__).resolve().parent / "entrypoint.sh").read_text()
    assert 'READY_FILE="${OVERLAY_READY_FILE:-/run/testbed/overlay-ready}"' in text


def test_verify_capture_sees_plaintext_with_a_node_outside_the_channel_map(tools, tmp_path: Path) -> None:
    values = ran.restrict(stack.load(), "ueransim")
    scp, amf = stack.address("scp", "sbi", values), stack.address("amf", "sbi", values)
    assert "scp" not in wireguard.endpoints("sbi", values)
    pcap = _pcap(tmp_path, "scp", [(amf, stack.address("nrf", "sbi", values), "-u 51820,51820", WG_DATA),
                                   (amf, scp, f"-T 40000,{values['sbi_port']}", "00" * 8)])
    v = wireguard.verify_capture(pcap, profiles.get("wireguard"), "sbi", values)
    assert (v.valid, v.plaintext_packets) == (False, 1), v.details
