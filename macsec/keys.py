"""MACsec's key material (docs/keys.md, docs/overlays/macsec.md "Keys").

`make keys` gives every endpoint node one static secret: 32 random bytes as hex under
<keys>/macsec/<node>.secret (0600, written atomically, never replaced). The SAKs a run installs
are not these secrets themselves but derived from them per render (HKDF-SHA256, RFC 5869, with
a fresh 16-byte nonce as salt): a statically configured SA starts again at packet number 1 each
time it is installed, so one SAK used by two runs would repeat (SAK, SCI, PN), i.e. GCM nonces.
Fresh SAKs per render keep every nonce unique without a key agreement protocol (no MKA)."""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from pathlib import Path

from testbed import keys

SECRET_TEXT = re.compile(r"^[0-9a-f]{64}$")
NONCE_BYTES = 16


def secret_path(root: Path, node: str) -> Path:
    return Path(root) / "macsec" / f"{node}.secret"


def secret(root: Path, node: str) -> bytes:
    """The node's static MACsec secret (32 bytes); created if missing, KeysError if damaged."""
    path = secret_path(root, node)
    keys.write_new(path, secrets.token_hex(32) + "\n", 0o600)
    text = path.read_text(encoding="utf-8").strip()
    if not SECRET_TEXT.match(text):
        raise keys.damaged(path, "not 64 hex digits")
    return bytes.fromhex(text)


def ensure(root: Path, nodes: list[str]) -> None:
    """A secret for every endpoint node."""
    for node in nodes:
        secret(root, node)


def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """HKDF with SHA-256 (RFC 5869): extract with `salt`, expand to `length` bytes."""
    if not 0 < length <= 255 * 32:
        raise ValueError(f"HKDF-SHA256 gives 1 to {255 * 32} bytes, not {length}")
    prk = hmac.new(salt or bytes(32), ikm, hashlib.sha256).digest()
    out, block = b"", b""
    for i in range(1, -(-length // 32) + 1):
        block = hmac.new(prk, block + info + bytes([i]), hashlib.sha256).digest()
        out += block
    return out[:length]


def derive(root: Path, node: str, nonce: bytes, what: str, length: int) -> bytes:
    """`length` bytes for the node's `what` ("sak gcm-aes-128", "salt") in the render of `nonce`."""
    if len(nonce) != NONCE_BYTES:
        raise ValueError(f"a render nonce is {NONCE_BYTES} bytes, not {len(nonce)}")
    return hkdf_sha256(secret(root, node), nonce, f"testbed macsec {what} {node}".encode(), length)


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_BYTES)
