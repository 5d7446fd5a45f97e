"""The cipher schemes `make bench-crypto` times (docs/bench-crypto.md), as data.

Each scheme is one protection step over a whole buffer, as ESP (or the 5G NAS/AS layer) applies
it to one packet: encryption and/or integrity, output = ciphertext + ICV. The six ESP schemes are
the catalogue's ESP proposals (profiles.yaml `esp_proposals`) by their strongSwan keyword, so a
benchmark row can be set beside the latency profiles that use the same proposal.

NULL + AES-GMAC authenticates the buffer as associated data and encrypts nothing (RFC 4543).
The seed study's "GMAC" function encrypted the buffer with AES-GCM instead, which is
`aes128gcm16` here; the report says so beside their numbers.

Only what the Python `cryptography` package provides is measured; the 5G schemes it lacks
(NEA1/NIA1 = SNOW 3G, NEA3/NIA3 = ZUC) are listed in MISSING so the report can say so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# op(buffer, out) -> bytes written: protects the buffer into `out`, which the caller allocated
# once (at least out_bytes(len(buffer)) long) and reuses. An op that returned a fresh object
# timed the allocation with the cipher: a new 64 MiB output is a fresh mapping whose pages the
# kernel faults in and zeroes on every call (AES-128-GCM measured 7.19 GB/s at 1 MiB and 0.73
# GB/s at 64 MiB that way, issue 22 point 6), and ESP protects a packet in place.
Op = Callable[[bytes, bytearray], int]
_SLACK = 64                 # ICV (16) + a block the Cipher API may hold back (update_into)


def out_bytes(size: int) -> int:
    """The output buffer an op needs for a buffer of `size` bytes."""
    return size + _SLACK

# Not in the `cryptography` package (OpenSSL has neither SNOW 3G nor ZUC).
MISSING = {
    "nea1": "128-NEA1 (SNOW 3G): not provided by the cryptography package",
    "nia1": "128-NIA1 (SNOW 3G): not provided by the cryptography package",
    "nea3": "128-NEA3 (ZUC): not provided by the cryptography package",
    "nia3": "128-NIA3 (ZUC): not provided by the cryptography package",
}


@dataclass(frozen=True)
class Scheme:
    """One benchmarked scheme: id (strongSwan ESP keyword or 5G name), label, family, key size,
    the `openssl speed` arguments of its closest cross-check (None: none), and a factory
    make(key) -> op(buffer, out) -> bytes of protected output written into out."""

    id: str
    label: str
    family: str             # "esp" | "esp-extra" | "nas-as"
    key_bytes: int
    speed_args: tuple[str, ...] | None
    make: Callable[[bytes], Op]


# A fixed nonce/IV: the cost of drawing a fresh one is not the cipher's (ESP uses a counter).
_NONCE = bytes(12)
_IV = bytes(16)
_ICV = 16                   # HMAC-SHA256-128: the ICV is the first 16 bytes (RFC 4868)


def _needs_into(cipher: object) -> None:
    if not hasattr(cipher, "encrypt_into"):
        import cryptography
        raise ValueError(f"the cryptography package {cryptography.__version__} has no AEAD encrypt_into, "
                         "which the benchmark needs to time the cipher without an allocation: "
                         "upgrade it (make venv)")


def _aead(cls_name: str) -> Callable[[bytes], Op]:
    def make(key: bytes) -> Op:
        from cryptography.hazmat.primitives.ciphers import aead
        cipher = getattr(aead, cls_name)(key)
        _needs_into(cipher)

        def op(data: bytes, out: bytearray) -> int:
            # ciphertext + 16-byte tag, written into the caller's buffer (AEAD encrypt_into)
            n = len(data) + 16
            cipher.encrypt_into(_NONCE, data, None, memoryview(out)[:n])
            return n
        return op
    return make


def _gmac(key: bytes) -> Op:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    cipher = AESGCM(key)
    _needs_into(cipher)

    def op(data: bytes, out: bytearray) -> int:
        # RFC 4543: the whole packet is associated data, the plaintext is empty; output = the tag.
        cipher.encrypt_into(_NONCE, b"", data, memoryview(out)[:16])
        return 16
    return op


def _hmac_sha256_128(key: bytes) -> Op:
    from cryptography.hazmat.primitives import hashes, hmac

    def op(data: bytes, out: bytearray) -> int:
        # NULL encryption: the packet stays where it is, the ICV follows it
        h = hmac.HMAC(key, hashes.SHA256())
        h.update(data)
        out[len(data):len(data) + _ICV] = h.finalize()[:_ICV]
        return len(data) + _ICV
    return op


def _cbc_hmac(key: bytes) -> Op:
    from cryptography.hazmat.primitives import hashes, hmac
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    enc_key, mac_key = key[:-32], key[-32:]

    def op(data: bytes, out: bytearray) -> int:
        # ESP pads to the block size; the benchmark sizes are multiples of 16 already.
        pad = (-len(data)) % 16
        view = memoryview(out)
        e = Cipher(algorithms.AES(enc_key), modes.CBC(_IV)).encryptor()
        n = e.update_into(data, view)
        if pad:
            n += e.update_into(bytes(pad), view[n:])
        e.finalize()
        h = hmac.HMAC(mac_key, hashes.SHA256())
        h.update(_IV)
        h.update(view[:n])
        out[n:n + _ICV] = h.finalize()[:_ICV]
        return n + _ICV
    return op


def _ctr(key: bytes) -> Op:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    def op(data: bytes, out: bytearray) -> int:
        e = Cipher(algorithms.AES(key), modes.CTR(_IV)).encryptor()
        n = e.update_into(data, memoryview(out))
        e.finalize()
        return n
    return op


def _cmac(key: bytes) -> Op:
    from cryptography.hazmat.primitives import cmac
    from cryptography.hazmat.primitives.ciphers import algorithms

    def op(data: bytes, out: bytearray) -> int:
        c = cmac.CMAC(algorithms.AES(key))
        c.update(data)
        out[:4] = c.finalize()[:4]       # NIA2's MAC-I is the first 32 bits (TS 33.401 B.2.3)
        return 4
    return op


SCHEMES: tuple[Scheme, ...] = (
    Scheme("aes128gcm16", "AES-128-GCM", "esp", 16, ("-evp", "aes-128-gcm"), _aead("AESGCM")),
    Scheme("aes256gcm16", "AES-256-GCM", "esp", 32, ("-evp", "aes-256-gcm"), _aead("AESGCM")),
    Scheme("aes128-sha256", "AES-128-CBC + HMAC-SHA256-128", "esp", 16 + 32,
           ("-evp", "aes-128-cbc"), _cbc_hmac),
    Scheme("aes256-sha256", "AES-256-CBC + HMAC-SHA256-128", "esp", 32 + 32,
           ("-evp", "aes-256-cbc"), _cbc_hmac),
    Scheme("null-sha256", "NULL + HMAC-SHA256-128", "esp", 32, ("-hmac", "sha256"), _hmac_sha256_128),
    Scheme("aes128gmac", "NULL + AES-128-GMAC", "esp", 16, None, _gmac),
    Scheme("chacha20poly1305", "ChaCha20-Poly1305", "esp-extra", 32,
           ("-evp", "chacha20-poly1305"), _aead("ChaCha20Poly1305")),
    Scheme("nea2", "128-NEA2 (AES-128-CTR)", "nas-as", 16, ("-evp", "aes-128-ctr"), _ctr),
    Scheme("nia2", "128-NIA2 (AES-128-CMAC)", "nas-as", 16, None, _cmac),
)

BY_ID = {s.id: s for s in SCHEMES}


def select(ids: list[str] | None) -> list[Scheme]:
    """The schemes named (all when None/empty); an unknown id raises ValueError listing the valid."""
    if not ids:
        return list(SCHEMES)
    unknown = [i for i in ids if i not in BY_ID]
    if unknown:
        hint = "; ".join(MISSING[i] for i in unknown if i in MISSING)
        raise ValueError(f"unknown scheme(s) {', '.join(unknown)}; valid: {', '.join(BY_ID)}"
                         + (f" ({hint})" if hint else ""))
    return [BY_ID[i] for i in ids]
