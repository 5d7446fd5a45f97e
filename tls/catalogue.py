"""The TLS section of profiles.yaml: one profile per suite entry (version, cipher, certificate
type, the paper it comes from; the post-quantum ones also the key-exchange groups of the server and
the client), on the SBI only."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.profiles import Profile

PLANES = ("sbi",)


def expand(section: Mapping[str, Any]) -> list[Profile]:
    out: list[Profile] = []
    for pid, tls in (section.get("profiles") or {}).items():
        label = f"TLS {tls['version']} {tls['cipher']} ({tls['cert'].upper()})"
        if tls.get("groups"):
            label += f", group {tls['groups']}" + (f", client offers {tls['client_groups']} (HelloRetryRequest)"
                                                   if tls.get("client_groups") else "")
        out.append(Profile(pid, "tls", PLANES, label, dict(tls)))
    return out
