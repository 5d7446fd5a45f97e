"""make bench-crypto's runner and schemes (testbed/crypto_bench.py, testbed/crypto_schemes.py)."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed import ROOT, crypto_bench, crypto_schemes

pytest.importorskip("cryptography", reason="the cryptography package (pyproject dependency) is missing")


def test_the_six_esp_schemes_are_the_catalogues_esp_proposals() -> None:
    catalogue = yaml.safe_load((ROOT / "profiles.yaml").read_text(encoding="utf-8"))
    keywords = {v["keyword"] for v in catalogue["ipsec"]["esp"].values()}
    assert {s.id for s in crypto_schemes.SCHEMES if s.family == "esp"} == keywords


def test_gmac_authenticates_without_encrypting() -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    key, data = bytes(range(16)), b"x" * 100
    out = bytearray(crypto_schemes.out_bytes(len(data)))
    assert crypto_schemes.BY_ID["aes128gmac"].make(key)(data, out) == 16    # the tag only: nothing encrypted
    tag = bytes(out[:16])
    AESGCM(key).decrypt(bytes(12), tag, data)               # verifies as GMAC over AAD = data


def test_nia2_is_aes_cmac_truncated_to_32_bits() -> None:
    # RFC 4493 example 1: AES-CMAC(K, empty) = bb1d6929e95937287fa37d129b756746
    key = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")
    out = bytearray(crypto_schemes.out_bytes(0))
    assert crypto_schemes.BY_ID["nia2"].make(key)(b"", out) == 4
    assert out[:4].hex() == "bb1d6929"


def test_cbc_hmac_output_is_ciphertext_plus_a_16_byte_icv() -> None:
    key = os.urandom(64)
    op = crypto_schemes.BY_ID["aes256-sha256"].make(key)
    out = bytearray(crypto_schemes.out_bytes(70))
    assert op(bytes(64), out) == 64 + 16
    # the ciphertext is AES-256-CBC of the buffer, the ICV HMAC-SHA256(IV | ciphertext)[:16]
    from cryptography.hazmat.primitives import hashes, hmac
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    e = Cipher(algorithms.AES(key[:32]), modes.CBC(bytes(16))).encryptor()
    ct = e.update(bytes(64)) + e.finalize()
    h = hmac.HMAC(key[32:], hashes.SHA256())
    h.update(bytes(16) + ct)
    assert bytes(out[:80]) == ct + h.finalize()[:16]
    assert op(bytes(70), out) == 80 + 16                    # padded to the block size


def test_aead_schemes_write_what_the_aead_returns() -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
    data = os.urandom(1000)
    for scheme, cls in (("aes128gcm16", AESGCM), ("aes256gcm16", AESGCM), ("chacha20poly1305", ChaCha20Poly1305)):
        s = crypto_schemes.BY_ID[scheme]
        key = os.urandom(s.key_bytes)
        out = bytearray(crypto_schemes.out_bytes(len(data)))
        n = s.make(key)(data, out)
        assert bytes(out[:n]) == cls(key).encrypt(bytes(12), data, None)


@pytest.mark.parametrize("scheme", [s.id for s in crypto_schemes.SCHEMES])
def test_an_op_allocates_nothing_the_size_of_its_buffer(scheme: str) -> None:
    """Issue 22 point 6: an op that returned a fresh output timed the allocator with the cipher
    (AES-128-GCM 7.19 GB/s at 1 MiB, 0.73 at 64 MiB). Into the caller's buffer, one call on
    4 MiB allocates (Python's allocator, which the bytes objects come from) under 64 KiB."""
    import tracemalloc
    s = crypto_schemes.BY_ID[scheme]
    size = 4 << 20
    data = os.urandom(size)
    out = bytearray(crypto_schemes.out_bytes(size))
    op = s.make(os.urandom(s.key_bytes))
    op(data, out)
    tracemalloc.start()
    try:
        op(data, out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, f"{scheme}: {peak} B allocated by one call on {size} B"


def test_unknown_scheme_lists_the_valid_ones_and_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match="valid: aes128gcm16") as exc:
        crypto_schemes.select(["nea1", "bogus"])
    assert "SNOW 3G" in str(exc.value)


@pytest.mark.parametrize("requested,available,expected", [
    ("both", True, ["on", "masked"]), ("both", False, ["on"]), ("both", None, ["on"]),
    ("on", True, ["on"]), ("masked", True, ["masked"])])
def test_aesni_modes(requested: str, available: bool | None, expected: list[str]) -> None:
    assert crypto_bench.modes_for(requested, available) == expected


def test_masking_what_is_not_there_is_an_error() -> None:
    with pytest.raises(crypto_bench.BenchError, match="no AES-NI"):
        crypto_bench.modes_for("masked", False)
    with pytest.raises(crypto_bench.BenchError, match="valid: both, on, masked"):
        crypto_bench.modes_for("sometimes", True)


def test_parse_openssl_speed_machine_readable_output() -> None:
    text = "+DT:AES-128-GCM:1:16384\n+R:399102:AES-128-GCM:0.960000\n+H:16384\n+F:25:AES-128-GCM:6811340800.00\n"
    assert crypto_bench.parse_speed(text) == {"AES-128-GCM": 6811340800.0}


def test_a_small_run_with_and_without_aes_ni(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl command not found (the cross-check needs it)")
    run_dir = crypto_bench.run(tmp_path, "t", ["aes128gcm16", "null-sha256"], [64, 65536], 2, 0.002,
                               "both", 1)
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["state"] == "complete" and m["experiment"] == "crypto"
    modes = m["aesni"]["modes"]
    for mode in modes:
        rows = list(csv.reader((run_dir / f"raw-{mode}.csv").open()))
        assert len(rows) == 2 * 2 * 2                      # schemes x sizes x repeats
        assert all(int(r[4]) >= 1 and float(r[5]) > 0 for r in rows)
        speed = (run_dir / f"openssl-speed-{mode}.txt").read_text()
        assert "AES-128-GCM" in speed and "hmac(sha256)" in speed
    if crypto_bench.aesni_available():
        assert modes == ["on", "masked"]
        assert m["aesni"]["mask_effective"] is True, m["aesni"]
        assert any(c.startswith(f"OPENSSL_ia32cap={crypto_bench.AESNI_MASK} ") for c in m["commands"])
        assert m["valid"] is True
    else:
        assert modes == ["on"]


def test_cli_rejects_bad_input_in_one_line(tmp_path: Path) -> None:
    for args, words in ((["--schemes", "nea3"], "ZUC"), (["--repeats", "1"], "at least 2"),
                        (["--sizes", "0"], "positive")):
        res = subprocess.run([sys.executable, "-m", "testbed", "bench-crypto", "--results", str(tmp_path),
                              *args], cwd=ROOT, capture_output=True, text=True, check=False)
        assert res.returncode == 2, res.stderr
        assert words in res.stderr and "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_an_unwritable_results_folder_is_one_clear_line(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("not a folder")
    res = subprocess.run([sys.executable, "-m", "testbed", "bench-crypto", "--results", str(target)],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 2 and "RESULTS=<writable dir>" in res.stderr and "Traceback" not in res.stderr
