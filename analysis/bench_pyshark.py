"""The approach other testbeds use, kept only as the benchmark's point of comparison: a
per-packet pyshark loop that turns every packet into Python objects and pairs the NGAP
Registration Request with the PDU Session Establishment Accept per (gNB, RAN-UE-NGAP-ID).
Needs the ``bench`` extra (pyshark). Not used by the analysis itself.
"""
from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pandas as pd


def _all(layer: Any, name: str) -> list[str]:
    field = layer.get_field(name)
    if field is None:
        return []
    return [f.show for f in field.all_fields]


def _detach_child_watcher() -> None:
    """pyshark attaches asyncio's SafeChildWatcher to the main thread's event loop: a SIGCHLD
    handler and a signal wakeup fd that outlive the capture. Once that loop's socket is closed,
    every later child exit in this process prints "Exception ignored when trying to write to the
    signal wakeup fd". Closing the watcher removes both (pyshark attaches a new one next time)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # the watcher API is deprecated in 3.12
        asyncio.get_child_watcher().close()


def pyshark_attach_times(capture: Path | str, display_filter: str | None = None,
                         prefs: dict[str, str] | None = None) -> pd.DataFrame:
    """Columns ue, ns_registration_request, ns_pdu_session_accept, attach_ms, status."""
    import pyshark  # the bench extra; imported here so the analysis never needs it

    cap = pyshark.FileCapture(str(capture), display_filter=display_filter,
                              override_prefs={"nas-5gs.null_decipher": "TRUE", **(prefs or {})},
                              keep_packets=False)
    rows: list[dict[str, Any]] = []
    open_: dict[tuple[str, str], int] = {}
    packets = 0
    try:
        for pkt in cap:
            packets += 1
            if not hasattr(pkt, "ngap"):
                continue
            ngap = pkt.ngap
            codes = _all(ngap, "procedurecode")
            rans = _all(ngap, "ran_ue_ngap_id")
            mm = _all(ngap, "nas_5gs_mm_message_type")      # NAS is dissected inside the NGAP layer
            sm = _all(ngap, "nas_5gs_sm_message_type")
            ts = pkt.sniff_timestamp
            sec, _, frac = ts.partition(".")
            ns = int(sec) * 1_000_000_000 + int(frac[:9].ljust(9, "0"))
            ip = pkt.ip if hasattr(pkt, "ip") else pkt.ipv6
            src = f"{ip.src}:{pkt.sctp.srcport}"
            dst = f"{ip.dst}:{pkt.sctp.dstport}"
            ran = rans[0] if rans else ""
            if "15" in codes and "0x41" in [m.lower() for m in mm] and ngap.get_field("initialuemessage_element") is not None:
                open_[(src, ran)] = len(rows)
                rows.append({"ue": f"{src}/ran-ue-{ran}", "ns_registration_request": ns,
                             "ns_pdu_session_accept": None})
            elif "29" in codes and "0xc2" in [s.lower() for s in sm] and (dst, ran) in open_:
                rows[open_.pop((dst, ran))]["ns_pdu_session_accept"] = ns
    finally:
        cap.close()
        _detach_child_watcher()
    out = pd.DataFrame(rows, columns=["ue", "ns_registration_request", "ns_pdu_session_accept"])
    out["ns_pdu_session_accept"] = pd.array(out["ns_pdu_session_accept"].tolist(), dtype="Int64")
    out["ns_registration_request"] = pd.array(out["ns_registration_request"].tolist(), dtype="Int64")
    out["attach_ms"] = (out["ns_pdu_session_accept"] - out["ns_registration_request"]).astype("Float64") / 1e6
    out["status"] = ["complete" if pd.notna(v) else "missing_pdu_session_accept" for v in out["attach_ms"]]
    out.attrs["packets"] = packets
    return out
