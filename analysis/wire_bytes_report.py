"""The bytes-on-the-wire section (docs/wire-bytes.md): tables as CSV + Markdown and one figure.

- `wire-bytes.csv`: per usable run and capture, handshake packets and bytes (IKE_SA_INIT +
  IKE_AUTH, WireGuard, TLS, DTLS) and, on N3, the measured per-packet overhead beside the analytic
  one (analysis/wire_bytes.py results_table);
- `wire-bytes-analytic.csv`: the theoretical per-packet overhead of every ESP proposal, WireGuard,
  the TLS and DTLS records of the catalogue (and the relay against SCTP), per size;
- `attach-bytes.csv`: signalling packets and bytes per UE attach, cold and warm, per interface
  and in sum, with the overhead against the baseline (analysis/attach_bytes.py);
- `wire-bytes.png|pdf`: handshake bytes per profile, and bytes per attach per profile and role.
"""
from __future__ import annotations

import logging
from pathlib import Path

from typing import TYPE_CHECKING

import pandas as pd

from analysis import attach_bytes, wire_bytes
from analysis.figure_files import write_figure
from analysis.markdown import integer_counts
from analysis.markdown import table as md_table

if TYPE_CHECKING:
    import matplotlib.pyplot as plt

log = logging.getLogger(__name__)

FIGURE = "wire-bytes"


def _handshake_bytes(runs: pd.DataFrame) -> pd.Series:
    """Mean handshake frame bytes per profile, the profiles whose captures hold a handshake."""
    if "handshake_frame_bytes" not in runs:
        return pd.Series(dtype=float)
    hs = runs.dropna(subset=["handshake_frame_bytes"]).groupby("profile")["handshake_frame_bytes"].mean()
    return hs[hs > 0]


def _attach_all(attach: pd.DataFrame) -> pd.DataFrame:
    return attach[attach["iface"] == attach_bytes.ALL] if not attach.empty else attach


def figure_note(runs: pd.DataFrame, attach: pd.DataFrame) -> str:
    """In words, the panels the figure leaves out for want of data ('' when it has both)."""
    missing = []
    if _handshake_bytes(runs).empty:
        missing.append("no overlay handshake in these captures (a run-overlay capture starts once the "
                       "tunnel is up)")
    if _attach_all(attach).empty:
        missing.append("no UE attach in these results (run-sbi)")
    return "; ".join(missing)


def _handshake_panel(ax: plt.Axes, hs: pd.Series) -> None:
    ax.bar(range(len(hs)), hs.to_numpy(), color="0.45")
    ax.set_xticks(range(len(hs)), hs.index, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("handshake bytes per capture (frames)")
    ax.set_title("Overlay handshakes on the wire")


def _attach_panel(ax: plt.Axes, at: pd.DataFrame) -> None:
    profiles = sorted(at["profile"].unique(), key=lambda p: (p != "baseline", p))
    for k, (role, hatch) in enumerate((("cold", ""), ("warm", "//"))):
        sub = at[at["role"] == role].set_index("profile")
        xs = [i + (k - 0.5) * 0.4 for i, p in enumerate(profiles) if p in sub.index]
        ys = [float(sub.loc[p, "bytes_mean"]) for p in profiles if p in sub.index]
        es = [float(sub.loc[p, "bytes_ci"]) if pd.notna(sub.loc[p, "bytes_ci"]) else 0.0
              for p in profiles if p in sub.index]
        ax.bar(xs, ys, width=0.4, yerr=es, capsize=3, color="white", edgecolor="black", hatch=hatch, label=role)
    ax.set_xticks(range(len(profiles)), profiles, rotation=45, ha="right", fontsize=8)
    ax.set_ylim(top=ax.get_ylim()[1] * 1.2)
    ax.legend(title="UE", loc="upper right", ncol=2)
    ax.set_ylabel("bytes per attach (all captured interfaces)")
    ax.set_title("Signalling bytes per UE attach")


def figure(runs: pd.DataFrame, attach: pd.DataFrame, out: Path) -> list[Path]:
    """Mean handshake frame bytes per profile (from the runs' captures) and mean bytes per attach
    (all interfaces) per profile, cold and warm, with 99 % intervals over boots: each panel only
    when it has data, no figure when neither has (figure_note says which are left out)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    hs, at = _handshake_bytes(runs), _attach_all(attach)
    panels = [(draw, data) for draw, data in ((_handshake_panel, hs), (_attach_panel, at)) if not data.empty]
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (draw, data) in zip(axes[0], panels):
        draw(ax, data)
    fig.tight_layout()
    return write_figure(fig, out, FIGURE)


def markdown_section(results: Path, out: Path, link_dir: str = "", registrations: pd.DataFrame | None = None) -> str:
    """The section's Markdown ('' when no run has a capture); writes its CSVs and figure to out.
    `registrations`: analysis/datasets.py's attach frame, when the caller has it already."""
    from analysis.results import discover
    found = [r for r in discover(results) if r.usable and r.files("pcap")]
    got = wire_bytes.read(found, frames_of=attach_bytes.frame_captures(found))     # one pass per capture
    runs = pd.DataFrame(got.rows)
    attach = attach_bytes.summary(attach_bytes.samples(results, registrations, frames_of=got.frames))
    if runs.empty and attach.empty:
        return ""
    out.mkdir(parents=True, exist_ok=True)
    analytic = wire_bytes.analytic_table()
    integer_counts(runs).to_csv(out / "wire-bytes.csv", index=False)
    integer_counts(analytic).to_csv(out / "wire-bytes-analytic.csv", index=False)
    if not attach.empty:
        attach.to_csv(out / "attach-bytes.csv", index=False)
    figs = figure(runs, attach, out)
    lines = ["## Bytes on the wire", "",
             "From the runs' own captures (docs/wire-bytes.md). Handshakes: IKE_SA_INIT + IKE_AUTH, WireGuard "
             "initiation/response/cookie, TLS records from the ClientHello to the client's first application "
             "record, DTLS handshake and ChangeCipherSpec frames on the relay port.", ""]
    note = figure_note(runs, attach)
    if figs:
        lines += [f"![bytes on the wire]({link_dir}{figs[0].name})", ""]
    lines += [f"{'Not drawn' if figs else 'No figure'}: {note}.", ""] if note else []
    if not attach.empty:
        cols = ["profile", "protocol", "nas", "iface", "role", "n_boots", "n_samples", "packets_mean",
                "packets_overhead", "bytes_mean", "bytes_ci", "bytes_overhead", "bytes_overhead_ci"]
        lines += ["### Signalling per UE attach (cold and warm) against the baseline", "",
                  "Every frame of the iteration's wire captures inside the UE's attach window (Registration "
                  "Request to PDU Session Establishment Accept); `all` = the captured interfaces together. "
                  "Intervals over boots (iterations), overheads against the baseline of the same interface, "
                  "role and NAS algorithms. CSV: `attach-bytes.csv`.", "",
                  md_table(attach[[c for c in cols if c in attach.columns]].round(1)), ""]
    if not runs.empty:
        lines += ["### Per run and capture: handshakes and per-packet overhead", "",
                  "Measured overhead = protected packet length - the baseline's inner packet length, beside "
                  "the analytic value of the profile's proposal. CSV: `wire-bytes.csv`.", "", md_table(runs), ""]
    lines += ["### Theoretical per-packet overhead of each proposal", "",
              "Bytes added to an inner packet (ESP, WireGuard: outer IPv4 included; TLS/DTLS: per record; "
              "`relay_vs_sctp`: the relay's UDP + DTLS record against SCTP's own headers for one message). "
              "CSV: `wire-bytes-analytic.csv`.", "", md_table(analytic), ""]
    return "\n".join(lines)


def write_report(results: Path, out: Path) -> Path | None:
    from analysis.markdown import write_page
    text = markdown_section(results, out)
    return write_page(out, "wire-bytes", "Bytes on the wire", text.split("\n", 2)[2] if text else "")
