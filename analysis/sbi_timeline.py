"""The cold-attach timeline figure: one registration of the baseline above one of a protected
profile, on the same time axis (ms after the Registration Request): one row per NF pair (client ->
server) and one for N2, each SBI request a bar from request to response (an unanswered one
hatched to the end of the window), each N2 procedure a bar, and the handshakes marked where they
happen (TCP SYN, TLS ClientHello, IKE_SA_INIT, WireGuard initiation) from the iteration's SBI wire
capture. Written as `fig-sbi-timeline-<profile>.png|pdf` (analysis/figure_files.py)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.figure_files import write_figure
from analysis.parse import ngap_procedures
from analysis.parse.tshark import epoch_ns_text
from testbed import tshark

log = logging.getLogger(__name__)

N2_ROW = "N2 (gNB - AMF)"
HANDSHAKES = {
    "TCP SYN": ("tcp.flags.syn == 1 && tcp.flags.ack == 0", "^"),
    "TLS ClientHello": ("tls.handshake.type == 1", "o"),
    "IKE_SA_INIT": ("isakmp.exchangetype == 34 && isakmp.rspi == 00:00:00:00:00:00:00:00", "s"),
    "WireGuard initiation": ("wg.type == 1", "D"),
}


def handshakes(pcap: Path, prefs: dict[str, str] | None = None, extra: tuple[str, ...] = (),
               decode_as: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every handshake start in one capture (one tshark pass): ns, src, dst, kind."""
    flt = " || ".join(f"({f})" for f, _ in HANDSHAKES.values())
    fields = ["frame.time_epoch", "ip.src", "ip.dst", "tcp.flags.syn", "tcp.flags.ack", "tls.handshake.type",
              "isakmp.exchangetype", "wg.type"]
    out = []
    for line in tshark.export(pcap, fields, flt, prefs=prefs, extra=extra, decode_as=decode_as,
                              timeout=None).splitlines():
        p = (line.split("\t") + [""] * len(fields))[:len(fields)]
        src, dst = p[1].split(",")[-1], p[2].split(",")[-1]
        if p[7]:
            kind = "WireGuard initiation"
        elif p[6]:
            kind = "IKE_SA_INIT"
        elif "1" in p[5].split(","):
            kind = "TLS ClientHello"
        else:
            kind = "TCP SYN"
        out.append({"ns": epoch_ns_text(p[0]), "src": src, "dst": dst, "kind": kind})
    return out


def _panel(ax: Any, title: str, req: pd.DataFrame, n2: list[dict[str, Any]], hs: list[dict[str, Any]],
           names: dict[str, str], t0: int, t1: int, rows: list[str]) -> None:
    y = {r: i for i, r in enumerate(rows)}
    for _, r in req.iterrows():
        s = (int(r["ns_request"]) - t0) / 1e6
        if pd.notna(r["ns_response"]):
            ax.barh(y[r["pair"]], (int(r["ns_response"]) - int(r["ns_request"])) / 1e6, left=s, height=0.6,
                    color="tab:blue", edgecolor="black", linewidth=0.3)
        else:
            ax.barh(y[r["pair"]], (t1 - int(r["ns_request"])) / 1e6, left=s, height=0.6, color="white",
                    edgecolor="tab:red", hatch="//", linewidth=0.5)
    for p in n2:
        if p["ns_end"] is None:
            continue
        colour = "tab:green" if p["kind"] == "request-response" else "0.75"
        ax.barh(y[N2_ROW], (int(p["ns_end"]) - int(p["ns_start"])) / 1e6, left=(int(p["ns_start"]) - t0) / 1e6,
                height=0.6 if p["kind"] == "request-response" else 0.3, color=colour, edgecolor="black", linewidth=0.3)
    for h in hs:
        pair = f"{names.get(h['src'], h['src'])} -> {names.get(h['dst'], h['dst'])}"
        row = y.get(pair, y.get(f"{names.get(h['dst'], h['dst'])} -> {names.get(h['src'], h['src'])}"))
        if row is None or not (t0 <= h["ns"] <= t1):
            continue
        ax.plot((h["ns"] - t0) / 1e6, row, HANDSHAKES[h["kind"]][1], color="tab:orange", markersize=6,
                markeredgecolor="black", markeredgewidth=0.4)
    ax.set_title(title, fontsize=9, loc="left")
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.invert_yaxis()
    ax.grid(axis="x", linestyle=":", linewidth=0.5)


def figure(out: Path, profile: str, panels: list[dict[str, Any]]) -> list[Path]:
    """`panels`: [{title, requests (frame of one window), n2 (procedure rows), handshakes, names,
    start_ns, end_ns}], baseline first. One shared time axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    rows: list[str] = []
    for p in panels:
        for pair in p["requests"].sort_values("ns_request")["pair"]:
            if pair not in rows:
                rows.append(pair)
    rows.append(N2_ROW)
    span = max((p["end_ns"] - p["start_ns"]) / 1e6 for p in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 1.2 + 0.28 * len(rows) * len(panels)), sharex=True,
                             squeeze=False)
    for ax, p in zip(axes[:, 0], panels):
        _panel(ax, p["title"], p["requests"], p["n2"], p["handshakes"], p["names"], p["start_ns"], p["end_ns"], rows)
        ax.axvline((p["end_ns"] - p["start_ns"]) / 1e6, color="black", linestyle="--", linewidth=0.8)
    axes[-1, 0].set_xlim(-0.02 * span, span * 1.03)
    axes[-1, 0].set_xlabel("time since the Registration Request (ms); dashed: PDU Session Establishment Accept")
    handles = [Patch(facecolor="tab:blue", edgecolor="black", label="SBI request -> response"),
               Patch(facecolor="white", edgecolor="tab:red", hatch="//", label="unanswered in the capture"),
               Patch(facecolor="tab:green", edgecolor="black", label="NGAP request -> response"),
               Patch(facecolor="0.75", edgecolor="black", label="AMF turnaround (uplink -> downlink)")]
    handles += [Line2D([], [], marker=m, linestyle="", color="tab:orange", markeredgecolor="black", label=k)
                for k, (_, m) in HANDSHAKES.items()]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=7, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Cold attach, where the time goes: baseline (top) and {profile} (bottom)", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.97))
    return write_figure(fig, out, f"fig-sbi-timeline-{profile}")


def n2_rows(capture: Path, start_ns: int, end_ns: int) -> list[dict[str, Any]]:
    """The N2 procedures of the capture that start inside [start, end]."""
    return [r for r in ngap_procedures.procedures(capture) if start_ns <= int(r["ns_start"]) <= end_ns]
