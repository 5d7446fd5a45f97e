"""Bytes on the wire: handshake bytes and packets, and the per-packet overhead of each protocol,
measured from a run's own capture and set beside the analytic overhead (docs/wire-bytes.md).

Overheads are counted at the IP layer: the bytes an overlay adds to one inner IP packet,
outer IP header included (link-layer headers are the same with and without it, so they
cancel). Handshakes are counted as whole frames (frame.len) and as IP bytes.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed import tshark

IPV4, IPV6, UDP = 20, 40, 8

# ESP transforms by the catalogue's strongSwan keyword: (IV bytes, ICV bytes, cipher block for
# padding). RFC 4106 (GCM: 8 B IV, 16 B ICV), RFC 3602 + RFC 4868 (CBC: 16 B IV; HMAC-SHA256-128:
# 16 B ICV), RFC 4543 (GMAC: 8 B IV, 16 B ICV), RFC 4303 (NULL: no IV; ESP aligns to 4 B).
ESP = {
    "aes128gcm16": (8, 16, 4), "aes256gcm16": (8, 16, 4),
    "aes128-sha256": (16, 16, 16), "aes256-sha256": (16, 16, 16),
    "null-sha256": (0, 16, 4), "aes128gmac": (8, 16, 4),
}
ESP_HEADER, ESP_TRAILER = 8, 2          # SPI + sequence; pad length + next header
WG_HEADER, WG_TAG = 16, 16              # type/reserved + receiver index + counter; Poly1305 tag
IKE_EXCHANGES = {"34": "IKE_SA_INIT", "35": "IKE_AUTH"}
WG_TYPES = {"1": "handshake initiation", "2": "handshake response", "3": "cookie reply"}


def esp_overhead(keyword: str, inner: int, *, ipv6: bool = False, udp_encap: bool = False) -> int:
    """Bytes ESP tunnel mode adds to an inner IP packet of `inner` bytes (RFC 4303 2.4 padding:
    payload + padding + 2 is a multiple of the block size)."""
    if keyword not in ESP:
        raise ValueError(f"unknown ESP proposal {keyword!r}; known: {', '.join(ESP)}")
    iv, icv, block = ESP[keyword]
    pad = (-(inner + ESP_TRAILER)) % block
    return (IPV6 if ipv6 else IPV4) + (UDP if udp_encap else 0) + ESP_HEADER + iv + pad + ESP_TRAILER + icv


def wireguard_overhead(inner: int, *, ipv6: bool = False) -> int:
    """Bytes WireGuard adds: outer IP + UDP + 16 B header + 16 B tag + padding of the inner
    packet to 16 B (the WireGuard paper, section 5.4.6)."""
    return (IPV6 if ipv6 else IPV4) + UDP + WG_HEADER + WG_TAG + (-inner) % 16


def tls_record_overhead(version: str, cipher: str) -> int:
    """Bytes one TLS record adds to its payload: 5 B header + (TLS 1.3: 1 B inner content type
    + 16 B tag; TLS 1.2 AES-GCM/CCM: 8 B explicit nonce + tag; ChaCha20-Poly1305: tag only)."""
    tag = 8 if "CCM_8" in cipher.upper() else 16
    if version == "1.3":
        return 5 + 1 + tag
    explicit = 0 if "CHACHA20" in cipher.upper() else 8
    return 5 + explicit + tag


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


def analytic_table(sizes: tuple[int, ...] = (64, 1024)) -> "pd.DataFrame":
    """The theoretical per-packet overhead of every ESP proposal of the catalogue (IPv4; and with
    UDP encapsulation, as kernel-libipsec sends it), WireGuard, the TLS and DTLS records of the
    catalogue's suites, per inner packet / payload size."""
    import pandas as pd

    from testbed import profiles
    rows: list[dict[str, object]] = []
    for p in profiles.load().values():
        if p.refused:
            continue
        kw = p.params.get("esp_proposal")
        if p.protocol == "ipsec" and p.params.get("auth") == "cert" and p.params.get("mode") == "start":
            for size in sizes:
                rows.append({"protocol": "ipsec", "profile": p.id, "what": f"ESP tunnel {kw}", "size": size,
                             "added_bytes": esp_overhead(kw, size),
                             "added_bytes_udp_encap": esp_overhead(kw, size, udp_encap=True)})
        elif p.protocol == "tls" and p.params.get("paper") == "wisec2025":
            for size in sizes:
                rows.append({"protocol": "tls", "profile": p.id, "what": f"TLS {p.params['version']} record",
                             "size": size, "added_bytes": tls_record_overhead(p.params["version"], p.params["cipher"])})
        elif p.protocol == "dtls":
            version, cipher = p.params.get("version"), p.params.get("cipher")
            for size in sizes:
                rows.append({"protocol": "dtls", "profile": p.id,
                             "what": f"DTLS {version} record" if version else "plain UDP relay", "size": size,
                             "added_bytes": dtls_record_overhead(version, cipher) if version else 0,
                             "relay_vs_sctp": relay_overhead(size, version, cipher)})
    for size in sizes:
        rows.append({"protocol": "wireguard", "profile": "wireguard", "what": "WireGuard transport data",
                     "size": size, "added_bytes": wireguard_overhead(size)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Handshakes:
    """Handshake frames of one capture: per message kind, packets and bytes."""

    protocol: str
    packets: dict[str, int]
    frame_bytes: dict[str, int]
    ip_bytes: dict[str, int]
    retransmitted: dict[str, int]         # packets that repeat an earlier message (same IDs)

    @property
    def total_packets(self) -> int:
        return sum(self.packets.values())

    @property
    def total_frame_bytes(self) -> int:
        return sum(self.frame_bytes.values())


def _ip_len(row: dict[str, str]) -> int:
    if row.get("ip.len"):
        return int(row["ip.len"].split(",")[0])
    if row.get("ipv6.plen"):
        return IPV6 + int(row["ipv6.plen"].split(",")[0])
    return 0


def _rows(pcap: Path, display_filter: str, names: list[str]) -> list[dict[str, str]]:
    return [dict(zip(names, r + [""] * (len(names) - len(r))))
            for r in tshark.fields(pcap, display_filter, names)]


def handshakes(pcap: Path, protocol: str) -> Handshakes:
    """IKE_SA_INIT + IKE_AUTH (IPsec), initiation/response/cookie (WireGuard)."""
    base = ["frame.len", "ip.len", "ipv6.plen"]
    if protocol == "ipsec":
        ids = ["isakmp.ispi", "isakmp.rspi", "isakmp.messageid", "isakmp.flag_r", "ip.src", "ipv6.src"]
        rows = _rows(pcap, "isakmp.exchangetype == 34 || isakmp.exchangetype == 35",
                     base + ["isakmp.exchangetype", *ids])
        kind = lambda r: IKE_EXCHANGES[r["isakmp.exchangetype"].split(",")[0]]  # noqa: E731
    elif protocol == "wireguard":
        # a retransmitted initiation is a new message (new ephemeral key, new sender index)
        ids = ["wg.sender", "wg.receiver", "ip.src", "ipv6.src"]
        rows = _rows(pcap, "wg.type == 1 || wg.type == 2 || wg.type == 3", base + ["wg.type", *ids])
        kind = lambda r: WG_TYPES[r["wg.type"].split(",")[0]]  # noqa: E731
    else:
        raise ValueError(f"handshake accounting for {protocol!r}: ipsec or wireguard "
                         "(TLS: tls_handshakes)")
    packets: Counter[str] = Counter()
    frames: Counter[str] = Counter()
    ips: Counter[str] = Counter()
    again: Counter[str] = Counter()
    seen: set[tuple[str, ...]] = set()
    for r in rows:
        k = kind(r)
        key = (k, *(r[i] for i in ids))
        if key in seen:
            again[k] += 1
        seen.add(key)
        packets[k] += 1
        frames[k] += int(r["frame.len"])
        ips[k] += _ip_len(r)
    return Handshakes(protocol, dict(packets), dict(frames), dict(ips), dict(again))


def protected_lengths(pcap: Path, protocol: str, src: str | None = None) -> list[int]:
    """IP lengths of the protected data packets (ESP, or WireGuard transport data), optionally
    only those sent by `src`."""
    filt = {"ipsec": "esp", "wireguard": "wg.type == 4"}.get(protocol)
    if filt is None:
        raise ValueError(f"protected packets of {protocol!r}: ipsec or wireguard")
    if src:
        filt += f" && {'ipv6' if ':' in src else 'ip'}.src == {src}"
    return [_ip_len(r) for r in _rows(pcap, filt, ["frame.len", "ip.len", "ipv6.plen"])]


def _wire_captures(run: Any) -> list[Any]:
    """The run's captures of the wire; an endpoint's plaintext view (purpose "timing", e.g. the
    gNB's view of an ESP-protected N2) carries no wire bytes."""
    return [f for f in run.files("pcap") if f.attrs.get("purpose") != "timing"]


def udp_encapsulated(pcap: Path) -> bool:
    """ESP inside UDP (NAT-T, or strongSwan's userspace ESP)?"""
    return tshark.count(pcap, "esp && udp") > 0


def measured_overheads(lengths: list[int], inner: list[int]) -> dict[int, int]:
    """{inner length: measured overhead}: the distinct protected lengths, ascending, matched to
    the known inner lengths, ascending (both overlays grow with the inner length, so the order
    is the same); a count mismatch raises with both lists."""
    seen = sorted(set(lengths))
    want = sorted(set(inner))
    if len(seen) != len(want):
        raise ValueError(f"{len(seen)} distinct protected lengths {seen} for {len(want)} inner "
                         f"lengths {want}: traffic other than the known payloads was captured")
    return {i: s - i for i, s in zip(want, seen)}


# ----------------------------------------------------------------------- a results tree

# The unprotected packets whose lengths are the inner lengths, per experiment: the echo requests
# as GTP-U on N3 (stack runs), as plain ICMP between the namespaces (run-overlay).
BASELINE_PACKETS = {"n3": "gtp && icmp.type == 8", "overlay": "icmp.type == 8"}


def tls_handshake(pcap: Path) -> Handshakes:
    """TLS handshake records per TCP connection: every TLS record from the ClientHello up to and
    including the client's first application_data record after the ServerHello (in TLS 1.3 that
    record is the encrypted client Finished, possibly sharing a segment with the first request,
    so this is an upper bound by at most one request segment). Counted per frame."""
    names = ["tcp.stream", "frame.len", "ip.len", "ipv6.plen", "tls.handshake.type",
             "tls.record.content_type", "tcp.srcport", "tcp.dstport"]
    rows = _rows(pcap, "tls", names)
    state: dict[str, str] = {}           # stream -> "hello" | "server" | "done"
    client_port: dict[str, str] = {}
    packets = frames = ips = 0
    for r in rows:
        s = r["tcp.stream"]
        types = set(r["tls.handshake.type"].split(",")) - {""}
        content = set(r["tls.record.content_type"].split(",")) - {""}
        if "1" in types and s not in state:
            state[s], client_port[s] = "hello", r["tcp.srcport"]
        if state.get(s) not in ("hello", "server"):
            continue
        if "2" in types:
            state[s] = "server"
        packets += 1
        frames += int(r["frame.len"])
        ips += _ip_len(r)
        if state[s] == "server" and "23" in content and r["tcp.srcport"] == client_port[s]:
            state[s] = "done"
    kind = "TLS handshake"
    return Handshakes("tls", {kind: packets}, {kind: frames}, {kind: ips}, {})


def dtls_handshake(pcap: Path, relay_port: int) -> Handshakes:
    """DTLS handshake frames on the relay port: every frame carrying handshake (22) or
    ChangeCipherSpec (20) records (ClientHello, HelloVerifyRequest, the flights, Finished,
    NewSessionTicket; fragments counted as the frames they are)."""
    names = ["frame.len", "ip.len", "ipv6.plen", "dtls.record.content_type"]
    rows = [dict(zip(names, r + [""] * (len(names) - len(r)))) for r in tshark.fields(
        pcap, f"dtls && udp.port == {relay_port}", names, extra=["-d", f"udp.port=={relay_port},dtls"])]
    hs = [r for r in rows if {"20", "22"} & set(r["dtls.record.content_type"].split(","))]
    kind = "DTLS handshake"
    return Handshakes("dtls", {kind: len(hs)}, {kind: sum(int(r["frame.len"]) for r in hs)},
                      {kind: sum(_ip_len(r) for r in hs)}, {})


def dtls_application_payloads(pcap: Path, relay_port: int, src: str | None = None) -> list[int]:
    """UDP payload lengths of the frames that carry only DTLS application data (one record each,
    as the relay sends them), optionally only those sent by `src`."""
    flt = f"dtls.record.content_type == 23 && udp.port == {relay_port}"
    if src:
        flt += f" && ip.src == {src}"
    rows = tshark.fields(pcap, flt, ["udp.length", "dtls.record.content_type"],
                         extra=["-d", f"udp.port=={relay_port},dtls"])
    return [int(r[0]) - UDP for r in rows if set(r[1].split(",")) == {"23"}]


def _classes(lengths: list[int]) -> list[int]:
    return sorted(set(lengths))


def results_table(results: Path) -> "pd.DataFrame":
    """One row per usable run with a capture: handshake packets/bytes, and for N3 runs the
    distinct protected packet lengths with the measured overhead against the baseline run of
    the same results tree (same sizes) and the analytic overhead."""
    import pandas as pd

    from analysis.results import discover
    runs = [r for r in discover(results) if r.usable and r.files("pcap")]
    base_len: dict[str, list[int]] = {}
    for r in runs:
        if r.protocol == "none" and r.experiment in BASELINE_PACKETS:
            for f in _wire_captures(r):
                lens = [_ip_len(x) for x in _rows(f.path, BASELINE_PACKETS[r.experiment],
                                                  ["frame.len", "ip.len", "ipv6.plen"])]
                if lens:
                    base_len.setdefault(r.experiment, _classes(lens))
    rows = []
    for r in runs:
        for f in _wire_captures(r):
            row: dict[str, object] = {"experiment": r.experiment, "profile": r.profile,
                                      "protocol": r.protocol, "run": r.run_id, "capture": f.path.name}
            proto = r.protocol
            try:
                if proto in ("ipsec", "wireguard"):
                    hs = handshakes(f.path, proto)
                elif proto == "tls":
                    hs = tls_handshake(f.path)
                elif proto == "dtls" and f.attrs.get("iface") == r.get("plane") and not f.attrs.get("tap"):
                    from testbed.overlays import dtls
                    hs = dtls_handshake(f.path, dtls.link(str(r.get("plane"))).relay_port)
                else:
                    hs = None
                if hs is not None:
                    row.update(handshake_packets=hs.total_packets, handshake_frame_bytes=hs.total_frame_bytes,
                               handshake_retransmitted=sum(hs.retransmitted.values()))
                if proto in ("ipsec", "wireguard") and r.experiment in base_len:
                    prot = _classes(protected_lengths(f.path, proto))
                    inner = base_len[r.experiment]
                    row["protected_lengths"] = " ".join(map(str, prot))
                    row["inner_lengths"] = " ".join(map(str, inner))
                    if len(prot) == len(inner):
                        row["overhead_measured"] = " ".join(str(p - i) for p, i in zip(prot, inner))
                        if proto == "ipsec":
                            kw = (r.manifest.get("profile_params") or {}).get("esp_proposal", "")
                            enc = udp_encapsulated(f.path)
                            row["overhead_analytic"] = " ".join(
                                str(esp_overhead(kw, i, udp_encap=enc)) for i in inner) if kw in ESP else ""
                        else:
                            row["overhead_analytic"] = " ".join(str(wireguard_overhead(i)) for i in inner)
            except tshark.TsharkError as exc:
                row["problem"] = str(exc)
            rows.append(row)
    return pd.DataFrame(rows)


def write_report(results: Path, out: Path) -> Path | None:
    """wire-bytes.csv, wire-bytes.md (+ the per-attach table and figure); None without captures."""
    from analysis.wire_bytes_report import write_report as write
    return write(results, out)
