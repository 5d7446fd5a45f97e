"""The report's post-quantum section (docs/analysis.md "Post-quantum"): what a post-quantum key
exchange costs per handshake (bytes, packets, time between namespaces: `make bench-handshake`), per
operation (`make bench-crypto`'s ML-KEM/ML-DSA rows), and in the attach of a UE (run-sbi runs of the
post-quantum profiles, cold and warm, per IPsec mode), beside the analytic sizes, and the seed
study's sentence with the verdict these data give.

Replications are boots: a handshake run's per-boot means, their mean and 99 % t interval over the
boots (n_boots, n_samples); overheads against the classical reference of the same protocol
(OverlayPlugin.classical_reference: the catalogue's `x25519` key exchange for IPsec, `tls13-x25519`
for TLS, `wireguard` for Rosenpass) with the Welch interval of the difference. Nothing here knows a
protocol's rules: the rows come from the plug-ins (handshake_records) through the benchmark's CSV,
whether a profile is post-quantum and its reference from the plug-ins too (testbed/contract.py).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import markdown as md
from analysis import stats

log = logging.getLogger(__name__)

SEED_SOURCE = "Michaelides et al., WiSec 2025, section 7 (../shared/papers/michaelides2025-network-layer-security-latency.txt)"
SEED_SENTENCE = ("\"Additionally, assessing the impact of post-quantum cryptography on 5G and future 6G systems is "
                 "essential. In hybrid scenarios, where authentication and key exchange are more demanding and occur "
                 "twice, our findings indicate that IPsec in start mode may be the only viable option for maintaining "
                 "ultra-low latency.\"")
# The primitives' sizes (FIPS 203 ML-KEM, RFC 7748 X25519, SEC 1 P-256 uncompressed point); each
# plug-in adds the sizes of its own handshake fields (OverlayPlugin.analytic_handshake_sizes)
ANALYTIC = [
    ("ML-KEM-512", "encapsulation key / ciphertext", 800, 768),
    ("ML-KEM-768", "encapsulation key / ciphertext", 1184, 1088),
    ("ML-KEM-1024", "encapsulation key / ciphertext", 1568, 1568),
    ("X25519", "public value, both ways", 32, 32),
    ("P-256 (IKE: x||y; TLS: 0x04||x||y)", "public value, both ways", 64, 65),
]


def analytic_sizes() -> list[tuple[str, str, int, int]]:
    """The primitives' rows, then every overlay plug-in's handshake fields."""
    from testbed import registry
    rows = list(ANALYTIC)
    for proto in registry.protocols():
        rows += registry.overlay(proto).analytic_handshake_sizes()
    return rows


def _plugin(protocol: str) -> Any:
    from testbed import registry
    return registry.overlay(protocol) if protocol in registry.protocols() else None


def _profile(pid: str) -> Any:
    from testbed import profiles
    return profiles.load().get(pid)


def reference_of(profile_id: str) -> str | None:
    """The classical profile the plug-in sets a post-quantum profile beside (None: none)."""
    p = _profile(profile_id)
    plug = _plugin(p.protocol) if p is not None else None
    return plug.classical_reference(p) if plug is not None else None


# --- the handshake micro-benchmark ------------------------------------------------------------

def handshake_runs(results: Path) -> list[Path]:
    return sorted(p.parent for p in Path(results).rglob("handshakes.csv")
                  if (p.parent / "manifest.json").is_file())


def load_handshakes(results: Path) -> pd.DataFrame:
    """Every bench-phase handshake of every valid run: one row each, with profile, protocol, run."""
    frames = []
    for d in handshake_runs(results):
        m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        f = pd.read_csv(d / "handshakes.csv")
        if f.empty:
            continue
        valid_boots = [int(b["boot"]) for b in m.get("boot_records", []) if b.get("valid")]
        f = f[(f["phase"] == "bench") & f["boot"].astype(int).isin(valid_boots)]
        if "kind" not in f.columns:
            f = f.assign(kind=m["protocol"])
        f = f.assign(kind=f["kind"].fillna(m["protocol"]), profile=m["profile"], protocol=m["protocol"],
                     run=d.name, post_quantum=_post_quantum(m))
        frames.append(f)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _post_quantum(m: dict[str, Any]) -> bool:
    """The plug-in's word on the run's profile (the catalogue's; the manifest's params otherwise)."""
    p = _profile(str(m.get("profile", "")))
    plug = _plugin(str(m.get("protocol") or (p.protocol if p is not None else "")))
    if p is None or plug is None:
        return bool((m.get("params") or {}).get("post_quantum"))
    return bool(plug.post_quantum(p))


def handshake_table(hs: pd.DataFrame) -> pd.DataFrame:
    """Per profile and handshake kind: n_boots, n_samples, mean/sd/99 % CI over boot means of the
    time (ms), bytes (IP) and packets; the first messages' sizes where recorded."""
    if hs.empty:
        return pd.DataFrame()
    rows = []
    keys = ["protocol", "profile", "kind", "post_quantum"]
    for key, g in hs.groupby(keys, sort=False):
        boots = g.groupby(["run", "boot"])
        row: dict[str, Any] = dict(zip(keys, key))
        row["n_boots"], row["n_samples"] = boots.ngroups, len(g)
        for col, name in (("handshake_ms", "ms"), ("ip_bytes", "ip_bytes"), ("packets", "packets")):
            per_boot = boots[col].mean().to_numpy(dtype=float)
            s = stats.summarize(per_boot)
            row[f"{name}_mean"], row[f"{name}_sd"], row[f"{name}_ci"] = s.mean, s.sd, s.ci_halfwidth
        for col in ("IKE_INTERMEDIATE_request_udp_bytes", "IKE_INTERMEDIATE_request_packets", "ClientHello_bytes",
                    "ClientHello_segments", "ServerHello_bytes", "ServerHello_segments", "hello_retries",
                    "InitHello_udp_bytes", "RespHello_udp_bytes", "IKE_SA_INIT_request_udp_bytes"):
            if col in g.columns and g[col].notna().any():
                row[col] = float(g[col].median())
        rows.append(row)
    return pd.DataFrame(rows)


def with_overhead(tab: pd.DataFrame) -> pd.DataFrame:
    """Each row beside its protocol's classical reference (same kind): the Welch difference of the
    boot means and its 99 % half-width."""
    if tab.empty:
        return tab
    out = tab.copy()
    for col in ("ms", "ip_bytes"):
        out[f"{col}_overhead"] = np.nan
        out[f"{col}_overhead_ci"] = np.nan
    for i, r in out.iterrows():
        ref = out[(out["profile"] == (reference_of(str(r["profile"])) or "")) & (out["kind"] == r["kind"])]
        if ref.empty or ref.index[0] == i:
            continue
        b = ref.iloc[0]
        for col in ("ms", "ip_bytes"):
            d, hw, _ = stats.welch_diff(r["n_boots"], r[f"{col}_mean"], r[f"{col}_sd"], b["n_boots"], b[f"{col}_mean"],
                                     b[f"{col}_sd"])
            out.at[i, f"{col}_overhead"], out.at[i, f"{col}_overhead_ci"] = d, hw
    return out


# --- the crypto rows ----------------------------------------------------------------------------

def load_crypto(results: Path) -> pd.DataFrame:
    frames = [pd.read_csv(p) for p in sorted(Path(results).rglob("pq-raw.csv"))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def crypto_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Operations per second per source, scheme and operation: n, mean, 99 % CI over the repeats."""
    if raw.empty:
        return raw
    g = stats.summarize_groups(raw, ["scheme", "operation", "source"], "ops_per_s")
    wide = g.pivot_table(index=["scheme", "operation"], columns="source", values=["mean", "ci"])
    wide.columns = [f"{src}_{what}" for what, src in wide.columns]
    wide = wide[sorted(wide.columns, key=lambda c: (c.rsplit("_", 1)[0], c.endswith("_ci")))]
    order = {s: i for i, s in enumerate(["mlkem512", "mlkem768", "mlkem1024", "x25519", "p256", "mldsa44",
                                         "mldsa65", "mldsa87", "ecdsap256"])}
    wide = wide.reset_index()
    return wide.sort_values(["scheme", "operation"], key=lambda c: c.map(order) if c.name == "scheme" else c)


# --- the attach (run-sbi) -----------------------------------------------------------------------

def attach_overheads(attach: pd.DataFrame | None) -> pd.DataFrame:
    """Cold and warm attach of the post-quantum profiles against their classical reference (same
    protocol, mode, role): from the report's attach table; empty without such runs."""
    if attach is None or attach.empty or "profile" not in attach.columns:
        return pd.DataFrame()
    rows = []
    for _, r in attach.iterrows():
        p = _profile(str(r["profile"]))
        if p is None or not _post_quantum({"profile": p.id, "protocol": p.protocol}):
            continue
        ref_id = reference_of(p.id) or ""
        ref = attach[(attach["profile"] == ref_id) & (attach["role"] == r["role"])]
        if ref.empty:
            continue
        b = ref.iloc[0]
        d, hw, _ = stats.welch_diff(r["n_boots"], r["mean"], r.get("sd", np.nan), b["n_boots"], b["mean"], b.get("sd", np.nan))
        rows.append({"profile": p.id, "protocol": p.protocol, "mode": p.params.get("mode", ""), "role": r["role"],
                     "reference": ref_id, "n_boots": r["n_boots"], "mean_ms": r["mean"], "reference_ms": b["mean"],
                     "pq_overhead_ms": d, "pq_overhead_ci": hw})
    return pd.DataFrame(rows)


# --- figures ------------------------------------------------------------------------------------

def figure(tab: pd.DataFrame, out: Path) -> list[Path]:
    """Handshake IP bytes and time per profile and kind, coloured by protocol (the plug-ins' colours)."""
    if tab.empty:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from testbed import registry
    t = tab.sort_values(["protocol", "post_quantum", "profile"])
    labels = [f"{r.profile}" + (f" ({r.kind})" if r.kind != r.protocol else "") for r in t.itertuples()]
    colours = [registry.overlay(str(p)).colour if p in registry.protocols() else "#7f7f7f" for p in t["protocol"]]
    fig, axes = plt.subplots(1, 2, figsize=(12, max(3.5, 0.4 * len(t) + 1.5)))
    y = np.arange(len(t))
    for ax, col, title in ((axes[0], "ip_bytes", "bytes per handshake (IP)"), (axes[1], "ms", "handshake time (ms)")):
        ax.barh(y, t[f"{col}_mean"], xerr=t[f"{col}_ci"].fillna(0), color=colours,
                hatch=None, alpha=0.85, capsize=3)
        for yi, pq in zip(y, t["post_quantum"]):
            if pq:
                ax.barh(yi, t[f"{col}_mean"].iloc[yi], fill=False, hatch="//", edgecolor="black", linewidth=0)
        ax.set_yticks(y)
        ax.set_yticklabels(labels if ax is axes[0] else [])
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
    axes[1].set_xlabel("99 % CI over boots; hatched: post-quantum")
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "fig-pq-handshakes.png", out / "fig-pq-handshakes.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def attach_figure(ov: pd.DataFrame, out: Path) -> list[Path]:
    if ov.empty:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = ov.sort_values(["protocol", "mode", "profile", "role"])
    fig, ax = plt.subplots(figsize=(9, max(3, 0.35 * len(t) + 1.5)))
    y = np.arange(len(t))
    ax.barh(y, t["pq_overhead_ms"], xerr=t["pq_overhead_ci"].fillna(0), capsize=3,
            color=["#1f77b4" if r == "cold" else "#aec7e8" for r in t["role"]])
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r.profile} [{r.mode or r.protocol}] {r.role}" for r in t.itertuples()])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("attach time, post-quantum minus classical (ms, 99 % Welch CI)")
    fig.tight_layout()
    paths = [out / "fig-pq-attach.png", out / "fig-pq-attach.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


# --- verdict and section ------------------------------------------------------------------------

def verdict(tab: pd.DataFrame, ov: pd.DataFrame) -> str:
    """What the data say about the seed's hypothesis, in numbers; says what is missing."""
    lines = []
    if not tab.empty:
        t = with_overhead(tab)
        pq = t[t["post_quantum"] & t["ms_overhead"].notna()]
        for r in pq.itertuples():
            lines.append(f"- {r.profile} ({r.kind}): {r.ms_mean:.2f} ms per handshake, {r.ms_overhead:+.2f} ± "
                         f"{r.ms_overhead_ci:.2f} ms and {r.ip_bytes_overhead:+.0f} ± {r.ip_bytes_overhead_ci:.0f} B "
                         f"against {reference_of(str(r.profile))} ({r.n_boots} boots).")
    if not ov.empty:
        for r in ov.itertuples():
            lines.append(f"- attach {r.profile} [{r.mode or r.protocol}, {r.role}]: {r.pq_overhead_ms:+.2f} ± "
                         f"{r.pq_overhead_ci:.2f} ms against {r.reference}.")
    if ov.empty:
        lines.append("- No run-sbi runs of post-quantum profiles in these results: the attach-level test of the "
                     "hypothesis (start against trap per mode) needs run-sbi runs of each profile and its reference "
                     "over several boots on a machine with a full kernel and real CPUs (the software-emulated "
                     "guest of docs/vm-check.md shows validity, not times; docs/post-quantum.md). From the handshake rows alone: in start "
                     "mode the IPsec handshake, classical or post-quantum, is made before the NFs start and is "
                     "not in any attach; in the trap modes, and for TLS and WireGuard cold attaches, each host "
                     "pair's first handshake is, so a post-quantum key exchange adds its handshake overhead "
                     "above once per pair a cold attach opens.")
    return "\n".join(lines)


def markdown_section(results: Path, out: Path, link_dir: str = "", attach: pd.DataFrame | None = None) -> str:
    """The report section ('' when there is neither a handshake nor a PQ crypto run)."""
    hs = load_handshakes(results)
    raw = load_crypto(results)
    ov = attach_overheads(attach)
    if hs.empty and raw.empty and ov.empty:
        return ""
    out.mkdir(parents=True, exist_ok=True)
    tab = with_overhead(handshake_table(hs))
    ctab = crypto_table(raw)
    if not tab.empty:
        tab.to_csv(out / "pq-handshakes.csv", index=False)
    if not ctab.empty:
        ctab.to_csv(out / "pq-crypto.csv", index=False)
    if not ov.empty:
        ov.to_csv(out / "pq-attach.csv", index=False)
    figs = figure(tab, out) + attach_figure(ov, out)
    lines = ["## Post-quantum key exchange", "", f"The seed ({SEED_SOURCE}): {SEED_SENTENCE}", ""]
    if not tab.empty:
        cols = [c for c in ["protocol", "profile", "kind", "post_quantum", "n_boots", "n_samples", "ms_mean", "ms_ci",
                            "ms_overhead", "ms_overhead_ci", "ip_bytes_mean", "ip_bytes_overhead", "packets_mean",
                            "IKE_INTERMEDIATE_request_udp_bytes", "IKE_INTERMEDIATE_request_packets",
                            "ClientHello_bytes", "ClientHello_segments", "ServerHello_bytes", "hello_retries",
                            "InitHello_udp_bytes", "RespHello_udp_bytes"] if c in tab.columns]
        lines += ["### Handshakes between namespaces (make bench-handshake)", "",
                  "Per handshake, from each boot's capture (first to last packet on its clock); means and 99 % "
                  "intervals over boots; overheads against the classical reference the plug-in names "
                  "(same protocol and everything else, a classical key exchange). Userspace datapaths here "
                  "(kernel-libipsec, wireguard-go): handshakes are made by the daemons in either case.", "",
                  md.table(tab[cols]), ""]
        lines += [f"![handshakes]({link_dir}{figs[0].name})", ""] if figs else []
    lines += ["### Analytic sizes", "", md.table(pd.DataFrame(analytic_sizes(), columns=["what", "which", "bytes (first)",
                                                                                   "bytes (second)"])), ""]
    if not ctab.empty:
        lines += ["### Per operation (make bench-crypto)", "",
                  "Operations per CPU second, 99 % intervals over the repeats of one process: `openssl speed` "
                  "(OpenSSL >= 3.5) and the Python `cryptography` package (its own OpenSSL; no ML-KEM-512).", "",
                  md.table(ctab.round(1)), ""]
    if not ov.empty:
        lines += ["### Attach time: post-quantum against classical", "", md.table(ov), ""]
        lines += [f"![attach]({link_dir}{p.name})" for p in figs if p.name.startswith("fig-pq-attach") and p.suffix == ".png"]
    lines += ["### Verdict", "", verdict(tab, ov), ""]
    return "\n".join(lines)


def write_report(results: Path, out: Path) -> Path | None:
    from analysis.markdown import write_page
    return write_page(out, "pq", "Post-quantum key exchange", markdown_section(results, out))
