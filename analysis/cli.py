"""`python -m analysis <command>`: attach times, ping statistics, figures and the report.

Library modules log; this module prints results on stdout and errors on stderr.
Exit codes: 0 ok, 1 failure, 2 usage error, 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from testbed.cli import OneLineParser

if TYPE_CHECKING:           # imported where used: `attach-times` must not pay for them
    import numpy as np
    import pandas as pd

log = logging.getLogger("analysis")
DEFAULT_CACHE = Path("build") / "analysis" / "tshark-cache"


def _ping_values(path: Path) -> tuple[np.ndarray, int]:
    """RTT samples and lost count of one file: ping output or an RWTH result text."""
    from analysis.parse.ping import parse_ping_text, rtt_samples
    from analysis.parse.rwth_txt import looks_like_rwth, parse_rwth_text
    text = path.read_text(encoding="utf-8", errors="replace")
    if looks_like_rwth(text):
        return parse_rwth_text(text, str(path)).values["value"].to_numpy(dtype=float), 0
    frame = parse_ping_text(text)
    if frame.empty:
        raise ValueError(f"{path}: no ping replies and no RWTH 'Results:' line found; "
                         "expected `LC_ALL=C ping -D -n` output")
    return rtt_samples(frame).to_numpy(dtype=float), int(frame["lost"].sum())


def cmd_ping_stats(args: argparse.Namespace) -> int:
    import numpy as np

    from analysis.stats import summarize
    values, lost = [], 0
    for f in args.files:
        v, n_lost = _ping_values(Path(f))
        values.append(v)
        lost += n_lost
    s = summarize(np.concatenate(values) if values else np.array([]))
    print(json.dumps({"n": s.n, "mean_ms": s.mean, "sd_ms": s.sd, "ci99_halfwidth_ms": s.ci_halfwidth,
                      "ci99_halfwidth_z_ms": s.ci_halfwidth_z, "lost": lost,
                      "files": [str(f) for f in args.files]}))
    return 0


def cmd_attach_times(args: argparse.Namespace) -> int:
    from analysis.parse.ngap_attach import attach_rows, rows_csv
    sys.stdout.write(rows_csv(attach_rows(args.capture, mode="ngap" if args.ngap_only else args.mode)))
    return 0


def cmd_ran_procedures(args: argparse.Namespace) -> int:
    from analysis.parse import ran_procedures as rp
    paths = [Path(p) for p in args.paths]
    interfaces = args.interface or list(rp.INTERFACES)
    if any(p.is_dir() for p in paths):
        if len(paths) != 1:
            raise ValueError("give one results directory, or capture files (not both)")
        from analysis import ran_tables
        from analysis.results import discover
        rows = ran_tables.procedure_rows(discover(paths[0]))
        table = ran_tables.procedure_summary(rows)
        table = table[table["interface"].isin(interfaces)]
        return _two_tables(args.format, "RAN procedure times (ms)", table, "Registrations by status",
                           ran_tables.status_counts(rows))
    frame = (rp.procedure_times(paths, interfaces) if args.combine else rp.per_file(paths, interfaces))
    if args.combine:
        frame.insert(0, "capture", "+".join(map(str, paths)))
    sys.stdout.write(frame.to_csv(index=False, lineterminator="\n", float_format="%.6f"))
    return 0


def _parallel(fn, items: list) -> list:        # type: ignore[no-untyped-def]
    """fn over items, one tshark pass per capture, as many at once as there are cores."""
    import os
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(fn, items))


def cmd_sbi_ops(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths]
    if any(p.is_dir() for p in paths):
        if len(paths) != 1:
            raise ValueError("give one results directory, or capture files (not both)")
        from analysis import sbi_report
        return _two_tables(args.format, "SBI operations per profile (ms, intervals over boots)",
                           *sbi_report.cli_tables(paths[0]))
    from analysis.parse import sbi_ops
    by_overlay: dict[str, list[Path]] = {}
    for item in args.keys or ():
        overlay, sep, path = item.partition("=")
        if not sep:
            raise ValueError(f"--keys {item!r}: give OVERLAY=FILE, e.g. tls=tls-keys.log")
        by_overlay.setdefault(overlay, []).append(Path(path))
    decode = sbi_ops.CLEAR
    if by_overlay:              # the plug-ins (and the profile catalogue) only to decrypt: 0.4 s of imports
        from analysis import decrypt
        decode = decrypt.for_files(by_overlay)
    names: dict[str, str] = {}
    if args.names:
        from testbed import instance, stack
        values = instance.shift(stack.load(), args.slot)
        names = {str(a): str(n) for n, spec in values["nodes"].items() for a in (spec.get("networks") or {}).values()}
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"capture {p} does not exist")
    results = _parallel(lambda p: sbi_ops.requests(p, decode, ports=args.port or [], detect=not args.no_detect),
                        paths)
    for p, rs in zip(paths, results):
        if not rs:
            print(f"{p}: no HTTP/2 or HTTP/1.1 request over TCP in the capture (encrypted SBI needs its keys: "
                  "--keys; an SBI on a port tshark does not read as HTTP: --port)", file=sys.stderr)
    rows = [r for rs in results for r in sbi_ops.with_names(rs, names)]
    sys.stdout.write(sbi_ops.rows_csv(rows))
    return 0


def cmd_n2_procedures(args: argparse.Namespace) -> int:
    from analysis.parse import ngap_procedures as npr
    paths = [Path(p) for p in args.captures]
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"capture {p} does not exist")
    rows = [r for rs in _parallel(npr.procedures, paths) for r in rs]
    sys.stdout.write(npr.rows_csv(rows))
    return 0


def cmd_f1u(args: argparse.Namespace) -> int:
    from analysis import ran_tables
    from analysis.datasets import Datasets
    from analysis.results import discover
    ds = Datasets.load(discover(args.results))
    return _two_tables(args.format, "F1-U and end-to-end RTT (ms)", ran_tables.f1u_summary(ds),
                       "iperf3 over F1-U (Mbit/s)", ran_tables.f1u_throughput(ds))


def _two_tables(fmt: str, title: str, table: pd.DataFrame, title2: str, table2: pd.DataFrame) -> int:
    """A table and a second one as Markdown sections, or the first alone as CSV."""
    from analysis import markdown
    if fmt == "csv":
        sys.stdout.write(table.to_csv(index=False, lineterminator="\n"))
    else:
        sys.stdout.write(f"## {title}\n\n{markdown.table(table)}\n## {title2}\n\n{markdown.table(table2)}")
    return 0


def cmd_rwth(args: argparse.Namespace) -> int:
    from analysis.ran_report import write_authors_report
    out = Path(args.out) if args.out else Path("build") / "analysis" / "rwth"
    print(write_authors_report(Path(args.folder), out, check_captures=not args.no_captures))
    return 0


def _out_dir(args: argparse.Namespace) -> Path:
    return Path(args.out) if args.out else Path("build") / "analysis" / Path(args.results).resolve().name


def cmd_figures(args: argparse.Namespace) -> int:
    from analysis import stamps
    names = args.figure or None
    out = _out_dir(args) / "figures"
    command = "figures-" + "-".join(names) if names else "figures"
    key = stamps.key(command, Path(args.results), out, {})
    # known from the stamps alone, before pandas, SciPy and matplotlib are imported
    drawn = stamps.listing(command, out, key) if not args.no_cache else None
    if drawn is None:                   # something changed: load, and draw what changed (figures.draw_all)
        from analysis import figures, tables
        from analysis.datasets import Datasets
        from analysis.results import discover
        for n in names or []:
            figures.get(n)
        ds = Datasets.load(discover(args.results))
        drawn = {n: [str(p) for p in ps] for n, ps in figures.draw_all(tables.all_tables(ds), out, names, ds).items()}
        stamps.record(command, out, key, drawn)
    for name, paths in drawn.items():
        print(f"{name}: " + (", ".join(paths) if paths else "no data (skipped)"))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from analysis import stamps
    out = _out_dir(args)
    key = stamps.key("report", Path(args.results), out, {"permutations": args.permutations})
    # known from the stamps alone, before pandas, SciPy and matplotlib are imported
    if not args.no_cache and stamps.up_to_date("report", out, key):
        log.info("report up to date: no input, code or option changed since it was written")
        print(out / "report.md")
        return 0
    from analysis.report import build
    path = build(Path(args.results), out, permutations=args.permutations)
    stamps.record("report", out, key)
    print(path)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """How many boots a 99 % interval of the asked half-width on each overhead needs (analysis/plan.py)."""
    from analysis import markdown, plan
    from analysis.datasets import Datasets
    from analysis.results import discover
    if args.resolve_us is None and args.resolve_ms is None:
        raise ValueError("say the half-width to resolve: --resolve-us N (ping RTT) and/or --resolve-ms N (attach time)")
    for name, v in (("--resolve-us", args.resolve_us), ("--resolve-ms", args.resolve_ms)):
        if v is not None and not v > 0:
            raise ValueError(f"{name} {v}: must be a positive number")
    ds = Datasets.load(discover(args.results))
    asks = ([(plan.RTT, args.resolve_us / 1000.0, f"+-{args.resolve_us:g} us on the RTT overhead")]
            if args.resolve_us is not None else [])
    asks += ([(plan.ATTACH, args.resolve_ms, f"+-{args.resolve_ms:g} ms on the attach-time overhead")]
             if args.resolve_ms is not None else [])
    for q, half, target in asks:
        detail = plan.plan(ds, q, half)
        profiles = plan.per_profile(detail, q, ds)
        if args.out:
            plan.write(Path(args.out), detail, profiles, q.name)
        print(f"## {q.name}: 99 % interval of {target}\n")
        if not profiles.empty:
            shown = detail[[c for c in detail.columns if c != "protocol" and (detail[c].astype(str) != "").any()]]
            print(markdown.table(profiles.round(3)))
            print(f"\nper {q.detail}:\n\n" + markdown.table(shown.round(4)))
        print("\n".join(plan.summary_lines(profiles, target)) + "\n")
    return 0


def cmd_list_figures(args: argparse.Namespace) -> int:
    from analysis.figures import FIGURES
    for f in FIGURES.values():
        print(f"{f.name:18s} {f.description}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from analysis import markdown, tables
    from analysis.datasets import Datasets
    from analysis.results import discover
    all_tables = tables.all_tables(Datasets.load(discover(args.results)))
    for name in args.table or list(all_tables):
        if name not in all_tables:
            raise ValueError(f"unknown table {name!r}; valid: {', '.join(all_tables)}")
        if args.format == "csv":
            sys.stdout.write(f"# {name}\n" + all_tables[name].to_csv(index=False))
        else:
            sys.stdout.write(f"## {name}\n\n" + markdown.table(all_tables[name]) + "\n")
    return 0


def cmd_metadata(args: argparse.Namespace) -> int:
    from analysis import markdown
    from analysis.report import provenance_frame
    from analysis.results import discover
    sys.stdout.write(markdown.table(provenance_frame(discover(args.results))))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from analysis.bench import DEFAULT_CAPTURE, run_benchmark
    result = run_benchmark(Path(args.workdir), copies=args.copies, ping_lines=args.ping_lines,
                           pyshark=not args.no_pyshark,
                           source=Path(args.source) if args.source else DEFAULT_CAPTURE)
    print(json.dumps(result, indent=2))
    return 0 if result.get("ok", True) else 1


# Report sections of their own: command -> (module, what to run first when there is no data).
SECTIONS = {"crypto": ("crypto", "make bench-crypto"),
            "wire-bytes": ("wire_bytes_report", "an experiment with captures"),
            "secfn": ("secfn", "make run-secfn-lab"),
            "ran": ("ran_report", "make run-ran-procedures or make run-f1u"),
            "pq": ("pq", "make bench-handshake or make bench-crypto")}


def cmd_section(args: argparse.Namespace) -> int:
    import importlib
    module, first = SECTIONS[args.command]
    path = importlib.import_module(f"analysis.{module}").write_report(Path(args.results), _out_dir(args))
    if path is None:
        print(f"error: no usable run for `{args.command}` below {args.results} (run {first})", file=sys.stderr)
        return 1
    print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m analysis", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    p.add_argument("--cache", default=str(DEFAULT_CACHE), metavar="DIR",
                   help=f"keep tshark exports under DIR, keyed by the capture's content (default {DEFAULT_CACHE})")
    p.add_argument("--no-cache", action="store_true", help="read every capture again (no export cache)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("attach-times", help="per-UE attach times of an N2 capture, CSV on stdout")
    s.add_argument("capture", help="pcap/pcapng with NGAP (N2)")
    s.add_argument("--mode", choices=["auto", "nas", "ngap"], default="auto",
                   help="nas: by NAS message types (null ciphering); ngap: by NGAP procedure codes only "
                        "(real NAS ciphering); auto (default): NAS where decodable, else NGAP")
    s.add_argument("--ngap-only", action="store_true", help="same as --mode ngap")
    s.set_defaults(run=cmd_attach_times)

    for name in ("ran-procedures", "procedure-times"):
        s = sub.add_parser(name, help="F1-C/E1 procedure times, both start points: per registration (CSV) from "
                           "captures, or per profile from a results tree" if name == "ran-procedures"
                           else "the old name of ran-procedures")
        s.add_argument("paths", nargs="+", metavar="RESULTS|CAPTURE",
                       help="one results directory (experiment ran-procedures), or capture files")
        s.add_argument("--interface", action="append", choices=["f1c", "e1"],
                       help="only this interface (repeatable; default both)")
        s.add_argument("--combine", action="store_true",
                       help="the captures are one stack boot's (e.g. its n2, f1c and e1 files): pair messages "
                            "across them (default: each capture on its own)")
        s.add_argument("--format", choices=["md", "csv"], default="md", help="results-tree summary format")
        s.set_defaults(run=cmd_ran_procedures)

    s = sub.add_parser("sbi-ops", help="per-request SBI operations (HTTP/2, HTTP/1.1) of captures, CSV; or per profile and "
                       "operation over a results tree, with intervals and the overhead against the baseline")
    s.add_argument("paths", nargs="+", metavar="RESULTS|CAPTURE", help="one results directory, or capture files")
    s.add_argument("--keys", action="append", metavar="OVERLAY=FILE",
                   help="a key file a run exported, for its overlay plug-in to decrypt the captures with "
                        "(repeatable): tls=<NSS key log>, ipsec=<charon key log> (docs/analysis.md)")
    s.add_argument("--port", action="append", type=int, help="TCP port to decode as cleartext HTTP/2 (repeatable)")
    s.add_argument("--no-detect", action="store_true", help="do not read a capture again for HTTP/2 connections whose preface it missed")
    s.add_argument("--names", action="store_true", help="NF names from nf-configs/stack.yaml addresses")
    s.add_argument("--slot", type=int, default=0, help="the run's address slot for --names (manifest instance.slot)")
    s.add_argument("--format", choices=["md", "csv"], default="md", help="results-tree summary format")
    s.set_defaults(run=cmd_sbi_ops)

    s = sub.add_parser("n2-procedures", help="N2 procedure times per NGAP procedure and UE of captures, CSV")
    s.add_argument("captures", nargs="+", help="pcap/pcapng with NGAP")
    s.set_defaults(run=cmd_n2_procedures)

    s = sub.add_parser("f1u", help="F1-U and end-to-end RTT (and iperf3 over F1-U) of a results tree")
    s.add_argument("results")
    s.add_argument("--format", choices=["md", "csv"], default="md")
    s.set_defaults(run=cmd_f1u)

    s = sub.add_parser("rwth", help="the RAN study's published data analysed: printed summaries recomputed, "
                       "the paper's numbers from their files, their captures re-read (page + figures)")
    s.add_argument("folder", nargs="?", default=str(Path(__file__).resolve().parent.parent / "tests" / "data"
                                                    / "rwth-internal-ran-security"),
                   help="their results/ folder or a copy like tests/data/rwth-internal-ran-security (default)")
    s.add_argument("--out", help="output folder (default build/analysis/rwth)")
    s.add_argument("--no-captures", action="store_true", help="skip re-reading their relay-only captures")
    s.set_defaults(run=cmd_rwth)

    s = sub.add_parser("ping-stats", help="n, mean, sd, 99%% CI of ping RTTs (JSON on stdout)")
    s.add_argument("files", nargs="+", help="ping -D output files (or RWTH result texts)")
    s.set_defaults(run=cmd_ping_stats)

    for name, fn, help_ in (("figures", cmd_figures, "draw the figures of a results tree"),
                            ("report", cmd_report, "write the Markdown report of a results tree")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("results", help="results root, campaign or run directory")
        s.add_argument("--out", help="output folder (default build/analysis/<results name>)")
        if name == "figures":
            s.add_argument("--figure", action="append", help="only this figure (repeatable)")
        else:
            s.add_argument("--permutations", type=int, default=0, metavar="N",
                           help="add permutation-test p-values with N random relabellings (default 0: off)")
        s.set_defaults(run=fn)

    for name, help_ in (("crypto", "table, figure and report section of the cipher benchmark"),
                        ("wire-bytes", "handshake bytes and per-packet overhead from the runs' captures"),
                        ("secfn", "figure, knees and report section of the UPF security functions"),
                        ("ran", "RAN section (F1-C, F1-U, E1, end-to-end) beside the paper and the authors' data"),
                        ("pq", "post-quantum section: handshake bytes and times, ML-KEM/ML-DSA rates, PQ attach overhead")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("results", help="results root, campaign or run directory")
        s.add_argument("--out", help="output folder (default build/analysis/<results name>)")
        s.set_defaults(run=cmd_section)

    s = sub.add_parser("plan", help="from a pilot (the runs present): the boots per profile, and the campaign time, "
                       "that a 99 %% interval of the given half-width on the overhead needs")
    s.add_argument("results", help="results root, campaign or run directory (the pilot)")
    s.add_argument("--resolve-us", type=float, help="half-width on the ping RTT overhead (us)")
    s.add_argument("--resolve-ms", type=float, help="half-width on the attach-time overhead (ms)")
    s.add_argument("--out", help="also write plan-<rtt|attach>[-detail].csv into this folder")
    s.set_defaults(run=cmd_plan)

    s = sub.add_parser("list-figures", help="list the figures by name")
    s.set_defaults(run=cmd_list_figures)

    s = sub.add_parser("stats", help="summary tables of a results tree")
    s.add_argument("results")
    s.add_argument("--table", action="append", help="rtt, attach, cpu, cpu_slopes, throughput")
    s.add_argument("--format", choices=["md", "csv"], default="md")
    s.set_defaults(run=cmd_stats)

    s = sub.add_parser("metadata", help="provenance of every run (from the manifests)")
    s.add_argument("results")
    s.set_defaults(run=cmd_metadata)

    s = sub.add_parser("bench", help="time tshark-based extraction vs a per-packet pyshark extractor")
    s.add_argument("--workdir", default="build/bench-analysis", help="where the large inputs are built")
    s.add_argument("--source", help="real N2 capture to replicate (default: the Open5GS sample capture "
                   "in tests/data/open5gs-docs-pcaps)")
    s.add_argument("--copies", type=int, default=4, help="copies of the source capture merged into one")
    s.add_argument("--ping-lines", type=int, default=1_000_000, help="lines of ping output to parse")
    s.add_argument("--no-pyshark", action="store_true", help="skip the pyshark side")
    s.set_defaults(run=cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    from analysis.parse.tshark import TsharkError, cached_in
    try:
        # the export cache for this command only: a caller in the same process (a test) keeps its own
        with cached_in(None if args.no_cache else Path(args.cache)):
            return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except (TsharkError, FileNotFoundError, ValueError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {msg}", file=sys.stderr)
        return 1
    except BrokenPipeError:           # stdout's reader left: analysis/__main__.py ends quietly
        raise
    except OSError as exc:            # a read-only or full output directory: one line, no traceback
        print(f"error: cannot write {exc.filename or 'the output'}: {exc.strerror or exc}; "
              "choose another ANALYSIS_OUT=<writable dir>", file=sys.stderr)
        return 1
