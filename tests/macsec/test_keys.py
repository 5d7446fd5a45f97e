"""macsec/keys.py: the per-node secrets of `make keys` and the per-render SAK derivation."""
from __future__ import annotations

from pathlib import Path

import pytest

from macsec import keys as mkeys
from testbed import keys, registry, stack


def test_hkdf_sha256_is_rfc5869() -> None:
    # RFC 5869 appendix A, test cases 1 and 3 (SHA-256)
    okm = mkeys.hkdf_sha256(bytes([0x0B] * 22), bytes(range(13)), bytes(range(0xF0, 0xFA)), 42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                         "34007208d5b887185865")
    okm = mkeys.hkdf_sha256(bytes([0x0B] * 22), b"", b"", 42)
    assert okm.hex() == ("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
                         "9d201395faa4b61a96c8")
    with pytest.raises(ValueError):
        mkeys.hkdf_sha256(b"k", b"s", b"", 0)


def test_make_keys_gives_every_endpoint_a_private_secret(tmp_path: Path) -> None:
    values = stack.load()
    nodes = keys.endpoint_nodes(values)
    registry.overlay("macsec").ensure_keys(tmp_path, nodes, values)
    files = sorted((tmp_path / "macsec").iterdir())
    assert [f.name for f in files] == sorted(f"{n}.secret" for n in nodes)
    texts = set()
    for f in files:
        assert f.stat().st_mode & 0o777 == 0o600
        text = f.read_text()
        assert len(text) == 65 and text.endswith("\n") and int(text, 16) >= 0
        texts.add(text)
    assert len(texts) == len(files)
    assert (tmp_path / "macsec").stat().st_mode & 0o777 == 0o700
    before = {f.name: (f.stat().st_mtime_ns, f.read_text()) for f in files}
    registry.overlay("macsec").ensure_keys(tmp_path, nodes, values)          # never replaced
    assert {f.name: (f.stat().st_mtime_ns, f.read_text()) for f in sorted((tmp_path / "macsec").iterdir())} == before
    assert not list((tmp_path / "macsec").glob(".*"))                          # no temporary file left


def test_a_damaged_secret_is_never_replaced(tmp_path: Path) -> None:
    path = mkeys.secret_path(tmp_path, "gnb")
    path.parent.mkdir(parents=True)
    path.write_text("not hex\n")
    with pytest.raises(keys.KeysError, match=r"damaged \(not 64 hex digits\).*rm .*gnb.secret && make keys"):
        mkeys.secret(tmp_path, "gnb")
    assert path.read_text() == "not hex\n"


def test_saks_are_fresh_per_render_and_differ_per_node(tmp_path: Path) -> None:
    n1, n2 = mkeys.new_nonce(), mkeys.new_nonce()
    assert len(n1) == 16 and n1 != n2
    a = mkeys.derive(tmp_path, "gnb", n1, "sak gcm-aes-128", 16)
    assert a == mkeys.derive(tmp_path, "gnb", n1, "sak gcm-aes-128", 16)       # one render: both ends agree
    assert a != mkeys.derive(tmp_path, "gnb", n2, "sak gcm-aes-128", 16)       # the next render: a new SAK
    assert a != mkeys.derive(tmp_path, "upf", n1, "sak gcm-aes-128", 16)
    assert a != mkeys.derive(tmp_path, "gnb", n1, "sak gcm-aes-256", 32)[:16]
    assert len(mkeys.derive(tmp_path, "gnb", n1, "xpn salt", 12)) == 12
    with pytest.raises(ValueError, match="16 bytes"):
        mkeys.derive(tmp_path, "gnb", b"short", "sak", 16)
