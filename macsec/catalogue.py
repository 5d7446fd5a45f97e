"""The MACsec section of profiles.yaml: one profile per cipher suite (`macsec-<suite>`), on the
planes the section names, with the SecY settings every profile shares (docs/overlays/macsec.md)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.profiles import Profile

PROTOCOL = "macsec"
ICV_LEN = 16                      # GCM-AES-*: a 16-octet ICV (IEEE 802.1AE 14.5)
KEY_BYTES = {128: 16, 256: 32}


class CatalogueError(ValueError):
    """The macsec section of profiles.yaml is malformed (the message names the field)."""


def _params(suite: str, spec: Mapping[str, Any], section: Mapping[str, Any]) -> dict[str, Any]:
    bits = int(spec["key_bits"])
    if bits not in KEY_BYTES:
        raise CatalogueError(f"profiles.yaml macsec.ciphers.{suite}.key_bits: {bits} is not 128 or 256")
    window = int(section.get("replay_window", 0))
    if window < 0:
        raise CatalogueError(f"profiles.yaml macsec.replay_window: {window} is negative")
    return {
        "cipher": suite,                         # iproute2's name (ip link ... type macsec cipher <suite>)
        "cipher_label": spec["label"],           # IEEE 802.1AE's name, as `ip macsec show` prints it
        "key_bits": bits,
        "xpn": bool(spec.get("xpn", False)),     # 64-bit packet numbers (IEEE 802.1AEbw)
        "icv_len": ICV_LEN,
        "send_sci": True,                        # the SCI in every SecTAG (16 octets, not 8)
        "encrypt": True,
        "validate": "strict",
        "replay_window": window,
    }


def expand(section: Mapping[str, Any]) -> list[Profile]:
    """One profile per cipher suite of the section, in its order."""
    if not section:
        return []
    planes = tuple(section.get("planes") or ())
    if not planes:
        raise CatalogueError("profiles.yaml macsec.planes: name the planes MACsec runs on (n3)")
    out = []
    for suite, spec in (section.get("ciphers") or {}).items():
        params = _params(suite, spec, section)
        label = f"MACsec {spec['label']}, static keys (no MKA), SCI in the SecTAG, encrypted"
        out.append(Profile(f"{PROTOCOL}-{suite}", PROTOCOL, planes, label, params))
    return out
