"""After a security-function run (both forms, docs/secfn.md): the D-ITG flows' ITGDec text into
one table (`ditg.csv`), the engine's and the queue's counters into the manifest.

Run directory layout (the stack's containers mount the same sub-folders):
    ditg/send-<proto>-<rate>-<run>.log(.txt)   ITGSend's log (and ITGDec's text of it)
    ditg/recv-<proto>-<rate>-<run>.log(.txt)   ITGRecv's log of the flow (the measurement)
    engine/                                    the engine's output (alerts, stats, its log)
    server/                                    server.sh: listener logs, drop-probe-received.txt
    n6.pcap (ue.pcap, n3.pcap)                 validation captures
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from testbed import manifest as mf
from testbed.secfn import ditg, engines

FIELDS = ("protocol", "rate", "run", "order", *ditg.FIELDS, "seen_source", "sent_packets", "sent_rate")
DITG_DIR = "ditg"
ENGINE_DIR = "engine"
SERVER_DIR = "server"


def log_names(tag: str) -> tuple[str, str]:
    return f"{DITG_DIR}/send-{tag}.log", f"{DITG_DIR}/recv-{tag}.log"


def flow_rows(run_dir: Path, order: list[list[Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per planned flow whose two ITGDec texts exist and parse; and the problems."""
    rows, problems = [], []
    for i, (proto, rate, run) in enumerate(order):
        tag = ditg.tag(proto, int(rate), int(run))
        send, recv = (Path(run_dir) / f"{n}.txt" for n in log_names(tag))
        if not (send.is_file() and recv.is_file()):
            problems.append(f"flow {tag}: no ITGDec text")
            continue
        try:
            got = ditg.parse(recv.read_text(encoding="utf-8", errors="replace"), recv.name)
            sent = ditg.parse(send.read_text(encoding="utf-8", errors="replace"), send.name)
        except ditg.DitgError as exc:
            problems.append(str(exc))
            continue
        rows.append({"protocol": proto, "rate": int(rate), "run": int(run), "order": i, **got,
                     "sent_packets": sent["packets"], "sent_rate": sent["packet_rate"]})
    return rows, problems


def write_table(run_dir: Path, rows: list[dict[str, Any]]) -> Path:
    path = Path(run_dir) / "ditg.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    return path


def engine_facts(run_dir: Path, sf: dict[str, Any], died: str | None) -> tuple[dict[str, Any] | None,
                                                                                  dict[str, int] | None]:
    """(engine counters, queue counters) from the engine's output folder."""
    if not sf.get("engine"):
        return None, None
    out = Path(run_dir) / ENGINE_DIR
    facts = engines.counters(sf["engine"], out).to_dict()
    facts["died"] = died
    nums = list(range(int(sf["queue_num"]), int(sf["queue_num"]) + int(sf.get("queues") or 1)))
    queue = engines.queue_stats(out, nums) if sf.get("mode") == "inline" else None
    return facts, queue


def finish(run_dir: Path, died: str | None = None) -> list[str]:
    """Tables and counters into the run (both forms); returns the flows' problems."""
    m = mf.load(run_dir)
    flows = m.get("flows") or {}
    rows, problems = flow_rows(run_dir, flows.get("order") or [])
    write_table(run_dir, rows)
    facts, queue = engine_facts(run_dir, m.get("secfn") or {}, died)
    mf.set_field(run_dir, "engine", facts)
    mf.set_field(run_dir, "nfqueue", queue)
    mf.set_field(run_dir, "flows", {**flows, "decoded": len(rows), "problems": problems[:20]})
    return problems
