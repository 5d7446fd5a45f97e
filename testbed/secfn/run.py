"""One security-function run between namespaces (docs/secfn.md): build the lab for SECFN/IDS,
prove the engine and NAT with test traffic (the seed's rules fire, an inline drop rule drops),
then D-ITG over PROTOCOLS x RATES x RUNS, and record everything in a run directory:
results/<campaign>/secfn/<secfn>-<ids>/<run>/ (manifest.json, D-ITG logs, ditg.csv, the engine's
EVE JSON and stats, the queue counters)."""
from __future__ import annotations

import csv
import json
import random
import secrets
import time
from collections import Counter
from pathlib import Path
from typing import Any

from testbed import manifest as mf
from testbed.secfn import Secfn, ditg, lab, rules

FIELDS = ("protocol", "rate", "run", "order", *ditg.FIELDS, "seen_source", "sent_packets", "sent_rate")


def _alerts(eve: Path) -> Counter[int]:
    counts: Counter[int] = Counter()
    if eve.is_file():
        for line in eve.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event_type") == "alert":
                counts[int(e["alert"]["signature_id"])] += 1
    return counts


def _suricata_counters(stats: Path) -> dict[str, int]:
    """The last value of each counter in stats.log (its final block is the engine's totals)."""
    out: dict[str, int] = {}
    if stats.is_file():
        for line in stats.read_text(errors="replace").splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2].isdigit():
                out[parts[0]] = int(parts[2])
    return out


def prove(lb: lab.SecfnLab) -> dict[str, Any]:
    """Test traffic that each of the seed's rules matches: ICMP echo, TCP to ports 80 and 445
    (established), and (inline) a UDP datagram to the drop port, which must not arrive."""
    srv = lb.server_address
    listeners = [lb.popen("dn", ["socat", f"TCP-LISTEN:{port},fork,reuseaddr", "SYSTEM:echo ok"],
                          lb.out_dir / f"listen-{port}.out") for port in (80, 445)]
    udp = lb.popen("dn", ["socat", "-u", f"UDP-RECV:{rules.DROP_PORT}", "OPEN:/dev/stdout"],
                   lb.out_dir / "drop-probe-received.out")
    try:
        time.sleep(0.3)                                   # pacing: listeners up (not measured)
        lb.exec("ue", ["ping", "-c", "2", "-i", "0.2", "-W", "2", srv])
        for port in (80, 445):
            lb.exec("ue", ["socat", "-T", "2", "-", f"TCP:{srv}:{port}"], input="hello\n", timeout=10)
        lb.exec("ue", ["bash", "-c", f"echo probe > /dev/udp/{srv}/{rules.DROP_PORT}"])
        time.sleep(0.5)
    finally:
        for p in (*listeners, udp):
            p.terminate()
            p.wait(timeout=10)
    received = (lb.out_dir / "drop-probe-received.out").read_text(errors="replace")
    return {"drop_probe_arrived": "probe" in received}


def run(results: Path, campaign: str, sf: Secfn, protocols: list[str], rates: list[float], runs: int,
        duration_s: float, bin_dir: Path, seed: int | None = None) -> Path:
    seed = seed if seed is not None else secrets.randbits(32)
    slot = f"{sf.function}-{sf.engine or 'none'}"
    parent = Path(results) / (campaign or "adhoc") / "secfn" / slot
    parent.mkdir(parents=True, exist_ok=True)
    run_id = mf.new_run_id()
    run_dir = parent / run_id
    run_dir.mkdir()
    commit, dirty = mf.git_commit()
    plan = [(p, r, i) for i in range(runs) for p in protocols for r in rates]
    random.Random(seed).shuffle(plan)           # drift hits every rate and protocol alike
    m: dict[str, Any] = {
        "schema_version": 1, "experiment": "secfn", "profile": slot, "plane": "n6", "protocol": None,
        "campaign": campaign or "adhoc", "run": run_id, "state": "running", "reason": None,
        "valid": None, "validity": None, "datapath": "namespaces",
        "secfn": sf.to_dict(),
        "parameters": {"protocols": protocols, "rates": rates, "runs": runs, "duration_s": duration_s,
                       "payload": ditg.PAYLOAD, "interdeparture": "poisson", "seed": seed},
        "host": mf.host_facts(), "versions": {"testbed_commit": commit, "testbed_dirty": dirty},
        "started": mf.utcnow(), "finished": None, "files": [], "events": [],
    }
    mf.write(run_dir, m)
    problems: list[str] = []
    name = f"sfx{secrets.token_hex(2)}"
    try:
        with lab.lab(name, sf, run_dir, bin_dir) as lb:
            m["proof"] = prove(lb) if sf.engine or sf.nat else {}
            recv = lb.popen("dn", ["ITGRecv"], run_dir / "itgrecv.out")
            time.sleep(0.5)                              # pacing: ITGRecv listening (not measured)
            rows = []
            try:
                for order, (proto, rate, i) in enumerate(plan):
                    tag = f"{proto}-{rate:g}-{i}"
                    send_log, recv_log = run_dir / f"ditg-send-{tag}.log", run_dir / f"ditg-recv-{tag}.log"
                    cmd = ditg.send_command(lb.server_address, proto, rate, duration_s, send_log, recv_log)
                    res = lb.exec("ue", cmd, timeout=duration_s + 60)
                    if res.returncode != 0:
                        problems.append(f"ITGSend {tag} exited {res.returncode}: {res.stderr.strip()[-200:]}")
                        continue
                    row = {"protocol": proto, "rate": rate, "run": i, "order": order, **ditg.decode(recv_log)}
                    sent = ditg.decode(send_log)          # what the generator really sent
                    row.update(sent_packets=sent["packets"], sent_rate=sent["packet_rate"])
                    rows.append(row)
            finally:
                recv.terminate()
                recv.wait(timeout=10)
            m["queue"] = lb.queue_stats()
            (run_dir / "forward-counters.txt").write_text(lb.forward_counters(), encoding="utf-8")
            engine_out = lb.stop_engine()
        with (run_dir / "ditg.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
        m["engine"] = _engine_facts(sf, run_dir, engine_out)
        problems += _verdict(sf, m, rows, lb)
        m["state"] = "complete"
    except KeyboardInterrupt:
        m["state"], problems = "interrupted", problems + ["interrupted"]
        raise
    except (lab.LabError, ditg.DitgError, OSError) as exc:
        m["state"], m["reason"] = "failed", str(exc)
        problems.append(str(exc))
        raise
    finally:
        m["valid"] = not problems
        m["validity"] = {"details": "; ".join(problems) or "engine saw the traffic; NAT and rules proven"}
        m["finished"] = mf.utcnow()
        mf.write(run_dir, m)
    return run_dir


def _engine_facts(sf: Secfn, run_dir: Path, engine_out: str) -> dict[str, Any]:
    if sf.engine == "suricata":
        c = _suricata_counters(run_dir / "stats.log")
        inspected = c.get("decoder.pkts", 0)
        return {"engine": "suricata", "inspected": inspected, "alerts_per_sid": dict(_alerts(run_dir / "eve.json")),
                "ips_accepted": c.get("ips.accepted"), "ips_blocked": c.get("ips.blocked"),
                "kernel_drops": c.get("capture.kernel_drops")}
    if sf.engine == "passthrough":
        import re
        got = re.search(r"nfq-accept: packets=(\d+)", engine_out)
        return {"engine": "passthrough", "inspected": int(got.group(1)) if got else 0}
    return {"engine": None}


def _verdict(sf: Secfn, m: dict[str, Any], rows: list[dict[str, Any]], lb: lab.SecfnLab) -> list[str]:
    """Why the run is invalid ([] = valid): the engine saw traffic, NAT on the wire, rules fired,
    the inline drop dropped."""
    bad = []
    if not rows:
        bad.append("no D-ITG flow completed")
    sources = {r["seen_source"] for r in rows}
    if sf.nat and sources != {lb.upf_n6}:
        bad.append(f"NAT not proven: the server saw sources {sorted(sources)}, expected {lb.upf_n6}")
    if not sf.nat and rows and sources != {lb.ue_address}:
        bad.append(f"without NAT the server should see {lb.ue_address}, saw {sorted(sources)}")
    eng = m.get("engine") or {}
    if sf.engine and not eng.get("inspected"):
        bad.append(f"{sf.engine} inspected no packet")
    if sf.engine == "suricata":
        missing = [s for s in rules.SEED_SIDS if not eng["alerts_per_sid"].get(s)]
        if missing:
            bad.append(f"seed rule(s) {missing} never alerted on the test traffic")
    if sf.mode == "inline" and sf.engine == "suricata" and m["proof"].get("drop_probe_arrived"):
        bad.append("the inline drop rule did not drop the probe")
    return bad
