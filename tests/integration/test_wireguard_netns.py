"""WireGuard overlay end to end in network namespaces: the very entrypoint and rendered configs.

One namespace per node (addresses from stack.yaml), one bridge namespace per network; the
entrypoint runs in each node namespace (`--private-run`, as several wireguard-go instances
need their own /run), and tshark captures on the bridge. Real wg, wireguard-go (or the
kernel module where the host has it), nftables and tshark; nothing is mocked.
"""
from __future__ import annotations

import dataclasses
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import ROOT, datapath, profiles, stack
from testbed.overlays import wireguard
from tests.conftest import require_root, require_tools

pytestmark = pytest.mark.netns

ENTRYPOINT = ROOT / "wireguard" / "entrypoint.sh"
READY = "run/testbed/overlay-ready"        # inside each entrypoint's private /run
DEADLINE_S = 45


def _run(*cmd: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


def _wait(what: str, probe, deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while not probe():
        if time.monotonic() > end:
            raise AssertionError(f"gave up after {deadline_s}s waiting for {what}")
        time.sleep(0.1)


@dataclasses.dataclass
class Lab:
    """Namespaces for some nodes on one plane network, plus a bridge namespace."""
    prefix: str
    network: str
    nodes: list[str]
    values: dict
    tmp: Path
    procs: dict[str, subprocess.Popen] = dataclasses.field(default_factory=dict)
    logs: dict[str, Path] = dataclasses.field(default_factory=dict)

    @property
    def bridge_ns(self) -> str:
        return f"{self.prefix}-br"

    def ns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def addr(self, node: str) -> str:
        return stack.address(node, self.network, self.values)

    def up(self) -> None:
        br = self.bridge_ns
        _run("ip", "netns", "add", br)
        _run("ip", "-n", br, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", br, "link", "set", "br0", "up")
        plen = stack.prefixlen(self.network, self.values)
        for node in self.nodes:
            ns = self.ns(node)
            _run("ip", "netns", "add", ns)
            _run("ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", node, "netns", br)
            _run("ip", "-n", br, "link", "set", node, "master", "br0", "up")
            _run("ip", "-n", ns, "addr", "add", f"{self.addr(node)}/{plen}", "dev", "eth0")
            _run("ip", "-n", ns, "link", "set", "eth0", "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")

    def exec(self, node: str, *cmd: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        return _run("ip", "netns", "exec", self.ns(node), *cmd, check=check, timeout=timeout)

    def start_overlay(self, node: str, config_dir: Path) -> None:
        log = self.tmp / f"entrypoint-{node}.log"
        self.logs[node] = log
        with open(log, "w") as fh:
            self.procs[node] = subprocess.Popen(
                ["ip", "netns", "exec", self.ns(node), str(ENTRYPOINT), "--private-run", str(config_dir)],
                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)

    def ready_file(self, node: str) -> Path:
        return Path(f"/proc/{self.procs[node].pid}/root") / READY

    def wait_ready(self) -> None:
        for node, proc in self.procs.items():
            def ready(node: str = node, proc: subprocess.Popen = proc) -> bool:
                if proc.poll() is not None:
                    raise AssertionError(f"entrypoint of {node} exited {proc.returncode}: {self.logs[node].read_text()}")
                return self.ready_file(node).exists()
            _wait(f"the overlay of {node}", ready)

    def wg(self, node: str, *args: str) -> str:
        """`wg` in the entrypoint's own mount namespace (wireguard-go's UAPI socket lives there)."""
        return _run("nsenter", "-t", str(self.procs[node].pid), "-m", "-n", "wg", *args).stdout

    def stop_overlays(self) -> dict[str, int]:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
        codes = {}
        for node, proc in self.procs.items():
            try:
                codes[node] = proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                codes[node] = proc.wait(timeout=5)
        return codes

    def down(self) -> None:
        self.stop_overlays()
        for ns in [self.ns(n) for n in self.nodes] + [self.bridge_ns]:
            pids = _run("ip", "netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _run("ip", "netns", "del", ns, check=False)


class Capture:
    """tshark on the lab's bridge, started with a deadline on its 'Capturing on' line."""

    def __init__(self, lab: Lab, pcap: Path) -> None:
        self.pcap = pcap
        self.err = pcap.with_suffix(".err")
        with open(self.err, "w") as fh:
            self.proc = subprocess.Popen(["ip", "netns", "exec", lab.bridge_ns, "tshark", "-n", "-q", "-i", "br0",
                                          "-w", str(pcap)], stdout=subprocess.DEVNULL, stderr=fh,
                                         start_new_session=True)
        _wait("tshark to start capturing", lambda: "Capturing on" in self.err.read_text(), 20)

    def stop(self) -> Path:
        time.sleep(0.5)        # pacing: let the last packets reach the capture
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=15)
        assert self.pcap.exists(), self.err.read_text()
        return self.pcap


def _count(pcap: Path, flt: str) -> int:
    out = _run("tshark", "-n", "-r", str(pcap), "-d", "udp.port==51820,wg", "-Y", flt, "-T", "fields",
               "-e", "frame.number").stdout
    return sum(1 for line in out.splitlines() if line.strip())


@pytest.fixture
def lab_factory(tmp_path: Path) -> Iterator:
    require_root()
    require_tools("ip", "wg", "tshark", "nft", "unshare", "nsenter", "ping")
    facts = datapath.detect()
    if facts["wireguard"] == "unavailable":
        pytest.skip("neither kernel WireGuard nor wireguard-go with TUN on this host: run `make setup`")
    labs: list[Lab] = []

    def make(plane: str, nodes: list[str] | None = None) -> Lab:
        values = stack.load()
        lab = Lab(prefix=f"wireguard-{secrets.token_hex(3)}", network=wireguard.channels.PLANE_NETWORK[plane],
                  nodes=nodes or wireguard.endpoints(plane, values), values=values, tmp=tmp_path)
        labs.append(lab)
        lab.up()
        return lab

    yield make
    for lab in labs:
        lab.down()


def _render(plane: str, tmp: Path) -> dict[str, Path]:
    return wireguard.render(profiles.get("wireguard", plane), plane, stack.load(), tmp / "keys", tmp / "render")


def _assert_torn_down(lab: Lab, codes: dict[str, int]) -> None:
    assert codes == {n: 0 for n in lab.procs}, {n: lab.logs[n].read_text() for n in lab.procs}
    for node in lab.procs:
        assert "wg0" not in lab.exec(node, "ip", "-o", "link").stdout
        assert "51820" not in lab.exec(node, "ip", "rule").stdout
        assert "testbed_wireguard" not in lab.exec(node, "nft", "list", "tables").stdout
        assert _run("ip", "netns", "pids", lab.ns(node)).stdout.strip() == "", "a process stayed in the namespace"


def test_n3_wireguard_between_gnb_and_upf(lab_factory, tmp_path: Path) -> None:
    values = stack.load()
    dirs = _render("n3", tmp_path)
    assert sorted(dirs) == ["gnb", "upf"]
    lab = lab_factory("n3")
    gnb, upf = lab.addr("gnb"), lab.addr("upf")
    profile = profiles.get("wireguard", "n3")

    # baseline: no overlay, the same traffic is plaintext on the wire -> the check must fail
    cap = Capture(lab, tmp_path / "baseline.pcap")
    lab.exec("gnb", "ping", "-c", "3", "-i", "0.2", "-W", "2", upf)
    lab.exec("gnb", "bash", "-c", f"printf gtpu > /dev/udp/{upf}/2152")
    baseline = wireguard.verify_capture(cap.stop(), profile, "n3", values)
    assert not baseline.valid and baseline.protected_packets == 0 and baseline.plaintext_packets >= 7, baseline

    cap = Capture(lab, tmp_path / "overlay.pcap")
    for node, d in dirs.items():
        lab.start_overlay(node, d)
    lab.wait_ready()
    line = datapath.detect()["wireguard"]
    for node in dirs:
        assert lab.ready_file(node).read_text().splitlines()[0] == f"datapath: wireguard={line}"
        assert f"datapath: wireguard={line}" in lab.logs[node].read_text()
        stamps = [int(row.split("\t")[1]) for row in lab.wg(node, "show", "wg0", "latest-handshakes").splitlines()]
        assert len(stamps) == 1 and stamps[0] > 0
    ping = lab.exec("gnb", "ping", "-c", "5", "-i", "0.2", "-W", "2", upf)
    assert " 0% packet loss" in ping.stdout
    lab.exec("gnb", "bash", "-c", f"printf gtpu > /dev/udp/{upf}/2152")
    lab.exec("upf", "ping", "-c", "2", "-i", "0.2", "-W", "2", gnb)
    pcap = cap.stop()

    verdict = wireguard.verify_capture(pcap, profile, "n3", values)
    assert verdict.valid and verdict.plaintext_packets == 0 and verdict.protected_packets >= 16, verdict
    assert _count(pcap, "icmp") == 0          # independent of the verdict's own filter
    assert _count(pcap, f"udp.port == 51820 && ip.addr == {gnb} && ip.addr == {upf}") >= 16

    _assert_torn_down(lab, lab.stop_overlays())


def test_sbi_wireguard_over_the_channel_map(lab_factory, tmp_path: Path) -> None:
    values = stack.load()
    dirs = _render("sbi", tmp_path)
    pairs = wireguard.pairs("sbi", values)
    assert len(dirs) >= 3 and len(pairs) >= 3
    lab = lab_factory("sbi", sorted(dirs))
    cap = Capture(lab, tmp_path / "sbi.pcap")
    for node, d in dirs.items():
        lab.start_overlay(node, d)
    lab.wait_ready()
    for node in dirs:
        shakes = lab.wg(node, "show", "wg0", "latest-handshakes").splitlines()
        assert len(shakes) == len(wireguard.partners(node, "sbi", values))
        assert all(int(row.split("\t")[1]) > 0 for row in shakes), (node, shakes)
    for a, b in pairs:
        lab.exec(a, "ping", "-c", "1", "-W", "2", lab.addr(b))
    # an SBI-like TCP exchange on the SBI port keeps the real addresses end to end
    server = subprocess.Popen(
        ["ip", "netns", "exec", lab.ns("nrf"), "python3", "-c",
         "import socket; s = socket.create_server((%r, %d)); c, a = s.accept(); c.sendall(a[0].encode()); c.close()"
         % (lab.addr("nrf"), values["sbi_port"])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def connect() -> bool:
            res = lab.exec("amf", "python3", "-c",
                           "import socket; c = socket.create_connection((%r, %d), timeout=2); print(c.recv(64).decode())"
                           % (lab.addr("nrf"), values["sbi_port"]), check=False)
            connect.seen = res.stdout.strip()   # type: ignore[attr-defined]
            return res.returncode == 0
        _wait("a TCP connection amf -> nrf on the SBI port", connect, 15)
        assert connect.seen == lab.addr("amf")  # type: ignore[attr-defined]
    finally:
        server.kill()
        server.wait(timeout=5)
    pcap = cap.stop()
    verdict = wireguard.verify_capture(pcap, profiles.get("wireguard", "sbi"), "sbi", values)
    assert verdict.valid and verdict.plaintext_packets == 0, verdict
    assert verdict.protected_packets >= 2 * len(pairs)
    assert _count(pcap, f"tcp.port == {values['sbi_port']} || icmp") == 0
    _assert_torn_down(lab, lab.stop_overlays())


def test_entrypoint_fails_with_a_deadline_when_the_peer_is_absent(lab_factory, tmp_path: Path) -> None:
    dirs = _render("n3", tmp_path)
    lab = lab_factory("n3")
    start = time.monotonic()
    res = lab.exec("gnb", str(ENTRYPOINT), "--private-run", "--timeout", "3", str(dirs["gnb"]), check=False, timeout=30)
    assert res.returncode == 1
    assert "no WireGuard handshake within 3s with: upf=" in res.stderr
    assert time.monotonic() - start < 15
    assert "wg0" not in lab.exec("gnb", "ip", "-o", "link").stdout
    assert "testbed_wireguard" not in lab.exec("gnb", "nft", "list", "tables").stdout
