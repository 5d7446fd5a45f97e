"""ESP's analytic per-packet overhead (ipsec/overhead.py), worked by hand from the RFCs, and the
IKE messages counted in a capture built frame by frame (tests/frames.py)."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ipsec import overhead
from tests import frames
from tests.conftest import require_tools


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


INITIATOR, RESPONDER = "10.100.3.1", "10.100.3.2"


def _ike(src: str, dst: str, exchange: int, ispi: int, rspi: int, msgid: int, response: bool) -> bytes:
    """An Ethernet frame with an IKEv2 header alone (RFC 7296 3.1: SPIs, no next payload,
    version 2.0, exchange type, flags: initiator 0x08 or response 0x20, message id, length)."""
    ike = struct.pack("!QQBBBBII", ispi, rspi, 0, 0x20, exchange, 0x20 if response else 0x08, msgid, 28)
    return frames.ethernet("02:00:00:00:00:02" if response else "02:00:00:00:00:01",
                           "02:00:00:00:00:01" if response else "02:00:00:00:00:02", frames.ETH_IPV4,
                           frames.ipv4(src, dst, 17, frames.udp(500, 500, ike)))


def test_a_response_answering_a_retransmitted_request_again_is_a_retransmission(tmp_path: Path) -> None:
    # what a loaded host showed (issue 30 item 5): the IKE_SA_INIT request went twice and the
    # responder answered both, the second time with another responder SPI
    require_tools("tshark")
    pcap = frames.write_pcap(tmp_path / "ike.pcap", [
        _ike(INITIATOR, RESPONDER, 34, 0xA1, 0, 0, response=False),
        _ike(INITIATOR, RESPONDER, 34, 0xA1, 0, 0, response=False),
        _ike(RESPONDER, INITIATOR, 34, 0xA1, 0xB1, 0, response=True),
        _ike(RESPONDER, INITIATOR, 34, 0xA1, 0xB2, 0, response=True),
        _ike(INITIATOR, RESPONDER, 35, 0xA1, 0xB1, 1, response=False),
        _ike(RESPONDER, INITIATOR, 35, 0xA1, 0xB1, 1, response=True),
        # a second IKE_SA (another initiator SPI) is no repeat of the first
        _ike(INITIATOR, RESPONDER, 34, 0xA2, 0, 0, response=False),
        _ike(RESPONDER, INITIATOR, 34, 0xA2, 0xB3, 0, response=True),
    ])
    hs = overhead.handshakes(pcap)
    assert hs.packets == {"IKE_SA_INIT": 6, "IKE_AUTH": 2}
    assert hs.retransmitted == {"IKE_SA_INIT": 2}
    assert hs.frame_bytes["IKE_SA_INIT"] == 6 * (14 + 20 + 8 + 28)
