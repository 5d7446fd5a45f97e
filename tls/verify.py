"""The TLS overlay's capture check: every TCP connection to the SBI port negotiated the profile's
version, suite and key-exchange group (the ServerHello's key_share), both ends offered nothing else,
the HelloRetryRequests are the ones the profile declares, and no HTTP/2 is readable in the clear.

One tshark field export of the SBI port (`_read`) builds a per-connection record (`_Stream`); the
rules (`_problems`) are then pure Python over those records.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from testbed import stack, tshark
from testbed.verdict import Verdict

# RFC 8446 4.1.3: a ServerHello whose random is SHA-256("HelloRetryRequest") is a HelloRetryRequest,
# not the final ServerHello: its suite is the same, but the handshake goes on with a second ClientHello.
HRR_RANDOM = "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c"
# Signalling values a client may list beside its real suites (RFC 5746, RFC 7507): not offers.
SCSV = frozenset({0x00FF, 0x5600})
FIELDS = ["tcp.stream", "tcp.flags.syn", "tcp.flags.ack", "tcp.len", "frame.cap_len", "frame.len",
          "tls.record.content_type", "tls.record.opaque_type", "tls.handshake.type",
          "tls.handshake.ciphersuite", "tls.handshake.version", "tls.handshake.extensions.supported_version",
          "tls.handshake.random", "tcp.srcport", "tls.handshake.extensions_key_share_group",
          "tls.handshake.extensions_key_share_selected_group", "tls.handshake.extensions_supported_group"]


@dataclasses.dataclass
class _Stream:
    syn: bool = False
    client_port: int | None = None          # the SYN's source port: tells the two directions apart
    client_payload: bool = False            # the client sent any byte
    server_plain: bool = False              # the server sent a complete non-TLS segment
    first_payload_tls: bool | None = None
    first_payload_truncated: bool = False
    client_hello: bool = False
    client_offers: list[tuple[tuple[int, ...], tuple[int, ...]]] = dataclasses.field(default_factory=list)
    client_groups: list[tuple[tuple[int, ...], tuple[int, ...]]] = dataclasses.field(default_factory=list)
    # ^ per ClientHello: (supported_groups, groups of its key shares)
    server_hellos: list[tuple[int, int]] = dataclasses.field(default_factory=list)   # (version, suite), final ones
    server_groups: list[int] = dataclasses.field(default_factory=list)               # their key_share group
    retries: int = 0                                                                 # HelloRetryRequests
    retry_groups: list[int] = dataclasses.field(default_factory=list)                # the group each asked for


@dataclasses.dataclass
class _Capture:
    streams: dict[int, _Stream] = dataclasses.field(default_factory=dict)
    protected: int = 0                       # packets carrying TLS records
    truncated: int = 0                       # packets cut by the snaplen: unknown
    plaintext: int = 0                       # complete packets of cleartext HTTP/2


def _tshark_fields(pcap: Path, decode_as: str, display_filter: str, fields: list[str]) -> list[list[str]]:
    from tls.overlay import TlsError
    try:
        return tshark.fields(pcap, display_filter, fields, extra=["-d", decode_as], timeout=300)
    except tshark.TsharkError as exc:
        raise TlsError(str(exc)) from None


def _ints(field: str) -> list[int]:
    return [int(x, 0) for x in field.split(",") if x.strip()]


def _handshake(st: _Stream, hs_type: str, suites: str, hs_version: str, sup: str, rnd: str,
               groups: tuple[str, str, str] = ("", "", "")) -> None:
    """A complete segment's handshake messages: the client's offers, the final ServerHello.
    `groups`: the segment's key_share groups, HelloRetryRequest selected group, supported_groups."""
    share, selected, supported = groups
    types = _ints(hs_type)
    if 1 in types:
        st.client_hello = True
        st.client_offers.append((tuple(x for x in _ints(suites) if x not in SCSV),
                                 tuple(_ints(sup)) if sup else tuple(_ints(hs_version))))
        st.client_groups.append((tuple(_ints(supported)), tuple(_ints(share))))
    if 2 in types:
        if rnd.split(",")[0].replace(":", "").lower() == HRR_RANDOM:
            st.retries += 1
            st.retry_groups += _ints(selected)[-1:]
            return
        st.server_groups += _ints(share)[-1:] if 1 not in types else []
        # final ServerHello: one suite; the supported_versions extension carries 1.3
        suite = _ints(suites)[-1] if suites else -1
        version = max(_ints(sup)) if sup else (_ints(hs_version)[0] if hs_version else -1)
        st.server_hellos.append((version, suite))


def _segment(cap: _Capture, row: list[str]) -> None:
    """One packet of the SBI port into its connection's record. Only complete frames count: a frame
    cut by a snaplen (frame.cap_len < frame.len) is unknown, never plaintext and never protected."""
    (stream_f, syn, ack, tcp_len, cap_len, wire_len, content, opaque, hs_type, suites, hs_version,
     sup, rnd, srcport, share, selected, supported) = row + [""] * (len(FIELDS) - len(row))
    st = cap.streams.setdefault(int(stream_f), _Stream())
    if tshark.flag(syn) and not tshark.flag(ack):
        st.syn = True
        st.client_port = int(srcport or 0)
    if int(tcp_len or 0) == 0:
        return
    from_client = st.client_port is not None and int(srcport or 0) == st.client_port
    st.client_payload = st.client_payload or from_client
    if int(cap_len or 0) < int(wire_len or 0):
        cap.truncated += 1
        if st.first_payload_tls is None:
            st.first_payload_truncated = True
            st.first_payload_tls = False
        return
    is_tls = bool(content or opaque)         # TLS 1.3 protected records: opaque_type
    if is_tls:
        cap.protected += 1
    elif not from_client:
        st.server_plain = True
    if st.first_payload_tls is None:
        st.first_payload_tls = is_tls
    _handshake(st, hs_type, suites, hs_version, sup, rnd, (share, selected, supported))


def _read(pcap: Path, port: int) -> _Capture:
    cap = _Capture()
    for row in _tshark_fields(pcap, f"tcp.port=={port},tls", f"tcp.port=={port}", FIELDS):
        _segment(cap, row)
    # any HTTP/2 frame readable in the clear (also mid-stream, without the connection preface),
    # in complete frames only: a truncated TLS segment can look like anything
    cap.plaintext = len(_tshark_fields(pcap, f"tcp.port=={port},http2",
                                       f"tcp.port=={port} && http2.type && frame.cap_len == frame.len",
                                       ["frame.number"]))
    return cap


def _negotiation_problems(cap: _Capture, want: tuple[int, int]) -> list[str]:
    """What the ServerHellos and ClientHellos show against the profile's (version, suite)."""
    problems: list[str] = []
    wrong = [h for st in cap.streams.values() for h in st.server_hellos if h != want]
    if not cap.protected:
        problems.append("no TLS records on the SBI port")
    if wrong:
        problems.append(f"{len(wrong)} ServerHello(s) with another version/suite: "
                        + ", ".join(f"0x{a:04x}/0x{b:04x}" for a, b in sorted(set(wrong))))
    offers = [o for st in cap.streams.values() for o in st.client_offers]
    loose = [o for o in offers if set(o[0]) != {want[1]} or (o[1] and set(o[1]) != {want[0]})]
    if loose:
        problems.append(f"{len(loose)} ClientHello(s) offering more than the profile (client not pinned): "
                        + ", ".join(f"suites {[hex(x) for x in a]} versions {[hex(x) for x in b]}"
                                    for a, b in sorted(set(loose))[:2]))
    return problems


def _group_problems(cap: _Capture, group: int, retries: int | None) -> list[str]:
    """The key exchange: every final ServerHello's key_share is the profile's group; with
    `retries` (profiles that declare their groups) each connection that reached a ServerHello
    took exactly that many HelloRetryRequests, each asking for the profile's group."""
    problems: list[str] = []
    wrong = sorted({g for st in cap.streams.values() for g in st.server_groups if g != group})
    if wrong:
        problems.append("ServerHello key_share group(s) " + ", ".join(f"0x{g:04x}" for g in wrong)
                        + f", profile wants 0x{group:04x}")
    missing = sum(1 for st in cap.streams.values() if st.server_hellos and not st.server_groups)
    if missing:
        problems.append(f"{missing} connection(s) whose ServerHello carries no key_share (not TLS 1.3 (EC)DHE/KEM)")
    if retries is not None:
        off = [st.retries for st in cap.streams.values() if st.server_hellos and st.retries != retries]
        if off:
            problems.append(f"{len(off)} connection(s) with {sorted(set(off))} HelloRetryRequest(s), the profile "
                            f"declares {retries}")
        asked = sorted({g for st in cap.streams.values() for g in st.retry_groups if g != group})
        if asked:
            problems.append("HelloRetryRequest(s) asking for " + ", ".join(f"0x{g:04x}" for g in asked))
    return problems


def _start_problems(cap: _Capture, starts: list[int], require_start: bool) -> list[str]:
    """What the connections seen from their SYN show: each starts with a ClientHello and gets a
    final ServerHello."""
    problems: list[str] = []
    streams = cap.streams
    if require_start and not starts:
        problems.append("no connection seen from its SYN: the capture began after every connection "
                        "was made, so the negotiated version and suite cannot be proven")
    unknown_start = [i for i in starts if streams[i].first_payload_truncated]
    if unknown_start:
        problems.append(f"{len(unknown_start)} connection(s) whose first segment is truncated "
                        "(capture snaplen): their handshake cannot be read")
    not_tls = [i for i in starts if i not in unknown_start
               and (not streams[i].first_payload_tls or not streams[i].client_hello)]
    if not_tls:
        problems.append(f"{len(not_tls)} connection(s) that do not start with a TLS ClientHello "
                        f"(tcp.stream {', '.join(map(str, not_tls[:5]))})")
    no_sh = [i for i in starts if streams[i].client_hello and not streams[i].server_hellos]
    if no_sh:
        problems.append(f"{len(no_sh)} connection(s) without a final ServerHello (tcp.stream "
                        f"{', '.join(map(str, no_sh[:5]))})")
    return problems


def verify_capture(pcap: Path, profile: Any, plane: str, values: dict[str, Any] | None = None,
                   require_start: bool = True) -> Verdict:
    """Valid: TLS records seen; no cleartext HTTP/2 in a complete frame; at least one connection
    seen from its SYN (`require_start`: a capture that misses every connection start cannot prove
    the suite) and every such connection starts with a ClientHello that offers only the profile's
    version and suite, and gets a final ServerHello (a HelloRetryRequest is not one) with exactly them."""
    from tls.overlay import check_plane, settings
    check_plane(plane)
    s = settings(profile)
    port = stack.sbi_port(values)
    cap = _read(Path(pcap), port)
    # A client that gave up before its ClientHello (a cancelled connect, docs/vm-check.md section 10:
    # the server answered its FIN with a TLS decode_error alert) sent nothing that could leak; such
    # a connection proves nothing either, so it is counted apart and never as a proven start.
    unused = [i for i, st in cap.streams.items()
              if st.syn and st.first_payload_tls is not None and not st.client_payload and not st.server_plain]
    starts = [i for i, st in cap.streams.items() if st.syn and st.first_payload_tls is not None and i not in unused]
    declared = "groups" in getattr(profile, "params", {})
    problems = (_negotiation_problems(cap, (s.wire_version, s.suite_id)) + _start_problems(cap, starts, require_start)
                + (_group_problems(cap, s.group_id, s.retries if declared else None) if s.version == "1.3" else []))
    if cap.plaintext:
        problems.append(f"{cap.plaintext} packet(s) of cleartext HTTP/2 on port {port}")
    hellos = sum(len(st.server_hellos) for st in cap.streams.values())
    retries = sum(st.retries for st in cap.streams.values())
    closed = (f"{len(unused)} closed by the client before its ClientHello (tcp.stream "
              f"{', '.join(map(str, unused[:5]))}), " if unused else "")
    pinned = (f"{s.retries} HelloRetryRequest(s) per connection" if declared
              else "HelloRetryRequests not pinned (the profile declares no groups)")
    details = (f"tcp.port=={port}: {len(cap.streams)} connection(s), {len(starts)} seen from the SYN, {closed}"
               f"{hellos} final ServerHello(s), {retries} HelloRetryRequest(s); want TLS {s.version} "
               f"{s.cipher} (0x{s.wire_version:04x}/0x{s.suite_id:04x})"
               + (f", group {s.group} (0x{s.group_id:04x}), {pinned}" if s.version == "1.3" else "")
               + f"; {cap.protected} TLS record packet(s), "
               f"{cap.plaintext} cleartext HTTP/2 packet(s), {cap.truncated} truncated (unknown) packet(s)")
    if problems:
        details += "; INVALID: " + "; ".join(problems)
    return Verdict(valid=not problems, protected_packets=cap.protected, plaintext_packets=cap.plaintext,
                   details=details)
