"""N2 procedure times per NGAP procedure and UE, from one tshark pass over an N2 capture.

Two kinds of rows, per UE (gNB SCTP endpoint + RAN-UE-NGAP-ID, as analysis/parse/ngap_attach.py):

- request/response procedures (TS 38.413 class 1): an initiatingMessage to the next
  successfulOutcome or unsuccessfulOutcome of the same procedure code for the same UE, e.g.
  `InitialContextSetup` (Request -> Response), `PDUSessionResourceSetup`, `UEContextRelease`;
  NG Setup (not UE-associated) per gNB endpoint. No outcome in the capture: status
  `missing_response`, empty time; an unsuccessfulOutcome: status `failure`, with its time;
- AMF turnarounds: the latest uplink UE message (InitialUEMessage, UplinkNASTransport, a class-1
  response) before a downlink message of the AMF for the same UE, to that message, e.g.
  `InitialUEMessage -> DownlinkNASTransport` (the Registration Request to the Authentication
  Request: the AMF's authentication, AUSF -> UDM -> UDR on the SBI, is inside it). These are
  where SBI time shows up on N2.

Bundled NGAP PDUs (several in one SCTP packet) are lined up by `ngap.NGAP_PDU` and
`ngap.procedureCode`, which occur once per PDU.
"""
from __future__ import annotations

import csv
import io
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis import cache
from analysis.parse.ngap_attach import align_ids
from analysis.parse.tshark import epoch_ns_text, field_values, last_value, ns_epoch_text, tshark_records

log = logging.getLogger(__name__)

FORMAT = 1
FIELDS = ["frame.number", "frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "sctp.srcport",
          "sctp.dstport", "ngap.NGAP_PDU", "ngap.procedureCode", "ngap.RAN_UE_NGAP_ID", "ngap.AMF_UE_NGAP_ID"]
FILTER = "ngap"
INITIATING, SUCCESSFUL, UNSUCCESSFUL = 0, 1, 2

# TS 38.413 9.4.7 procedure codes (the ones an attach and its neighbours use)
NAMES = {0: "AMFConfigurationUpdate", 4: "DownlinkNASTransport", 8: "ErrorIndication",
         14: "InitialContextSetup", 15: "InitialUEMessage", 21: "NGSetup", 25: "PDUSessionResourceNotify",
         26: "PDUSessionResourceModify", 28: "PDUSessionResourceRelease", 29: "PDUSessionResourceSetup",
         40: "UEContextModification", 41: "UEContextRelease", 42: "UEContextReleaseRequest",
         44: "UERadioCapabilityInfoIndication", 46: "UplinkNASTransport", 36: "UEContextResume"}
# procedures whose initiatingMessage is not answered (class 2): never "missing_response"
CLASS2 = frozenset({4, 8, 15, 25, 42, 44, 46})
NON_UE = frozenset({0, 21})              # NGSetup, AMFConfigurationUpdate: per gNB endpoint
# who sends a procedure's initiatingMessage (its outcomes go the other way): the direction of a
# message never depends on ports (some gNBs use 38412 as their own SCTP port too)
AMF_INITIATED = frozenset({0, 4, 10, 14, 26, 28, 29, 40, 41})
GNB_INITIATED = frozenset({12, 15, 21, 25, 42, 44, 46})

COLUMNS = ["capture", "ue", "procedure", "kind", "code", "t_start", "t_end", "ms", "status", "gnb",
           "ran_ue_ngap_id", "amf_ue_ngap_id", "frame_start", "frame_end"]


def name(code: int) -> str:
    return NAMES.get(code, f"procedure-{code}")


def _messages(records: Iterable[Sequence[str]]) -> list[dict[str, Any]]:
    """One entry per NGAP PDU: time, frame, kind, code, UE key, direction (uplink = to the AMF)."""
    out = []
    amf_ends: set[str] = set()
    for raw in records:
        rec = dict(zip(FIELDS, raw))
        frame = rec["frame.number"]
        codes = [int(c) for c in field_values(rec["ngap.procedureCode"])]
        kinds = [int(k) for k in field_values(rec["ngap.NGAP_PDU"])]
        if len(kinds) != len(codes):
            log.debug("frame %s: %d PDU kinds for %d procedure codes; skipped", frame, len(kinds), len(codes))
            continue
        rans = align_ids(codes, field_values(rec["ngap.RAN_UE_NGAP_ID"]), frame)
        amfs = align_ids(codes, field_values(rec["ngap.AMF_UE_NGAP_ID"]), frame,
                         frozenset(c for c in codes if c not in (15, *NON_UE)))
        src = f"{last_value(rec['ip.src'], rec['ipv6.src'])}:{last_value(rec['sctp.srcport'])}"
        dst = f"{last_value(rec['ip.dst'], rec['ipv6.dst'])}:{last_value(rec['sctp.dstport'])}"
        ns = epoch_ns_text(rec["frame.time_epoch"])
        for code, kind, ran, amf in zip(codes, kinds, rans, amfs):
            if code in GNB_INITIATED or code in AMF_INITIATED:
                uplink = (kind == INITIATING) == (code in GNB_INITIATED)
                amf_ends.add(dst if uplink else src)
            else:       # ErrorIndication and the like: towards an AMF end seen before, else port 38412
                uplink = dst in amf_ends if amf_ends else dst.endswith(":38412")
            gnb = src if uplink else dst
            out.append({"ns": ns, "frame": int(frame), "kind": kind, "code": code, "ran": ran, "amf": amf,
                        "gnb": gnb, "uplink": uplink})
    out.sort(key=lambda m: (m["ns"], m["frame"]))
    return out


def _row(capture: str, m: dict[str, Any], end: dict[str, Any] | None, procedure: str, kind: str,
         status: str) -> dict[str, Any]:
    ue = m["gnb"] if m["code"] in NON_UE else f"{m['gnb']}/ran-ue-{m['ran']}"
    return {"capture": capture, "ue": ue, "procedure": procedure, "kind": kind, "code": m["code"],
            "ns_start": m["ns"], "ns_end": end["ns"] if end else None, "status": status, "gnb": m["gnb"],
            "ran_ue_ngap_id": m["ran"], "amf_ue_ngap_id": (end or m)["amf"] or m["amf"],
            "frame_start": m["frame"], "frame_end": end["frame"] if end else None}


def procedures_from_records(records: Iterable[Sequence[str]], capture: str = "") -> list[dict[str, Any]]:
    msgs = _messages(records)
    rows: list[dict[str, Any]] = []
    pending: dict[tuple[str, str, int], dict[str, Any]] = {}   # (gnb, ue id, code) -> initiating
    waiting: dict[tuple[str, str], dict[str, Any]] = {}         # (gnb, ran id) -> last uplink
    for m in msgs:
        ue_key = (m["gnb"], "" if m["code"] in NON_UE else m["ran"])
        if m["kind"] == INITIATING and m["code"] not in CLASS2:
            if (*ue_key, m["code"]) in pending:
                old = pending.pop((*ue_key, m["code"]))
                rows.append(_row(capture, old, None, name(old["code"]), "request-response", "missing_response"))
            pending[(*ue_key, m["code"])] = m
        elif m["kind"] in (SUCCESSFUL, UNSUCCESSFUL):
            start = pending.pop((*ue_key, m["code"]), None)
            if start is not None:
                rows.append(_row(capture, start, m, name(m["code"]), "request-response",
                                 "complete" if m["kind"] == SUCCESSFUL else "failure"))
        if m["code"] in NON_UE or not m["ran"]:
            continue
        key = (m["gnb"], m["ran"])
        if m["uplink"]:
            waiting[key] = m       # the AMF answers the latest uplink message (the UE's last step)
        elif key in waiting:
            up = waiting.pop(key)
            what = f"{name(up['code'])}{'' if up['kind'] == INITIATING else 'Response'} -> {name(m['code'])}"
            rows.append(_row(capture, up, m, what, "amf-turnaround", "complete"))
    for start in pending.values():
        rows.append(_row(capture, start, None, name(start["code"]), "request-response", "missing_response"))
    rows.sort(key=lambda r: (r["ns_start"], r["frame_start"], r["kind"]))
    return rows


def procedures(capture: Path | str) -> list[dict[str, Any]]:
    """The procedure rows of one N2 capture (cached by content)."""
    path = Path(capture)
    question = {"what": "ngap-procedures", "format": FORMAT, "fields": FIELDS, "filter": FILTER}
    return cache.cached([path], question, lambda: procedures_from_records(
        tshark_records(path, FIELDS, FILTER), str(capture)))


def rows_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        a, b = r.get("ns_start"), r.get("ns_end")
        cells = {**r, "t_start": ns_epoch_text(a), "t_end": ns_epoch_text(b),
                 "ms": "" if a is None or b is None else f"{(int(b) - int(a)) / 1e6:.6f}"}
        w.writerow(["" if cells.get(c) is None else cells.get(c, "") for c in COLUMNS])
    return buf.getvalue()
