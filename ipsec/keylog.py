"""ESP SAs (SPI, addresses, algorithms, keys) from charon's key log, for tshark's ESP decryption.

charon logs, per IKE_SA (`<name|n>` prefix, `ike_name = yes`) and in this order for each CHILD_SA
(strongSwan 5.9 `child_create.c`, `keymat_v2.c`, `child_sa.c`; the `keys` filelog of
ipsec/overlay.py strongswan_conf: chd level 4, ike level 1):

    <nrf|1> establishing CHILD_SA nrf{1}                 (only on the end that initiated it)
    <nrf|1> CHILD_SA nrf{1} state change: CREATED => INSTALLING
    <nrf|1>   using AES_GCM_16 for encryption            (and `using HMAC_SHA2_256_128 for integrity`)
    <nrf|1> encryption initiator key => 20 bytes @ 0x...  (hex dump lines follow)
    <nrf|1> encryption responder key => 20 bytes @ 0x...
    <nrf|1> integrity initiator key => ...                (non-AEAD suites)
    <nrf|1> adding inbound ESP SA
    <nrf|1>   SPI 0xd00c3515, src 10.100.1.10 dst 10.100.1.11
    <nrf|1> adding outbound ESP SA
    <nrf|1>   SPI 0x9973c063, src 10.100.1.11 dst 10.100.1.10

The initiator's keys protect initiator -> responder traffic: on the end that initiated the
CHILD_SA the outbound SA uses the initiator keys and the inbound SA the responder keys; on the
other end the other way round. AEAD keys include their salt (4 bytes for AES-GCM), as Wireshark
expects them. Either end's log alone gives both directions of its SAs.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# strongSwan algorithm names -> Wireshark's esp_sa names (epan/dissectors/packet-ipsec.c, 4.0)
ENCRYPTION = {"AES_GCM_16": "AES-GCM with 16 octet ICV [RFC4106]",
              "AES_GCM_12": "AES-GCM with 12 octet ICV [RFC4106]",
              "AES_GCM_8": "AES-GCM with 8 octet ICV [RFC4106]",
              "AES_CBC": "AES-CBC [RFC3602]", "AES_CTR": "AES-CTR [RFC3686]", "NULL": "NULL"}
INTEGRITY = {"": "NULL", "HMAC_SHA1_96": "HMAC-SHA-1-96 [RFC2404]",
             "HMAC_SHA2_256_128": "HMAC-SHA-256-128 [RFC4868]",
             "HMAC_SHA2_384_192": "HMAC-SHA-384-192 [RFC4868]",
             "HMAC_SHA2_512_256": "HMAC-SHA-512-256 [RFC4868]"}
# combined modes tshark 4.0 cannot decrypt (no RFC 4543 NULL-GMAC in its ESP dissector)
UNSUPPORTED = {"NULL_AES_GMAC": "NULL-AES-GMAC (RFC 4543) is not in tshark's ESP decryption"}

_LINE = re.compile(r"^.*?\[(?:CHD|IKE)\] <([^>]*)> (.*)$")
_ESTABLISHING = re.compile(r"^establishing CHILD_SA (\S+?\{\d+\})")
_INSTALLING = re.compile(r"^CHILD_SA (\S+?\{\d+\}) state change: CREATED => INSTALLING")
_USING = re.compile(r"^\s*using (\S+) for (encryption|integrity)")
_KEY = re.compile(r"^(encryption|integrity) (initiator|responder) key => (\d+) bytes")
_HEX = re.compile(r"^\s*\d+: ((?:[0-9A-Fa-f]{2} ){1,16})")
_ADDING = re.compile(r"^adding (inbound|outbound) ESP SA")
_SPI = re.compile(r"^\s*SPI 0x([0-9a-fA-F]{1,8}), src (\S+) dst (\S+)")


class EspKeyError(ValueError):
    """The key log holds something that cannot be turned into an SA."""


@dataclass(frozen=True)
class EspSa:
    spi: int
    src: str
    dst: str
    encryption: str          # strongSwan name (AES_GCM_16, AES_CBC, NULL, ...)
    encryption_key: bytes
    integrity: str           # strongSwan name, "" for AEAD
    integrity_key: bytes
    child: str               # CHILD_SA name{unique id} (where it came from)

    @property
    def decryptable(self) -> tuple[bool, str]:
        if self.encryption in UNSUPPORTED:
            return False, UNSUPPORTED[self.encryption]
        if self.encryption not in ENCRYPTION or self.integrity not in INTEGRITY:
            return False, f"{self.encryption}/{self.integrity or 'AEAD'} has no tshark esp_sa name here"
        return True, ""

    def uat(self) -> str:
        """One record of tshark's `esp_sa` table (`-o uat:esp_sa:<record>`)."""
        family = "IPv6" if ":" in self.src else "IPv4"
        ikey = f"0x{self.integrity_key.hex()}" if self.integrity_key else ""
        return (f'"{family}","{self.src}","{self.dst}","0x{self.spi:08x}","{ENCRYPTION[self.encryption]}",'
                f'"0x{self.encryption_key.hex()}","{INTEGRITY[self.integrity]}","{ikey}"')


@dataclass
class _Child:
    name: str
    initiator: bool
    encryption: str = ""
    integrity: str = ""
    keys: dict[tuple[str, str], bytes] | None = None
    pending: tuple[str, str, int] | None = None     # key being dumped: (kind, role, length)
    buf: bytearray | None = None
    direction: str = ""

    def key(self, kind: str, role: str) -> bytes:
        return (self.keys or {}).get((kind, role), b"")


def parse(lines: Iterable[str]) -> list[EspSa]:
    """Every ESP SA the log installed (both directions of each CHILD_SA), in log order."""
    children: dict[str, _Child] = {}          # IKE_SA tag -> CHILD_SA being installed
    initiated: set[str] = set()               # CHILD_SA name{id} this end initiated
    out: list[EspSa] = []
    for line in lines:
        m = _LINE.match(line.rstrip("\n"))
        if not m:
            continue
        tag, text = m.groups()
        if (e := _ESTABLISHING.match(text)):
            initiated.add(e.group(1))
            continue
        if (e := _INSTALLING.match(text)):
            children[tag] = _Child(e.group(1), e.group(1) in initiated, keys={})
            continue
        c = children.get(tag)
        if c is None:
            continue
        if c.pending and (h := _HEX.match(text)):
            assert c.buf is not None
            c.buf += bytes.fromhex(h.group(1).replace(" ", ""))
            kind, role, length = c.pending
            if len(c.buf) >= length:
                assert c.keys is not None
                c.keys[(kind, role)] = bytes(c.buf[:length])
                c.pending, c.buf = None, None
            continue
        if (u := _USING.match(text)):
            if u.group(2) == "encryption":
                c.encryption = u.group(1)
            else:
                c.integrity = u.group(1)
        elif (k := _KEY.match(text)):
            c.pending, c.buf = (k.group(1), k.group(2), int(k.group(3))), bytearray()
        elif (a := _ADDING.match(text)):
            c.direction = a.group(1)
        elif (s := _SPI.match(text)) and c.direction:
            # initiator keys protect initiator -> responder: the initiator's outbound SA
            role = "initiator" if (c.direction == "outbound") == c.initiator else "responder"
            enc = c.key("encryption", role)
            if not enc and c.encryption != "NULL":
                raise EspKeyError(f"{c.name}: no {role} encryption key logged before SPI 0x{s.group(1)} "
                                  "(charon's keys filelog needs chd = 4)")
            out.append(EspSa(int(s.group(1), 16), s.group(2), s.group(3), c.encryption, enc, c.integrity,
                             c.key("integrity", role), c.name))
            c.direction = ""
    return out


def uat_args(sas: Iterable[EspSa]) -> tuple[list[str], list[str]]:
    """(tshark arguments `-o uat:esp_sa:...` for the SAs it can decrypt, reasons for the others)."""
    args: list[str] = []
    skipped: list[str] = []
    seen: set[tuple[int, str, str]] = set()
    for sa in sas:
        ok, why = sa.decryptable
        if not ok:
            skipped.append(f"SPI 0x{sa.spi:08x} {sa.src} -> {sa.dst}: {why}")
            continue
        key = (sa.spi, sa.src, sa.dst)
        if key in seen:                      # the two ends log the same SA
            continue
        seen.add(key)
        args += ["-o", f"uat:esp_sa:{sa.uat()}"]
    return args, skipped


# tshark's ESP preferences for decryption (the NULL heuristic stays off: validity's rule)
PREFS = {"esp.enable_encryption_decode": "TRUE"}
