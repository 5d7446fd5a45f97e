"""Analytic per-packet overheads (analysis/wire_bytes.py), worked by hand from the RFCs."""
from __future__ import annotations

import pytest

from analysis import wire_bytes


@pytest.mark.parametrize("keyword,inner,expected", [
    # GCM: 20 outer + 8 SPI/seq + 8 IV + pad + 2 + 16 ICV; 84 + 2 = 86 -> pad 2 to 88
    ("aes128gcm16", 84, 20 + 8 + 8 + 2 + 2 + 16),
    ("aes256gcm16", 1044, 20 + 8 + 8 + 2 + 2 + 16),
    # CBC: 16 B IV, block 16: 84 + 2 = 86 -> pad 10 to 96
    ("aes128-sha256", 84, 20 + 8 + 16 + 10 + 2 + 16),
    ("aes256-sha256", 1044, 20 + 8 + 16 + 10 + 2 + 16),     # 1046 -> 1056
    ("null-sha256", 84, 20 + 8 + 0 + 2 + 2 + 16),
    ("aes128gmac", 85, 20 + 8 + 8 + 1 + 2 + 16),           # 87 -> 88
])
def test_esp(keyword: str, inner: int, expected: int) -> None:
    assert wire_bytes.esp_overhead(keyword, inner) == expected
    assert wire_bytes.esp_overhead(keyword, inner, udp_encap=True) == expected + 8
    assert wire_bytes.esp_overhead(keyword, inner, ipv6=True) == expected + 20


def test_unknown_esp_keyword_lists_the_known() -> None:
    with pytest.raises(ValueError, match="known: aes128gcm16"):
        wire_bytes.esp_overhead("3des-md5", 84)


def test_wireguard_pads_to_16() -> None:
    assert wire_bytes.wireguard_overhead(84) == 20 + 8 + 16 + 16 + 12
    assert wire_bytes.wireguard_overhead(96) == 60


@pytest.mark.parametrize("version,cipher,expected", [
    ("1.3", "TLS_AES_128_GCM_SHA256", 22), ("1.2", "ECDHE-ECDSA-AES128-GCM-SHA256", 29),
    ("1.2", "ECDHE-ECDSA-CHACHA20-POLY1305", 21), ("1.2", "ECDHE-ECDSA-AES128-CCM8", 29 - 8 + 0),
])
def test_tls_record(version: str, cipher: str, expected: int) -> None:
    if "CCM8" in cipher:
        cipher = cipher.replace("CCM8", "CCM_8")
    assert wire_bytes.tls_record_overhead(version, cipher) == expected


def test_matching_lengths_to_known_inner_sizes() -> None:
    assert wire_bytes.measured_overheads([140, 140, 1100, 140], [84, 1044]) == {84: 56, 1044: 56}
    with pytest.raises(ValueError, match="traffic other than"):
        wire_bytes.measured_overheads([140, 150, 1100], [84, 1044])
