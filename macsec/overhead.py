"""What MACsec puts on the wire (docs/wire-bytes.md): the bytes it adds to each Ethernet frame,
the lengths of its data frames in a capture, and its key agreement messages (none with static
SAKs).

IEEE 802.1AE 9.3-9.5 and Linux drivers/net/macsec.c: a protected frame is
    DA 6 | SA 6 | SecTAG: EtherType 0x88E5 2, TCI/AN 1, SL 1, PN 4, SCI 8 | secure data | ICV 16
where the secure data is the inner frame's EtherType and payload, encrypted, unpadded. Against the
same frame in the clear (DA | SA | EtherType | payload) that is the SecTAG (16 with the SCI, 8
without) plus the ICV (16): 32 bytes per frame here, whatever the payload and the suite (the XPN
suites carry only the PN's lower 32 bits on the wire, so their SecTAG is the same). It is counted
on the frame, not on the IP packet, which MACsec leaves as it is: the frame's bytes beyond the
14 B Ethernet header, minus the inner IP length, are the overlay's (testbed.wire.frame_lengths).
Frames under the Ethernet minimum of 60 B (without FCS) are padded by a NIC either way; the veths
and bridges captured here pad nothing, and the measured packets are larger.
"""
from __future__ import annotations

from pathlib import Path

from macsec import overlay
from testbed import wire
from testbed.profiles import Profile

SECTAG, SECTAG_SCI, ICV = 8, 16, 16       # octets: SecTAG without / with the SCI; GCM-AES ICV
# data frames: the SL field is 0 when the secure data is 48 octets or more; shorter ones (ARP's
# 30 octets) carry their length there and are no IP packet of a measured size
DATA_FRAMES = "macsec && macsec.TCI.E == 1 && macsec.SL == 0"


def frame_overhead(send_sci: bool = True, icv: int = ICV) -> int:
    """Bytes MACsec adds to one Ethernet frame."""
    return (SECTAG_SCI if send_sci else SECTAG) + icv


def packet_overhead(profile: Profile, inner: int) -> int | None:
    if profile.protocol != overlay.PROTOCOL:
        return None
    return frame_overhead(bool(profile.params.get("send_sci", True)), int(profile.params.get("icv_len", ICV)))


def analytic_rows(profiles: list[Profile], sizes: tuple[int, ...]) -> list[dict[str, object]]:
    return [{"profile": p.id, "what": f"MACsec {p.params['cipher_label']}: SecTAG with SCI + ICV, per Ethernet frame",
             "size": size, "added_bytes": packet_overhead(p, size)} for p in profiles for size in sizes]


def protected_lengths(pcap: Path, src: str | None = None) -> list[int]:
    """The encrypted data frames' lengths less the 14 B Ethernet header, optionally only those of
    the node whose address is `src` (by the SCI it sends with)."""
    flt = DATA_FRAMES
    if src:
        flt += f" && macsec.SCI.system_identifier == {overlay.system_identifier(src)}"
    return wire.frame_lengths(pcap, flt)


def handshakes(pcap: Path) -> wire.Handshakes:
    """MKA's MKPDUs (EAPOL-MKA), the key agreement a deployment would run; none with static SAKs."""
    found = wire.rows(pcap, "mka", wire.LENGTH_FIELDS + ["mka.actor_mi", "mka.actor_mn"])
    return wire.count_messages("macsec", found, lambda r: "MKPDU", ["mka.actor_mi", "mka.actor_mn"])
