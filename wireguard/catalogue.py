"""The WireGuard section of profiles.yaml: one profile per entry (by design one configuration:
Noise_IKpsk2 with ChaCha20-Poly1305), with the planes it runs on."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.profiles import Profile


def expand(section: Mapping[str, Any]) -> list[Profile]:
    return [Profile(pid, "wireguard", tuple(wg["planes"]), wg["label"], {}) for pid, wg in section.items()]
