"""analysis/counterparts.py: every profile is matched to the papers' configuration or marked."""
from __future__ import annotations

from analysis.counterparts import COLUMNS, counterpart_frame
from testbed import profiles


def _row(frame, profile: str, plane: str) -> dict:
    rows = frame[(frame["profile"] == profile) & (frame["plane"] == plane)]
    assert len(rows) == 1, (profile, plane)
    return rows.iloc[0].to_dict()


def test_one_row_per_profile_and_plane_of_the_catalogue() -> None:
    frame = counterpart_frame()
    assert list(frame.columns) == COLUMNS
    expected = sum(len(p.planes) for p in profiles.load().values())
    assert len(frame) == expected
    assert frame["counterpart"].str.len().min() > 0        # matched or a stated reason, never blank


def test_ipsec_modes_and_planes_match_what_the_2025_paper_ran() -> None:
    frame = counterpart_frame()
    n3 = _row(frame, "aes256gcm", "n3")
    assert "N3 (Fig. 2)" in n3["counterpart"] and "64 B" in n3["compared"]
    psk_trap = _row(frame, "aes128gcm-psk-trap", "sbi")
    assert "sbi-cold-ipsec-psk-trap" in psk_trap["references"]
    start = _row(frame, "aes128gcm", "sbi")
    assert "sbi-cold-ipsec-start" in start["references"] and "sbi-cold-ipsec-psk-trap" not in start["references"]
    for mode in ("trap-drop", "trap-queue"):
        row = _row(frame, f"aes128gcm-{mode}", "sbi")
        assert row["counterpart"].startswith("no counterpart") and mode in row["counterpart"]
        assert row["references"] == ""


def test_each_tls_suite_only_under_its_own_paper_and_its_twin_named() -> None:
    frame = counterpart_frame()
    r2025 = _row(frame, "tls12-aes128gcm", "sbi")
    r2024 = _row(frame, "tls12-ecdsa-aes128gcm", "sbi")
    assert "WiSec 2025" in r2025["counterpart"] and "WiSec 2024" not in r2025["counterpart"]
    assert "WiSec 2024" in r2024["counterpart"] and "WiSec 2025" not in r2024["counterpart"]
    # the same settings under each paper's name: named on both rows, never silently merged
    assert r2025["same_settings_as"] == "tls12-ecdsa-aes128gcm"
    assert r2024["same_settings_as"] == "tls12-aes128gcm"
    chacha = _row(frame, "tls13-rsa-chacha20", "sbi")
    assert "tls-chacha-cold" in chacha["references"] and "tls-gcm-cold" not in chacha["references"]
    assert "tls-rsa-cold" in chacha["references"] and "tls-ecdsa-cold" not in chacha["references"]


def test_a_subset_still_names_twins_from_the_whole_catalogue() -> None:
    frame = counterpart_frame(["tls13-aes256gcm", "baseline"])
    assert set(frame["profile"]) == {"tls13-aes256gcm", "baseline"}
    assert _row(frame, "tls13-aes256gcm", "sbi")["same_settings_as"] == "tls13-ecdsa-aes256gcm"
    assert "baseline" in _row(frame, "baseline", "sbi")["counterpart"]


def test_ran_interfaces_match_the_wisec_2026_values() -> None:
    frame = counterpart_frame()
    e1 = _row(frame, "aes128gcm", "e1")
    assert set(e1["references"].split(", ")) == {"e1-ipsec", "e1-ipsec-aes128gcm"}
    assert "WiSec 2026" in e1["counterpart"]
    assert _row(frame, "aes256cbc", "f1u")["references"] == "f1u-ipsec"
    # the DTLS profiles are the paper's DTLS (printed net of the relay); the relay-only run is not
    dtls = _row(frame, "dtls12-aes128gcm", "f1c")
    assert dtls["references"] == "f1c-dtls"
    relay = _row(frame, "dtls-relay-plain", "f1c")
    assert relay["references"] == "" and "relay's own cost" in relay["counterpart"]
    # a suite the paper did not run on the RAN's interfaces is said so
    wg = _row(frame, "wireguard", "f1u")
    assert wg["references"] == "" and wg["counterpart"].startswith("no counterpart")
