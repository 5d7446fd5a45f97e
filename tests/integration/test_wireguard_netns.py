"""WireGuard overlay end to end in network namespaces: the very entrypoint and rendered configs.

The namespace lab (testbed/netns.py, shared with the IPsec tests) puts each node in its own
namespace with its stack.yaml address on a bridge and runs wireguard/entrypoint.sh there
with a private /run; dumpcap captures on the bridge. Real wg, wireguard-go (or the kernel
module where the host has it), nftables and tshark; nothing is mocked.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testbed import ROOT, datapath, netns, profiles, ran, stack, tshark
from wireguard import overlay as wireguard
from tests.conftest import require_root, require_tools
from tests.integration.labs import lab_factory, late_peer_start, stop_entrypoints

pytestmark = pytest.mark.netns

ENTRYPOINT = ROOT / "wireguard" / "entrypoint.sh"


def _count(pcap: Path, flt: str) -> int:
    out = subprocess.run(["tshark", "-n", "-r", str(pcap), "-d", "udp.port==51820,wg", "-Y", flt,
                          "-T", "fields", "-e", "frame.number"], capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line.strip())


def _settle_and_stop(cap: netns.Capture) -> Path:
    time.sleep(0.5)            # pacing only: let the last packets reach the capture
    return cap.stop()


@pytest.fixture
def make_lab(tmp_path: Path) -> Iterator[Callable[..., netns.Lab]]:
    require_root()
    require_tools("ip", "wg", "tshark", "dumpcap", "nft", "unshare", "nsenter", "ping")
    if datapath.detect()["wireguard"] == "unavailable":
        pytest.skip("neither kernel WireGuard nor wireguard-go with TUN on this host: run `make setup`")
    with lab_factory("wireguard", tmp_path / "state", tmp_path / "keys") as make:
        yield make


def _assert_torn_down(lab: netns.Lab) -> None:
    codes = stop_entrypoints(lab, "wireguard")
    assert codes == {n: 0 for n in lab.pids}, {n: lab.tail(n, 10) for n in lab.pids}
    for node in lab.pids:
        ns = lab.netns(node)
        assert "wg0" not in subprocess.run(["ip", "-n", ns, "-o", "link"], capture_output=True, text=True).stdout
        assert "51820" not in subprocess.run(["ip", "-n", ns, "rule"], capture_output=True, text=True).stdout
        tables = subprocess.run(["ip", "netns", "exec", ns, "nft", "list", "tables"], capture_output=True, text=True)
        assert "table netdev testbed_wireguard_egress" in tables.stdout      # kept: fail closed
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
        assert pids.strip() == "", f"processes left in {ns}: {pids}"


def _handshakes(lab: netns.Lab, node: str) -> list[int]:
    out = lab.exec(node, ["wg", "show", "wg0", "latest-handshakes"], check=True).stdout
    return [int(row.split("\t")[1]) for row in out.splitlines()]


def test_n3_wireguard_between_gnb_and_upf(make_lab, tmp_path: Path) -> None:
    values = ran.restrict(stack.load(), "ueransim")
    profile = profiles.get("wireguard", "n3")
    gnb, upf = stack.address("gnb", "n3", values), stack.address("upf", "n3", values)

    # baseline: the same traffic without the overlay is plaintext on the wire -> check fails
    base = make_lab("n3", "baseline", ["gnb", "upf"])
    cap = base.capture(tmp_path / "baseline.pcap")
    base.exec("gnb", ["ping", "-c", "3", "-i", "0.2", "-W", "2", upf], check=True)
    base.exec("gnb", ["bash", "-c", f"printf gtpu > /dev/udp/{upf}/2152"], check=True)
    verdict = wireguard.verify_capture(_settle_and_stop(cap), profile, "n3", values)
    assert not verdict.valid and verdict.protected_packets == 0 and verdict.plaintext_packets >= 7, verdict
    base.down()

    lab = make_lab("n3", "wireguard")
    assert sorted(lab.pids) == ["gnb", "upf"]
    expected = f"datapath: wireguard={datapath.detect()['wireguard']}"
    for node in lab.pids:
        assert lab.ready(node).splitlines()[0] == expected
        assert expected in lab.tail(node, 20)
        stamps = _handshakes(lab, node)
        assert len(stamps) == 1 and stamps[0] > 0
    cap = lab.capture(tmp_path / "overlay.pcap")
    ping = lab.exec("gnb", ["ping", "-c", "5", "-i", "0.2", "-W", "2", upf], check=True)
    assert " 0% packet loss" in ping.stdout
    lab.exec("gnb", ["bash", "-c", f"printf gtpu > /dev/udp/{upf}/2152"], check=True)
    lab.exec("upf", ["ping", "-c", "2", "-i", "0.2", "-W", "2", gnb], check=True)
    pcap = _settle_and_stop(cap)

    verdict = wireguard.verify_capture(pcap, profile, "n3", values)
    assert verdict.valid and verdict.plaintext_packets == 0 and verdict.protected_packets >= 15, verdict
    assert _count(pcap, "icmp || udp.port == 2152") == 0      # independent of the verdict's filter
    assert _count(pcap, f"udp.port == 51820 && ip.addr == {gnb} && ip.addr == {upf}") >= 15
    _assert_torn_down(lab)


def test_fail_closed_returns_no_error_to_the_sender(make_lab, tmp_path: Path) -> None:
    """The fail-closed filter's drop in the output hook turned a sender's sendto into EPERM (issue
    22.13: nr-gnb aborts on it). With the tunnel's steering gone (a routing mistake, the moment
    after its removal) a UDP sender to the peer now sees its datagrams taken, none of them crosses
    in the clear, and the filter (in the devices' egress hook) counts them."""
    import sys
    values = ran.restrict(stack.load(), "ueransim")
    upf = stack.address("upf", "n3", values)
    lab = make_lab("n3", "wireguard")
    lab.exec("gnb", ["ip", "rule", "del", "pref", str(wireguard.RULE_PREF)], check=True)
    code = ("import socket, sys\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nsent = 0\n"
            "for i in range(20):\n    try:\n        s.sendto(b'gtpu', (sys.argv[1], 2152)); sent += 1\n"
            "    except OSError as exc:\n        print(f'sent {sent}, then {exc.strerror}'); sys.exit(1)\n"
            "print(f'sent {sent}')\n")
    cap = lab.capture(tmp_path / "closed.pcap")
    res = lab.exec("gnb", [sys.executable, "-c", code, upf])
    pcap = _settle_and_stop(cap)
    assert res.returncode == 0 and res.stdout.strip() == "sent 20", res.stdout + res.stderr
    assert _count(pcap, "udp.port == 2152") == 0
    counters = lab.exec("gnb", ["nft", "list", "table", "netdev", "testbed_wireguard_egress"], check=True).stdout
    assert sum(int(n) for n in re.findall(r"counter packets (\d+)", counters)) >= 20, counters


def _initiations(pcap: Path) -> set[tuple[str, str]]:
    """(source, destination) of every WireGuard handshake initiation in the capture (not the
    copies quoted in ICMP port-unreachable errors from an end whose interface was not up yet)."""
    out = subprocess.run(["tshark", "-n", "-r", str(pcap), "-d", "udp.port==51820,wg", "-Y", "wg.type == 1 && !icmp",
                          "-T", "fields", "-e", "ip.src", "-e", "ip.dst"], capture_output=True, text=True, check=True).stdout
    return {(row.split("\t")[0], row.split("\t")[1]) for row in out.splitlines() if row.strip()}


def test_sbi_wireguard_over_the_channel_map(make_lab, tmp_path: Path) -> None:
    values = ran.restrict(stack.load(), "ueransim")
    lab = make_lab("sbi", "wireguard", up=False)
    lab.up(capture=tmp_path / "boot.pcap")
    assert lab.boot_capture is not None
    boot = lab.boot_capture.stop()
    pairs = wireguard.pairs("sbi", values)
    assert sorted(lab.pids) == wireguard.endpoints("sbi", values) and len(pairs) >= 3
    for node in lab.pids:
        stamps = _handshakes(lab, node)
        assert len(stamps) == len(wireguard.partners(node, "sbi", values)) and all(stamps), (node, stamps)
    # one end of each pair (the node name that sorts first) starts the handshake; crossed
    # initiations could leave a session with one direction dead (wireguard/entrypoint.sh `probes`)
    want = {(lab.address(min(a, b)), lab.address(max(a, b))) for a, b in pairs}
    assert _initiations(boot) == want
    cap = lab.capture(tmp_path / "sbi.pcap")
    for a, b in pairs:
        lab.exec(a, ["ping", "-c", "1", "-W", "2", lab.address(b)], check=True)
    # an SBI-like TCP exchange on the SBI port keeps the real addresses end to end
    port = int(values["sbi_port"])
    server = subprocess.Popen(
        ["ip", "netns", "exec", lab.netns("nrf"), "python3", "-c",
         "import socket; s = socket.create_server((%r, %d)); c, a = s.accept(); c.sendall(a[0].encode()); c.close()"
         % (lab.address("nrf"), port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            res = lab.exec("amf", ["python3", "-c", "import socket; c = socket.create_connection((%r, %d), timeout=2); "
                                   "print(c.recv(64).decode())" % (lab.address("nrf"), port)])
            if res.returncode == 0:
                break
            assert time.monotonic() < deadline, f"no TCP connection amf -> nrf:{port}: {res.stderr}"
            time.sleep(0.1)
        assert res.stdout.strip() == lab.address("amf")
    finally:
        server.kill()
        server.wait(timeout=5)
    pcap = _settle_and_stop(cap)
    verdict = wireguard.verify_capture(pcap, profiles.get("wireguard", "sbi"), "sbi", values)
    assert verdict.valid and verdict.plaintext_packets == 0 and verdict.protected_packets >= 2 * len(pairs), verdict
    assert _count(pcap, f"tcp.port == {port} || icmp") == 0
    _assert_torn_down(lab)


def test_sbi_subset_of_three_nfs_peers_only_among_them(make_lab) -> None:
    lab = make_lab("sbi", "wireguard", ["amf", "ausf", "udm"])
    assert sorted(lab.pids) == ["amf", "ausf", "udm"]
    for node in lab.pids:
        peers = lab.exec(node, ["wg", "show", "wg0", "allowed-ips"], check=True).stdout
        want = {f"{lab.address(p)}/32" for p in ("amf", "ausf", "udm") if p != node}
        assert {row.split("\t")[1] for row in peers.splitlines()} == want
        assert all(_handshakes(lab, node))
    lab.exec("amf", ["ping", "-c", "1", "-W", "2", lab.address("udm")], check=True)
    _assert_torn_down(lab)


def test_entrypoint_gives_up_at_its_deadline_when_the_peer_is_absent(make_lab, tmp_path: Path) -> None:
    values = ran.restrict(stack.load(), "ueransim")
    dirs = wireguard.render(profiles.get("wireguard", "n3"), "n3", values, tmp_path / "keys", tmp_path / "render")
    lab = make_lab("n3", "baseline", ["gnb", "upf"])          # namespaces without an overlay
    start = time.monotonic()
    res = subprocess.run(["ip", "netns", "exec", lab.netns("gnb"), str(ENTRYPOINT), "--private-run",
                          "--timeout", "3", str(dirs["gnb"])], capture_output=True, text=True, timeout=30)
    assert res.returncode == 1, res.stderr
    assert "no WireGuard handshake within 3s with: upf=" in res.stderr
    assert time.monotonic() - start < 15
    ns = lab.netns("gnb")
    assert "wg0" not in subprocess.run(["ip", "-n", ns, "-o", "link"], capture_output=True, text=True).stdout
    assert "table netdev testbed_wireguard_egress" in subprocess.run(["ip", "netns", "exec", ns, "nft", "list", "tables"],
                                                                     capture_output=True, text=True).stdout
    again = subprocess.run(["ip", "netns", "exec", ns, str(ENTRYPOINT), "--private-run", "--timeout", "3",
                            str(dirs["gnb"])], capture_output=True, text=True, timeout=30)
    assert again.returncode == 1 and "ran in this namespace before (its fail-closed filter stays)" in again.stderr


def test_the_waiting_end_follows_the_stack_timeout_when_its_peer_starts_late(make_lab, tmp_path: Path) -> None:
    """`make run-sbi PROFILE=wireguard` in the guest: nssf's holder gave up after its fixed 60 s
    (READY_TIMEOUT_S, from its own start) while amf's and nrf's holders started 47 and 53 s after
    it. Here the waiting end (upf: gnb sorts first and initiates) has a 3 s handshake timeout and
    the stack's 40 s (STACK_UP_TIMEOUT, what up.sh's deadline gives the holders); gnb starts 6 s
    later: both come up."""
    values = ran.restrict(stack.load(), "ueransim")
    dirs = wireguard.render(profiles.get("wireguard", "n3"), "n3", values, tmp_path / "keys", tmp_path / "render")
    lab = make_lab("n3", "baseline", ["gnb", "upf"])
    out_upf, out_gnb = late_peer_start(lab, ENTRYPOINT, dirs)
    assert "ready:" in out_upf and "ready:" in out_gnb, out_upf[-1500:] + out_gnb[-1500:]


def test_a_peer_that_never_starts_is_named_as_such(make_lab, tmp_path: Path) -> None:
    """The give-up message said `no WireGuard handshake within 60s with: amf=... nrf=...`: it now
    says which peers were never heard from (their overlay never started, or nothing of it arrives),
    after the stack's timeout."""
    values = ran.restrict(stack.load(), "ueransim")
    dirs = wireguard.render(profiles.get("wireguard", "n3"), "n3", values, tmp_path / "keys", tmp_path / "render")
    lab = make_lab("n3", "baseline", ["gnb", "upf"])
    start = time.monotonic()
    res = subprocess.run(["ip", "netns", "exec", lab.netns("upf"), str(ENTRYPOINT), "--private-run", "--timeout", "2",
                          str(dirs["upf"])], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "STACK_UP_TIMEOUT": "5"})
    took = time.monotonic() - start
    assert res.returncode == 1 and 4.5 < took < 20, (took, res.stderr[-1500:])
    gnb = stack.address("gnb", "n3", values)
    assert f"never heard from (their overlay never started, or nothing of it arrives here): gnb={gnb}" in res.stderr, \
        res.stderr[-1500:]


def test_entrypoint_usage_errors() -> None:
    for argv, code in (([], 2), (["--datapath", "bogus", "/x"], 2), (["--timeout", "soon", "/x"], 2),
                       (["--help"], 0)):
        res = subprocess.run([str(ENTRYPOINT), *argv], capture_output=True, text=True, timeout=10)
        assert res.returncode == code, (argv, res.stderr)


def test_strict_rp_filter_is_relaxed_so_tunnelled_packets_pass(make_lab, tmp_path: Path) -> None:
    values = ran.restrict(stack.load(), "ueransim")
    dirs = wireguard.render(profiles.get("wireguard", "n3"), "n3", values, tmp_path / "keys", tmp_path / "render")
    lab = make_lab("n3", "baseline", ["gnb", "upf"])
    procs: dict[str, subprocess.Popen] = {}
    try:
        for node in ("gnb", "upf"):
            ns = lab.netns(node)
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.conf.all.rp_filter=1",
                            f"net.ipv4.conf.{lab.network}.rp_filter=1"], check=True)
            procs[node] = subprocess.Popen(["ip", "netns", "exec", ns, str(ENTRYPOINT), "--private-run", str(dirs[node])],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not all((Path(f"/proc/{p.pid}/root") / netns.READY_FILE).exists() for p in procs.values()):
            assert all(p.poll() is None for p in procs.values()), [p.communicate() for p in procs.values()]
            assert time.monotonic() < deadline, "overlay not ready within 30 s with strict rp_filter"
            time.sleep(0.1)
        for node in ("gnb", "upf"):
            rp = subprocess.run(["ip", "netns", "exec", lab.netns(node), "sysctl", "-n", "net.ipv4.conf.all.rp_filter"],
                                capture_output=True, text=True, check=True).stdout.strip()
            assert rp == "2"
        ping = subprocess.run(["nsenter", "-t", str(procs["gnb"].pid), "-m", "-n", "ping", "-c", "2", "-W", "2",
                               lab.address("upf")], capture_output=True, text=True)
        assert ping.returncode == 0, ping.stdout + ping.stderr
    finally:
        for p in procs.values():
            p.terminate()
        for node, p in procs.items():
            _, err = p.communicate(timeout=15)
            assert p.returncode == 0, err
            assert "rp_filter=2 (loose)" in err


def test_reset_sessions_makes_the_next_attach_cold(make_lab, tmp_path: Path) -> None:
    """wireguard/reset-sessions.sh (run-sbi, before the cold UE): after it every peer's latest
    handshake is 0 with the configuration kept, and the next packet starts a new handshake that
    the capture shows after the reset."""
    values = ran.restrict(stack.load(), "ueransim")
    lab = make_lab("n3", "wireguard")
    upf = stack.address("upf", "n3", values)
    script = str(ROOT / "wireguard" / "reset-sessions.sh")
    cap = lab.capture(tmp_path / "reset.pcap")
    outs = [lab.exec(node, ["bash", script], check=True).stdout for node in ("gnb", "upf")]
    for out in outs:
        lines = out.strip().splitlines()
        reset_at, began = map(int, lines[0].split())
        assert began <= reset_at, out
        assert lines[1:] and all(line.split()[-1] == "0" for line in lines[1:]), out
    lab.exec("gnb", ["ping", "-c", "2", "-i", "0.2", "-W", "2", upf], check=True)
    pcap = _settle_and_stop(cap)
    times = tshark.fields(pcap, "wg.type == 1", ["frame.time_epoch"], extra=["-d", f"udp.port=={wireguard.LISTEN_PORT},wg"])
    assert times and float(times[0][0]) >= reset_at, (times, reset_at)
    after = lab.exec("gnb", ["wg", "show", "all", "latest-handshakes"], check=True).stdout
    assert all(line.split()[-1] != "0" for line in after.strip().splitlines()), after
