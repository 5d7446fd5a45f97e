"""The WireGuard section of profiles.yaml: one profile per entry (by design one configuration:
Noise_IKpsk2 with ChaCha20-Poly1305), with the planes it runs on; with Rosenpass, its pre-shared
key comes from a post-quantum key exchange beside it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.profiles import Profile


def expand(section: Mapping[str, Any]) -> list[Profile]:
    """One profile per entry; `rosenpass: true` adds the post-quantum PSK companion (wireguard/rosenpass.py)."""
    return [Profile(pid, "wireguard", tuple(wg["planes"]), wg["label"],
                    {"rosenpass": True, "post_quantum": True} if wg.get("rosenpass") else {})
            for pid, wg in section.items()]
