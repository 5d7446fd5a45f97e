"""macsec/verdict.py: the capture check, on frames written byte by byte (tests/macsec/sectag.py)
and read back by the real tshark."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from macsec import verdict
from testbed import profiles, ran, registry, stack, validity
from tests import frames as fr
from tests.conftest import require_tools
from tests.macsec import sectag

GNB, UPF, UE = "10.100.3.50", "10.100.3.7", "10.45.0.2"
GNB_MAC, UPF_MAC = "02:42:0a:64:03:32", "02:42:0a:64:03:07"
PROFILE = profiles.get("macsec-gcm-aes-128")


@pytest.fixture(autouse=True)
def _tshark() -> None:
    require_tools("tshark")


def _values() -> dict:
    return ran.restrict(stack.load(), "ueransim")


def _protected(n: int = 2) -> list[bytes]:
    """GTP-U pings both ways, each in an encrypted MACsec frame of its sender."""
    out = []
    for i in range(n):
        out.append(sectag.macsec(GNB_MAC, UPF_MAC, GNB, i + 1, fr.ETH_IPV4,
                                 sectag.gtpu(GNB, UPF, sectag.ping(UE, "10.100.6.1", 56))))
        out.append(sectag.macsec(UPF_MAC, GNB_MAC, UPF, i + 1, fr.ETH_IPV4,
                                 sectag.gtpu(UPF, GNB, sectag.ping("10.100.6.1", UE, 56, reply=True))))
    return out


def _check(tmp_path: Path, frames: list[bytes], values: dict | None = None):
    pcap = fr.write_pcap(tmp_path / "n3.pcap", frames)
    return registry.overlay("macsec").verify_capture(pcap, PROFILE, "n3", values or _values())


def test_encrypted_frames_of_both_ends_and_nothing_else_are_valid(tmp_path: Path) -> None:
    v = _check(tmp_path, _protected(3))
    assert (v.valid, v.protected_packets, v.plaintext_packets) == (True, 6, 0), v.details
    assert "6 encrypted MACsec frames (gnb 3, upf 3)" in v.details and "INVALID" not in v.details


def test_cleartext_gtpu_and_icmp_between_the_ends_are_plaintext(tmp_path: Path) -> None:
    leak = [fr.ethernet(UPF_MAC, GNB_MAC, fr.ETH_IPV4, sectag.gtpu(GNB, UPF, sectag.ping(UE, "10.100.6.1", 56))),
            fr.ethernet(GNB_MAC, UPF_MAC, fr.ETH_IPV4, sectag.ping(UPF, GNB, 56))]
    v = _check(tmp_path, _protected() + leak)
    assert (v.valid, v.protected_packets, v.plaintext_packets) == (False, 4, 2), v.details
    assert "2 cleartext IPv4 frames from the endpoints (2 of them the plane's port 2152 or ICMP)" in v.details


def test_a_baseline_capture_is_invalid_and_the_baseline_rule_sees_macsec(tmp_path: Path) -> None:
    clear = [fr.ethernet(UPF_MAC, GNB_MAC, fr.ETH_IPV4, sectag.gtpu(GNB, UPF, sectag.ping(UE, "10.100.6.1", 56)))]
    v = _check(tmp_path, clear)
    assert not v.valid and v.protected_packets == 0 and "no MACsec frames between the endpoints" in v.details
    # a baseline run whose wire shows MACsec is invalid (every plug-in's wire_filter, testbed/validity.py)
    pcap = fr.write_pcap(tmp_path / "base.pcap", _protected(1) + clear)
    b = validity.baseline_verdict(pcap, "n3", "n3", _values())
    assert not b.valid and b.protected_packets == 2 and "macsec || mka" in b.details


def test_integrity_only_frames_are_readable_plaintext(tmp_path: Path) -> None:
    readable = sectag.macsec(GNB_MAC, UPF_MAC, GNB, 9, fr.ETH_IPV4, sectag.ping(GNB, UPF, 56), encrypted=False)
    v = _check(tmp_path, _protected() + [readable])
    assert (v.valid, v.plaintext_packets) == (False, 1), v.details
    assert "1 MACsec frames not encrypted (E/C clear: integrity only)" in v.details


def test_frames_of_one_end_only_or_of_an_unknown_sci_are_invalid(tmp_path: Path) -> None:
    one_way = [f for i, f in enumerate(_protected()) if i % 2 == 0]
    v = _check(tmp_path, one_way)
    assert not v.valid and "no MACsec frames from upf" in v.details
    stranger = sectag.macsec("02:42:0a:64:03:63", UPF_MAC, "10.100.3.99", 1, fr.ETH_IPV4, sectag.ping(GNB, UPF, 56))
    (tmp_path / "b").mkdir()
    v = _check(tmp_path / "b", _protected() + [stranger])
    assert not v.valid and "1 MACsec frames from an SCI that is no endpoint's" in v.details


def test_cleartext_arp_counts_once_macsec_was_up(tmp_path: Path) -> None:
    arp = fr.ethernet("ff:ff:ff:ff:ff:ff", GNB_MAC, fr.ETH_ARP, fr.arp_request(GNB_MAC, GNB, UPF))
    v = _check(tmp_path, [arp] + _protected())           # Docker's announcement at attach: before MACsec
    assert v.valid and "1 cleartext ARP before it" in v.details, v.details
    (tmp_path / "b").mkdir()
    v = _check(tmp_path / "b", _protected() + [arp])
    assert not v.valid and "1 cleartext ARP frames from the endpoints after MACsec was up" in v.details


def test_a_node_outside_the_channel_map_counts_in_the_plaintext_rule(tmp_path: Path) -> None:
    values = copy.deepcopy(_values())
    values["nodes"]["probe"] = {"kind": "tools", "networks": {"n3": "10.100.3.99"}}
    assert "probe" not in registry.overlay("macsec").endpoints("n3", values)
    clear = fr.ethernet(GNB_MAC, "02:42:0a:64:03:63", fr.ETH_IPV4, sectag.ping("10.100.3.99", GNB, 56))
    v = _check(tmp_path, _protected() + [clear], values)
    assert (v.valid, v.plaintext_packets) == (False, 1), v.details


def test_the_filter_names_every_address_of_the_network() -> None:
    flt = verdict.display_filter(["10.100.3.50", "10.100.3.7"])
    assert flt == ("macsec || ip.src in {10.100.3.50, 10.100.3.7} || "
                   "arp.src.proto_ipv4 in {10.100.3.50, 10.100.3.7}")


def test_an_unreadable_capture_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "not.pcap"
    bad.write_text("not a capture")
    with pytest.raises(RuntimeError, match="tshark could not read"):
        registry.overlay("macsec").verify_capture(bad, PROFILE, "n3", _values())
