"""The DTLS section of profiles.yaml: one relay profile per entry on the section's SCTP planes;
an entry with `refused` is listed with its reason and never run (docs/overlays/dtls.md)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.profiles import Profile


def expand(cat: Mapping[str, Any]) -> list[Profile]:
    out: list[Profile] = []
    for pid, d in (cat.get("profiles") or {}).items():
        params = {k: v for k, v in d.items() if k != "refused"}
        params.setdefault("relay", "dtls")
        label = (f"DTLS {d['version']} {d['cipher']} relay ({str(d['cert']).upper()})"
                 if params["relay"] == "dtls" else "relay without DTLS (plain UDP): the relay's own cost")
        refused = " ".join(str(d["refused"]).split()) if d.get("refused") else None
        out.append(Profile(pid, "dtls", tuple(cat["planes"]), label, params, refused))
    return out
