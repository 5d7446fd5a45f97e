"""The cipher benchmark (`make bench-crypto`): raw rows -> table, figure and report section.

Input: run directories `<results>/<campaign>/crypto/ciphers/<run>/` written by
testbed/crypto_bench.py (raw-<aesni>.csv: aesni, scheme, size, repeat, calls, seconds;
openssl-speed-<aesni>.txt). Throughput is bytes processed per second in GB/s (10^9 B/s);
time per GB = 10^9 B / throughput. Intervals are 99 % t intervals over the repeats of one
process (a micro-benchmark: its repeats share the CPU state, so they bound timing noise, not
machine-to-machine variation).

The seed study (Michaelides et al., WiSec 2026, section 7) printed values for the Python
`cryptography` package on their host; SEED holds them as data for the report, and
read_seed_csv reads their published raw CSV (whose "MB/s" column is MiB/s).
"""
from __future__ import annotations

import csv
import json
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import stats
from analysis.figure_files import write_figure

log = logging.getLogger(__name__)

GB = 1e9
RAW = re.compile(r"^raw-(on|masked)\.csv$")
SPEED = re.compile(r"^openssl-speed-(on|masked)\.txt$")

# The seed's printed numbers (section 7): throughput cap in GB/s and time for "1 GB" (their
# CSV shows it is 1 GiB = 2^30 B) in s, as ranges (low, high), keyed by our scheme of the same
# name. Their "GMAC" function's construction is not RFC 4543's (docs/bench-crypto.md).
SEED = {
    "aes128gmac": {"label": "GMAC AES-128", "gbps": (7.4, 7.4), "s_per_gib": (0.14, 0.14)},
    "aes128gcm16": {"label": "AES-128-GCM", "gbps": (6.0, 6.5), "s_per_gib": (0.21, 0.23)},
    "aes256gcm16": {"label": "AES-256-GCM", "gbps": (6.0, 6.5), "s_per_gib": (0.21, 0.23)},
    "aes128-sha256": {"label": "AES-128-CBC + HMAC", "gbps": (None, 1.0), "s_per_gib": (1.37, 1.61)},
    "aes256-sha256": {"label": "AES-256-CBC + HMAC", "gbps": (None, 1.0), "s_per_gib": (1.37, 1.61)},
}
GIB = 2 ** 30
# Where the seed is compared (bytes): large enough that the call's fixed cost is amortised,
# small enough to stay in the caches; the seed's 1 GiB and our 64 MiB time the memory as well.
PLATEAU = (256 * 1024, 4 * 1024 * 1024)
SEED_SOURCE = "Michaelides et al., WiSec 2026, section 7 and Fig. 4 (Python cryptography)"


def run_dirs(results: Path) -> list[Path]:
    """Complete, valid crypto runs below results (others are logged and left out)."""
    out = []
    for m in sorted(Path(results).rglob("manifest.json")):
        try:
            man = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if man.get("experiment") != "crypto":
            continue
        if man.get("state") != "complete" or man.get("valid") is not True:
            log.warning("crypto run %s left out: state %s, valid %s (%s)", m.parent, man.get("state"),
                        man.get("valid"), (man.get("validity") or {}).get("details", ""))
            continue
        out.append(m.parent)
    return out


def load_raw(run_dir: Path) -> pd.DataFrame:
    """Tidy rows: run, aesni, scheme, size, repeat, calls, seconds, gbps, s_per_gb."""
    frames = []
    for f in sorted(run_dir.iterdir()):
        if RAW.match(f.name):
            df = pd.read_csv(f, header=None, names=["aesni", "scheme", "size", "repeat", "calls", "seconds"])
            frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["run", "aesni", "scheme", "size", "repeat", "calls", "seconds",
                                     "gbps", "s_per_gb"])
    df = pd.concat(frames, ignore_index=True)
    df["run"] = run_dir.name
    df["gbps"] = df["size"] * df["calls"] / df["seconds"] / GB
    df["s_per_gb"] = 1.0 / df["gbps"]
    return df


def load_speed(run_dir: Path) -> pd.DataFrame:
    """openssl speed cross-check rows: run, aesni, scheme, bytes, speed_gbps."""
    rows = []
    for f in sorted(run_dir.iterdir()):
        m = SPEED.match(f.name)
        if not m:
            continue
        scheme = size = None
        for line in f.read_text(encoding="utf-8").splitlines():
            head = re.match(r"^# scheme=(\S+) aesni=\S+ bytes=(\d+)", line)
            if head:
                scheme, size = head.group(1), int(head.group(2))
            elif line.startswith("+F:") and scheme:
                vals = [float(v) for v in line.split(":")[3:] if v]
                if vals:
                    rows.append({"run": run_dir.name, "aesni": m.group(1), "scheme": scheme,
                                 "bytes": size, "speed_gbps": vals[-1] / GB})
    return pd.DataFrame(rows, columns=["run", "aesni", "scheme", "bytes", "speed_gbps"])


def table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per aesni, scheme and size: n, mean/sd/99 % CI of GB/s and of seconds per GB."""
    if raw.empty:
        return pd.DataFrame()
    by = ["aesni", "scheme", "size"]
    t = stats.summarize_groups(raw, by, "gbps")
    t = t.rename(columns={c: f"gbps_{c}" for c in t.columns if c not in by})
    s = stats.summarize_groups(raw, by, "s_per_gb")
    s = s.rename(columns={c: f"s_per_gb_{c}" for c in s.columns if c not in by})
    return t.merge(s, on=by)


def cross_check(tab: pd.DataFrame, speed: pd.DataFrame) -> pd.DataFrame:
    """Our GB/s beside `openssl speed` at the same size (same OpenSSL mask)."""
    if tab.empty or speed.empty:
        return pd.DataFrame()
    sp = speed.groupby(["aesni", "scheme", "bytes"], as_index=False)["speed_gbps"].mean()
    m = tab.merge(sp, left_on=["aesni", "scheme", "size"], right_on=["aesni", "scheme", "bytes"])
    m["ratio"] = m["gbps_mean"] / m["speed_gbps"]
    return m[["aesni", "scheme", "size", "gbps_mean", "speed_gbps", "ratio"]]


def figure(tab: pd.DataFrame, out: Path) -> list[Path]:
    """Fig. 4 of the seed, extended: throughput vs input size (one line per scheme, 99 % CI
    band), one panel per AES-NI mode, plus the time per GB at the largest size."""
    if tab.empty:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    modes = [m for m in ("on", "masked") if m in set(tab["aesni"])]
    fig, axes = plt.subplots(1, len(modes) + 1, figsize=(5.2 * (len(modes) + 1), 4.2))
    axes = np.atleast_1d(axes)
    schemes = list(dict.fromkeys(tab["scheme"]))
    colours = {s: plt.get_cmap("tab10")(i % 10) for i, s in enumerate(schemes)}
    for ax, mode in zip(axes, modes):
        sub = tab[tab["aesni"] == mode]
        for s in schemes:
            d = sub[sub["scheme"] == s].sort_values("size")
            if d.empty:
                continue
            ax.plot(d["size"], d["gbps_mean"], marker="o", ms=3, color=colours[s], label=s)
            ax.fill_between(d["size"], d["gbps_ci_low"], d["gbps_ci_high"], color=colours[s], alpha=0.2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("input size (bytes)")
        ax.set_ylabel("throughput (GB/s)")
        ax.set_title(f"AES-NI {'available' if mode == 'on' else 'masked'}")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    ax = axes[-1]
    big = tab[tab["size"] == tab["size"].max()]
    width = 0.8 / max(len(modes), 1)
    x = np.arange(len(schemes))
    for i, mode in enumerate(modes):
        d = big[big["aesni"] == mode].set_index("scheme").reindex(schemes)
        ax.bar(x + i * width, d["s_per_gb_mean"], width, yerr=d["s_per_gb_ci"],
               label=f"AES-NI {mode}", color="#1f77b4" if mode == "on" else "#ff7f0e")
    ax.set_xticks(x + width * (len(modes) - 1) / 2, schemes, rotation=60, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel(f"time per GB (s), {int(tab['size'].max()) // 1024 // 1024 or tab['size'].max()} MiB buffers"
                  if tab["size"].max() >= 1 << 20 else "time per GB (s)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return write_figure(fig, out, "fig_crypto")


def plateau_sizes(tab: pd.DataFrame) -> list[int]:
    """The benchmarked sizes within PLATEAU (where a cipher's throughput has levelled off and the
    buffer still fits the caches), else the largest size."""
    sizes = sorted(int(s) for s in tab["size"].unique())
    inside = [s for s in sizes if PLATEAU[0] <= s <= PLATEAU[1]]
    return inside or sizes[-1:]


def _size_label(size: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def seed_comparison(tab: pd.DataFrame) -> pd.DataFrame:
    """Our throughput at the plateau beside the seed's printed numbers, AES-NI on: per scheme the
    plateau size where it ran fastest (`size` says which, `plateau_gbps` the range over the
    plateau's sizes). Not the largest size: a buffer far beyond the caches times the memory."""
    if tab.empty:
        return pd.DataFrame()
    sizes = plateau_sizes(tab)
    on = tab[(tab["aesni"] == "on") & tab["size"].isin(sizes)]
    rows = []
    for scheme, ref in SEED.items():
        r = on[on["scheme"] == scheme]
        if r.empty:
            continue
        best = r.loc[r["gbps_mean"].idxmax()]
        lo, hi = ref["gbps"]
        slo, shi = ref["s_per_gib"]
        rows.append({"scheme": scheme, "seed_label": ref["label"], "size": _size_label(int(best["size"])),
                     "ours_gbps": round(float(best["gbps_mean"]), 3), "ours_gbps_ci": round(float(best["gbps_ci"]), 3),
                     "plateau_gbps": f"{r['gbps_mean'].min():.3f}-{r['gbps_mean'].max():.3f}",
                     "seed_gbps": f"< {hi}" if lo is None else (f"{lo}" if lo == hi else f"{lo}-{hi}"),
                     "ours_s_per_gib": round(float(best["s_per_gb_mean"]) * GIB / GB, 3),
                     "seed_s_per_gib": f"{slo}" if slo == shi else f"{slo}-{shi}"})
    return pd.DataFrame(rows)


def markdown_section(results: Path, out: Path, link_dir: str = "") -> str:
    """The report section: figure, tables, the seed's numbers; '' when no crypto run exists.
    `link_dir`: the figure's folder as seen from the page that includes the section."""
    from analysis.markdown import table as md_table
    dirs = run_dirs(results)
    if not dirs:
        return ""
    raw = pd.concat([load_raw(d) for d in dirs], ignore_index=True)
    speed = pd.concat([load_speed(d) for d in dirs], ignore_index=True)
    tab = table(raw)
    out.mkdir(parents=True, exist_ok=True)
    tab.to_csv(out / "crypto.csv", index=False)
    figs = figure(tab, out)
    cmp_ = seed_comparison(tab)
    xc = cross_check(tab, speed)
    big = tab[tab["size"] == tab["size"].max()][["aesni", "scheme", "size", "gbps_n", "gbps_mean",
                                                   "gbps_ci", "s_per_gb_mean", "s_per_gb_ci"]]
    lines = ["## Cipher micro-benchmark (make bench-crypto)", "",
             f"{len(dirs)} run(s); throughput in GB/s (10^9 B/s) with 99 % t intervals over the "
             "repeats of one process. Masked = OpenSSL's AES-NI/PCLMULQDQ capability bits cleared.", ""]
    if figs:
        lines += [f"![cipher throughput]({link_dir}{figs[0].name})", ""]
    lines += ["### At the largest size", "", md_table(big.round(4)), ""]
    if not cmp_.empty:
        used = plateau_sizes(tab)
        where = (f"at the plateau ({_size_label(PLATEAU[0])} to {_size_label(PLATEAU[1])}; sizes here: "
                 + ", ".join(_size_label(s) for s in used) + "), each scheme at the size where it ran fastest "
                 "(`size`; `plateau_gbps`: the range over those sizes)"
                 if PLATEAU[0] <= used[0] <= PLATEAU[1] else
                 f"at the largest size ({_size_label(used[0])}): no benchmarked size lies in the plateau "
                 f"({_size_label(PLATEAU[0])} to {_size_label(PLATEAU[1])})")
        lines += ["### Beside the seed study", "", f"Source: {SEED_SOURCE}. Ours {where}, AES-NI on. "
                  "Their \"1 GB\" is 1 GiB; our aes128gmac is RFC 4543 "
                  "GMAC (the buffer as associated data), which their function is not.", "",
                  md_table(cmp_), ""]
    if not xc.empty:
        lines += ["### Cross-check with `openssl speed` (same size and mask)", "",
                  "CBC rows compare the whole ESP transform with `openssl speed` of the cipher alone "
                  "(no HMAC), so their ratio is below 1 by the HMAC's cost.", "", md_table(xc.round(3)), ""]
    return "\n".join(lines)


def write_report(results: Path, out: Path) -> Path | None:
    from analysis.markdown import write_page
    return write_page(out, "crypto", "Cipher benchmark", markdown_section(results, out))


def read_seed_csv(path: Path) -> pd.DataFrame:
    """The seed's own benchmark_results.csv (Algorithm, File Size (Bytes), Iteration, Time (s),
    Throughput (MB/s) = MiB/s per iteration) as tidy rows with GB/s, for side-by-side plots."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            rows.append({"algorithm": r["Algorithm"], "size": int(r["File Size (Bytes)"]),
                         "iteration": int(r["Iteration"]),
                         "gbps": float(r["Throughput (MB/s)"]) * 2 ** 20 / GB})
    return pd.DataFrame(rows)
