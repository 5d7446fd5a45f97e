from pathlib import Path

import pytest

from testbed import tshark
from tests.conftest import require_tools


def test_counts_and_fields_on_a_real_capture(shared_data: Path) -> None:
    require_tools("tshark")
    pcap = shared_data / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap"
    assert tshark.count(pcap, "ngap") == 14            # SOURCE.md: 14 frames carry NGAP
    rows = tshark.fields(pcap, "frame.number == 18", ["ngap.procedureCode"])
    assert rows == [["46,46"]]                          # two NGAP PDUs bundled in one frame


def test_unreadable_capture_names_the_file(tmp_path: Path) -> None:
    require_tools("tshark")
    bad = tmp_path / "not-a-capture.pcap"
    bad.write_bytes(bytes(range(7, 107)))              # no capture format starts like this
    with pytest.raises(tshark.TsharkError, match="not-a-capture.pcap"):
        tshark.count(bad, "ip")
    with pytest.raises(tshark.TsharkError, match="missing.pcap"):
        tshark.count(tmp_path / "missing.pcap", "ip")
