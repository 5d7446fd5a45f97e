"""What ESP and IKE put on the wire (docs/wire-bytes.md): the per-packet overhead of ESP tunnel
mode per catalogue proposal, and the IKE_SA_INIT / IKE_AUTH messages of a capture."""
from __future__ import annotations

from pathlib import Path

from testbed import wire
from testbed.profiles import Profile

# ESP transforms by the catalogue's strongSwan keyword: (IV bytes, ICV bytes, cipher block for
# padding). RFC 4106 (GCM: 8 B IV, 16 B ICV), RFC 3602 + RFC 4868 (CBC: 16 B IV; HMAC-SHA256-128:
# 16 B ICV), RFC 4543 (GMAC: 8 B IV, 16 B ICV), RFC 4303 (NULL: no IV; ESP aligns to 4 B).
ESP = {
    "aes128gcm16": (8, 16, 4), "aes256gcm16": (8, 16, 4),
    "aes128-sha256": (16, 16, 16), "aes256-sha256": (16, 16, 16),
    "null-sha256": (0, 16, 4), "aes128gmac": (8, 16, 4),
}
ESP_HEADER, ESP_TRAILER = 8, 2          # SPI + sequence; pad length + next header
IKE_EXCHANGES = {"34": "IKE_SA_INIT", "35": "IKE_AUTH"}
# what makes an IKE message a repeat of an earlier one: the initiator's SPI, the message id, the
# responder flag and the sender. Not the responder's SPI: a responder that answers a retransmitted
# IKE_SA_INIT request anew (strongSwan on a loaded host did) sends a second response with another
# responder SPI, and that response is a retransmission as much as the request it answers.
IKE_IDS = ["isakmp.ispi", "isakmp.messageid", "isakmp.flag_r", "ip.src", "ipv6.src"]
# what handshakes, protected_lengths and udp_encapsulated read from a capture's shared export
FIELDS = wire.Fields(("isakmp.exchangetype", *IKE_IDS))


def esp_overhead(keyword: str, inner: int, *, ipv6: bool = False, udp_encap: bool = False) -> int:
    """Bytes ESP tunnel mode adds to an inner IP packet of `inner` bytes (RFC 4303 2.4 padding:
    payload + padding + 2 is a multiple of the block size)."""
    if keyword not in ESP:
        raise ValueError(f"unknown ESP proposal {keyword!r}; known: {', '.join(ESP)}")
    iv, icv, block = ESP[keyword]
    pad = (-(inner + ESP_TRAILER)) % block
    return ((wire.IPV6 if ipv6 else wire.IPV4) + (wire.UDP if udp_encap else 0) + ESP_HEADER + iv + pad
            + ESP_TRAILER + icv)


def esp_transform(proposal: str) -> str | None:
    """The ESP transform of a catalogue ESP proposal: the proposal itself, or the known transform
    it begins with when a post-quantum profile appends its key exchange methods for PFS
    (`aes128gcm16-x25519-ke1_mlkem768`: those change the CHILD_SA's rekeys, not its packets);
    None: not a known transform."""
    known = [k for k in ESP if proposal == k or proposal.startswith(f"{k}-")]
    return max(known, key=len, default=None)


def udp_encapsulated(pcap: Path | wire.Export) -> bool:
    """ESP inside UDP (NAT-T, or strongSwan's userspace ESP)?"""
    return bool(wire.exported(pcap, FIELDS).having("esp", "udp"))


def packet_overhead(profile: Profile, inner: int, pcap: Path | wire.Export | None) -> int | None:
    """The profile's ESP overhead (its key exchange methods, if any, do not change it);
    UDP-encapsulated when the capture shows it so."""
    kw = esp_transform(str(profile.params.get("esp_proposal", "")))
    if kw is None:
        return None
    return esp_overhead(kw, inner, udp_encap=pcap is not None and udp_encapsulated(pcap))


def analytic_rows(profiles: list[Profile], sizes: tuple[int, ...]) -> list[dict[str, object]]:
    """One row per ESP proposal (certificates, start mode: the N3 set) and size, plain and
    UDP-encapsulated (as kernel-libipsec sends it). The post-quantum profiles are left out: their
    ESP packets are those of the classical proposal they extend (only the handshake differs)."""
    rows: list[dict[str, object]] = []
    for p in profiles:
        kw = str(p.params.get("esp_proposal"))
        if p.params.get("auth") == "cert" and p.params.get("mode") == "start" and not p.params.get("ke"):
            rows += [{"profile": p.id, "what": f"ESP tunnel {kw}", "size": size,
                      "added_bytes": esp_overhead(kw, size),
                      "added_bytes_udp_encap": esp_overhead(kw, size, udp_encap=True)} for size in sizes]
    return rows


def handshakes(pcap: Path | wire.Export) -> wire.Handshakes:
    """IKE_SA_INIT + IKE_AUTH messages (a retransmission, request or response, repeats the
    initiator's SPI, the message id, the direction and the exchange: IKE_IDS)."""
    found = [r for r in wire.exported(pcap, FIELDS).rows if wire.occurs(r, "isakmp.exchangetype", IKE_EXCHANGES)]
    return wire.count_messages("ipsec", found,
                               lambda r: IKE_EXCHANGES[wire.first_of(r, "isakmp.exchangetype", IKE_EXCHANGES)], IKE_IDS)


def protected_lengths(pcap: Path | wire.Export, src: str | None = None) -> list[int]:
    """IP lengths of the ESP packets, optionally only those sent by `src`."""
    return [wire.ip_len(r) for r in wire.sent_by(wire.exported(pcap, FIELDS).having("esp"), src)]
