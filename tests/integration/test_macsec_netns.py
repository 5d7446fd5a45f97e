"""MACsec end to end in network namespaces: the very entrypoint and rendered configs on real Linux
macsec links (testbed/netns.py lab: gnb and upf on a bridge, dumpcap on the bridge), then
`run-overlay`, validity and the analysis on its run directories. Real ip, nftables, ping, tshark;
nothing is mocked.

A kernel without the macsec module cannot make the link: those tests skip naming it and run in
the full-kernel guest (docs/vm-check.md). The fail-closed test runs on every kernel: where there
is no MACsec the entrypoint fails at the link, elsewhere at a broken SA line, both after its
filter is in place.
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from macsec import overlay, run_checks
from testbed import ROOT, netns, profiles, ran, registry, stack, tshark, validity
from tests.conftest import require_root, require_tools
from tests.integration.labs import lab_factory, stop_entrypoints, udp_send

pytestmark = pytest.mark.netns

ENTRYPOINT = ROOT / "macsec" / "entrypoint.sh"
PROFILES = [p.id for p in profiles.load().values() if p.protocol == "macsec"]


def _values() -> dict:
    return ran.restrict(stack.load(), "ueransim")


def _tools() -> None:
    require_root()
    require_tools("ip", "nft", "tshark", "dumpcap", "unshare", "nsenter", "ping", "python3")


def _require_xpn(profile: str) -> None:
    """The kernel marker (tests/conftest.py) skips without the macsec module; the XPN suites need
    more: Linux >= 5.7 and an iproute2 that knows them."""
    from macsec import datapath
    if profiles.get(profile).params["xpn"]:
        ok, why = datapath.probe_xpn()
        if not ok:
            pytest.skip(f"no GCM-AES-XPN here (Linux >= 5.7 and iproute2 >= 6.1): {why}")


@pytest.fixture
def make_lab(tmp_path: Path) -> Iterator[Callable[..., netns.Lab]]:
    _tools()
    with lab_factory("macsec", tmp_path / "state", tmp_path / "keys") as make:
        yield make


def _count(pcap: Path, flt: str) -> int:
    return tshark.count(pcap, flt)


def _settle_and_stop(cap: netns.Capture) -> Path:
    time.sleep(0.5)            # pacing only: let the last frames reach the capture
    return cap.stop()


def _fail_closed_state(lab: netns.Lab, node: str, lower: str = "n3") -> None:
    """The filter and the fallback are in place: the node's address stays on the plain interface
    behind its subnet route of metric 4242 (a sender bound to it keeps a local address), and the
    filter lets nothing but MACsec frames leave that interface."""
    ns = lab.netns(node)
    table = subprocess.run(["ip", "netns", "exec", ns, "nft", "list", "table", "netdev", "testbed_macsec"],
                           capture_output=True, text=True, check=True).stdout
    assert f'hook egress device "{lower}"' in table and "policy drop" in table and "ether type 0x88e5" in table
    routes = subprocess.run(["ip", "-n", ns, "-4", "route", "show", "10.100.3.0/24", "dev", lower],
                            capture_output=True, text=True, check=True).stdout
    assert "scope link" in routes and "metric 4242" in routes, routes
    addr = subprocess.run(["ip", "-n", ns, "-4", "addr", "show", "dev", lower], capture_output=True, text=True,
                          check=True).stdout
    assert f"inet {lab.address(node, 'n3')}/24 metric 4242 " in addr, addr


# --- the lab: gnb and upf joined by MACsec --------------------------------------------------------

@pytest.mark.kernel("macsec")
@pytest.mark.parametrize("profile", PROFILES)
def test_n3_macsec_between_gnb_and_upf(make_lab, tmp_path: Path, profile: str) -> None:
    _require_xpn(profile)
    values = _values()
    prof = profiles.get(profile)
    gnb, upf = stack.address("gnb", "n3", values), stack.address("upf", "n3", values)

    lab = make_lab("n3", profile, up=False)
    boot = tmp_path / "boot.pcap"
    lab.up(timeout=60, capture=boot)            # from before the first entrypoint: ARP through MACsec on it
    for node in ("gnb", "upf"):
        assert lab.ready(node).splitlines()[0] == "datapath: macsec=kernel"
        link = lab.exec(node, ["ip", "-d", "link", "show", "macsec0"], check=True).stdout
        assert "mtu 1468" in link and "macsec" in link                     # 1500 - SecTAG 16 - ICV 16
        assert "inet 10.100.3." in lab.exec(node, ["ip", "-4", "addr", "show", "dev", "macsec0"], check=True).stdout
        partner = upf if node == "gnb" else gnb                               # through MACsec, not the fallback
        assert " dev macsec0 " in lab.exec(node, ["ip", "-4", "route", "get", partner], check=True).stdout
        _fail_closed_state(lab, node)                                          # in place from the start
        record = lab.exec(node, ["ip", "-s", "macsec", "show"], check=True).stdout
        assert run_checks.record_problems(record, prof, node, values, "n3") == [], record
    cap = lab.capture(tmp_path / "n3.pcap")
    for size in (56, 1016):
        ping = lab.exec("gnb", ["ping", "-c", "3", "-i", "0.2", "-W", "2", "-s", str(size), upf], check=True)
        assert " 0% packet loss" in ping.stdout
    assert udp_send(lab, "gnb", upf) == "4"
    lab.exec("upf", ["ping", "-c", "2", "-i", "0.2", "-W", "2", gnb], check=True)
    pcap = _settle_and_stop(cap)
    boot_pcap = lab.boot_capture.stop() if lab.boot_capture else boot
    lab.boot_capture = None

    ov = registry.overlay("macsec")
    v = ov.verify_capture(pcap, prof, "n3", values)
    assert v.valid and v.plaintext_packets == 0 and v.protected_packets >= 17, v.details
    assert _count(pcap, "icmp || udp.port == 2152 || arp") == 0                # independent of the verdict's filter
    assert _count(pcap, "eth.type == 0x88e5 && macsec.TCI.E == 1 && macsec.TCI.C == 1") == _count(pcap, "eth")
    b = ov.verify_capture(boot_pcap, prof, "n3", values)
    assert b.valid and "cleartext ARP" not in b.details, b.details             # readiness ARP went through MACsec
    # the overhead on real frames: the echo requests of 84 and 1,044 B (IP) leave as 84/1,044 + 32 + 14
    assert sorted(set(ov.protected_lengths(pcap, src=gnb))) == [84 + 32, 1044 + 32]
    assert {ov.packet_overhead(prof, i) for i in (84, 1044)} == {32}
    assert ov.handshakes(pcap, "n3", values).total_packets == 0               # static keys: no MKA
    codes = stop_entrypoints(lab, "macsec")
    assert codes == {"gnb": 0, "upf": 0}
    for node in ("gnb", "upf"):
        assert "macsec0" not in subprocess.run(["ip", "-n", lab.netns(node), "-o", "link"], capture_output=True,
                                               text=True).stdout
        _fail_closed_state(lab, node)                                          # kept after the teardown
        assert subprocess.run(["ip", "netns", "pids", lab.netns(node)], capture_output=True,
                              text=True).stdout.strip() == ""


@pytest.mark.kernel("macsec")
@pytest.mark.parametrize("profile", PROFILES)
def test_rendered_sa_lines_are_accepted_by_ip_macsec(tmp_path: Path, profile: str, fresh_netns: str) -> None:
    """The render's sa.conf through the real `ip macsec` on a real macsec link (the XPN lines were
    refused: the SSCI in decimal where iproute2 reads hex); the kernel holds what it was given."""
    _tools()
    _require_xpn(profile)
    prof = profiles.get(profile)
    d = overlay.render(prof, "n3", _values(), tmp_path / "keys", tmp_path / "r")["gnb"]
    env = dict(line.split("=", 1) for line in (d / "overlay.env").read_text().splitlines() if "=" in line)
    ns = ["ip", "-n", fresh_netns]
    subprocess.run([*ns, "link", "add", "lower0", "type", "veth", "peer", "name", "lower1"], check=True)
    subprocess.run([*ns, "link", "add", "link", "lower0", "macsec0", "type", "macsec", "sci", env["MACSEC_SCI"].strip("'\""),
                    "cipher", env["MACSEC_CIPHER"].strip("'\""), "encrypt", "on"], check=True)
    lines = [x for x in (d / "sa.conf").read_text().splitlines() if x and not x.startswith("#")]
    res = subprocess.run([*ns, "-batch", "-"], input="".join(f"macsec add macsec0 {x}\n" for x in lines),
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    shown = subprocess.run([*ns, "macsec", "show", "macsec0"], capture_output=True, text=True, check=True).stdout
    upf = stack.address("upf", "n3", _values())
    assert shown.count(" PN 1,") == 2 and f"RXSC: {overlay.sci_of(upf)}, state on" in shown, shown  # tx SA, rx SC + SA
    if prof.params["xpn"]:
        assert f"SSCI {overlay.ssci_of(stack.address('gnb', 'n3', _values())):08x}" in shown, shown
        assert f"SSCI {overlay.ssci_of(upf):08x}" in shown, shown


@pytest.mark.kernel("macsec")
def test_readiness_deadline_names_the_silent_partner(make_lab, tmp_path: Path) -> None:
    lab = make_lab("n3", "macsec-gcm-aes-128", up=False)
    lab._build_network()
    dirs = lab._render()
    res = _entrypoint(lab, "gnb", dirs["gnb"], tmp_path, "--timeout", "3")
    assert res.returncode == 1, res.stderr
    assert "no ARP answer through MACsec within 3s from: upf=10.100.3.7" in res.stderr
    assert "overlay removed (exit 1)" in res.stderr
    _fail_closed_state(lab, "gnb")
    lab.down()


def _entrypoint(lab: netns.Lab, node: str, config: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OVERLAY_READY_FILE": str(tmp_path / f"ready-{node}")}
    return subprocess.run(["ip", "netns", "exec", lab.netns(node), "bash", str(ENTRYPOINT), *args, str(config)],
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_entrypoint_fails_closed_before_the_link_is_up(tmp_path: Path) -> None:
    """On every kernel: the filter comes first, so a failure after it (no macsec module here, a
    broken SA line where the module exists) leaves the node's address on the plain interface and
    nothing of it on the wire, and its UDP sender sees no error."""
    _tools()
    from macsec import datapath
    has_macsec, _ = datapath.probe_kernel()
    values = _values()
    gnb, upf = stack.address("gnb", "n3", values), stack.address("upf", "n3", values)
    with lab_factory("macsec", tmp_path / "state", tmp_path / "keys") as make:
        lab = make("n3", "macsec-gcm-aes-128", up=False)
        lab._build_network()
        dirs = lab._render()
        if has_macsec:
            sa = dirs["gnb"] / "sa.conf"
            sa.write_text(sa.read_text().replace("tx sa 0 pn 1 on", "tx sa 0 pn 0 on"))
        cap = lab.capture(tmp_path / "failed.pcap")
        res = _entrypoint(lab, "gnb", dirs["gnb"], tmp_path, "--timeout", "5")
        assert res.returncode == 1
        want = "installing the 3 SA lines" if has_macsec else "this kernel has no MACsec (Error: Unknown device type.)"
        assert want in res.stderr, res.stderr
        assert has_macsec or "sudo modprobe macsec" in res.stderr
        assert not any(len(w) >= 32 and all(c in "0123456789abcdef" for c in w) for w in res.stderr.split()), \
            "a SAK in the log"
        assert "overlay removed (exit 1)" in res.stderr and not (tmp_path / "ready-gnb").exists()
        assert f"inet {gnb}/24" in lab.exec("gnb", ["ip", "-4", "addr", "show", "dev", "n3"], check=True).stdout
        _fail_closed_state(lab, "gnb")
        assert [udp_send(lab, "gnb", upf) for _ in range(3)] == ["4", "4", "4"]
        ping = lab.exec("gnb", ["ping", "-c", "1", "-W", "1", upf])
        assert ping.returncode != 0 and "Operation not permitted" not in ping.stdout + ping.stderr
        pcap = _settle_and_stop(cap)
        assert _count(pcap, f"ip.src == {gnb} || arp.src.proto_ipv4 == {gnb}") == 0
        again = _entrypoint(lab, "gnb", dirs["gnb"], tmp_path)
        assert again.returncode == 1 and "ran in this namespace before" in again.stderr


def test_entrypoint_usage_errors() -> None:
    require_tools("bash")
    for args, want in ((["--timeout", "soon", "x"], "--timeout needs whole seconds"), (["-x", "d"], "unknown option -x"),
                       (["a", "b"], "one NODE_CONFIG_DIR only"), ([], "usage:")):
        res = subprocess.run(["bash", str(ENTRYPOINT), *args], capture_output=True, text=True, check=False)
        assert res.returncode == 2 and want in res.stderr, (args, res.stderr)
    res = subprocess.run(["bash", str(ENTRYPOINT), "--help"], capture_output=True, text=True, check=False)
    assert res.returncode == 0 and "datapath: macsec=kernel" in res.stdout


# --- run-overlay, validity and the analysis ------------------------------------------------------

def _make(target: str, results: Path, timeout: float = 600, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PROFILE", "RESULTS", "SIZES", "SETS", "PINGS",
                                                             "INTERVAL", "WARMUP", "CAMPAIGN", "BOOTS")}
    env.update({"RESULTS": str(results), "SETS": "1", "PINGS": "10", "INTERVAL": "0.01", "WARMUP": "3",
                "SIZES": "64 1024", "BOOTS": "1", "CAMPAIGN": "macsec", **extra})
    return subprocess.run(["make", "--no-print-directory", target, f"RESULTS={results}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.kernel("macsec")
def test_run_overlay_then_wire_bytes_and_report(tmp_path: Path) -> None:
    _tools()
    results = tmp_path / "results"
    for profile in ("baseline", "macsec-gcm-aes-128"):
        proc = _make("run-overlay", results, PROFILE=profile, LAB_NAME=f"msec-{secrets.token_hex(3)}")
        assert proc.returncode == 0, f"run-overlay {profile}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    (run,) = (results / "macsec" / "overlay" / "macsec-gcm-aes-128").iterdir()
    m = json.loads((run / "manifest.json").read_text())
    assert (m["state"], m["valid"], m["protocol"], m["datapath"]) == \
        ("complete", True, "macsec", {"macsec": "kernel", "userspace": False})
    assert "encrypted MACsec frames" in m["validity"]["details"] and "MACsec SecY: 4 record(s)" in m["validity"]["details"]
    assert validity.check_run(run, record=False).valid
    out = tmp_path / "wb"
    proc = subprocess.run([sys.executable, "-m", "analysis", "wire-bytes", str(results), "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    import pandas as pd
    table = pd.read_csv(out / "wire-bytes.csv")
    row = table[table["protocol"] == "macsec"].iloc[0]
    assert str(row["overhead_measured"]) == str(row["overhead_analytic"]) == "32 32", row.to_dict()
    assert int(row["handshake_packets"]) == 0
    proc = _make("report", results, ANALYSIS_OUT=str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rtt = pd.read_csv(tmp_path / "report" / "tables" / "rtt.csv")
    assert set(rtt["profile"]) == {"baseline", "macsec-gcm-aes-128"}
    assert set(rtt[rtt["profile"] == "macsec-gcm-aes-128"]["protocol"]) == {"macsec"}
    assert overlay.PROTOCOL in (tmp_path / "report" / "report.md").read_text()
