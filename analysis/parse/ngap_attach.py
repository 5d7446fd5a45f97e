"""UE attach times from an N2 (NGAP) capture, per UE, with one tshark call.

Attach time = NAS-5GS Registration Request (inside the NGAP InitialUEMessage, gNB -> AMF) to the
PDU Session Establishment Accept (inside the NGAP message from the AMF that carries it, the
PDUSessionResourceSetupRequest). Messages are associated per UE by the gNB's SCTP endpoint and
the RAN-UE-NGAP-ID (the AMF-UE-NGAP-ID is recorded and used to tell a re-used RAN id apart).

Three modes (``mode``):

- ``"nas"`` (NAS null ciphering, the Open5GS default): NAS is deciphered with
  ``nas-5gs.null_decipher``; start = InitialUEMessage whose NAS holds a Registration Request
  (0x41), end = first NGAP downlink message of that UE holding PDU Session Establishment
  Accept (0xc2). Other initial messages (Service Request, Deregistration) are not registrations:
  such a message closes the UE's open registration window (the registration stays without an
  accept, and the accept that follows answers the other procedure: no row for it).
- ``"ngap"`` (real NAS ciphering: only NGAP tells messages apart): start = every
  InitialUEMessage, end = the first PDUSessionResourceSetupRequest for that UE.
- ``"auto"`` (default): per message, the NAS rule where tshark could decode the NAS and the
  NGAP rule where it could not (ciphered). Same result as ``"nas"`` on null-ciphered captures,
  as ``"ngap"`` where every NAS message is ciphered.

Several NGAP PDUs bundled in one SCTP packet are handled (``-E occurrence=a``). A registration
whose end (or start) is not in the capture gives a row whose ``status`` says what is missing
and whose ``attach_ms`` is empty. ``attempt`` numbers the registrations of one subscriber (SUCI
MSIN, where NAS is readable) in the capture: attempt > 1 is a retry or a re-registration, left
out of the cold statistics (analysis/datasets.py).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.parse.tshark import epoch_ns_text, field_values, last_value, ns_epoch_text, tshark_records

if TYPE_CHECKING:      # pandas only where a frame is asked for: `attach-times` runs without it
    import pandas as pd

log = logging.getLogger(__name__)

INITIAL_UE_MESSAGE = 15
PDU_SESSION_RESOURCE_SETUP = 29
DOWNLINK_NAS_TRANSPORT = 4
INITIAL_CONTEXT_SETUP = 14
# NGAP procedures whose every message carries a RAN-UE-NGAP-ID (TS 38.413); used to line up the
# ids with the PDUs when a frame bundles UE-associated and other PDUs.
ALWAYS_RAN_ID = frozenset({4, 14, 15, 19, 26, 27, 28, 29, 30, 37, 40, 42, 44, 46})
NAS_REGISTRATION_REQUEST = "0x41"
NAS_PDU_SESSION_ESTABLISHMENT_ACCEPT = "0xc2"

FIELDS = [
    "frame.number", "frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst",
    "sctp.srcport", "sctp.dstport", "ngap.procedureCode", "ngap.RAN_UE_NGAP_ID",
    "ngap.AMF_UE_NGAP_ID", "ngap.InitialUEMessage_element",
    "ngap.PDUSessionResourceSetupRequest_element", "nas_5gs.mm.message_type",
    "nas_5gs.sm.message_type", "nas_5gs.mm.suci.msin",
]
PREFS_NAS = {"nas-5gs.null_decipher": "TRUE"}
FILTER_NAS = ("ngap.InitialUEMessage_element || "
              f"(ngap && nas_5gs.sm.message_type == {NAS_PDU_SESSION_ESTABLISHMENT_ACCEPT})")
FILTER_NGAP = "ngap.InitialUEMessage_element || ngap.PDUSessionResourceSetupRequest_element"
FILTERS = {"nas": FILTER_NAS, "ngap": FILTER_NGAP,
           "auto": f"{FILTER_NGAP} || (ngap && nas_5gs.sm.message_type == {NAS_PDU_SESSION_ESTABLISHMENT_ACCEPT})"}
MODES = tuple(FILTERS)

COLUMNS = ["ue", "t_registration_request", "t_pdu_session_accept", "attach_ms", "status",
           "gnb", "ran_ue_ngap_id", "amf_ue_ngap_id", "msin", "attempt",
           "frame_registration_request", "frame_pdu_session_accept",
           "ns_registration_request", "ns_pdu_session_accept"]
CSV_COLUMNS = COLUMNS[:-2]

STATUS_COMPLETE = "complete"
STATUS_NO_ACCEPT = "missing_pdu_session_accept"
STATUS_NO_REQUEST = "missing_registration_request"


@dataclass
class _Event:
    ns: int
    frame: int
    kind: str            # "start" | "other" (a non-registration initial message) | "accept"
    gnb: str
    ran: str
    amf: str
    msin: str


def align_ids(codes: list[int], ids: list[str], frame: str,
              always: frozenset[int] = ALWAYS_RAN_ID) -> list[str]:
    """One UE id per PDU ('' where the PDU has none); ``always``: the procedure codes whose
    every message carries the id (RAN-UE-NGAP-ID by default; analysis/parse/ran_procedures.py
    passes the F1AP and E1AP ones)."""
    if len(ids) == len(codes):
        return ids
    slots = [i for i, c in enumerate(codes) if c in always]
    out = [""] * len(codes)
    if len(set(ids)) == 1:
        for i in slots or range(len(codes)):
            out[i] = ids[0]
        return out
    if len(slots) != len(ids):
        log.warning("frame %s: %d PDUs but %d UE ids; ids assigned in order",
                    frame, len(codes), len(ids))
        slots = list(range(len(codes)))
    for i, v in zip(slots, ids):
        out[i] = v
    return out


def _events(records: Iterable[Sequence[str]], mode: str) -> list[_Event]:
    events: list[_Event] = []
    for row in records:
        rec = dict(zip(FIELDS, row))
        t = epoch_ns_text(rec["frame.time_epoch"])
        frame = rec["frame.number"]
        codes = [int(c) for c in field_values(rec["ngap.procedureCode"])]
        rans = align_ids(codes, field_values(rec["ngap.RAN_UE_NGAP_ID"]), frame)
        amfs = field_values(rec["ngap.AMF_UE_NGAP_ID"])
        mm = field_values(rec["nas_5gs.mm.message_type"])
        sm = field_values(rec["nas_5gs.sm.message_type"])
        src = f"{last_value(rec['ip.src'], rec['ipv6.src'])}:{last_value(rec['sctp.srcport'])}"
        dst = f"{last_value(rec['ip.dst'], rec['ipv6.dst'])}:{last_value(rec['sctp.dstport'])}"
        msins = field_values(rec["nas_5gs.mm.suci.msin"])
        nas_decoded = bool(mm or sm)
        use_nas = mode == "nas" or (mode == "auto" and nas_decoded)
        if rec["ngap.InitialUEMessage_element"]:
            # a Service Request (or any other initial message) is not a registration, but it
            # closes the UE's open registration window: what follows belongs to that procedure
            kind = "other" if use_nas and NAS_REGISTRATION_REQUEST not in mm else "start"
            for i, c in enumerate(codes):
                if c == INITIAL_UE_MESSAGE:
                    events.append(_Event(int(t), int(frame), kind, src, rans[i], "",
                                         msins[0] if len(msins) == 1 and kind == "start" else ""))
        accept_codes: set[int] = set()
        if rec["ngap.PDUSessionResourceSetupRequest_element"]:
            if not use_nas or NAS_PDU_SESSION_ESTABLISHMENT_ACCEPT in sm:
                accept_codes = {PDU_SESSION_RESOURCE_SETUP}
        elif mode != "ngap" and NAS_PDU_SESSION_ESTABLISHMENT_ACCEPT in sm:
            accept_codes = {DOWNLINK_NAS_TRANSPORT, INITIAL_CONTEXT_SETUP}
        if accept_codes:
            ue_pdus = [i for i, c in enumerate(codes) if c in ALWAYS_RAN_ID and c != INITIAL_UE_MESSAGE]
            amf_of = dict(zip(ue_pdus, amfs)) if len(amfs) == len(ue_pdus) else {}
            for i, c in enumerate(codes):
                if c in accept_codes:
                    events.append(_Event(int(t), int(frame), "accept", dst, rans[i],
                                         amf_of.get(i, amfs[0] if len(set(amfs)) == 1 else ""), ""))
    events.sort(key=lambda e: (e.ns, e.frame))
    return events


def _match(events: list[_Event]) -> list[dict[str, Any]]:
    rows: list[dict] = []
    open_: dict[tuple[str, str], int] = {}      # (gnb, ran) -> index of the open row
    done: dict[tuple[str, str], str] = {}       # (gnb, ran) -> AMF id of the completed row
    for e in events:
        key = (e.gnb, e.ran)
        if e.kind == "other":
            # the open registration (if any) stays without its accept; a later accept on this
            # key answers the other procedure and is not a registration's
            open_.pop(key, None)
            done[key] = ""
            continue
        if e.kind == "start":
            open_[key] = len(rows)
            done.pop(key, None)
            rows.append({"gnb": e.gnb, "ran_ue_ngap_id": e.ran, "amf_ue_ngap_id": "", "msin": e.msin,
                         "frame_registration_request": e.frame, "ns_registration_request": e.ns,
                         "frame_pdu_session_accept": None, "ns_pdu_session_accept": None})
            continue
        if key in open_:
            row = rows[open_.pop(key)]
            row.update(amf_ue_ngap_id=e.amf, frame_pdu_session_accept=e.frame, ns_pdu_session_accept=e.ns)
            done[key] = e.amf
        elif key in done and (done[key] == e.amf or not e.amf or not done[key]):
            log.debug("frame %d: further PDU session for %s (not an attach)", e.frame, key)
        else:
            rows.append({"gnb": e.gnb, "ran_ue_ngap_id": e.ran, "amf_ue_ngap_id": e.amf, "msin": "",
                         "frame_registration_request": None, "ns_registration_request": None,
                         "frame_pdu_session_accept": e.frame, "ns_pdu_session_accept": e.ns})
            done[key] = e.amf
    # attempt: the how-many-th registration of the same subscriber (SUCI MSIN) in this capture;
    # attempt > 1 is a retry or a re-registration, never a cold sample
    seen: dict[str, int] = {}
    for r in rows:
        if r["frame_registration_request"] is None:
            r["attempt"] = None
        elif r["msin"]:
            seen[r["msin"]] = seen.get(r["msin"], 0) + 1
            r["attempt"] = seen[r["msin"]]
        else:
            r["attempt"] = 1
    for r in rows:
        r["ue"] = f"{r['gnb']}/ran-ue-{r['ran_ue_ngap_id']}"
        start, end = r["ns_registration_request"], r["ns_pdu_session_accept"]
        r["status"] = (STATUS_NO_REQUEST if start is None else STATUS_NO_ACCEPT if end is None
                       else STATUS_COMPLETE)
    return rows


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd
    ints = ("ns_registration_request", "ns_pdu_session_accept", "frame_registration_request",
            "frame_pdu_session_accept", "attempt")
    # column by column: a frame built from dicts would turn int64 ns with gaps into float
    out = pd.DataFrame({c: pd.array([r[c] for r in rows], dtype="Int64" if c in ints else str)
                        for c in ("ue", "status", "gnb", "ran_ue_ngap_id", "amf_ue_ngap_id", "msin", *ints)})
    out["t_registration_request"] = out["ns_registration_request"].astype("Float64") / 1e9
    out["t_pdu_session_accept"] = out["ns_pdu_session_accept"].astype("Float64") / 1e9
    out["attach_ms"] = (out["ns_pdu_session_accept"] - out["ns_registration_request"]).astype("Float64") / 1e6
    return out[COLUMNS]


def _check_mode(mode: str) -> None:
    if mode not in FILTERS:
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")


def attach_times_from_table(table: pd.DataFrame, mode: str = "auto") -> pd.DataFrame:
    """Attach-time frame from a tshark field table with the columns ``FIELDS``."""
    _check_mode(mode)
    return _frame(_match(_events(table[FIELDS].itertuples(index=False, name=None), mode)))


def attach_rows(capture: Path | str, mode: str = "auto",
                prefs: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The registrations of one N2 capture as plain rows, from one tshark pass and no pandas
    (`python -m analysis attach-times` stays within a few percent of tshark's own time)."""
    _check_mode(mode)
    records = tshark_records(capture, FIELDS, FILTERS[mode],
                             prefs={**(PREFS_NAS if mode != "ngap" else {}), **(prefs or {})})
    return _match(_events(records, mode))


def attach_times(capture: Path | str, mode: str = "auto",
                 prefs: dict[str, str] | None = None) -> pd.DataFrame:
    """Per-registration attach times of one N2 capture (see the module docstring).

    ``prefs``: extra Wireshark preferences (e.g. the benchmark's ``sctp.tsn_analysis: FALSE``
    for a capture made of replayed copies of one SCTP association)."""
    frame = _frame(attach_rows(capture, mode, prefs))
    log.info("%s: %d registrations, %d complete", capture, len(frame),
             int((frame["status"] == STATUS_COMPLETE).sum()))
    return frame


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and v != v) or type(v).__name__ == "NAType"


def rows_csv(rows: Iterable[dict[str, Any]]) -> str:
    """CSV text: epoch seconds with all nine digits, attach_ms with six, empty where missing."""
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in rows:
        a, b = r["ns_registration_request"], r["ns_pdu_session_accept"]
        cells = {**r, "t_registration_request": ns_epoch_text(a), "t_pdu_session_accept": ns_epoch_text(b),
                 "attach_ms": "" if _missing(a) or _missing(b) else f"{(int(b) - int(a)) / 1e6:.6f}"}
        w.writerow(["" if _missing(cells[c]) else cells[c] for c in CSV_COLUMNS])
    return buf.getvalue()


def to_csv(frame: pd.DataFrame) -> str:
    """The CSV of ``rows_csv`` from an attach-time frame."""
    return rows_csv(frame.to_dict("records"))
