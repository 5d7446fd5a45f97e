"""The namespace labs of the integration tests: made on demand, always taken down, and checked
to leave no namespace behind (testbed/netns.py)."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from testbed import netns


@contextmanager
def lab_factory(prefix: str, state_dir: Path, keys_dir: Path, up_timeout: float = 60
                ) -> Iterator[Callable[..., netns.Lab]]:
    """`make(plane, profile, nodes=None, up=True, timeout=up_timeout, **Lab kwargs)` -> a lab
    named `<prefix>-<random>` (tests running at once never collide), up unless up=False."""
    labs: list[netns.Lab] = []

    def make(plane: str, profile: str, nodes: list[str] | None = None, up: bool = True,
             timeout: float = up_timeout, **kw: object) -> netns.Lab:
        lab = netns.Lab(f"{prefix}-{secrets.token_hex(3)}", plane, profile, nodes=nodes,
                        state_dir=state_dir, keys_dir=keys_dir, **kw)  # type: ignore[arg-type]
        labs.append(lab)
        if up:
            lab.up(timeout=timeout)
        return lab

    try:
        yield make
    finally:
        for lab in labs:
            lab.down()
    leftover = [ns for ns in netns.existing_namespaces() if any(ns.startswith(lab.name) for lab in labs)]
    assert not leftover, f"lab down left namespaces behind: {leftover}"


def stop_entrypoints(lab: netns.Lab, protocol: str) -> dict[str, int]:
    """SIGTERM every entrypoint of the lab (children of this process) and collect their exit
    codes; each must end within 4 s (well inside compose's 5 s stop_grace_period) and log that it
    removed the overlay, without an ERROR."""
    codes: dict[str, int] = {}
    for pid in lab.pids.values():
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 4
    for node, pid in lab.pids.items():
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes[node] = os.waitstatus_to_exitcode(status)
                break
            assert time.monotonic() < deadline, f"entrypoint of {node} still running 4 s after SIGTERM"
            time.sleep(0.05)
        log = lab.log_path(node).read_text()
        assert log.rstrip().endswith(f"{protocol}[{node}]: overlay removed (exit 0)") and "ERROR" not in log, log
    return codes


def namespace_inode(name: str) -> int | None:
    """The inode of a named network namespace (its identity, which outlives the name)."""
    try:
        return os.stat(f"/run/netns/{name}").st_ino
    except OSError:
        return None


def processes_in(inodes: set[int]) -> list[str]:
    """'pid comm (parent ppid)' of every live process whose network namespace is one of `inodes`,
    named or deleted (a process keeps a deleted namespace alive: what a lab must never leave)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            link = os.readlink(proc / "ns" / "net")
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if int(link.split("[", 1)[1].rstrip("]")) in inodes:
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            ppid = stat[stat.rindex(")") + 2:].split()[1]
            found.append(f"{proc.name} {comm} (parent {ppid})")
    return found


class Entrypoint:
    """An overlay's entrypoint running in a node's namespace with its rendered dir, its output in
    a file (read while it runs); stop() ends it with SIGTERM and returns the output."""

    def __init__(self, lab: netns.Lab, node: str, entrypoint: Path, config: Path, *args: str, **env: str) -> None:
        self.log = Path(f"{config}.log")
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(["ip", "netns", "exec", lab.netns(node), str(entrypoint), "--private-run",
                                          *args, str(config)], stdout=out, stderr=subprocess.STDOUT, text=True,
                                         env={**os.environ, **env})

    def output(self) -> str:
        return self.log.read_text()

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.output()


def late_peer_start(lab: netns.Lab, entrypoint: Path, dirs: dict[str, Path], late_s: float = 6,
                    stack_up_s: int = 40) -> tuple[str, str]:
    """upf's entrypoint with a 3 s timeout and the stack's deadline (STACK_UP_TIMEOUT); gnb's started
    late_s later: both must come up (their outputs, once stopped). The guest's holders start tens of
    seconds apart, and the waiting end must not give up on a peer that is merely late."""
    import pytest
    upf = Entrypoint(lab, "upf", entrypoint, dirs["upf"], "--timeout", "3", STACK_UP_TIMEOUT=str(stack_up_s))
    gnb = None
    try:
        time.sleep(late_s)
        assert upf.running(), "the waiting end gave up before its stack's deadline: " + upf.stop()
        gnb = Entrypoint(lab, "gnb", entrypoint, dirs["gnb"], "--timeout", "30", STACK_UP_TIMEOUT=str(stack_up_s))
        deadline = time.monotonic() + stack_up_s
        while not ("ready:" in upf.output() and "ready:" in gnb.output()):
            if time.monotonic() > deadline:
                pytest.fail("not ready within the stack's deadline of the late start: " + upf.output() + gnb.output())
            assert upf.running() and gnb.running(), upf.stop() + gnb.stop()
            time.sleep(0.2)
    finally:
        out_upf = upf.stop()
        out_gnb = gnb.stop() if gnb is not None else ""
    return out_upf, out_gnb


def second_network_with_default_route(lab: netns.Lab, node: str) -> str:
    """A container's other network and its default route (Docker's N2 interface `eth0`) in the
    node's namespace; returns the namespace holding the far end (the caller deletes it)."""
    ns, other = lab.netns(node), f"{lab.netns(node)}-x"
    subprocess.run(["ip", "netns", "add", other], check=True)
    subprocess.run(["ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", other],
                   check=True)
    for n, addr in ((ns, "10.100.2.50/24"), (other, "10.100.2.1/24")):
        subprocess.run(["ip", "-n", n, "addr", "add", addr, "dev", "eth0"], check=True)
        subprocess.run(["ip", "-n", n, "link", "set", "eth0", "up"], check=True)
    subprocess.run(["ip", "-n", ns, "route", "add", "default", "via", "10.100.2.1"], check=True)
    return other


def udp_send(lab: netns.Lab, node: str, dst: str, bind: str | None = None, port: int = 2152) -> str:
    """What a UDP sender (as the gNB's GTP-U, bound to its N3 address where `bind` is given)
    sees: sendto's return value or its error's name."""
    code = ("import socket, errno\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            + (f"s.bind(({bind!r}, {port}))\n" if bind else "")
            + f"try:\n    print(s.sendto(b'gtpu', ({dst!r}, {port})))\n"
            "except OSError as e:\n    print(errno.errorcode[e.errno])\n")
    return subprocess.run(["ip", "netns", "exec", lab.netns(node), sys.executable, "-c", code],
                          capture_output=True, text=True, check=True, timeout=30).stdout.strip()


def pids_in(ns: str, comm: str, *args: str) -> list[int]:
    """PIDs of `comm` processes in namespace `ns` whose command line holds `args` (this run's own:
    a host-wide pgrep also finds another run's ping on a machine running tests at once)."""
    out = []
    for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if name == comm and all(a in argv for a in args):
            out.append(int(pid))
    return out
