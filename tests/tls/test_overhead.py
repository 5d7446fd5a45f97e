"""The TLS record overhead (tls/overhead.py), worked by hand from the RFCs."""
from __future__ import annotations

import pytest

from tls import overhead


@pytest.mark.parametrize("version,cipher,expected", [
    ("1.3", "TLS_AES_128_GCM_SHA256", 22), ("1.2", "ECDHE-ECDSA-AES128-GCM-SHA256", 29),
    ("1.2", "ECDHE-ECDSA-CHACHA20-POLY1305", 21), ("1.2", "ECDHE-ECDSA-AES128-CCM8", 29 - 8 + 0),
])
def test_tls_record(version: str, cipher: str, expected: int) -> None:
    if "CCM8" in cipher:
        cipher = cipher.replace("CCM8", "CCM_8")
    assert overhead.tls_record_overhead(version, cipher) == expected
