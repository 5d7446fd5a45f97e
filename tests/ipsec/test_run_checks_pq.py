"""The run-level key-exchange check of the post-quantum IPsec profiles (ipsec/run_checks.py ke_verdict)
over a real capture (tests/data/pq-handshakes/SOURCE.md): run-overlay's own capture proves the hybrid,
and the same packets judged as another key exchange are invalid with the reason. The manifest's files
are of kind `pcap` (testbed/manifest.py KINDS): the check once looked for `capture` and found none."""
from __future__ import annotations

import shutil
from pathlib import Path

from ipsec import run_checks
from testbed import manifest, profiles
from tests.conftest import ROOT, require_tools

PCAP = ROOT / "tests" / "data" / "pq-handshakes" / "ike-x25519-mlkem768.pcap"


def _run_dir(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    shutil.copy(PCAP, tmp_path / "n3.pcap")
    assert "pcap" in manifest.KINDS
    return tmp_path, {"files": [{"kind": "pcap", "path": "n3.pcap"}, {"kind": "log", "path": "lab-up.log"}]}


def test_the_runs_capture_proves_the_hybrid(tmp_path: Path) -> None:
    require_tools("tshark")
    d, m = _run_dir(tmp_path)
    v = run_checks.ke_verdict(d, m, profiles.get("aes128gcm-x25519-mlkem768", "n3"))
    assert v.valid and "1 with IKE_INTERMEDIATE" in v.details, v.details


def test_the_same_packets_are_invalid_as_another_key_exchange(tmp_path: Path) -> None:
    require_tools("tshark")
    d, m = _run_dir(tmp_path)
    classical = run_checks.ke_verdict(d, m, profiles.get("aes128gcm-x25519", "n3"))
    assert not classical.valid and "IKE_INTERMEDIATE exchange the profile does not have" in classical.details
    bigger = run_checks.ke_verdict(d, m, profiles.get("aes128gcm-x25519-mlkem1024", "n3"))
    assert not bigger.valid and "smaller than ML-KEM-1024" in bigger.details, bigger.details


def test_no_capture_with_a_handshake_is_invalid(tmp_path: Path) -> None:
    v = run_checks.ke_verdict(tmp_path, {"files": [{"kind": "pcap", "path": "missing.pcap"}]},
                              profiles.get("aes128gcm-x25519-mlkem768", "n3"))
    assert not v.valid and "no capture of the run holds a complete IKE handshake" in v.details
