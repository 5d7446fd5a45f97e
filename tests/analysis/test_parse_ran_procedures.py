"""analysis/parse/ran_procedures.py: both start points per registration, paired per UE, on the
authors' real captures (their res.txt values to the printed digit), on captures edited with the
real Wireshark tools (a lost response, a capture without the messages), and the pairing rules on
event sequences that no single real capture holds (two UEs interleaved, failures, stale starts)."""
from __future__ import annotations

import subprocess

import pytest

from analysis.parse.ran_procedures import (Event, INITIATING, SUCCESSFUL, UNSUCCESSFUL, events_from_records,
                                           FIELDS, pair, per_file, procedure_times, row_dicts)
from analysis.parse.rwth_txt import parse_rwth
from tests.analysis.capture_tools import numbered
from tests.conftest import require_tools

RW = "rwth-internal-ran-security"


@pytest.fixture(autouse=True)
def _tools():
    require_tools("tshark", "editcap")


def test_one_capture_both_start_points(shared):
    f = procedure_times(shared / RW / "e1-socat-overhead" / "0.pcap", ["e1"])
    assert len(f) == 1
    r = f.iloc[0]
    assert (r["status"], r["ue"], r["peer_ue"], r["amf_ue"]) == ("complete", "1", "1", "1")
    assert (r["frame_ngap"], r["frame_request"], r["frame_response"]) == (12, 13, 16)
    assert f"{r['request_ms']:.6f}" == "1.275662"     # E1AP request 13 -> response 16 (the paper's)
    assert f"{r['ngap_ms']:.6f}" == "3.175151"        # NGAP 12 -> response 16, full ns timestamps
    assert f"{r['ngap_ms_us']:.3f}" == "3.175"        # res.txt line 1 (microseconds first, as theirs)
    # an E1-only capture says nothing about F1-C: no rows for it
    assert procedure_times(shared / RW / "e1-socat-overhead" / "0.pcap", ["f1c"]).empty


def test_e1_captures_give_res_txt_lines_1_to_30(shared):
    caps = numbered(shared / RW / "e1-socat-overhead")
    f = per_file(caps, ["e1"])
    assert list(f["capture"]) == [str(c) for c in caps] and set(f["status"]) == {"complete"}
    expected = parse_rwth(shared / RW / "e1-socat-overhead" / "res.txt").values["value"].tolist()[:30]
    assert [round(v, 3) for v in f["ngap_ms_us"]] == expected
    assert (f["request_ms"] < f["ngap_ms"]).all() and f["request_ms"].between(1.1, 1.8).all()


def test_f1c_captures_fast_mode_gives_res_txt_lines_1_to_9(shared):
    caps = numbered(shared / RW / "f1c-socat-overhead")
    f = per_file(caps, ["f1c"])
    assert len(f) == 20 and set(f["status"]) == {"complete"}
    values = [round(v, 3) for v in f["ngap_ms_us"]]
    expected = parse_rwth(shared / RW / "f1c-socat-overhead" / "res.txt").values["value"].tolist()[:9]
    assert [v for v in values if v < 50] == expected           # the authors' cut (SOURCE.md)
    assert all(185 < v < 205 for v in values if v >= 50)       # the slow mode they dropped
    # the slow mode is the DU's UE Context Setup itself (request -> response), not the CU-CP
    slow = f[f["ngap_ms"] > 50]
    assert (slow["request_ms"] > 180).all() and (f.loc[f["ngap_ms"] < 50, "request_ms"] < 1.3).all()
    assert f["peer_ue"].str.fullmatch(r"\d+").all()            # gNB-DU-UE-F1AP-IDs


def test_lost_response_and_capture_without_messages_are_rows(shared, tmp_path):
    src = shared / RW / "e1-socat-overhead" / "0.pcap"
    cut = tmp_path / "cut.pcap"               # frames 1-15: the response (frame 16) is missing
    subprocess.run(["editcap", "-r", str(src), str(cut), "1-15"], check=True)
    empty = tmp_path / "empty.pcap"           # frames 1-5: before the PDU session
    subprocess.run(["editcap", "-r", str(src), str(empty), "1-5"], check=True)
    f = per_file([cut, empty], ["e1"])
    assert list(f["status"]) == ["missing_response", "no_messages"]
    assert f["request_ms"].isna().all() and f["ngap_ms"].isna().all()
    assert f.iloc[0]["frame_request"] == 13 and f.iloc[1]["interface"] == ""


def _ev(ns: int, proto: str, code: int, pdu: int, ue: str, frame: int = 0, peer: str = "") -> Event:
    return Event(ns, f"{ns // 10**9}.{ns % 10**9:09d}", frame or ns, "x", proto, code, pdu, ue, peer)


def test_pairs_per_ue_where_time_order_would_not():
    ms = 1_000_000
    # UE 1 and UE 2 interleaved: the time-order rule (latest start, next stop) would give UE 1's
    # response the start of UE 2
    ev = [_ev(0, "ngap", 29, INITIATING, "1"), _ev(1 * ms, "ngap", 29, INITIATING, "2"),
          _ev(2 * ms, "e1ap", 8, INITIATING, "1"), _ev(3 * ms, "e1ap", 8, INITIATING, "2"),
          _ev(5 * ms, "e1ap", 8, SUCCESSFUL, "1"), _ev(9 * ms, "e1ap", 8, SUCCESSFUL, "2")]
    rows = {d["ue"]: d for d in row_dicts(pair(ev, "e1"))}
    assert (rows["1"]["ngap_ms"], rows["1"]["request_ms"]) == (5.0, 3.0)
    assert (rows["2"]["ngap_ms"], rows["2"]["request_ms"]) == (8.0, 6.0)


def test_every_outcome_has_its_status():
    ms = 1_000_000
    ev = [_ev(0, "ngap", 29, INITIATING, "1"),                      # UE 1: failure
          _ev(1 * ms, "f1ap", 5, INITIATING, "1"), _ev(2 * ms, "f1ap", 5, UNSUCCESSFUL, "1"),
          _ev(3 * ms, "f1ap", 5, INITIATING, "2"), _ev(4 * ms, "f1ap", 5, SUCCESSFUL, "2"),   # no NGAP start
          _ev(5 * ms, "ngap", 29, INITIATING, "3"), _ev(6 * ms, "f1ap", 5, SUCCESSFUL, "3"),  # no request
          _ev(7 * ms, "ngap", 29, INITIATING, "4"),                                         # never followed
          _ev(8 * ms, "f1ap", 5, INITIATING, "5"),                                          # never answered
          _ev(9 * ms, "f1ap", 5, INITIATING, "6"), _ev(2000 * ms, "f1ap", 5, INITIATING, "6"),  # resent, 2 s
          _ev(2001 * ms, "f1ap", 5, SUCCESSFUL, "6"),
          _ev(3000 * ms, "f1ap", 5, INITIATING, "7"), _ev(3000 * ms + 200_000, "f1ap", 5, INITIATING, "7"),
          _ev(3002 * ms, "f1ap", 5, SUCCESSFUL, "7")]                # a copy 0.2 ms later: counted once
    got = [(d["ue"], d["status"], d["request_ms"], d["ngap_ms"], d["copies"]) for d in row_dicts(pair(ev, "f1c"))]
    nan = [g for g in got if g[2] != g[2]]
    assert [(u, s) for u, s, *_ in got] == [
        ("1", "failure"), ("2", "no_ngap_start"), ("3", "missing_request"), ("4", "missing_procedure"),
        ("5", "missing_response"), ("6", "missing_response"), ("6", "no_ngap_start"), ("7", "no_ngap_start")]
    by = {(u, s): (r, n, c) for u, s, r, n, c in got}
    assert by[("2", "no_ngap_start")][0] == 1.0 and by[("3", "missing_request")][1] == 1.0
    assert by[("6", "no_ngap_start")][0] == 1.0 and by[("7", "no_ngap_start")][0] == 2.0 and by[("7", "no_ngap_start")][2] == 1
    assert len(nan) == 5      # no request_ms: failure, missing request, missing procedure, two unanswered


def test_bundled_pdus_are_lined_up_with_their_ue_ids():
    # one SCTP packet with an F1AP DLRRCMessageTransfer (12) of UE 2 and the UEContextSetupRequest
    # (5) of UE 1, as tshark prints them with -E occurrence=a
    rec = dict.fromkeys(FIELDS, "")
    rec.update({"frame.number": "7", "frame.time_epoch": "1755958613.416826028", "f1ap.procedureCode": "12,5",
                "f1ap.F1AP_PDU": "0,0", "f1ap.GNB_CU_UE_F1AP_ID": "2,1", "f1ap.GNB_DU_UE_F1AP_ID": "77"})
    ev = events_from_records([[rec[f] for f in FIELDS]])
    assert [(e.code, e.ue, e.pdu) for e in ev] == [(12, "2", INITIATING), (5, "1", INITIATING)]


def test_unknown_interface_is_a_clear_error(shared):
    with pytest.raises(ValueError, match="valid: e1, f1c"):
        procedure_times(shared / RW / "e1-socat-overhead" / "0.pcap", ["f1u"])
