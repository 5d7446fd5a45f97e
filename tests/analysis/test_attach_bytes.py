"""Signalling bytes per UE attach (analysis/attach_bytes.py) and the bytes section
(analysis/wire_bytes_report.py) on a real Open5GS N2 capture (tests/data/roastedbeans-open5gs-roaming/n1_n2_interfaces.pcap:
one registration with PDU session), checked against tshark counting the window on its own."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dtls import overhead as dtls_overhead
from analysis import attach_bytes, wire_bytes_report
from analysis.results import discover
from tests.analysis.results_tree import _manifest, _write_run
from tests.conftest import require_tools

N2 = Path(__file__).resolve().parents[1] / "data" / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap"
T0, T1 = "1746074502.498860829", "1746074503.229997676"     # its Registration Request / PDU Session Accept


def _tshark_window(pcap: Path) -> tuple[int, int]:
    out = subprocess.run(["tshark", "-n", "-r", str(pcap), "-Y",
                          f"frame.time_epoch >= {T0} && frame.time_epoch <= {T1}", "-T", "fields", "-e", "frame.len"],
                         capture_output=True, text=True, check=True).stdout.split()
    return len(out), sum(map(int, out))


def _tree(root: Path) -> Path:
    for profile, protocol, iters in (("baseline", "none", 2), ("dtls12-aes128gcm", "dtls", 2)):
        files, ues = [], []
        for it in range(1, iters + 1):
            files.append({"path": f"it{it:02d}-n2.pcap", "kind": "pcap", "bytes": 1,
                          "iface": "n2", "purpose": "timing", "iteration": it})
            ues.append({"name": "ue1", "imsi": "001011234567891", "role": "cold", "iteration": it,
                        "attempt": 1, "attached": True})
        m = _manifest("sbi", profile, protocol, f"20261125T0000{iters}0Z-{protocol}", files, plane="n2", ues=ues,
                      parameters={"nas": "nea0-nia2"})
        d = _write_run(root, m)
        for f in files:
            shutil.copy(N2, d / f["path"])
    return root


def test_window_counts_equal_tshark_on_a_real_capture() -> None:
    require_tools("tshark")
    times, lengths = attach_bytes.frames(N2)
    assert attach_bytes.in_window(times, lengths, float(T0), float(T1)) == _tshark_window(N2)


def test_per_attach_rows_summary_and_section(tmp_path: Path) -> None:
    require_tools("tshark")
    root = _tree(tmp_path / "results")
    runs = discover(root)
    rows = attach_bytes.run_rows(next(r for r in runs if r.profile == "baseline"))
    packets, nbytes = _tshark_window(N2)
    n2 = [r for r in rows if r["iface"] == "n2"]
    assert len(n2) == 2 and all((r["packets"], r["bytes"], r["role"]) == (packets, nbytes, "cold") for r in n2)
    assert [r["bytes"] for r in rows if r["iface"] == attach_bytes.ALL] == [nbytes, nbytes]
    table = attach_bytes.summary(attach_bytes.samples(root))
    prof = table[(table["profile"] == "dtls12-aes128gcm") & (table["iface"] == "n2")].iloc[0]
    assert prof["n_boots"] == 2 and prof["bytes_mean"] == nbytes and prof["bytes_overhead"] == 0
    assert prof["nas"] == "nea0-nia2" and prof["packets_mean"] == packets
    out = tmp_path / "out"
    text = wire_bytes_report.markdown_section(root, out)
    assert "### Signalling per UE attach" in text and "![bytes on the wire](wire-bytes.png)" in text
    assert (out / "attach-bytes.csv").is_file() and (out / "wire-bytes.png").stat().st_size > 0
    assert "aes128-sha256" in (out / "wire-bytes-analytic.csv").read_text()


@pytest.mark.parametrize("version,cipher,expected", [
    ("1.2", "ECDHE-ECDSA-AES128-GCM-SHA256", 37), ("1.2", "ECDHE-ECDSA-CHACHA20-POLY1305", 29),
    ("1.3", "TLS_AES_128_GCM_SHA256", 22)])
def test_dtls_record_overhead(version: str, cipher: str, expected: int) -> None:
    assert dtls_overhead.dtls_record_overhead(version, cipher) == expected


def test_relay_against_sctp() -> None:
    # UDP 8 + DTLS 37 against SCTP 12 + 16 (+ padding to 4): 17 B more for a 64 B message
    assert dtls_overhead.relay_overhead(64, "1.2", "ECDHE-ECDSA-AES128-GCM-SHA256") == 17
    assert dtls_overhead.relay_overhead(63) == 8 - 29
