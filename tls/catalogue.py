"""The TLS section of profiles.yaml: one profile per suite entry (version, cipher, certificate
type, the paper it comes from), on the SBI only."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.profiles import Profile

PLANES = ("sbi",)


def expand(section: Mapping[str, Any]) -> list[Profile]:
    out: list[Profile] = []
    for pid, tls in (section.get("profiles") or {}).items():
        label = f"TLS {tls['version']} {tls['cipher']} ({tls['cert'].upper()})"
        out.append(Profile(pid, "tls", PLANES, label, dict(tls)))
    return out
