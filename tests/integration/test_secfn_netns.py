"""The UPF security functions between namespaces with the real engines (Suricata, Snort 3 where
$SNORT_INSTALL points at its build, the NFQUEUE pass-through), real iptables-legacy NAT/NFQUEUE,
D-ITG and tshark: NAT proven from the captures on both sides, every seed rule's alert, the inline
drop, the N3 overlay underneath, fail-open vs blackhole when the engine dies, and complete run
directories (python -m testbed secfn, testbed/secfn/)."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import host_tools, manifest, secfn, tshark
from testbed.secfn import lab as secfn_lab
from testbed.secfn import rules
from tests.conftest import ROOT, require_root, require_snort, require_tools

pytestmark = pytest.mark.netns
SERVER, UPF_N6, UE = "10.100.6.20", "10.100.6.7", "10.45.0.2"


def _needs(ids: str = "") -> None:
    require_root()
    require_tools("ip", "socat", "ITGSend", "ITGRecv", "ITGDec", "ping", "dumpcap", "tshark")
    if shutil.which("iptables-legacy") is None and shutil.which("iptables") is None:
        pytest.skip(f"iptables not found: {host_tools.install_hint('iptables')}")
    if ids == "suricata" and shutil.which("suricata") is None:
        pytest.skip(f"suricata not found: {host_tools.install_hint('suricata')}")
    if ids == "passthrough" and shutil.which("gcc") is None:
        pytest.skip("gcc not found (the passthrough engine is compiled from testbed/secfn/engines/passthrough/nfq_accept.c)")


def _run(tmp_path: Path, function: str, ids: str = "", profile: str = "baseline", protocols: str = "udp",
         env: dict[str, str] | None = None, extra: tuple[str, ...] = ()) -> dict:
    _needs(ids)
    res = subprocess.run([sys.executable, "-m", "testbed", "secfn", f"SECFN={function}", f"IDS={ids}",
                          f"PROTOCOLS={protocols}", "RATES=300", "RUNS=1", "DURATION=1", "ORDER_SEED=7", *extra,
                          "--profile", profile, "--results", str(tmp_path / "results"),
                          "--state", str(tmp_path / "state")],
                         cwd=ROOT, capture_output=True, text=True, timeout=400, check=False,
                         env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **(env or {})})
    assert res.stdout.strip(), res.stderr[-2000:]
    run_dir = Path(res.stdout.strip().splitlines()[-1])
    m = json.loads((run_dir / "manifest.json").read_text())
    assert res.returncode == 0, f"{m['validity']}\n{res.stderr[-1500:]}"
    m["_rows"] = list(csv.DictReader((run_dir / "ditg.csv").open()))
    m["_dir"] = run_dir
    return m


def _alerts(m: dict) -> dict[int, int]:
    return {int(k): v for k, v in m["engine"]["alerts_per_sid"].items() if k.isdigit()}


def test_nat_proven_on_both_sides_and_a_complete_run_dir(tmp_path: Path) -> None:
    m = _run(tmp_path, "nat", protocols="udp,tcp")
    d = m["_dir"]
    assert m["valid"] is True and m["state"] == "complete", m["validity"]
    assert manifest.validate({k: v for k, v in m.items() if not k.startswith("_")}) == []
    # the UE sent from its own address; the server only ever saw the UPF's N6 address
    assert tshark.count(d / "ue.pcap", f"ip.src == {UE} && ip.dst == {SERVER}") > 100
    assert tshark.count(d / "n6.pcap", f"ip.src == {UPF_N6} && ip.dst == {SERVER}") > 100
    assert tshark.count(d / "n6.pcap", "ip.src == 10.45.0.0/16") == 0
    assert {r["seen_source"] for r in m["_rows"]} == {UPF_N6}
    assert {r["protocol"] for r in m["_rows"]} == {"udp", "tcp"} and m["flows"]["decoded"] == 2
    listed = {f["path"]: f for f in m["files"]}
    assert {"n3.pcap", "n6.pcap", "ue.pcap", "ditg.csv", "probe.log"} <= set(listed)
    assert sum(1 for f in listed.values() if f["kind"] == "ditg") == 4          # send + recv per flow
    assert all((d / p).is_file() for p in listed)


def test_without_nat_the_server_sees_the_ue(tmp_path: Path) -> None:
    m = _run(tmp_path, "none")
    assert m["valid"] is True, m["validity"]
    assert {r["seen_source"] for r in m["_rows"]} == {UE}
    assert tshark.count(m["_dir"] / "n6.pcap", f"ip.src == {UPF_N6} && ip.dst == {SERVER}") == 0


def test_ids_nat_with_suricata_alerts_every_rule_and_drops_nothing(tmp_path: Path) -> None:
    m = _run(tmp_path, "ids-nat", "suricata")
    assert m["valid"] is True, m["validity"]
    assert all(_alerts(m).get(s) for s in rules.SEED_SIDS), _alerts(m)
    assert m["engine"]["inspected"] > 100
    assert tshark.count(m["_dir"] / "n6.pcap", f"udp.dstport == {rules.DROP_PORT}") == 1     # passive: arrives


def test_ips_nat_with_suricata_drops_inline(tmp_path: Path) -> None:
    m = _run(tmp_path, "ips-nat", "suricata")
    assert m["valid"] is True, m["validity"]
    assert all(_alerts(m).get(s) for s in rules.SEED_SIDS), _alerts(m)
    assert m["engine"]["blocked"] >= 1 and _alerts(m).get(rules.DROP_SID)
    assert tshark.count(m["_dir"] / "n6.pcap", f"udp.dstport == {rules.DROP_PORT}") == 0
    assert not (m["_dir"] / "server" / "drop-probe-received.txt").read_text()
    assert m["nfqueue"]["id_sequence"] >= m["engine"]["inspected"] > 100


def test_ips_nat_over_two_queues(tmp_path: Path) -> None:
    """QUEUES=2: the FORWARD rule balances flows over queues 4 and 5; the engine serves both and
    every packet the kernel queued (summed over the queues) was inspected."""
    m = _run(tmp_path, "ips-nat", "suricata", extra=("QUEUES=2",))
    assert m["valid"] is True, m["validity"]
    assert m["secfn"]["queues"] == 2
    assert (m["_dir"] / "engine" / "forward-counters.txt").read_text().count("NFQUEUE balance 4:5") == 2
    assert set(m["nfqueue"]["per_queue"]) == {"4", "5"}
    assert m["nfqueue"]["id_sequence"] == m["engine"]["inspected"] > 100


def test_ips_nat_passthrough_counts_every_queued_packet(tmp_path: Path) -> None:
    m = _run(tmp_path, "ips-nat", "passthrough")
    assert m["valid"] is True, m["validity"]
    assert m["engine"]["inspected"] == m["nfqueue"]["id_sequence"] > 100
    assert m["nfqueue"]["queue_dropped"] == 0


@pytest.mark.parametrize("function", ["ids-nat", "ips-nat"])
def test_snort(tmp_path: Path, function: str) -> None:
    root = require_snort()
    m = _run(tmp_path, function, "snort", env={"SNORT_INSTALL": str(root)})
    assert m["valid"] is True, m["validity"]
    alerts = _alerts(m)
    assert all(alerts.get(s) for s in rules.SEED_SIDS), alerts
    assert m["engine"]["inspected"] > 100
    probes = tshark.count(m["_dir"] / "n6.pcap", f"udp.dstport == {rules.DROP_PORT}")
    if function == "ips-nat":
        assert probes == 0 and m["engine"]["blocked"] >= 1 and alerts.get(rules.DROP_SID)
        assert m["nfqueue"]["id_sequence"] >= m["engine"]["inspected"]
    else:
        assert probes == 1
    assert (m["_dir"] / "engine" / "alert_json.txt").is_file()


def test_inline_ips_behind_an_ipsec_n3(tmp_path: Path) -> None:
    require_tools("swanctl")
    m = _run(tmp_path, "ips-nat", "suricata", profile="aes128gcm")
    assert m["valid"] is True, m["validity"]
    assert m["validity"]["protected_packets"] > 100                       # ESP on n3
    assert "negotiated SAs" in m["validity"]["details"] and m["datapath"]["ipsec"] in ("kernel", "libipsec")
    assert m["engine"]["blocked"] >= 1


def _ping(lb: secfn_lab.SecfnLab) -> bool:
    return lb.exec("ue", ["ping", "-c", "3", "-i", "0.2", "-W", "1", lb.server_address]).returncode == 0


@pytest.mark.parametrize("fail_open", [True, False])
def test_fail_open_when_the_engine_dies(tmp_path: Path, fail_open: bool) -> None:
    """The engine is killed (its rules stay, as after a crash): with FAIL_OPEN=1 the kernel
    bypasses the unserved queue and traffic flows; with 0 the queue drops everything."""
    _needs("passthrough")
    sf = secfn.resolve("ips-nat", "passthrough", fail_open=fail_open)
    lb = secfn_lab.SecfnLab(f"fo{int(fail_open)}{time.time_ns() % 10**6:06d}", sf, tmp_path / "run",
                            tmp_path / "bin", state_dir=tmp_path / "state")
    lb.up()
    try:
        assert _ping(lb), "traffic must pass while the engine serves the queue"
        lb.kill_engine_only()
        deadline = time.monotonic() + 10
        while lb.engine_alive() and time.monotonic() < deadline:       # its entrypoint notices and exits 1
            time.sleep(0.1)
        assert not lb.engine_alive()
        rules_left = lb.exec("upf", [lb.iptables, "-S", "FORWARD"]).stdout
        assert rules_left.count("NFQUEUE") == 2 and ("--queue-bypass" in rules_left) == fail_open
        assert _ping(lb) == fail_open
    finally:
        lb.down()
