"""ESP's analytic per-packet overhead (ipsec/overhead.py), worked by hand from the RFCs."""
from __future__ import annotations

import pytest

from ipsec import overhead


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
    assert overhead.esp_overhead(keyword, inner) == expected
    assert overhead.esp_overhead(keyword, inner, udp_encap=True) == expected + 8
    assert overhead.esp_overhead(keyword, inner, ipv6=True) == expected + 20


def test_unknown_esp_keyword_lists_the_known() -> None:
    with pytest.raises(ValueError, match="known: aes128gcm16"):
        overhead.esp_overhead("3des-md5", 84)


def test_a_post_quantum_profile_has_the_esp_packets_of_its_classical_proposal() -> None:
    # the PFS key exchange methods appended to the ESP proposal change the CHILD_SA's rekeys only
    from testbed import profiles
    pq, classical = profiles.get("aes128gcm-x25519-mlkem768"), profiles.get("aes128gcm")
    assert pq.params["esp_proposal"] == "aes128gcm16-x25519-ke1_mlkem768"
    assert overhead.esp_transform(pq.params["esp_proposal"]) == "aes128gcm16"
    assert overhead.esp_transform("aes128-sha256-x25519") == "aes128-sha256"
    assert overhead.esp_transform("aes128gcm16") == "aes128gcm16"
    assert overhead.esp_transform("3des-md5") is None and overhead.esp_transform("aes128gcm160") is None
    assert [overhead.packet_overhead(pq, i, None) for i in (84, 1044)] == \
        [overhead.packet_overhead(classical, i, None) for i in (84, 1044)] == [56, 56]
    # one row per ESP proposal: the post-quantum profiles add none
    rows = overhead.analytic_rows([pq, classical], (64,))
    assert [r["profile"] for r in rows] == ["aes128gcm"]
