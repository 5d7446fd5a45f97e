"""testbed/wire.py: the lengths a per-packet overhead is measured from, read by the real tshark from
frames written byte by byte (tests/frames.py), so every length is known exactly."""
from __future__ import annotations

import struct
from pathlib import Path

from testbed import wire
from tests import frames as fr
from tests.conftest import require_tools

A, B = "02:00:00:00:00:01", "02:00:00:00:00:02"


def _ping(size: int) -> bytes:
    return fr.ipv4("10.0.0.1", "10.0.0.2", 1, fr.icmp_echo(size))


def test_frame_lengths_less_the_ethernet_header_are_the_ip_lengths_of_cleartext_frames(tmp_path: Path) -> None:
    require_tools("tshark")
    sizes = (56, 1016, 3)                         # ping -s 56 / -s 1016, and a frame under 60 B
    frames = [fr.ethernet(B, A, fr.ETH_IPV4, _ping(n)) for n in sizes]
    pcap = fr.write_pcap(tmp_path / "clear.pcap", frames)
    assert wire.lengths(pcap, "icmp") == [84, 1044, 31]
    assert wire.frame_lengths(pcap, "icmp") == [84, 1044, 31]
    assert wire.ETHERNET == 14 and all(len(f) - wire.ETHERNET == n + 28 for f, n in zip(frames, sizes))


def test_frame_lengths_count_what_a_change_to_the_frame_adds(tmp_path: Path) -> None:
    """Two 802.1Q tags between the addresses and the EtherType (standing in for any header below
    IP) make the frame 8 bytes longer: frame_lengths sees the added bytes, ip.len does not."""
    require_tools("tshark")
    tags = struct.pack("!HHHH", 0x8100, 5, 0x8100, 6)
    tagged = fr.mac(B) + fr.mac(A) + tags + struct.pack("!H", fr.ETH_IPV4) + _ping(56)
    pcap = fr.write_pcap(tmp_path / "tagged.pcap", [tagged])
    assert wire.lengths(pcap, "icmp") == [84]
    assert wire.frame_lengths(pcap, "icmp") == [84 + 8]
