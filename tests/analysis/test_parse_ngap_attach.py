"""analysis/parse/ngap_attach.py on real Open5GS captures: the attach times their owners
extracted (SOURCE.md tables), several UEs in one capture, missing messages, NGAP-only mode."""
from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis.parse.ngap_attach import (CSV_COLUMNS, STATUS_COMPLETE, STATUS_NO_ACCEPT, STATUS_NO_REQUEST,
                                        attach_times, to_csv)
from tests.analysis.capture_tools import first_packet_times, in_time_order, merge, numbered
from tests.conftest import require_tools

F1C = "rwth-internal-ran-security/f1c-socat-overhead"


@pytest.fixture(autouse=True)
def _tshark():
    require_tools("tshark", "mergecap", "editcap")


@pytest.mark.parametrize("mode", ["auto", "nas", "ngap"])
def test_open5gs_docs_capture_matches_source_table(shared, mode):
    frame = attach_times(shared / "open5gs-docs-pcaps" / "5g-roaming-lbo.pcapng", mode=mode)
    done = frame[frame["status"] == STATUS_COMPLETE]
    assert len(done) == 1
    row = done.iloc[0]
    assert int(row["frame_registration_request"]) == 1900 and int(row["frame_pdu_session_accept"]) == 2444
    assert f"{row['attach_ms']:.6f}" == "150.986991"
    assert row["ran_ue_ngap_id"] == "1" and row["amf_ue_ngap_id"] == "1"
    if mode != "ngap":   # the later InitialUEMessage carries a Deregistration Request: not a registration
        assert len(frame) == 1
    else:     # NGAP alone cannot tell: it is reported, with what is missing, not dropped
        assert frame["status"].tolist() == [STATUS_COMPLETE, STATUS_NO_ACCEPT]
        assert int(frame.iloc[1]["frame_registration_request"]) == 2497


@pytest.mark.parametrize("mode", ["auto", "nas", "ngap"])
def test_roastedbeans_capture_with_bundled_chunks(shared, mode):
    frame = attach_times(shared / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap", mode=mode)
    assert frame["status"].tolist() == [STATUS_COMPLETE]
    row = frame.iloc[0]
    assert (int(row["frame_registration_request"]), int(row["frame_pdu_session_accept"])) == (9, 21)
    assert f"{row['attach_ms']:.6f}" == "731.136847"
    assert row["gnb"] == "10.33.33.4:38412"
    if mode != "ngap":
        assert row["msin"] == "1234567891"


@pytest.fixture(scope="module")
def f1c_merged(shared, tmp_path_factory) -> Path:
    """The 20 real F1-C captures (one UE each) merged into one capture: 20 UEs."""
    require_tools("mergecap")
    return merge(numbered(shared / F1C), tmp_path_factory.mktemp("n2") / "f1c-20-ues.pcapng")


def test_twenty_ues_in_one_capture_each_get_their_time(f1c_merged):
    frame = attach_times(f1c_merged)
    assert len(frame) == 20 and (frame["status"] == STATUS_COMPLETE).all()
    assert frame["ue"].nunique() == 20
    # SOURCE.md: 95.7-132.3 ms in files 0-19
    assert f"{frame['attach_ms'].min():.1f}" == "95.7" and f"{frame['attach_ms'].max():.1f}" == "132.3"
    for mode in ("nas", "ngap"):
        assert attach_times(f1c_merged, mode=mode)["attach_ms"].tolist() == frame["attach_ms"].tolist()


def test_ciphered_nas_view_falls_back_to_ngap(shared, f1c_merged):
    """What tshark shows when NAS is really ciphered: no NAS message types at all. The same
    real captures with the NAS columns emptied must give the NGAP-only result in auto mode."""
    from analysis.parse.ngap_attach import FIELDS, FILTERS, PREFS_NAS, attach_times_from_table
    from analysis.parse.tshark import tshark_fields
    for capture in (f1c_merged, shared / "open5gs-docs-pcaps" / "5g-roaming-lbo.pcapng"):
        table = tshark_fields(capture, FIELDS, FILTERS["auto"], prefs=PREFS_NAS)
        blind = table.assign(**{c: "" for c in FIELDS if c.startswith("nas_5gs.")})
        auto = attach_times_from_table(blind, mode="auto")
        ngap = attach_times(capture, mode="ngap")
        # msin (and so the attempt number per subscriber) is only readable where NAS is not ciphered
        assert auto.drop(columns=["msin", "attempt"]).equals(ngap.drop(columns=["msin", "attempt"]))
        assert (auto["status"] == STATUS_COMPLETE).sum() >= 1


def test_interleaved_ues_are_kept_apart(shared, f1c_merged, tmp_path):
    """Shift every capture so that all 20 registrations overlap in time (2 ms apart)."""
    base = attach_times(f1c_merged).sort_values("t_registration_request")
    files = in_time_order(numbered(shared / F1C))          # same order as the rows of ``base``
    starts = first_packet_times(files)
    parts = []
    for k, (f, t_req) in enumerate(zip(files, base["t_registration_request"])):
        offset = float(t_req) - starts[f]                   # registration request, file-relative
        shift = 1_800_000_000.0 + 0.002 * k - offset - starts[f]
        shifted = tmp_path / f"s{k}.pcapng"
        subprocess.run(["editcap", "-F", "pcapng", "-t", f"{shift:.9f}", str(f), str(shifted)], check=True)
        parts.append(shifted)
    frame = attach_times(merge(parts, tmp_path / "interleaved.pcapng")).set_index("ue")
    assert len(frame) == 20 and (frame["status"] == STATUS_COMPLETE).all()
    assert frame["t_registration_request"].max() - frame["t_registration_request"].min() < 0.05   # overlapping
    assert (frame["attach_ms"].round(3).to_dict() == base.set_index("ue")["attach_ms"].round(3).to_dict())


def test_missing_messages_give_rows_that_say_so(shared, tmp_path):
    # E1 capture: AMF->gNB direction only, so the Registration Request is missing
    late = attach_times(shared / "rwth-internal-ran-security" / "e1-socat-overhead" / "0.pcap")
    assert late["status"].tolist() == [STATUS_NO_REQUEST]
    assert late["attach_ms"].isna().all()
    # F1-C capture cut before the PDU Session Establishment Accept (frame 81)
    cut = tmp_path / "cut.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", "-r", str(shared / F1C / "0.pcap"), str(cut), "1-80"], check=True)
    early = attach_times(cut)
    assert early["status"].tolist() == [STATUS_NO_ACCEPT]
    text = to_csv(early)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["attach_ms"] == "" and rows[0]["t_pdu_session_accept"] == ""
    assert rows[0]["t_registration_request"] == "1756463394.071410474"


def test_csv_has_the_promised_columns(shared):
    text = to_csv(attach_times(shared / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap"))
    header, row = text.splitlines()
    assert header.split(",") == CSV_COLUMNS
    assert header.startswith("ue,t_registration_request,t_pdu_session_accept,attach_ms,status")
    assert "1746074502.498860829,1746074503.229997676,731.136847,complete" in row


def test_capture_without_ngap_gives_no_rows(shared):
    assert attach_times(shared / "roastedbeans-open5gs-roaming" / "n32_interfaces.pcap").empty


def _table(rows: list[dict]) -> "pd.DataFrame":
    import pandas as pd
    from analysis.parse.ngap_attach import FIELDS
    return pd.DataFrame([{f: str(r.get(f, "")) for f in FIELDS} for r in rows], columns=FIELDS, dtype=str)


def _initial(frame: int, t: float, ran: str, nas: str, msin: str = "") -> dict:
    return {"frame.number": frame, "frame.time_epoch": f"{t:.9f}", "ip.src": "10.0.0.1", "ip.dst": "10.0.0.2",
            "sctp.srcport": "38412", "sctp.dstport": "38412", "ngap.procedureCode": "15",
            "ngap.RAN_UE_NGAP_ID": ran, "ngap.InitialUEMessage_element": "1",
            "nas_5gs.mm.message_type": nas, "nas_5gs.mm.suci.msin": msin}


def _accept(frame: int, t: float, ran: str, amf: str) -> dict:
    return {"frame.number": frame, "frame.time_epoch": f"{t:.9f}", "ip.src": "10.0.0.2", "ip.dst": "10.0.0.1",
            "sctp.srcport": "38412", "sctp.dstport": "38412", "ngap.procedureCode": "29",
            "ngap.RAN_UE_NGAP_ID": ran, "ngap.AMF_UE_NGAP_ID": amf,
            "ngap.PDUSessionResourceSetupRequest_element": "1", "nas_5gs.sm.message_type": "0xc2"}


def test_a_service_request_closes_the_registration_window_and_is_no_row() -> None:
    """UE 1 registers but gets no accept; then a Service Request (0x4c) on the same RAN id is
    answered with a PDU session: not a registration, no orphan row, and the failed registration
    does not borrow that accept."""
    from analysis.parse.ngap_attach import attach_times_from_table
    table = _table([_initial(1, 10.0, "1", "0x41", "0000000001"),
                    _initial(2, 20.0, "1", "0x4c"),
                    _accept(3, 20.5, "1", "7")])
    out = attach_times_from_table(table, mode="auto")
    assert len(out) == 1, out
    row = out.iloc[0]
    assert row["status"] == STATUS_NO_ACCEPT and row["frame_registration_request"] == 1 and row["attempt"] == 1


def test_re_registrations_carry_their_attempt_number() -> None:
    from analysis.parse.ngap_attach import attach_times_from_table
    table = _table([_initial(1, 10.0, "1", "0x41", "0000000001"), _accept(2, 10.2, "1", "7"),
                    _initial(3, 30.0, "2", "0x41", "0000000001"), _accept(4, 30.1, "2", "8"),
                    _initial(5, 31.0, "3", "0x41", "0000000002"), _accept(6, 31.1, "3", "9")])
    out = attach_times_from_table(table, mode="auto")
    assert list(out["attempt"]) == [1, 2, 1] and (out["status"] == STATUS_COMPLETE).all()
    assert list(out["attach_ms"].round(3)) == [200.0, 100.0, 100.0]
