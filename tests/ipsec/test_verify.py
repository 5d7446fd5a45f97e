"""verify_capture of the IPsec overlay on small real pcaps (text2pcap + tshark, no mocks)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from testbed import profiles, ran, stack
from ipsec import overlay as ipsec

VALUES = ran.restrict(stack.load(), "ueransim")   # the default RAN's nodes (testbed/ran)
PROFILE = profiles.get("aes128gcm")


def _ip(src: str, dst: str, proto: int, payload: list[int]) -> list[int]:
    total = 20 + len(payload)
    return [0x45, 0, total >> 8, total & 0xFF, 0, 1, 0x40, 0, 64, proto, 0, 0,
            *map(int, src.split(".")), *map(int, dst.split(".")), *payload]


def _udp(sport: int, dport: int, payload: list[int]) -> list[int]:
    n = 8 + len(payload)
    return [sport >> 8, sport & 0xFF, dport >> 8, dport & 0xFF, n >> 8, n & 0xFF, 0, 0, *payload]


ESP_BODY = [0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1] + [0xAB] * 48          # SPI, seq, ciphertext
ICMP_ECHO = [8, 0, 0, 0, 0, 1, 0, 1] + [0x61] * 16


def _pcap(tmp_path: Path, packets: list[list[int]]) -> Path:
    if shutil.which("text2pcap") is None or shutil.which("tshark") is None:
        pytest.skip("missing text2pcap/tshark: run `make setup`")
    text = "".join("0000 " + " ".join(f"{b:02x}" for b in p) + "\n" for p in packets)
    (tmp_path / "p.txt").write_text(text)
    out = tmp_path / "p.pcap"
    subprocess.run(["text2pcap", "-q", "-l", "101", str(tmp_path / "p.txt"), str(out)], check=True)
    return out


GNB, UPF = stack.address("gnb", "n3"), stack.address("upf", "n3")


def test_plain_esp_is_valid(tmp_path: Path) -> None:
    pcap = _pcap(tmp_path, [_ip(GNB, UPF, 50, ESP_BODY), _ip(UPF, GNB, 50, ESP_BODY)])
    v = ipsec.verify_capture(pcap, PROFILE, "n3", VALUES)
    assert v.valid and v.protected_packets == 2 and v.plaintext_packets == 0, v.details
    assert "ip.proto 50: 2" in v.details


def test_esp_in_udp_is_valid(tmp_path: Path) -> None:
    pcap = _pcap(tmp_path, [_ip(GNB, UPF, 17, _udp(4500, 4500, ESP_BODY))])
    v = ipsec.verify_capture(pcap, PROFILE, "n3", VALUES)
    assert v.valid and v.protected_packets == 1, v.details
    assert "ESP-in-UDP/4500: 1" in v.details


def test_plaintext_icmp_or_gtpu_is_invalid(tmp_path: Path) -> None:
    gtpu = _udp(2152, 2152, [0x30, 0xFF, 0, 8, 0, 0, 0, 1] + [0] * 8)
    pcap = _pcap(tmp_path, [_ip(GNB, UPF, 50, ESP_BODY), _ip(GNB, UPF, 1, ICMP_ECHO), _ip(UPF, GNB, 17, gtpu)])
    v = ipsec.verify_capture(pcap, PROFILE, "n3", VALUES)
    assert not v.valid and v.protected_packets == 1 and v.plaintext_packets == 2
    assert "INVALID: plaintext" in v.details


def test_sbi_plaintext_tcp_is_invalid_and_other_hosts_ignored(tmp_path: Path) -> None:
    amf, nrf = stack.address("amf", "sbi"), stack.address("nrf", "sbi")
    syn = [0xC3, 0x50, 0x1E, 0x61, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xFF, 0xFF, 0, 0, 0, 0]
    pcap = _pcap(tmp_path, [_ip(amf, nrf, 6, syn), _ip("10.100.1.1", nrf, 1, ICMP_ECHO)])
    v = ipsec.verify_capture(pcap, profiles.get("aes128gcm", "sbi"), "sbi", VALUES)
    assert not v.valid and v.plaintext_packets == 1 and v.protected_packets == 0


def test_no_esp_and_missing_capture_are_invalid(tmp_path: Path) -> None:
    v = ipsec.verify_capture(_pcap(tmp_path, []), PROFILE, "n3", VALUES)
    assert not v.valid and "no ESP" in v.details
    assert not ipsec.verify_capture(tmp_path / "nope.pcap", PROFILE, "n3", VALUES).valid
