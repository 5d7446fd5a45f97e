"""testbed/validity.py for the split RAN's experiments, with real tshark on captures made here by
text2pcap (no SCTP in this kernel to capture F1AP/E1AP live): run-ran-procedures' F1-C and E1
timing captures prove (or refute) the overlay on their own interface; run-f1u's validation
captures are checked for the interface they name."""
from __future__ import annotations

import subprocess
from pathlib import Path

from testbed import manifest, stack, validity
from tests.conftest import require_tools

HEX = "0000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n"


def _pcap(path: Path, *opts: str) -> None:
    src = path.with_suffix(".txt")
    src.write_text(HEX)
    subprocess.run(["text2pcap", "-q", *opts, str(src), str(path)], check=True, capture_output=True, timeout=30)


def _sctp(path: Path, a: str, b: str, port: int, ppi: int) -> None:
    _pcap(path, "-4", f"{a},{b}", "-S", f"{port},{port},{ppi}")


def _esp(path: Path, a: str, b: str) -> None:
    _pcap(path, "-4", f"{a},{b}", "-i", "50")


def _procedures_run(tmp_path: Path) -> Path:
    require_tools("tshark", "text2pcap")
    v = stack.load()
    run = manifest.create(tmp_path, "ran-procedures", "baseline", {"REGISTRATIONS": "1"}, datapath_facts={})
    _sctp(run / "f1c.pcap", stack.address("du", "f1c"), stack.address("cucp", "f1c"), v["f1ap_port"], 62)
    _sctp(run / "e1.pcap", stack.address("cuup", "e1"), stack.address("cucp", "e1"), v["e1ap_port"], 64)
    _sctp(run / "n2.pcap", stack.address("cucp", "n2"), stack.address("amf", "n2"), v["ngap_port"], 60)
    for iface in ("f1c", "e1", "n2"):
        manifest.add_file(run, f"{iface}.pcap", "pcap", {"iface": iface, "purpose": "timing"})
    return run


def test_procedure_captures_validate_a_baseline_run(tmp_path: Path) -> None:
    run = _procedures_run(tmp_path)
    v = validity.check_run(run)
    assert v.valid, v.details
    assert "f1c.pcap" in v.details and "e1.pcap" in v.details and "n2.pcap" not in v.details
    assert "sctp.port == 38472 || f1ap)" in v.details and "sctp.port == 38462 || e1ap)" in v.details
    m = manifest.load(run)
    # the programs are read from the images (none here); the pinned OAI version from stack.yaml
    assert m["valid"] is True and m["versions"]["ueransim"] is None and m["versions"]["oai_pinned"] == "v2.3.0"
    assert manifest.validate(m) == []


def test_overlay_traffic_on_e1_of_a_baseline_run_is_invalid(tmp_path: Path) -> None:
    run = _procedures_run(tmp_path)
    _esp(run / "e1.pcap", stack.address("cuup", "e1"), stack.address("cucp", "e1"))
    v = validity.check_run(run)
    assert not v.valid and "e1.pcap: baseline: 1 overlay packets" in v.details, v.details


def test_a_procedures_run_without_its_interface_captures_is_invalid(tmp_path: Path) -> None:
    require_tools("tshark", "text2pcap")
    run = manifest.create(tmp_path, "ran-procedures", "baseline", {}, datapath_facts={})
    _sctp(run / "n2.pcap", stack.address("cucp", "n2"), stack.address("amf", "n2"), 38412, 60)
    manifest.add_file(run, "n2.pcap", "pcap", {"iface": "n2", "purpose": "timing"})
    v = validity.check_run(run)
    assert not v.valid and "no validation capture" in v.details
    assert [f["path"] for f in manifest.load(run)["files"] if validity.validates(f, "ran-procedures")] == []


def test_f1u_validation_captures_are_checked_for_their_interface(tmp_path: Path) -> None:
    require_tools("tshark", "text2pcap")
    run = manifest.create(tmp_path, "f1u", "baseline", {"SCOPE": "e2e"}, datapath_facts={})
    _pcap(run / "f1u.pcap", "-4", f"{stack.address('du', 'f1u')},{stack.address('cuup', 'f1u')}", "-u", "2152,2152")
    _pcap(run / "n3.pcap", "-4", f"{stack.address('cuup', 'n3')},{stack.address('upf', 'n3')}", "-u", "2152,2152")
    for iface in ("f1u", "n3"):
        manifest.add_file(run, f"{iface}.pcap", "pcap", {"iface": iface, "purpose": "validation"})
    v = validity.check_run(run)
    assert v.valid, v.details
    m = manifest.load(run)
    assert "n3.pcap: baseline" in v.details and "f1u.pcap: baseline" in v.details
    assert m["parameters"]["scope"] == "e2e" and m["parameters"]["ran"] == "split" and m["plane"] == "n3,f1u"


def test_a_ping_files_path_attribute_does_not_replace_its_path(tmp_path: Path) -> None:
    """run-f1u records path=f1u|e2e on every ping file: kept in the entry's nested attrs (the
    analysis reads both levels), the entry's own path untouched, the schema satisfied."""
    run = manifest.create(tmp_path, "f1u", "baseline", {}, datapath_facts={})
    (run / "ping-s1032-set01.txt").write_text("PING\n")
    manifest.add_file(run, "ping-s1032-set01.txt", "ping", {"size": 1032, "set": 1, "warmup": False, "path": "e2e"})
    entry = manifest.load(run)["files"][0]
    assert entry["path"] == "ping-s1032-set01.txt" and entry["attrs"] == {"path": "e2e"} and entry["size"] == 1032
    assert manifest.validate(manifest.load(run)) == []
