"""The capture rule of WireGuard + Rosenpass (wireguard/overlay.py verify_capture) on a real guest
capture (tests/data/guest-wg-rosenpass/SOURCE.md): ICMP port unreachables quoting Rosenpass's own
UDP are the overlay's control traffic, counted apart, not plaintext of the plane; judged as plain
WireGuard the same packets are plaintext."""
from __future__ import annotations

from pathlib import Path

from testbed import profiles, stack
from tests.conftest import require_tools
from wireguard import overlay

PCAP = Path(__file__).resolve().parents[1] / "data" / "guest-wg-rosenpass" / "it01-sbi-excerpt.pcap"


def test_icmp_errors_about_rosenpass_are_not_plaintext_of_the_plane() -> None:
    require_tools("tshark")
    values = stack.load()
    rp = overlay.verify_capture(PCAP, profiles.get("wireguard-rosenpass", "sbi"), "sbi", values)
    assert rp.protected_packets == 27 and rp.plaintext_packets == 0, rp.details
    assert "55 ICMP error(s) about it" in rp.details, rp.details
    # the excerpt has no Rosenpass message: the run stays invalid, for that reason alone
    assert not rp.valid and "no complete Rosenpass exchange" in rp.details and "plaintext packets" not in rp.details


def test_the_same_icmp_errors_are_plaintext_for_plain_wireguard() -> None:
    require_tools("tshark")
    plain = overlay.verify_capture(PCAP, profiles.get("wireguard", "sbi"), "sbi", stack.load())
    assert plain.plaintext_packets == 55 and not plain.valid, plain.details
    assert "55 plaintext packets of the sbi plane" in plain.details
