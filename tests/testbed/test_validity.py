"""testbed/validity.py on real captures: Open5GS's own sample capture (plaintext SBI, NGAP,
GTP-U) passes as a baseline SBI run and fails when a run claims an overlay over it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ipsec import run_checks as ipsec_checks
from testbed import manifest, stack, validity
from testbed.nas import run_check as nas_check
from tests.conftest import require_tools
from wireguard import run_checks as wg_checks
from wireguard.overlay import LISTEN_PORT as WG_PORT

VALUES = stack.load()

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


def test_trap_runs_record_their_path_waits_and_a_fallback_is_invalid(tmp_path) -> None:
    """IPsec trap mode: the patched NFs' path-wait lines (patches/open5gs/0002) go into the
    manifest; one fallback (a request sent without the SA) makes the run invalid."""
    from testbed import manifest, validity
    run = manifest.create(tmp_path, "sbi", "aes128gcm-psk-trap", {"ITERATIONS": "1"})
    log = run / "it01-containers.log"
    log.write_text(
        "ausf-1  | 11/24 20:00:00.000: [sbi] INFO: path-wait: peer=10.100.1.10:7777 waited_us=12345 probes=13 result=ok\n"
        "amf-1   | 11/24 20:00:01.000: [sbi] INFO: path-wait: peer=10.100.1.12:7777 waited_us=2000 probes=3 result=ok\n")
    manifest.add_file(run, log.name, "log", {})
    waits = ipsec_checks.path_waits(run, manifest.load(run))
    assert waits["count"] == 2 and waits["fallbacks"] == 0 and waits["max_ms"] == 12.345
    assert ipsec_checks.trap_verdict(waits).valid
    v = validity.check_run(run)                      # no capture: invalid whatever the waits say
    assert not v.valid and "no validation capture" in v.details
    assert manifest.load(run)["path_waits"]["count"] == 2
    log.write_text(log.read_text() + "udm-1 | [sbi] WARNING: path-wait: peer=10.100.1.11:7777 waited_us=2000000 "
                   "probes=2000 result=fallback limit_ms=2000 (no path: sending anyway)\n")
    bad = ipsec_checks.trap_verdict(ipsec_checks.path_waits(run, manifest.load(run)))
    assert not bad.valid and "1 of 3 path waits fell back" in bad.details
    start = manifest.create(tmp_path, "sbi", "aes128gcm-psk", {"ITERATIONS": "1"})
    # start mode: no path waits to check or record
    assert not any(c.field == "path_waits" for c in validity.plugin_checks(start, manifest.load(start), VALUES))


def test_wireguard_cold_and_warm_are_proven_from_the_records(tmp_path) -> None:
    """run-sbi with WireGuard: the holders' reset records (every peer 0), no capture with a
    handshake after the reset -> invalid; warm ages over 120 s -> invalid."""
    from testbed import manifest, validity
    run = manifest.create(tmp_path, "sbi", "wireguard", {"ITERATIONS": "1"})
    for node in ("amf", "nrf"):
        p = run / f"it01-wg-reset-{node}.txt"
        p.write_text("1000\nwg0\tKEY1=\t0\nwg0\tKEY2=\t0\n")
        manifest.add_file(run, p.name, "log", {})
        w = run / f"it01-wg-before-warm-{node}.txt"
        w.write_text("1100\nwg0\tKEY1=\t1050\nwg0\tKEY2=\t900\n")      # 50 s and 200 s old
        manifest.add_file(run, w.name, "log", {})
    summary, verdict = wg_checks.sessions(run, manifest.load(run), WG_PORT)
    assert not verdict.valid
    assert any("no WireGuard handshake after the reset" in p for p in summary["problems"])
    assert any("older than 120 s" in p for p in summary["problems"])
    assert not any("sessions left" in p for p in summary["problems"])
    assert summary["iterations"]["it01"]["warm_max_age_s"] == 200
    # reset records with the time the reset began: a handshake since then is a session the live
    # core made after the reset (counted), one before it a leftover (invalid)
    reset = run / "it01-wg-reset-amf.txt"
    reset.write_text("1003 1001\nwg0\tKEY1=\t0\nwg0\tKEY2=\t1002\n")
    summary, _ = wg_checks.sessions(run, manifest.load(run), WG_PORT)
    assert not any("sessions left" in p for p in summary["problems"])
    assert summary["iterations"]["it01"]["remade_during_reset"] == 1
    reset.write_text("1003 1001\nwg0\tKEY1=\t0\nwg0\tKEY2=\t1000\n")
    summary, _ = wg_checks.sessions(run, manifest.load(run), WG_PORT)
    assert any("it01: sessions left after the reset" in p for p in summary["problems"])
    other = manifest.create(tmp_path, "sbi", "aes128gcm-psk", {"ITERATIONS": "1"})
    assert not any(c.field == "wireguard_sessions" for c in validity.plugin_checks(other, manifest.load(other), VALUES))


def test_each_covered_plane_needs_its_own_valid_capture(tmp_path: Path, shared_data: Path) -> None:
    """PLANE=n2,n4: one validation capture per plane, each checked for its plane (the sample holds
    plaintext NGAP and PFCP); a plane without its capture, or an overlay claimed over plaintext,
    makes the run invalid."""
    require_tools("tshark")

    def run_with(profile: str, ifaces: list[str]) -> Path:
        run = manifest.create(tmp_path, "sbi", profile, {"ITERATIONS": "1", "PLANE": "n4,n2"}, datapath_facts={})
        for iface in ifaces:
            shutil.copy(shared_data / SAMPLE, run / f"it01-{iface}.pcapng")
            manifest.add_file(run, f"it01-{iface}.pcapng", "pcap", {"iface": iface, "purpose": "validation"})
        return run

    v = validity.check_run(run_with("baseline", ["n2", "n4"]))
    assert v.valid and "ngap" in v.details and "pfcp" in v.details, v.details
    v = validity.check_run(run_with("baseline", ["n2"]))
    assert not v.valid and "no validation capture of the n4 plane" in v.details, v.details
    v = validity.check_run(run_with("aes128gcm-psk", ["n2", "n4"]))
    assert not v.valid and "n2: ESP 0" in v.details and "n4: ESP 0" in v.details, v.details


N2_CAPTURE = Path(__file__).resolve().parents[1] / "data" / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap"   # SMC: NEA0/NIA2


def _sbi_run_with_n2(tmp_path: Path, nas_choice: str, n2: Path = N2_CAPTURE) -> Path:
    require_tools("tshark")
    run = manifest.create(tmp_path, "sbi", "baseline", {"ITERATIONS": "1", "NAS": nas_choice}, datapath_facts={})
    shutil.copy(n2, run / "it01-n2.pcap")
    manifest.add_file(run, "it01-n2.pcap", "pcap", {"iface": "n2", "purpose": "timing", "iteration": 1})
    return run


def test_nas_choice_is_proven_from_the_n2_security_mode_command(tmp_path: Path) -> None:
    """run-sbi NAS=...: the choice is in the parameters, the proven one in the manifest's `nas`,
    and a run whose SMC shows another choice is invalid (real Open5GS capture: NEA0/NIA2)."""
    ok = _sbi_run_with_n2(tmp_path / "ok", "nea0-nia2")
    rec, verdict = nas_check.record(ok, manifest.load(ok))
    assert verdict is not None and verdict.valid, verdict
    assert rec["requested"] == "nea0-nia2" and rec["proven"] == "nea0-nia2" and rec["smc"] == 1
    validity.check_run(ok)                       # no SBI validation capture: invalid, but nas recorded
    m = manifest.load(ok)
    assert m["parameters"]["nas"] == "nea0-nia2" and m["nas"]["proven"] == "nea0-nia2"
    assert "NAS nea0-nia2: proven by 1 Security Mode Command" in m["validity"]["details"]
    assert manifest.validate(m) == []

    bad = _sbi_run_with_n2(tmp_path / "bad", "nea2-nia2")
    v = validity.check_run(bad)
    assert not v.valid and "select nea0-nia2, not the requested nea2-nia2 -> INVALID" in v.details
    assert manifest.load(bad)["nas"]["seen"] == ["nea0-nia2"]


def test_nas_without_a_request_is_recorded_and_unreadable_smc_is_invalid(tmp_path: Path) -> None:
    free = _sbi_run_with_n2(tmp_path / "free", "")
    rec, verdict = nas_check.record(free, manifest.load(free))
    assert verdict is None and rec["requested"] is None and rec["proven"] == "nea0-nia2"
    import subprocess
    head = tmp_path / "head.pcapng"
    subprocess.run(["editcap", "-r", str(N2_CAPTURE), str(head), "1-5"], check=True, capture_output=True)
    blind = _sbi_run_with_n2(tmp_path / "blind", "nea0-nia2", head)
    rec, verdict = nas_check.record(blind, manifest.load(blind))
    assert verdict is not None and not verdict.valid and "no Security Mode Command readable" in verdict.details
    assert rec["proven"] is None


def test_nas_param_is_checked_before_anything_starts() -> None:
    from testbed import runparams
    with pytest.raises(runparams.ParamError, match="NAS='nea3-nia1': unknown NAS choice"):
        runparams.validate("sbi", {"NAS": "nea3-nia1"})
    assert runparams.validate("sbi", {"NAS": "nea1-nia2"})["nas"] == "nea1-nia2"
    assert runparams.validate("sbi", {})["nas"] == ""


REAL_RUN = Path(__file__).resolve().parents[1] / "data" / "vm-results-n2n4" / "adhoc" / "sbi" / \
    "aes128gcm@n2+n4" / "20261125T084414Z-09a8"


def test_a_run_where_no_ue_attached_is_invalid_though_its_overlay_was_in_force(tmp_path: Path) -> None:
    """A real SBI run from the guest (tests/data/vm-results-n2n4): valid with its two UEs attached;
    the same run with every registration failed measured nothing and must not count as valid."""
    require_tools("tshark")
    run = tmp_path / "run"
    shutil.copytree(REAL_RUN, run)
    v = validity.check_run(run)
    assert v.valid and "2 of 2 UE registrations attached" in v.details, v.details
    m = manifest.load(run)
    for ue in m["ues"]:
        ue["attached"] = False
    m["attach_failures"] = [{"ue": u["name"], "attempt": 1, "iteration": 1, "final": True,
                             "reason": "no PDU session within 60s"} for u in m["ues"]]
    manifest.write(run, m)
    v = validity.check_run(run)
    assert not v.valid and "no UE attached: 2 registrations, 2 failed attempts" in v.details, v.details
    assert "n2: ESP 60" in v.details                 # the overlay itself was in force
    assert manifest.load(run)["valid"] is False
    m = manifest.load(run)
    m["ues"][0]["attached"] = True                      # one of two attached: a number, kept valid
    manifest.write(run, m)
    assert validity.check_run(run).valid
