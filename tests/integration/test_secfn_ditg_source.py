"""D-ITG with a source address, as the stack form sends it (testbed/secfn/ditg.py send_command):
the UE's PDU-session address is not the namespace's primary one, and only what leaves from it
crosses the UPF. Real ITGSend/ITGRecv/ITGDec between two namespaces; the sender binds a second
address, the receiver must see exactly that one.

Found in the full-kernel guest: ITGSend 2.8.1 with an IPv4 `-sa` sends nothing ("flowSender:
Address family not supported by protocol"), on this host as in a container; send_command passes
the IPv4-mapped forms, which send plain IPv4 from the bound address."""
from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.secfn import ditg
from tests.conftest import require_root, require_tools

pytestmark = pytest.mark.netns
SENDER_PRIMARY, SENDER_UE, RECEIVER = "10.77.0.1", "10.77.0.9", "10.77.0.2"


@pytest.fixture
def pair() -> Iterator[tuple[str, str]]:
    require_root()
    require_tools("ip", "ITGSend", "ITGRecv", "ITGDec", "tshark")
    tag = secrets.token_hex(3)
    a, b = f"tb-ditg-a-{tag}", f"tb-ditg-b-{tag}"
    ip = ["ip"]
    for ns in (a, b):
        subprocess.run(ip + ["netns", "add", ns], check=True)
    try:
        subprocess.run(ip + ["link", "add", f"da{tag}", "netns", a, "type", "veth", "peer", "name", f"db{tag}",
                             "netns", b], check=True)
        for ns, dev, addrs in ((a, f"da{tag}", (SENDER_PRIMARY, SENDER_UE)), (b, f"db{tag}", (RECEIVER,))):
            for addr in addrs:
                subprocess.run(ip + ["-n", ns, "addr", "add", f"{addr}/24", "dev", dev], check=True)
            subprocess.run(ip + ["-n", ns, "link", "set", dev, "up"], check=True)
            subprocess.run(ip + ["-n", ns, "link", "set", "lo", "up"], check=True)
        yield a, b
    finally:
        for ns in (a, b):
            pids = subprocess.run(ip + ["netns", "pids", ns], capture_output=True, text=True, check=False).stdout.split()
            if pids:
                subprocess.run(["kill", *pids], check=False)
            subprocess.run(ip + ["netns", "del", ns], check=False)


@pytest.mark.parametrize("protocol", ["udp", "tcp"])
def test_the_receiver_sees_the_bound_source(pair: tuple[str, str], tmp_path: Path, protocol: str) -> None:
    a, b = pair
    recv = subprocess.Popen(["ip", "netns", "exec", b, "ITGRecv"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cap = tmp_path / "wire.pcap"
    dump = subprocess.Popen(["ip", "netns", "exec", b, "dumpcap", "-q", "-i", "any", "-w", str(cap)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        subprocess.run(["sleep", "1.5"], check=True)        # ITGRecv and dumpcap listening
        send_log, recv_log = tmp_path / "send.log", tmp_path / "recv.log"
        argv = ditg.send_command(RECEIVER, protocol, 200, 1.0, send_log, recv_log, source=SENDER_UE)
        out = subprocess.run(["ip", "netns", "exec", a, *argv], capture_output=True, text=True, timeout=60,
                             check=False)
        assert "not supported" not in out.stdout + out.stderr, out.stdout + out.stderr
        subprocess.run(["sleep", "1"], check=True)
    finally:
        for p in (recv, dump):
            p.terminate()
            p.wait(timeout=10)
    got = ditg.decode(recv_log)
    assert got["packets"] > 50 and got["seen_source"] == SENDER_UE
    # on the wire: IPv4 from the bound address only, none from the primary one
    fields = subprocess.run(["tshark", "-r", str(cap), "-T", "fields", "-e", "ip.src",
                             "-Y", f"ip.dst == {RECEIVER} && {protocol}"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert fields and set(fields) == {SENDER_UE}
