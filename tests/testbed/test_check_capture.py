"""`python -m testbed check-capture`: one capture against a profile, plane and NAS choice (the
guest's manual check of a stack it brought up), on the real Open5GS N2 capture."""
from __future__ import annotations

from pathlib import Path

import pytest

from testbed.cli import main
from tests.conftest import require_tools

N2 = Path(__file__).resolve().parents[1] / "data" / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap"


def test_plaintext_n2_is_a_valid_baseline_and_no_relay(capsys: pytest.CaptureFixture[str]) -> None:
    require_tools("tshark")
    assert main(["check-capture", str(N2), "--profile", "baseline", "--plane", "n2", "--nas", "nea0-nia2"]) == 0
    out = capsys.readouterr().out
    assert "VALID: baseline" in out and "sctp.port == 38412 || ngap" in out and "NAS VALID: 1 Security Mode Command" in out
    assert main(["check-capture", str(N2), "--profile", "dtls12-aes128gcm", "--plane", "n2"]) == 1
    assert "INVALID: dtls n2" in capsys.readouterr().out
    assert main(["check-capture", str(N2), "--profile", "baseline", "--plane", "n2", "--nas", "nea2-nia2"]) == 1
    assert main(["check-capture", str(N2), "--profile", "dtls13-aes128gcm", "--plane", "n2"]) == 2
    assert "refused on this testbed" in capsys.readouterr().err
