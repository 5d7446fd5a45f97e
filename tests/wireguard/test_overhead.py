"""WireGuard's analytic per-packet overhead (wireguard/overhead.py)."""
from __future__ import annotations

from wireguard import overhead


def test_wireguard_pads_to_16() -> None:
    assert overhead.wireguard_overhead(84) == 20 + 8 + 16 + 16 + 12
    assert overhead.wireguard_overhead(96) == 60
