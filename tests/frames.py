"""Frames built byte by byte (struct) and written as a classic pcap, for tests that need exact
lengths or packets no host here can send; the real tshark reads them back. Ethernet (linktype 1)
without padding or FCS, as Linux captures frames on a veth or bridge."""
from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

ETH_IPV4, ETH_ARP = 0x0800, 0x0806


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def ipv4_bytes(address: str) -> bytes:
    return bytes(map(int, address.split(".")))


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    data += b"\0" * (len(data) % 2)
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    return ~(total + (total >> 16)) & 0xFFFF


def ethernet(dst: str, src: str, ethertype: int, payload: bytes) -> bytes:
    return mac(dst) + mac(src) + struct.pack("!H", ethertype) + payload


def ipv4(src: str, dst: str, proto: int, payload: bytes) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0,
                         ipv4_bytes(src), ipv4_bytes(dst))
    return header[:10] + struct.pack("!H", checksum(header)) + header[12:] + payload


def icmp_echo(payload: int, reply: bool = False) -> bytes:
    """An ICMP echo request (reply) with `payload` data bytes (ping -s payload)."""
    msg = struct.pack("!BBHHH", 0 if reply else 8, 0, 0, 1, 1) + bytes(payload)
    return msg[:2] + struct.pack("!H", checksum(msg)) + msg[4:]


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def arp_request(src_mac: str, src_ip: str, target_ip: str) -> bytes:
    """The ARP request body (no Ethernet header): who has target_ip, tell src_ip."""
    return (struct.pack("!HHBBH", 1, ETH_IPV4, 6, 4, 1) + mac(src_mac) + ipv4_bytes(src_ip)
            + bytes(6) + ipv4_bytes(target_ip))


def write_pcap(path: Path, frames: Sequence[bytes], start: int = 1_800_000_000) -> Path:
    """One frame per record, 10 ms apart."""
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, frame in enumerate(frames):
        out += struct.pack("<IIII", start + i // 100, (i % 100) * 10_000, len(frame), len(frame)) + frame
    path.write_bytes(out)
    return path
