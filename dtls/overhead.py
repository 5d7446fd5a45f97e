"""What the DTLS relay puts on the wire (docs/wire-bytes.md): the bytes one DTLS record adds, the
relay's overhead against the same message in SCTP, and the handshake frames on the relay port."""
from __future__ import annotations

from pathlib import Path

from testbed import tshark, wire
from testbed.profiles import Profile

UDP = wire.UDP
DTLS12_HEADER = 13                      # type, version, epoch, sequence number (48 bit), length
DTLS13_HEADER = 5                       # unified header with a 16-bit sequence number and a length
SCTP_COMMON, SCTP_DATA = 12, 16         # SCTP common header; DATA chunk header (RFC 9260)


def dtls_record_overhead(version: str, cipher: str) -> int:
    """Bytes one DTLS record adds to its payload: DTLS 1.2 13 B header + (AES-GCM/CCM: 8 B
    explicit nonce + tag; ChaCha20-Poly1305: tag); DTLS 1.3 (RFC 9147 unified header, 16-bit
    sequence number and length, as OpenSSL and wolfSSL send): 5 B + 1 B inner type + tag."""
    tag = 8 if "CCM_8" in cipher.upper() else 16
    if version == "1.3":
        return DTLS13_HEADER + 1 + tag
    return DTLS12_HEADER + (0 if "CHACHA20" in cipher.upper() else 8) + tag


def sctp_data_overhead(payload: int) -> int:
    """Bytes SCTP adds around one message of `payload` bytes carried alone in a packet: common
    header + DATA chunk header + padding to 4 B."""
    return SCTP_COMMON + SCTP_DATA + (-payload) % 4


def relay_overhead(payload: int, version: str | None = None, cipher: str | None = None) -> int:
    """Bytes the relay adds to one link message on the wire, against the same message in SCTP:
    UDP + (DTLS record, or nothing for the plain relay) - SCTP's own headers (both over IPv4)."""
    record = dtls_record_overhead(version, cipher) if version and cipher else 0
    return UDP + record - sctp_data_overhead(payload)


def analytic_rows(profiles: list[Profile], sizes: tuple[int, ...]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for p in profiles:
        version, cipher = p.params.get("version"), p.params.get("cipher")
        rows += [{"profile": p.id, "what": f"DTLS {version} record" if version else "plain UDP relay", "size": size,
                  "added_bytes": dtls_record_overhead(version, cipher) if version and cipher else 0,
                  "relay_vs_sctp": relay_overhead(size, version, cipher)} for size in sizes]
    return rows


def fields(relay_port: int) -> wire.Fields:
    """What dtls_handshake reads from a capture's shared export: the relay port decoded as DTLS."""
    return wire.Fields(("dtls.record.content_type", "udp.srcport", "udp.dstport"), (f"udp.port=={relay_port},dtls",))


def dtls_handshake(pcap: Path | wire.Export, relay_port: int) -> wire.Handshakes:
    """DTLS handshake frames on the relay port: every frame carrying handshake (22) or
    ChangeCipherSpec (20) records (ClientHello, HelloVerifyRequest, the flights, Finished,
    NewSessionTicket; fragments counted as the frames they are)."""
    port = (str(relay_port),)
    rows = [r for r in wire.exported(pcap, fields(relay_port)).having("dtls")
            if wire.occurs(r, "udp.srcport", port) or wire.occurs(r, "udp.dstport", port)]
    hs = [r for r in rows if wire.occurs(r, "dtls.record.content_type", ("20", "22"))]
    kind = "DTLS handshake"
    return wire.Handshakes("dtls", {kind: len(hs)}, {kind: sum(int(r["frame.len"]) for r in hs)},
                           {kind: sum(wire.ip_len(r) for r in hs)}, {})


def dtls_application_payloads(pcap: Path, relay_port: int, src: str | None = None) -> list[int]:
    """UDP payload lengths of the frames that carry only DTLS application data (one record each,
    as the relay sends them), optionally only those sent by `src`."""
    flt = f"dtls.record.content_type == 23 && udp.port == {relay_port}"
    if src:
        flt += f" && ip.src == {src}"
    rows = tshark.fields(pcap, flt, ["udp.length", "dtls.record.content_type"],
                         extra=["-d", f"udp.port=={relay_port},dtls"])
    return [int(r[0]) - UDP for r in rows if set(r[1].split(",")) == {"23"}]
