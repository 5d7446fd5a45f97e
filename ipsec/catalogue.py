"""The IPsec section of profiles.yaml expanded into profiles: the ESP proposals x the
authentications x the establishment modes (docs/overlays/ipsec.md), ids `<esp><auth suffix><mode
suffix>` (aes128gcm, aes128gcm-psk-trap, ...)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.profiles import Profile

PROTOCOL = "ipsec"


def _params(ike: str, esp_id: str, esp: Mapping[str, Any], auth_id: str, mode_id: str,
            mode: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "ike_proposal": ike,
        "esp": esp_id,
        "esp_proposal": esp["keyword"],
        "esp_label": esp["label"],
        "esp_encryption": esp["encryption"],
        "esp_integrity": esp["integrity"],
        "auth": auth_id,
        "mode": mode_id,
        "start_action": "start" if mode_id == "start" else "trap",
        "patched_wait": bool(mode.get("patched", False)),
        "xfrm_larval_drop": int(mode.get("larval_drop", 1)),
    }


def expand(cat: Mapping[str, Any]) -> list[Profile]:
    """Every ESP proposal x authentication x mode the section allows (N3 only with the
    authentications of `n3_auth`)."""
    if not cat:
        return []
    out: list[Profile] = []
    ike = cat["ike_proposal"]
    for esp_id, esp in cat["esp"].items():
        for auth_id, auth in cat["auth"].items():
            for mode_id, mode in cat["modes"].items():
                planes = [p for p in mode["planes"]
                          if p != "n3" or auth_id in cat.get("n3_auth", ["cert"])]
                if not planes:
                    continue
                pid = f"{esp_id}{auth['suffix']}{mode['suffix']}"
                label = f"IPsec {esp['label']}, {auth['label']}, {mode_id}"
                out.append(Profile(pid, PROTOCOL, tuple(planes), label,
                                   _params(ike, esp_id, esp, auth_id, mode_id, mode)))
    return out
