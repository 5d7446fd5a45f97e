"""The RAN study's published data (RWTH-SPICe/Internal-Ran-Security, ``results/``): our analysis
of the authors' own files, beside what they printed.

Two views:

- ``file_table``: one row per result file: the ``Results:`` line as printed and recomputed from
  the file's own value lines (mean, sample sd, their normal-quantile (z) 99 % half-width, and a
  t one), ``printed_ok`` when every printed number is reproduced to its printed digits, and,
  where the file says how its values fall into stack boots, the mean, sd and 99 % t interval
  over boots. DTLS means are printed as ``raw-relay`` (``3.438-0.458``): both numbers are kept
  (``mean`` is the raw one, ``subtracted`` what they took off, ``mean_net`` their printed result).
- ``summary``: one row per interface and configuration in the format of analysis/ran_tables.py
  (``source`` = ``authors``), so the report and the figures treat their data and our runs alike.

Boots: the ping and iperf3 drivers restart the whole stack per iteration, so a ping file of
ITERATIONS x NUMBER_OF_PINGS values holds ITERATIONS boots of NUMBER_OF_PINGS values in order
and an iperf3 file one value per boot; the registration drivers boot once and register the UE
ITERATIONS times (one boot: no interval over boots, the per-sample one is marked ``samples``);
how the ``res.txt`` files (one registration per capture) map onto boots is not recorded.

Files are found by their folder, in the authors' own tree (``results/E1 UE Registration
results/...``) and in the renamed copy under tests/data (``e1-registration/...``) alike.
"""
from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.parse.rwth_txt import RwthResult, parse_rwth
from analysis.ran_tables import RELAY_NET, RELAY_PLAIN, SUMMARY_COLUMNS, secured_relay
from analysis.reference import AUTHORS_SETUPS
from analysis.stats import CONFIDENCE, summarize, welch_diff

log = logging.getLogger(__name__)

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "rwth-internal-ran-security"
SOURCE = "RWTH-SPICe/Internal-Ran-Security results/ (the authors' data)"

# kind -> (interface, ran, measure); the patterns match the normalised relative path
# (lower case, runs of spaces/underscores as one hyphen); the relay ones come before e1/f1c
KINDS: tuple[tuple[str, str, tuple[str, str, str]], ...] = (
    ("e1-relay", r"(^|/)(e1-socat-overhead|e1-ue-registration-results/dtls-setup-overhead)/",
     ("e1", "split", "procedure")),
    ("f1c-relay", r"(^|/)(f1c-socat-overhead|f1-c-ue-registration-results/dtls-setup-overhead)/",
     ("f1c", "split", "procedure")),
    ("e1", r"(^|/)(e1-registration|e1-ue-registration-results)/", ("e1", "split", "procedure")),
    ("f1c", r"(^|/)(f1c-registration|f1-c-ue-registration-results)/", ("f1c", "split", "procedure")),
    ("f1u", r"(^|/)(f1u-ping|f1-u-latency-results)/", ("f1u", "split", "rtt")),
    ("f1u-iperf", r"(^|/)(f1u-iperf|f1-u-throughput-results)/", ("f1u", "split", "throughput")),
    ("e2e-split", r"(^|/)end-to-end(-results)?/(.*/)?disaggr[^/]*", ("e2e", "split", "rtt")),
    ("e2e-oai", r"(^|/)end-to-end(-results)?/(.*/)?monolithic[^/]*", ("e2e", "oai", "rtt")),
)
UNITS = {"procedure": "ms", "rtt": "ms", "throughput": "unknown (one iperf3 number per run, unit not recorded)"}
# strongSwan keyword spellings of the same ESP transform as our catalogue's
_ESP_ALIASES = ((r"sha2_256", "sha256"), (r"gcm128\b", "gcm16"))


@dataclass(frozen=True)
class AuthorsFile:
    path: Path
    rel: str              # path relative to the folder it was found in
    kind: str             # see KINDS
    interface: str        # e1 | f1c | f1u | e2e
    ran: str              # split | oai (their "monolithic")
    measure: str          # procedure | rtt | throughput
    setup: str            # noenc | ipsec | dtls | relay (socat without DTLS)
    security: str         # ESP keyword, DTLS cipher, "socat relay, no DTLS" or "none"
    profile: str          # our profile id of the same configuration ('' if we have none)
    result: RwthResult


def classify(rel: str) -> tuple[str, str, str, str] | None:
    """(kind, interface, ran, measure) of a file by its relative path, or None."""
    norm = re.sub(r"[\s_]+", "-", rel.replace("\\", "/").lower())
    for kind, pattern, (interface, ran, measure) in KINDS:
        if re.search(pattern, norm):
            return kind, interface, ran, measure
    return None


def _setup(setup: str) -> dict[str, Any]:
    """What one of their SETUP values is in our terms (analysis/references.yaml authors_setups)."""
    return dict(AUTHORS_SETUPS.get(setup) or {})


def our_profile(setup: str, security: str) -> str:
    """Our profile of the configuration of one of their files: the setup's fixed profile, or the one
    whose parameter `by` is their security keyword among the profiles `like` says ('' if none)."""
    from testbed.profiles import load
    spec = _setup(setup)
    if "profile" in spec or "by" not in spec:
        return str(spec.get("profile") or "")
    k = security.strip().lower()
    for pattern, repl in _ESP_ALIASES:
        k = re.sub(pattern, repl, k)
    for p in load().values():
        if (p.protocol == spec["protocol"] and p.params.get(spec["by"]) == k
                and all(p.params.get(key) == value for key, value in (spec.get("like") or {}).items())):
            return p.id
    return ""


def esp_profile(keyword: str) -> str:
    """Our start-mode certificate profile with this ESP proposal ('' if none: the authors also
    ran null-sha1, aes128-sha1 and aes256-sha1, which are not among the paper's six)."""
    return next((our_profile(s, keyword) for s, spec in AUTHORS_SETUPS.items() if spec.get("by") == "esp_proposal"), "")


def secured_relay_setups() -> list[str]:
    """Their setups that are the relay carrying its security (DTLS), not the plain relay."""
    return [s for s, spec in AUTHORS_SETUPS.items() if spec.get("relay") not in (None, RELAY_PLAIN)]


def load(folder: Path | str = DEFAULT_DIR) -> list[AuthorsFile]:
    """Every result file below ``folder`` that belongs to the RAN study (the crypto benchmark
    CSV and unrecognised files are skipped, logged)."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} does not exist: pass the authors' results/ folder or "
                                f"a copy like {DEFAULT_DIR}")
    out = []
    for path in sorted(root.rglob("*.txt")):
        rel = str(path.relative_to(root))
        kinds = classify(rel)
        if kinds is None:
            log.debug("%s: not a RAN result file, skipped", path)
            continue
        kind, interface, ran, measure = kinds
        result = parse_rwth(path)
        if kind.endswith("-relay"):
            setup, security = "relay", "socat relay, no DTLS"
        else:
            setup = result.params.get("SETUP", "").lower() or "unknown"
            security = (result.params.get("IPSEC_ESP_CIPHER_SUITE") or result.params.get("DTLS_CIPHER")
                        or ("none" if setup == "noenc" else ""))
        profile = our_profile(setup, security)
        out.append(AuthorsFile(path, rel, kind, interface, ran, measure, setup, security, profile, result))
    if not out:
        raise FileNotFoundError(f"no RAN result files of the authors below {root} "
                                "(expected folders like e1-registration/ or 'E1 UE Registration results/')")
    return out


def boots_of(f: AuthorsFile) -> tuple[np.ndarray | None, str]:
    """Boot index per value (None when not known) and how it was derived."""
    n = len(f.result.values)
    p = f.result.params
    try:
        iters = int(p.get("ITERATIONS", "0"))
        pings = int(p.get("NUMBER_OF_PINGS", "0"))
    except ValueError:
        return None, "not known (unreadable ITERATIONS)"
    if f.measure == "rtt" and iters > 1 and pings > 0 and iters * pings == n:
        return np.repeat(np.arange(iters), pings), f"{iters} boots x {pings} pings (in file order)"
    if f.measure == "throughput" and iters == n:
        return np.arange(n), f"{n} boots x 1 value"
    if f.measure == "procedure" and f.setup != "relay":
        return np.zeros(n, dtype=int), "1 boot (all registrations in one stack boot)"
    return None, "not known (one registration per capture; boots not recorded)"


def _printed_ok(f: AuthorsFile, n: int, mean: float, sd: float, h: float) -> bool:
    pr = f.result.printed

    def same(printed: str, value: float) -> bool:
        digits = len(printed.split(".")[1]) if "." in printed else 0
        return f"{value:.{digits}f}" == printed
    mean_text = re.match(r"^-?\d+(?:\.\d+)?", pr["mean"])
    return (int(pr["n"]) == n and mean_text is not None and same(mean_text.group(0), mean)
            and same(pr["sd"], sd) and same(pr["h"], h))


def file_table(files: list[AuthorsFile], confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per file (see the module docstring)."""
    rows = []
    for f in files:
        v = f.result.values["value"].to_numpy(dtype=float)
        s = summarize(v, confidence)
        boots, how = boots_of(f)
        bm = pd.Series(v).groupby(boots).mean().to_numpy() if boots is not None else np.array([])
        b = summarize(bm, confidence) if bm.size else None
        sub = re.match(r"^-?\d+(?:\.\d+)?-(\d+(?:\.\d+)?)$", f.result.printed.get("mean", ""))
        subtracted = float(sub.group(1)) if sub else math.nan
        rows.append({
            "kind": f.kind, "interface": f.interface, "ran": f.ran, "measure": f.measure, "setup": f.setup,
            "security": f.security, "profile": f.profile, "file": f.rel, "unit": UNITS[f.measure],
            "printed": "n={n} mean={mean} stdev=±{sd} 99%conf=±{h}".format(**f.result.printed),
            "n": s.n, "mean": s.mean, "sd": s.sd, "ci_z": s.ci_halfwidth_z, "ci_t": s.ci_halfwidth,
            "printed_ok": _printed_ok(f, s.n, s.mean, s.sd, s.ci_halfwidth_z),
            "subtracted": subtracted, "mean_net": s.mean - subtracted,
            "boots": how, "n_boots": int(bm.size) if boots is not None else math.nan,
            "mean_boots": b.mean if b else math.nan, "sd_boots": b.sd if b else math.nan,
            "ci_boots": b.ci_halfwidth if b else math.nan,
        })
    return pd.DataFrame(rows)


def summary(files: list[AuthorsFile], confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Their configurations in the summary format of analysis/ran_tables.py (latency only):
    ``ci`` over boots where known, else per sample (``ci_basis``); overheads against their
    no-security file of the same interface and RAN, Welch over boots when both sides have
    several, else over samples; the procedure times are their NGAP-start definition
    (``definition`` = ``ngap``), relay-only rows have ``relay`` = ``plain``, and for each DTLS
    configuration a ``net`` row gives DTLS minus the relay-only mean (what they printed)."""
    ft = file_table(files, confidence)
    ft = ft[ft["measure"] != "throughput"]
    rows = []
    for _, r in ft.iterrows():
        by_boots = not math.isnan(r["n_boots"]) and r["n_boots"] >= 2
        spec = _setup(r["setup"])
        protocol = str(spec.get("protocol") or r["setup"])
        rows.append({
            "source": "authors", "campaign": "", "experiment": r["kind"], "interface": r["interface"],
            "definition": "ngap" if r["measure"] == "procedure" else "",
            "ran": r["ran"], "profile": r["profile"] or r["security"], "protocol": protocol,
            "relay": str(spec.get("relay") or ""), "datapath": str(spec.get("datapath") or ""),
            "host": "authors' host", "cpu": "AMD Ryzen 7 Pro 6850U",
            "n_boots": r["n_boots"], "n_samples": r["n"], "mean": r["mean"],
            "sd": r["sd_boots"] if by_boots else r["sd"],
            "ci": r["ci_boots"] if by_boots else r["ci_t"], "ci_basis": "boots" if by_boots else "samples",
            "pooled_mean": r["mean"], "pooled_ci": r["ci_t"], "ci_z": r["ci_z"],
            "security": r["security"], "file": r["file"],
        })
    t = pd.DataFrame(rows)
    t = _overheads(t, ft, confidence)
    t = pd.concat([t, _net_rows(t, confidence)], ignore_index=True)
    return t.reindex(columns=SUMMARY_COLUMNS + ["security", "file"])


def _overheads(t: pd.DataFrame, ft: pd.DataFrame, confidence: float) -> pd.DataFrame:
    t = t.copy()
    for col in ("baseline_mean", "baseline_n_boots", "overhead", "overhead_ci", "overhead_pct"):
        t[col] = math.nan
    t["overhead_basis"] = ""
    for (interface, ran), g in t.groupby(["interface", "ran"]):
        base = g[g["protocol"] == "none"]
        if len(base) != 1:
            continue
        b = base.iloc[0]
        for i, r in g.iterrows():
            if r["protocol"] == "none":
                continue
            both_boots = r["ci_basis"] == "boots" and b["ci_basis"] == "boots"
            n1, n0 = (r["n_boots"], b["n_boots"]) if both_boots else (r["n_samples"], b["n_samples"])
            d, h, _ = welch_diff(n1, r["mean"], r["sd"], n0, b["mean"], b["sd"], confidence)
            t.loc[i, ["baseline_mean", "baseline_n_boots", "overhead", "overhead_ci", "overhead_pct"]] = (
                b["mean"], b["n_boots"], d, h, 100.0 * d / b["mean"])
            t.loc[i, "overhead_basis"] = "boots" if both_boots else "samples"
    return t


def _net_rows(t: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """DTLS minus the relay-only run (the relay's own cost taken off, as the authors printed),
    one row per DTLS configuration, with the Welch interval of that difference (over samples:
    neither side's boots are known)."""
    rows = []
    for _, g in t.groupby(["interface", "ran"]):
        relay = g[g["relay"] == RELAY_PLAIN]
        if len(relay) != 1:
            continue
        p = relay.iloc[0]
        for _, r in g[secured_relay(g["relay"])].iterrows():
            d, h, _ = welch_diff(r["n_samples"], r["mean"], r["sd"], p["n_samples"], p["mean"], p["sd"], confidence)
            rows.append({**{c: r[c] for c in ("source", "campaign", "interface", "definition", "ran",
                                               "protocol", "datapath", "host", "cpu", "security")},
                         "experiment": f"{r['experiment']} minus {p['experiment']}",
                         "profile": f"{r['profile']} minus relay", "relay": RELAY_NET,
                         "overhead": d, "overhead_ci": h, "overhead_basis": "samples",
                         "baseline_mean": p["mean"], "n_samples": r["n_samples"],
                         "file": f"{r['file']} minus {p['file']}"})
    return pd.DataFrame(rows)


# The authors kept only the relay-only ("DTLS setup overhead") times below a cut they did not
# write down; the data place it between the largest kept and the smallest dropped value: E1
# 4.489 < cut <= 4.61 ms, F1-C 30.758 < cut <= 92.849 ms (tests/data/rwth-internal-ran-security/SOURCE.md).
RELAY_CUT_MS = {"e1": 4.6, "f1c": 50.0}


def relay_capture_check(files: list[AuthorsFile], workers: int = 0) -> pd.DataFrame:
    """Their relay-only captures (one registration each, ``<n>.pcap`` beside ``res.txt``) read
    with our procedure-time extraction, NGAP start, microsecond-cut times: per interface, how
    many captures give a time, how many fall below the cut, and whether those equal, in file-number
    order, the first lines of ``res.txt`` (all of them where every capture is present)."""
    from analysis.parse.ran_procedures import per_file
    rows = []
    for f in files:
        if f.setup != "relay":
            continue
        caps = sorted((p for p in f.path.parent.glob("*.pcap") if p.stem.isdigit()), key=lambda p: int(p.stem))
        if not caps:
            continue
        t = per_file(caps, [f.interface], workers)
        timed = t[t["ngap_ms_us"].notna()]
        # one time per capture (a capture holding several would break the authors' file order)
        per_cap = timed.groupby("capture", sort=False)["ngap_ms_us"].agg(list)
        values = [round(v[0], 3) for c in map(str, caps) if len(v := per_cap.get(c, [])) == 1]
        cut = RELAY_CUT_MS[f.interface]
        kept = [v for v in values if v < cut]
        theirs = f.result.values["value"].round(3).tolist()
        rows.append({"interface": f.interface, "res_txt": f.rel, "captures": len(caps),
                     "with_time": int(per_cap.size), "several_times": int((per_cap.map(len) > 1).sum()),
                     "without_time": len(caps) - int(per_cap.size), "cut_ms": cut,
                     "below_cut": len(kept), "at_or_above_cut": len(values) - len(kept),
                     "res_txt_lines": len(theirs), "lines_compared": min(len(kept), len(theirs)),
                     "equal": kept == theirs[:len(kept)] and len(kept) <= len(theirs),
                     "complete_match": kept == theirs,
                     "statuses": ", ".join(f"{k} {v}" for k, v in t["status"].value_counts().sort_index().items())})
    return pd.DataFrame(rows)


def printed_from_subset(f: AuthorsFile) -> str:
    """Why a printed summary is not reproduced, where one value line more or less explains it:
    '' or ', which the value lines without the first one give (but for n)'."""
    v = f.result.values["value"].to_numpy(dtype=float)
    for what, sub in (("without the first one", v[1:]), ("without the last one", v[:-1])):
        s = summarize(sub)
        probe = AuthorsFile(f.path, f.rel, f.kind, f.interface, f.ran, f.measure, f.setup, f.security,
                            f.profile, RwthResult(f.result.params, {**f.result.printed, "n": str(s.n)}))
        if _printed_ok(probe, s.n, s.mean, s.sd, s.ci_halfwidth_z):
            return (f"; the printed mean, sd and half-width are those of the value lines {what} "
                    f"({s.n} values, while n={v.size} is printed)")
    return ""
