"""IEEE 802.1AE frames built byte by byte (struct) for the tests, beside tests/frames.py's
cleartext ones: DA | SA | SecTAG (EtherType 0x88E5, TCI/AN, SL, PN, SCI) | secure data | ICV.
Encrypted frames carry random bytes of the secure data's length (the checks read the SecTAG and
the lengths, never the plaintext); an integrity-only frame carries the inner frame readable, as
Linux sends it with `encrypt off`. Real frames of a real macsec link: tests/integration/
test_macsec_netns.py (kernels with the module)."""
from __future__ import annotations

import os
import struct

from macsec import overlay
from tests import frames as fr

ETH_MACSEC = 0x88E5
TCI_SC, TCI_E, TCI_C = 0x20, 0x08, 0x04


def macsec(src_mac: str, dst_mac: str, sender_ip: str, pn: int, inner_type: int, inner: bytes,
           encrypted: bool = True, an: int = 0) -> bytes:
    """A MACsec frame from the node whose address is `sender_ip` (its SCI: overlay.sci_of),
    protecting one inner frame (EtherType `inner_type`, payload `inner`)."""
    secure = struct.pack("!H", inner_type) + inner
    if encrypted:
        secure = os.urandom(len(secure))
    tci = TCI_SC | (TCI_E | TCI_C if encrypted else 0) | an
    short_length = len(secure) if len(secure) < 48 else 0
    sectag = struct.pack("!HBBI", ETH_MACSEC, tci, short_length, pn) + bytes.fromhex(overlay.sci_of(sender_ip))
    return fr.mac(dst_mac) + fr.mac(src_mac) + sectag + secure + os.urandom(16)


def ping(src: str, dst: str, size: int, reply: bool = False) -> bytes:
    """An IPv4 echo request (reply) of `size` data bytes: IP length size + 28."""
    return fr.ipv4(src, dst, 1, fr.icmp_echo(size, reply))


def gtpu(src: str, dst: str, inner: bytes) -> bytes:
    """A GTP-U G-PDU (TEID 1) carrying `inner`, UDP 2152 both ways."""
    return fr.ipv4(src, dst, 17, fr.udp(2152, 2152, struct.pack("!BBHI", 0x30, 0xFF, len(inner), 1) + inner))
