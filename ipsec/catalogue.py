"""The IPsec section of profiles.yaml expanded into profiles: the ESP proposals x the
authentications x the establishment modes (docs/overlays/ipsec.md), ids `<esp><auth suffix><mode
suffix>` (aes128gcm, aes128gcm-psk-trap, ...); and the post-quantum key exchanges of its `pq` part
(RFC 9370 hybrids, ML-KEM alone, the X25519 reference) x the same authentications and modes, ids
`<esp>-<ke><auth suffix><mode suffix>` (aes128gcm-x25519-mlkem768, aes128gcm-mlkem768-psk-trap, ...),
with the combinations no pinned tool supports listed as refused."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.profiles import Profile

PROTOCOL = "ipsec"


def _params(ike: str, esp_id: str, esp: Mapping[str, Any], auth_id: str, mode_id: str,
            mode: Mapping[str, Any], ke: Mapping[str, Any] | None = None, mode_suffix: str = "") -> dict[str, Any]:
    """A profile's parameters; `ke` (a `pq` key exchange): its methods replace the IKE proposal's
    group and are added to the ESP proposal (PFS for the CHILD_SA's rekeys)."""
    esp_kw = esp["keyword"] + (f"-{ke['ike']}" if ke else "")
    return {
        "ike_proposal": ike,
        "esp": esp_id,
        "esp_proposal": esp_kw,
        "esp_label": esp["label"],
        "esp_encryption": esp["encryption"],
        "esp_integrity": esp["integrity"],
        "auth": auth_id,
        "mode": mode_id,
        "start_action": "start" if mode_id == "start" else "trap",
        "patched_wait": bool(mode.get("patched", False)),
        "xfrm_larval_drop": int(mode.get("larval_drop", 1)),
        "ke": ke["id"] if ke else None,                       # the pq key-exchange id, None: classical
        "post_quantum": bool(ke and ke.get("pq")),
        "min_strongswan": ke["min_strongswan"] if ke else None,
        # the profile a post-quantum one is set beside: the section's classical key exchange, all else equal
        "classical_reference": (f"{esp_id}-{ke['classical']}{mode_suffix}" if ke and ke.get("pq") and ke.get("classical")
                                else None),
    }


def _combinations(cat: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], str, Mapping[str, Any], list[str]]]:
    """(auth id, auth, mode id, mode, planes) of every authentication x mode the section allows
    (N3 only with the authentications of `n3_auth`)."""
    out = []
    for auth_id, auth in cat["auth"].items():
        for mode_id, mode in cat["modes"].items():
            planes = [p for p in mode["planes"] if p != "n3" or auth_id in cat.get("n3_auth", ["cert"])]
            if planes:
                out.append((auth_id, auth, mode_id, mode, planes))
    return out


def _ike_with(ike: str, methods: str) -> str:
    """The catalogue's IKE proposal with its key exchange (the last word) replaced by `methods`."""
    return "-".join([*ike.split("-")[:-1], methods])


def expand_pq(cat: Mapping[str, Any]) -> list[Profile]:
    """The `pq` part: every key exchange x its ESP proposals x authentication x mode, then the
    refused combinations (listed with their reason, never run)."""
    pq = cat.get("pq") or {}
    out: list[Profile] = []
    classical = next((k for k, v in (pq.get("ke") or {}).items() if not v.get("pq")), None)
    for ke_id, ke in (pq.get("ke") or {}).items():
        ke = {**ke, "id": ke_id, "min_strongswan": str(pq["min_strongswan"]), "classical": classical}
        for esp_id in pq["esp"]:
            esp = cat["esp"][esp_id]
            for auth_id, auth, mode_id, mode, planes in _combinations(cat):
                pid = f"{esp_id}-{ke_id}{auth['suffix']}{mode['suffix']}"
                label = f"IPsec {esp['label']}, IKE {ke['label']}, {auth['label']}, {mode_id}"
                out.append(Profile(pid, PROTOCOL, tuple(planes), label,
                                   _params(_ike_with(cat["ike_proposal"], ke["ike"]), esp_id, esp, auth_id,
                                           mode_id, mode, ke, f"{auth['suffix']}{mode['suffix']}")))
    for rid, r in (pq.get("refused") or {}).items():
        esp_id = pq["esp"][0]
        ke = {**r, "id": rid, "pq": True, "min_strongswan": str(pq["min_strongswan"])}
        out.append(Profile(f"{esp_id}-{rid}", PROTOCOL, ("n3", "sbi", "n2", "n4"), f"IPsec, IKE {r['label']}",
                           _params(_ike_with(cat["ike_proposal"], r["ike"]), esp_id, cat["esp"][esp_id], "cert",
                                   "start", cat["modes"]["start"], ke),
                           refused=" ".join(str(r["reason"]).split())))
    return out


def expand(cat: Mapping[str, Any]) -> list[Profile]:
    """Every ESP proposal x authentication x mode the section allows (N3 only with the
    authentications of `n3_auth`)."""
    if not cat:
        return []
    out: list[Profile] = []
    ike = cat["ike_proposal"]
    for esp_id, esp in cat["esp"].items():
        for auth_id, auth, mode_id, mode, planes in _combinations(cat):
            pid = f"{esp_id}{auth['suffix']}{mode['suffix']}"
            label = f"IPsec {esp['label']}, {auth['label']}, {mode_id}"
            out.append(Profile(pid, PROTOCOL, tuple(planes), label,
                               _params(ike, esp_id, esp, auth_id, mode_id, mode)))
    return out + expand_pq(cat)
