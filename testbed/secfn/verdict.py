"""Is a security-function run what it claims? (docs/secfn.md; called by testbed/validity.py)

From the run's own captures (tshark, whole packets from before the first UE packet):
- n6 (the server's side of the UPF): with NAT every packet the server got came from the UPF's
  N6 address and none from the UE subnet; without NAT the reverse. The UDP drop probe reached
  the server unless an inline engine with rules was in force, which must have dropped it.
- ue (namespaces only, the UE's own interface): the same flows left the UE with its address,
  so the n6 side shows a translation, not some other sender.
From the engine's own counters and the D-ITG output: the engine inspected packets, every one
of the seed's rules alerted on the test traffic, inline it blocked the probe, it was still
running when the measurement ended, and every planned flow was decoded with the source the
function implies.
"""
from __future__ import annotations

import csv
import ipaddress
from pathlib import Path
from typing import Any

from testbed import stack, tshark
from testbed.verdict import Verdict
from testbed.secfn import rules

RULE_ENGINES = ("suricata", "snort")      # engines that load rules (passthrough has none)


def _count(pcap: Path, flt: str) -> int:
    return tshark.count(pcap, flt, timeout=300)


def _addrs(values: dict[str, Any]) -> tuple[str, str, str]:
    return (str(values["dn_server"]["address"]), stack.address("upf", "n6", values),
            str(values["ue_subnet"]["subnet"]))


def _in(address: str, subnet: str) -> bool:
    try:
        return ipaddress.ip_address(address) in ipaddress.ip_network(subnet)
    except ValueError:
        return False


def drop_expected(sf: dict[str, Any]) -> bool:
    return sf.get("mode") == "inline" and sf.get("engine") in RULE_ENGINES


def n6_verdict(pcap: Path, sf: dict[str, Any], values: dict[str, Any]) -> Verdict:
    server, upf, ue_net = _addrs(values)
    from_upf = _count(pcap, f"ip.dst == {server} && ip.src == {upf}")
    from_ues = _count(pcap, f"ip.dst == {server} && ip.src == {ue_net}")
    probes = _count(pcap, f"ip.dst == {server} && udp.dstport == {rules.DROP_PORT}")
    problems = []
    if sf.get("nat"):
        if from_upf == 0 or from_ues:
            problems.append(f"NAT not proven: {from_upf} packets to the server from the UPF ({upf}), "
                            f"{from_ues} from the UE subnet")
    elif from_ues == 0 or from_upf:
        problems.append(f"without NAT the server must see the UEs: {from_ues} from {ue_net}, {from_upf} from {upf}")
    if drop_expected(sf) and probes:
        problems.append(f"the inline drop rule did not drop: {probes} probe(s) to udp/{rules.DROP_PORT} reached the server")
    if not drop_expected(sf) and probes == 0:
        problems.append(f"the udp/{rules.DROP_PORT} probe never reached the server (nothing should drop it)")
    details = (f"n6: to the server {from_upf} from the UPF, {from_ues} from the UEs; drop probes arrived: {probes}"
               + (" -> INVALID: " + "; ".join(problems) if problems else ""))
    return Verdict(not problems, 0, 0, details)


def ue_verdict(pcap: Path, ue_address: str, values: dict[str, Any]) -> Verdict:
    server = str(values["dn_server"]["address"])
    sent = _count(pcap, f"ip.src == {ue_address} && ip.dst == {server}")
    ok = sent > 0
    return Verdict(ok, 0, 0, f"ue: {sent} packets from the UE ({ue_address}) to the server"
                   + ("" if ok else " -> INVALID: no UE traffic captured at the UE"))


def engine_verdict(m: dict[str, Any]) -> Verdict:
    sf = m.get("secfn") or {}
    if not sf.get("engine"):
        return Verdict(True, 0, 0, f"{sf.get('function')}: no engine")
    eng = m.get("engine") or {}
    problems = []
    if not eng:
        problems.append("no engine counters recorded")
    elif not eng.get("inspected"):
        problems.append(f"{sf['engine']} inspected no packet")
    if eng and eng.get("died"):
        problems.append(f"{sf['engine']} died during the run: {eng['died']}")
    if eng and sf["engine"] in RULE_ENGINES:
        alerts = {int(k): v for k, v in (eng.get("alerts_per_sid") or {}).items() if str(k).isdigit()}
        missing = [s for s in rules.SEED_SIDS if not alerts.get(s)]
        if missing:
            problems.append(f"seed rule(s) {missing} never alerted on the test traffic")
        if drop_expected(sf) and not eng.get("blocked"):
            problems.append(f"{sf['engine']} blocked nothing inline (the drop probe should be)")
    details = (f"{sf['engine']} ({sf.get('mode')}): inspected {eng.get('inspected')}, "
               f"alerts {eng.get('alerts')}, blocked {eng.get('blocked')}"
               + (" -> INVALID: " + "; ".join(problems) if problems else ""))
    return Verdict(not problems, 0, 0, details)


def flows_verdict(run_dir: Path, m: dict[str, Any], values: dict[str, Any]) -> Verdict:
    """Every planned flow decoded; the receiver saw the source the function implies."""
    planned = int((m.get("flows") or {}).get("planned") or 0)
    f = Path(run_dir) / "ditg.csv"
    rows = list(csv.DictReader(f.open(encoding="utf-8"))) if f.is_file() else []
    _, upf, ue_net = _addrs(values)
    problems = []
    if planned == 0 or len(rows) != planned:
        problems.append(f"{len(rows)} of {planned} planned D-ITG flows decoded")
    sources = sorted({r["seen_source"] for r in rows})
    if (m.get("secfn") or {}).get("nat"):
        if rows and sources != [upf]:
            problems.append(f"the receiver saw sources {sources}, expected only the UPF's {upf}")
    elif rows and (not sources or any(not _in(s, ue_net) for s in sources)):
        problems.append(f"without NAT the receiver should see UE addresses ({ue_net}), saw {sources}")
    return Verdict(not problems, 0, 0, f"flows: {len(rows)}/{planned} decoded, sources {sources}"
                   + (" -> INVALID: " + "; ".join(problems) if problems else ""))


def run_verdicts(run_dir: Path, m: dict[str, Any], values: dict[str, Any]) -> list[Verdict]:
    """The checks that do not read a capture (validity.check_run adds the captures' own)."""
    return [engine_verdict(m), flows_verdict(run_dir, m, values)]


def capture_verdict(pcap: Path, iface: str, m: dict[str, Any], values: dict[str, Any]) -> Verdict:
    sf = m.get("secfn") or {}
    if iface == "n6":
        return n6_verdict(pcap, sf, values)
    ue = (m.get("proof") or {}).get("ue_address") or str(values["ue_subnet"]["gateway"]).rsplit(".", 1)[0] + ".2"
    return ue_verdict(pcap, ue, values)
