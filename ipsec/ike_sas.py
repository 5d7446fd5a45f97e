"""The IKE handshakes of a capture, one record per IKE SA (docs/overlays/ipsec.md "Post-quantum key
exchange"), and the proof that each used the profile's key exchange.

One tshark field export of the IKE packets; an IKE SA is its initiator SPI. Per SA: the exchanges
IKE_SA_INIT (34), IKE_INTERMEDIATE (43, RFC 9242: the additional key exchanges of RFC 9370) and
IKE_AUTH (35), each request and response with its packets (RFC 7383 fragments count one each),
bytes (UDP payload, IP, frame) and retransmissions, the key-exchange method IKE_SA_INIT's KE payload
names and the size of its data. The handshake time is the first IKE_SA_INIT request to the last
packet of the IKE_AUTH response, on the capture's clock.

The proof: a hybrid profile (`x25519-ke1_mlkem768`) must show, for every IKE SA that completed,
IKE_SA_INIT with the classical method and an IKE_INTERMEDIATE exchange whose request and response
are at least as large as the ML-KEM encapsulation key and ciphertext (FIPS 203; the KE payload is
encrypted, its size is not); ML-KEM alone must show IKE_SA_INIT's KE payload with the ML-KEM method
and exactly the key or ciphertext size. A classical handshake captured as a post-quantum profile
fails both.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from testbed import tshark

# IANA IKEv2 Transform Type 4 (Key Exchange Method) numbers of the catalogue's methods
KE_METHODS = {"ecp256": 19, "ecp384": 20, "curve25519": 31, "x25519": 31,
              "mlkem512": 35, "mlkem768": 36, "mlkem1024": 37}
# FIPS 203 table 3: (encapsulation key, ciphertext) bytes; classical: the public value both ways
KE_SIZES = {19: (64, 64), 20: (96, 96), 31: (32, 32), 35: (800, 768), 36: (1184, 1088), 37: (1568, 1568)}
KE_NAMES = {19: "ECP-256", 20: "ECP-384", 31: "X25519", 35: "ML-KEM-512", 36: "ML-KEM-768", 37: "ML-KEM-1024"}
EXCHANGES = {34: "IKE_SA_INIT", 43: "IKE_INTERMEDIATE", 35: "IKE_AUTH", 36: "CREATE_CHILD_SA", 37: "INFORMATIONAL",
             44: "IKE_FOLLOWUP_KE"}
FIELDS = ["frame.time_epoch", "frame.len", "ip.len", "udp.length", "isakmp.ispi", "isakmp.exchangetype",
          "isakmp.flag_r", "isakmp.messageid", "isakmp.frag.number", "isakmp.key_exchange.dh_group",
          "isakmp.key_exchange.data"]


@dataclasses.dataclass
class Message:
    """One direction of one exchange: its packets (fragments), bytes and first/last times."""
    packets: int = 0
    udp_bytes: int = 0
    ip_bytes: int = 0
    frame_bytes: int = 0
    retransmitted: int = 0
    first: float = 0.0
    last: float = 0.0
    ke_method: int | None = None
    ke_bytes: int | None = None
    seen: set[str] = dataclasses.field(default_factory=set)


@dataclasses.dataclass
class IkeSa:
    ispi: str
    messages: dict[tuple[int, bool], Message] = dataclasses.field(default_factory=dict)  # (exchange, response)

    def msg(self, exchange: int, response: bool) -> Message | None:
        return self.messages.get((exchange, response))

    @property
    def complete(self) -> bool:
        return self.msg(35, True) is not None

    @property
    def start(self) -> float:
        m = self.msg(34, False)
        return m.first if m else min(x.first for x in self.messages.values())

    @property
    def end(self) -> float:
        m = self.msg(35, True)
        return m.last if m else max(x.last for x in self.messages.values())

    def record(self) -> dict[str, Any]:
        """The handshake as a flat row (times in ms, bytes per exchange and direction)."""
        row: dict[str, Any] = {"ispi": self.ispi, "complete": self.complete,
                               "handshake_ms": round((self.end - self.start) * 1000, 3),
                               "start": self.start,
                               "retransmitted": sum(m.retransmitted for m in self.messages.values())}
        for (ex, resp), m in sorted(self.messages.items()):
            key = f"{EXCHANGES.get(ex, str(ex))}_{'response' if resp else 'request'}"
            row[f"{key}_packets"] = m.packets
            row[f"{key}_udp_bytes"] = m.udp_bytes
        init = self.msg(34, False)
        row["ke_method"] = KE_NAMES.get(init.ke_method or -1, init.ke_method) if init else None
        row["packets"] = sum(m.packets for m in self.messages.values() if self._in_handshake(m))
        row["ip_bytes"] = sum(m.ip_bytes for m in self.messages.values() if self._in_handshake(m))
        row["frame_bytes"] = sum(m.frame_bytes for m in self.messages.values() if self._in_handshake(m))
        return row

    def _in_handshake(self, m: Message) -> bool:
        return any(m is self.messages.get((ex, r)) for ex in (34, 43, 35) for r in (False, True))


def _int(value: str) -> int | None:
    v = value.split(",")[0].strip()
    return int(v, 0) if v else None


def read(pcap: Path) -> list[IkeSa]:
    """Every IKE SA of the capture (IKEv2 on UDP 500/4500), in order of appearance."""
    rows = tshark.fields(pcap, "isakmp && isakmp.ispi", FIELDS)
    sas: dict[str, IkeSa] = {}
    for r in rows:
        r = r + [""] * (len(FIELDS) - len(r))
        t, frame, iplen, udplen, ispi, ex, resp, msgid, frag, dh, data = r
        exchange = _int(ex)
        if exchange is None:
            continue
        sa = sas.setdefault(ispi, IkeSa(ispi))
        key = (exchange, tshark.flag(resp))
        m = sa.messages.setdefault(key, Message(first=float(t)))
        ident = f"{msgid}/{frag}"
        m.last = float(t)
        if ident in m.seen:              # a retransmission: counted apart, not in the handshake's bytes
            m.retransmitted += 1
            continue
        m.seen.add(ident)
        m.packets += 1
        m.udp_bytes += max(0, (_int(udplen) or 8) - 8)
        m.ip_bytes += _int(iplen) or 0
        m.frame_bytes += int(frame)
        if exchange == 34 and dh:
            m.ke_method = _int(dh)
            m.ke_bytes = len(data.split(",")[0].replace(":", "")) // 2 if data else None
    return list(sas.values())


def _methods(ike_proposal: str) -> list[int]:
    """The key-exchange methods of a strongSwan IKE proposal, primary first
    (aes128gcm16-prfsha256-x25519-ke1_mlkem768 -> [31, 36])."""
    out = []
    for word in ike_proposal.split("-"):
        name = word.split("_", 1)[1] if word.startswith("ke") and "_" in word else word
        if name in KE_METHODS:
            out.append(KE_METHODS[name])
    return out


def ke_problems(sas: list[IkeSa], ike_proposal: str) -> list[str]:
    """What the completed IKE SAs show against the proposal's key exchange ([]: every one used it)."""
    methods = _methods(ike_proposal)
    if not methods:
        return [f"IKE proposal {ike_proposal!r} names no key-exchange method"]
    done = [sa for sa in sas if sa.complete]
    problems: list[str] = []
    for sa in done:
        init_req, init_resp = sa.msg(34, False), sa.msg(34, True)
        if init_req is None or init_resp is None:
            problems.append(f"IKE SA {sa.ispi}: its IKE_SA_INIT is not in the capture")
            continue
        primary = methods[0]
        for m, what, size in ((init_req, "request", KE_SIZES[primary][0]), (init_resp, "response", KE_SIZES[primary][1])):
            if m.ke_method != primary:
                problems.append(f"IKE SA {sa.ispi}: IKE_SA_INIT {what} KE method {KE_NAMES.get(m.ke_method or -1, m.ke_method)}, "
                                f"profile wants {KE_NAMES[primary]}")
            elif m.ke_bytes is not None and m.ke_bytes != size:
                problems.append(f"IKE SA {sa.ispi}: IKE_SA_INIT {what} key exchange data {m.ke_bytes} B, "
                                f"{KE_NAMES[primary]} has {size} B")
        for extra in methods[1:]:
            req, resp = sa.msg(43, False), sa.msg(43, True)
            if req is None or resp is None:
                problems.append(f"IKE SA {sa.ispi}: no IKE_INTERMEDIATE exchange (the additional "
                                f"{KE_NAMES[extra]} key exchange of RFC 9370 is missing)")
                continue
            ek, ct = KE_SIZES[extra]
            if req.udp_bytes < ek or resp.udp_bytes < ct:
                problems.append(f"IKE SA {sa.ispi}: IKE_INTERMEDIATE {req.udp_bytes} B / {resp.udp_bytes} B, smaller "
                                f"than {KE_NAMES[extra]}'s {ek} B key / {ct} B ciphertext")
        if len(methods) == 1 and sa.msg(43, False) is not None:
            problems.append(f"IKE SA {sa.ispi}: an IKE_INTERMEDIATE exchange the profile does not have")
    return problems


def summary(sas: list[IkeSa]) -> str:
    done = [sa for sa in sas if sa.complete]
    inter = sum(1 for sa in done if sa.msg(43, False))
    frags = sum(m.packets - 1 for sa in done for (ex, _), m in sa.messages.items() if ex == 43 and m.packets > 1)
    return (f"{len(done)} completed IKE SA(s) in the capture, {inter} with IKE_INTERMEDIATE"
            + (f" ({frags} extra fragment packet(s))" if frags else ""))
