"""RAN procedure times per UE registration (F1-C, E1) from captures, one tshark pass per file.

Two start points, both reported for every registration (docs/analysis.md, "RAN procedures"):

- ``request_ms``: the paper's definition (Michaelides et al., WiSec 2026, Sec. 5.1): F1AP
  UEContextSetupRequest -> UEContextSetupResponse (procedure 5) on F1-C, E1AP
  BearerContextSetupRequest -> BearerContextSetupResponse (procedure 8) on E1;
- ``ngap_ms``: the start the authors' scripts use: the NGAP PDUSessionResourceSetupRequest
  (initiatingMessage, procedure 29) of the same UE -> the same response. ``ngap_ms_us`` is the
  same with both times first cut to whole microseconds the way their tool did (Python
  ``datetime.fromtimestamp``), which reproduces their printed values to the digit
  (tests/data/rwth-internal-ran-security/SOURCE.md).

Messages are paired per UE, never by time order alone: F1AP by the gNB-CU-UE-F1AP-ID, E1AP by
the gNB-CU-CP-UE-E1AP-ID, NGAP by the RAN-UE-NGAP-ID. The three are the same number for one UE
because the CU-CP (OAI) uses its one RRC UE id for all of them (in the authors' captures under
tests/data all three are 1); a procedure whose UE has no NGAP start gets ``no_ngap_start``.

Every registration gives a row, whatever happened; ``status`` says what:

- ``complete``: request, successful response and the UE's NGAP start;
- ``no_ngap_start``: request and response, no NGAP PDUSessionResourceSetupRequest for the UE
  (no N2 capture, or a capture that started late): ``request_ms`` only;
- ``missing_request``: a response without its request (a capture that started late): ``ngap_ms``
  only, where the NGAP start is there;
- ``missing_response``: a request never answered (or answered only after a newer request);
- ``failure``: the response is an unsuccessfulOutcome (UE Context / Bearer Context Setup
  Failure): no time;
- ``missing_procedure``: an NGAP start after which this UE's procedure never came;
- ``no_messages``: (``per_file``) a capture without any of these messages (e.g. a registration
  that failed before its PDU session), one row with an empty ``interface``.

Several PDUs bundled in one SCTP packet are lined up with their UE ids; the same message seen
twice within ``DUPLICATE_NS`` (one packet captured on two interfaces or in two overlapping
captures) counts once, the copies are counted in ``copies``. Captures of one stack boot (its
n2, f1c and e1 files) are paired together (``procedure_times``); unrelated captures, e.g. the
authors' one-registration files, each on their own (``per_file``).
"""
from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.parse.ngap_attach import ALWAYS_RAN_ID, align_ids
from analysis.parse.tshark import TsharkError, epoch_ns_text, field_values, tshark_records

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

NGAP_PDU_SESSION_RESOURCE_SETUP = 29
INITIATING, SUCCESSFUL, UNSUCCESSFUL = 0, 1, 2        # the *AP-PDU CHOICE index
# interface -> (protocol, procedure code, UE id field of the CU side, of the peer)
INTERFACES = {
    "f1c": ("f1ap", 5, "f1ap.GNB_CU_UE_F1AP_ID", "f1ap.GNB_DU_UE_F1AP_ID"),
    "e1": ("e1ap", 8, "e1ap.GNB_CU_CP_UE_E1AP_ID", "e1ap.GNB_CU_UP_UE_E1AP_ID"),
}
# procedures whose every message carries the CU-side UE id (TS 38.473 / TS 38.463), used to
# line ids up with PDUs when a packet bundles UE-associated and other PDUs
ALWAYS_CU_ID = {"f1ap": frozenset({5, 6, 7, 8, 9, 10, 12, 13, 15, 19, 25}),
                "e1ap": frozenset({8, 9, 10, 11, 12, 13, 14, 15, 18})}
FIELDS = ["frame.number", "frame.time_epoch",
          "ngap.procedureCode", "ngap.NGAP_PDU", "ngap.RAN_UE_NGAP_ID", "ngap.AMF_UE_NGAP_ID",
          "f1ap.procedureCode", "f1ap.F1AP_PDU", "f1ap.GNB_CU_UE_F1AP_ID", "f1ap.GNB_DU_UE_F1AP_ID",
          "e1ap.procedureCode", "e1ap.E1AP_PDU", "e1ap.GNB_CU_CP_UE_E1AP_ID", "e1ap.GNB_CU_UP_UE_E1AP_ID"]
FILTER = "ngap.procedureCode == 29 || f1ap.procedureCode == 5 || e1ap.procedureCode == 8"
# a copy of one packet (two interfaces, overlapping captures, a relay's two legs) arrives within
# microseconds; the same message sent again by the protocol comes after an SCTP RTO (>= 1 s)
DUPLICATE_NS = 5_000_000

STATUSES = ("complete", "no_ngap_start", "missing_request", "missing_response", "failure",
            "missing_procedure", "no_messages")
COLUMNS = ["interface", "ue", "peer_ue", "amf_ue", "status", "request_ms", "ngap_ms", "ngap_ms_us",
           "ns_ngap", "ns_request", "ns_response", "frame_ngap", "frame_request", "frame_response",
           "file_ngap", "file_request", "file_response", "copies"]


@dataclass(frozen=True)
class Event:
    """One NGAP/F1AP/E1AP PDU of interest."""
    ns: int
    epoch: str            # frame.time_epoch as tshark printed it (for the RWTH microseconds)
    frame: int
    file: str
    proto: str            # ngap | f1ap | e1ap
    code: int
    pdu: int              # INITIATING | SUCCESSFUL | UNSUCCESSFUL
    ue: str               # CU-side UE id (RAN-UE-NGAP-ID, gNB-CU-UE-F1AP-ID, gNB-CU-CP-UE-E1AP-ID)
    peer: str             # AMF-UE-NGAP-ID, gNB-DU-UE-F1AP-ID, gNB-CU-UP-UE-E1AP-ID ('' if absent)


@dataclass
class _Row:
    interface: str
    ue: str
    peer_ue: str = ""
    amf_ue: str = ""
    ngap: Event | None = None
    request: Event | None = None
    response: Event | None = None
    failed: bool = False
    copies: int = 0
    status: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def datetime_us(epoch: str) -> int:
    """Epoch text -> whole microseconds exactly as ``datetime.fromtimestamp(float(text))`` gets
    them (float64 first, the fraction rounded half to even): how the RWTH tool's values were made."""
    f = float(epoch)
    whole = math.floor(f)
    return int(whole) * 1_000_000 + int(round((f - whole) * 1e6))


def events_from_records(records: Iterable[Sequence[str]], file: str = "") -> list[Event]:
    """Events from rows of ``FIELDS`` (tshark -T fields, occurrence=a, aggregator ',')."""
    out: list[Event] = []
    for row in records:
        rec = dict(zip(FIELDS, row))
        ns = epoch_ns_text(rec["frame.time_epoch"])
        frame = int(rec["frame.number"])
        for proto, always, ue_field, peer_field in (
                ("ngap", ALWAYS_RAN_ID, "ngap.RAN_UE_NGAP_ID", "ngap.AMF_UE_NGAP_ID"),
                ("f1ap", ALWAYS_CU_ID["f1ap"], "f1ap.GNB_CU_UE_F1AP_ID", "f1ap.GNB_DU_UE_F1AP_ID"),
                ("e1ap", ALWAYS_CU_ID["e1ap"], "e1ap.GNB_CU_CP_UE_E1AP_ID", "e1ap.GNB_CU_UP_UE_E1AP_ID")):
            codes = [int(c) for c in field_values(rec[f"{proto}.procedureCode"])]
            if not codes:
                continue
            pdus = [int(p) for p in field_values(rec[f"{proto}.{proto.upper()}_PDU"])]
            if len(pdus) != len(codes):
                log.warning("%s frame %d: %d %s PDUs but %d PDU types; frame left out",
                            file, frame, len(codes), proto, len(pdus))
                continue
            ues = align_ids(codes, field_values(rec[ue_field]), str(frame), always)
            peers = field_values(rec[peer_field])
            peers = peers if len(peers) == len(codes) else [peers[0] if len(set(peers)) == 1 else ""] * len(codes)
            for code, pdu, ue, peer in zip(codes, pdus, ues, peers):
                out.append(Event(ns, rec["frame.time_epoch"], frame, file, proto, code, pdu, ue, peer))
    return out


def capture_events(capture: Path | str) -> list[Event]:
    """Every NGAP PDUSessionResourceSetup, F1AP UEContextSetup and E1AP BearerContextSetup PDU
    of one capture (one tshark pass)."""
    p = Path(capture)
    return events_from_records(tshark_records(p, FIELDS, FILTER), str(p))


def pair(events: Iterable[Event], interface: str, captured: bool | None = None) -> list[_Row]:
    """Rows (one per registration) for ``interface`` from the events of one stack boot.

    ``captured``: whether the interface was captured at all; NGAP starts without a procedure
    give ``missing_procedure`` rows only then (None: when any of its procedures is in the events;
    an E1-only capture says nothing about F1-C)."""
    proto, code, _, _ = _interface(interface)
    events = sorted(events, key=lambda e: (e.ns, e.file, e.frame))
    if captured is None:
        captured = any(e.proto == proto and e.code == code for e in events)
    rows: list[_Row] = []
    ngap_open: dict[str, _Row] = {}        # UE -> its NGAP start not yet used by a procedure
    open_: dict[str, _Row] = {}            # UE -> its request waiting for the response
    last: dict[tuple[str, int, int, str], tuple[int, _Row | None]] = {}
    for e in events:
        is_ngap = e.proto == "ngap" and e.code == NGAP_PDU_SESSION_RESOURCE_SETUP and e.pdu == INITIATING
        if not is_ngap and (e.proto != proto or e.code != code):
            continue
        key = (e.proto, e.code, e.pdu, e.ue)
        seen = last.get(key)
        if seen is not None and e.ns - seen[0] <= DUPLICATE_NS:
            if seen[1] is not None:
                seen[1].copies += 1
            last[key] = (e.ns, seen[1])
            continue
        if is_ngap:
            stale = _take(ngap_open, e.ue)
            if stale is not None and captured:
                rows.append(stale)              # an NGAP start that no procedure followed
            row = _Row(interface, e.ue, amf_ue=e.peer, ngap=e)
            ngap_open[e.ue] = row
            last[key] = (e.ns, row)
            continue
        if e.pdu == INITIATING:
            stale = _take(open_, e.ue)
            if stale is not None:
                rows.append(stale)              # superseded: never answered
            row = _take(ngap_open, e.ue) or _Row(interface, e.ue)
            row.request = e
            row.peer_ue = row.peer_ue or e.peer
            open_[e.ue] = row
            last[key] = (e.ns, row)
            continue
        row = _take(open_, e.ue) or _take(ngap_open, e.ue) or _Row(interface, e.ue)   # or: no request
        row.response = e
        row.failed = e.pdu == UNSUCCESSFUL
        row.peer_ue = e.peer or row.peer_ue
        rows.append(row)
        last[key] = (e.ns, row)
    rows += list(open_.values()) + (list(ngap_open.values()) if captured else [])
    for r in rows:
        r.status = _status(r)
    rows.sort(key=lambda r: min(x.ns for x in (r.ngap, r.request, r.response) if x is not None))
    return rows


def _take(rows: dict[str, _Row], ue: str) -> _Row | None:
    return rows.pop(ue) if ue in rows else None


def _status(r: _Row) -> str:
    if r.request is None and r.response is None:
        return "missing_procedure"
    if r.response is None:
        return "missing_response"
    if r.failed:
        return "failure"
    if r.request is None:
        return "missing_request"
    return "complete" if r.ngap is not None else "no_ngap_start"


def _interface(interface: str) -> tuple[str, int, str, str]:
    if interface not in INTERFACES:
        raise ValueError(f"unknown interface {interface!r}; valid: {', '.join(sorted(INTERFACES))}")
    return INTERFACES[interface]


def row_dicts(rows: Iterable[_Row]) -> list[dict[str, Any]]:
    """Plain dicts with the ``COLUMNS`` (times only where the status allows them)."""
    out = []
    for r in rows:
        resp = r.response if r.response is not None and not r.failed else None
        d: dict[str, Any] = {"interface": r.interface, "ue": r.ue, "peer_ue": r.peer_ue, "amf_ue": r.amf_ue,
                             "status": r.status, "copies": r.copies}
        for name, e in (("ngap", r.ngap), ("request", r.request), ("response", r.response)):
            d[f"ns_{name}"] = e.ns if e is not None else None
            d[f"frame_{name}"] = e.frame if e is not None else None
            d[f"file_{name}"] = e.file if e is not None else ""
        d["request_ms"] = (resp.ns - r.request.ns) / 1e6 if resp and r.request is not None else math.nan
        if resp and r.ngap is not None:
            d["ngap_ms"] = (resp.ns - r.ngap.ns) / 1e6
            d["ngap_ms_us"] = (datetime_us(resp.epoch) - datetime_us(r.ngap.epoch)) / 1e3
        else:
            d["ngap_ms"] = d["ngap_ms_us"] = math.nan
        out.append(d)
    return out


def frame_of(dicts: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd
    ints = ("ns_ngap", "ns_request", "ns_response", "frame_ngap", "frame_request", "frame_response", "copies")
    # column by column: int64 nanoseconds with gaps must not become float
    data = {c: pd.array([d[c] for d in dicts], dtype="Int64" if c in ints else
                        "float64" if c.endswith("_ms") or c.endswith("_us") else object)
            for c in COLUMNS}
    return pd.DataFrame(data, columns=COLUMNS)


def no_messages_row() -> dict[str, Any]:
    d: dict[str, Any] = {c: None for c in COLUMNS}
    d.update(interface="", ue="", peer_ue="", amf_ue="", status="no_messages", copies=0, request_ms=math.nan,
             ngap_ms=math.nan, ngap_ms_us=math.nan, file_ngap="", file_request="", file_response="")
    return d


def events_parallel(captures: Sequence[Path | str], workers: int = 0,
                    errors: list[str] | None = None) -> list[list[Event]]:
    """``capture_events`` of each capture, one tshark per capture and as many at once as there
    are cores (0 = os.cpu_count()): tshark's start-up, not its dissection, dominates small
    captures. With ``errors``, a capture tshark cannot read is logged, appended there and gives
    no events instead of stopping the others."""
    def one(cap: Path | str) -> list[Event]:
        if errors is None:
            return capture_events(cap)
        try:
            return capture_events(cap)
        except (TsharkError, OSError, ValueError) as exc:
            log.warning("capture left out: %s", exc)
            errors.append(f"{cap}: {exc}")
            return []
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        return list(pool.map(one, captures))


def procedure_times(captures: Sequence[Path | str] | Path | str, interfaces: Sequence[str] = ("f1c", "e1"),
                    workers: int = 0, captured: Mapping[str, bool] | None = None) -> pd.DataFrame:
    """Rows for ``interfaces`` from the captures of ONE stack boot, paired across them (its n2,
    f1c and e1 captures, or one capture holding them all); ``captured``: per interface, whether
    it was captured (``pair``; default: inferred from the events)."""
    caps = [captures] if isinstance(captures, (str, Path)) else list(captures)
    for i in interfaces:
        _interface(i)
    events = [e for evs in events_parallel(caps, workers) for e in evs]
    return frame_of([d for i in interfaces
                     for d in row_dicts(pair(events, i, (captured or {}).get(i)))])


def per_file(captures: Sequence[Path | str], interfaces: Sequence[str] = ("f1c", "e1"),
             workers: int = 0) -> pd.DataFrame:
    """Rows for each capture paired on its own (unrelated captures, e.g. one boot per file),
    in the order given, with the column ``capture``."""
    import pandas as pd
    for i in interfaces:
        _interface(i)
    parts = []
    for cap, events in zip(captures, events_parallel(captures, workers)):
        dicts = [d for i in interfaces for d in row_dicts(pair(events, i))]
        frame = frame_of(dicts or [no_messages_row()])
        frame.insert(0, "capture", str(cap))
        parts.append(frame)
    if not parts:
        return frame_of([]).assign(capture=pd.Series(dtype=object))[["capture"] + COLUMNS]
    return pd.concat(parts, ignore_index=True)
