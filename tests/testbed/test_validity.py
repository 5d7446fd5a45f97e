"""testbed/validity.py on real captures: Open5GS's own sample capture (plaintext SBI, NGAP,
GTP-U) passes as a baseline SBI run and fails when a run claims an overlay over it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testbed import manifest, validity
from tests.conftest import require_tools

SAMPLE = "open5gs-docs-pcaps/5g-roaming-lbo.pcapng"


def _run_with_capture(tmp_path: Path, shared_data: Path, profile: str) -> Path:
    require_tools("tshark")
    run = manifest.create(tmp_path, "sbi", profile, {"ITERATIONS": "1"}, datapath_facts={})
    shutil.copy(shared_data / SAMPLE, run / "it01-sbi.pcapng")
    manifest.add_file(run, "it01-sbi.pcapng", "pcap", {"iface": "sbi", "purpose": "validation", "iteration": 1})
    return run


def test_baseline_rule_on_plaintext_sbi(tmp_path: Path, shared_data: Path) -> None:
    run = _run_with_capture(tmp_path, shared_data, "baseline")
    v = validity.check_run(run)
    assert v.valid and v.protected_packets == 0 and v.plaintext_packets > 100, v.details
    m = manifest.load(run)
    assert m["valid"] is True and m["validity"]["plaintext_packets"] == v.plaintext_packets
    assert "tcp.port == 7777" in m["validity"]["details"]


@pytest.mark.parametrize("profile", ["aes256gcm-psk", "wireguard", "tls13-aes128gcm"])
def test_claimed_overlay_over_plaintext_is_invalid(tmp_path: Path, shared_data: Path, profile: str) -> None:
    run = _run_with_capture(tmp_path, shared_data, profile)
    v = validity.check_run(run)
    assert not v.valid, v.details
    m = manifest.load(run)
    assert m["valid"] is False and manifest.validate(m) == []


def test_baseline_with_overlay_traffic_or_nothing_is_invalid(tmp_path: Path) -> None:
    run = manifest.create(tmp_path, "n3", "baseline", {}, datapath_facts={})
    assert validity.check_run(run).details.startswith("no validation capture")
    assert manifest.load(run)["valid"] is False


def test_a_broken_capture_is_invalid_not_a_crash(tmp_path: Path) -> None:
    require_tools("tshark")
    run = manifest.create(tmp_path, "n3", "aes256gcm", {}, datapath_facts={})
    (run / "n3.pcap").write_bytes(b"not a capture")
    manifest.add_file(run, "n3.pcap", "pcap", {"iface": "n3", "purpose": "validation"})
    v = validity.check_run(run)
    assert not v.valid and "INVALID" in v.details
