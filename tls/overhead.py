"""What TLS puts on the wire (docs/wire-bytes.md): the bytes one record adds to its payload and
the handshake records of every TCP connection in a capture."""
from __future__ import annotations

from pathlib import Path

from testbed import wire
from testbed.profiles import Profile


def tls_record_overhead(version: str, cipher: str) -> int:
    """Bytes one TLS record adds to its payload: 5 B header + (TLS 1.3: 1 B inner content type
    + 16 B tag; TLS 1.2 AES-GCM/CCM: 8 B explicit nonce + tag; ChaCha20-Poly1305: tag only)."""
    tag = 8 if "CCM_8" in cipher.upper() else 16
    if version == "1.3":
        return 5 + 1 + tag
    explicit = 0 if "CHACHA20" in cipher.upper() else 8
    return 5 + explicit + tag


def analytic_rows(profiles: list[Profile], sizes: tuple[int, ...]) -> list[dict[str, object]]:
    """The record overhead of the 2025 paper's four profiles (the 2024 suites repeat them)."""
    return [{"profile": p.id, "what": f"TLS {p.params['version']} record", "size": size,
             "added_bytes": tls_record_overhead(p.params["version"], p.params["cipher"])}
            for p in profiles if p.params.get("paper") == "wisec2025" for size in sizes]


def fields(port: int) -> wire.Fields:
    """What tls_handshake reads from a capture's shared export: the SBI port decoded as TLS by
    port, not by tshark's heuristic, which loses a connection whose client port another dissector
    registered (EtherCAT's 34980)."""
    return wire.Fields(("tcp.stream", "tls.handshake.type", "tls.record.content_type", "tcp.srcport", "tcp.dstport"),
                       (f"tcp.port=={port},tls",))


def tls_handshake(pcap: Path | wire.Export, port: int) -> wire.Handshakes:
    """TLS handshake records per TCP connection: every TLS record from the ClientHello up to and
    including the client's first application_data record after the ServerHello (in TLS 1.3 that
    record is the encrypted client Finished, possibly sharing a segment with the first request,
    so this is an upper bound by at most one request segment). Counted per frame."""
    state: dict[str, str] = {}           # stream -> "hello" | "server" | "done"
    client_port: dict[str, str] = {}
    packets = frames = ips = 0
    for r in wire.exported(pcap, fields(port)).having("tls"):
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
        ips += wire.ip_len(r)
        if state[s] == "server" and "23" in content and r["tcp.srcport"] == client_port[s]:
            state[s] = "done"
    kind = "TLS handshake"
    return wire.Handshakes("tls", {kind: packets}, {kind: frames}, {kind: ips}, {})
