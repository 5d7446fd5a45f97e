"""The result of checking an overlay's capture: protected traffic present, no plaintext.

Shared by every overlay plug-in's `verify_capture` and run checks (testbed/contract.py).
"""
from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Verdict:
    valid: bool                 # protected traffic seen and no plaintext of the plane's traffic
    protected_packets: int      # packets of the overlay protocol (ESP, WireGuard UDP, TLS records)
    plaintext_packets: int      # packets of the plane's traffic seen in the clear
    details: str                # one line: what was counted, with which filter, and why invalid

    def to_dict(self) -> dict[str, Any]:
        """The manifest's `validity` object (plus `valid`)."""
        return dataclasses.asdict(self)
