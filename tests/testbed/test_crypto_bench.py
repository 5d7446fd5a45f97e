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
    tag = crypto_schemes.BY_ID["aes128gmac"].make(key)(data)
    assert len(tag) == 16                                   # the tag only: nothing encrypted
    AESGCM(key).decrypt(bytes(12), tag, data)               # verifies as GMAC over AAD = data


def test_nia2_is_aes_cmac_truncated_to_32_bits() -> None:
    # RFC 4493 example 1: AES-CMAC(K, empty) = bb1d6929e95937287fa37d129b756746
    key = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")
    assert crypto_schemes.BY_ID["nia2"].make(key)(b"").hex() == "bb1d6929"


def test_cbc_hmac_output_is_ciphertext_plus_a_16_byte_icv() -> None:
    op = crypto_schemes.BY_ID["aes256-sha256"].make(os.urandom(64))
    assert len(op(bytes(64))) == 64 + 16
    assert len(op(bytes(70))) == 80 + 16                    # padded to the block size


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
