"""The UPF security function between network namespaces, no Docker (docs/secfn.md):

    ue --veth-- gnb ==[VXLAN on UDP 2152 over n3, inside PROFILE's overlay]== upf [ogstun] --n6-- dn

gnb and upf are the namespace lab of testbed/netns.py (plane n3, PROFILE's overlay between
them: IPsec, WireGuard or none, started by the very entrypoints the containers use). The UE's
packets cross n3 encapsulated, as GTP-U carries them in the stack: a VXLAN tunnel on the
GTP-U port stands in for GTP-U (this kernel has no gtp module), 50 B of encapsulation where
GTP-U has 36, so the UE's MTU is 14 B below the stack's and the packets on n3 are as large as
there. The upf's end of the tunnel is called ogstun. The upf forwards between ogstun and n6,
masquerades the UE subnet (SECFN nat, ids-nat, ips-nat; iptables MASQUERADE as Open5GS
deployments write it) and runs the engine through testbed/secfn/entrypoint.sh (the engine
container's entrypoint). dn runs testbed/secfn/server.sh (the dn container's command).
Addresses from nf-configs/stack.yaml.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testbed import environment
from testbed import host_tools, netns, stack
from testbed.secfn import Secfn, SecfnError, engines

HERE = Path(__file__).resolve().parent
UE_IFACE = "ogstun"
VXLAN_ID = 42
GTPU_PORT = 2152
VXLAN_EXTRA = 50 - 36               # VXLAN over IPv4 minus GTP-U over IPv4, bytes
READY_TIMEOUT_S = 120.0


class LabError(RuntimeError):
    """The lab could not be built or an engine did not start; the message says what and why."""


def _run(argv: list[str], what: str) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    if res.returncode != 0:
        raise LabError(f"{what}: {' '.join(argv)}: {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def iptables() -> str:
    """iptables-legacy where present (its NFQUEUE target works on kernels without nft queue)."""
    for name in ("iptables-legacy", "iptables"):
        if shutil.which(name):
            return name
    raise LabError(f"iptables not found: {host_tools.install_hint('iptables')}")


def _wait_file(path: Path, proc: subprocess.Popen, what: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-4:] if log.is_file() else []
            raise LabError(f"{what} exited ({proc.returncode}) before it was ready: {' / '.join(tail)}")
        if time.monotonic() > deadline:
            raise LabError(f"{what} not ready within {timeout:.0f}s (see {log})")
        time.sleep(0.05)


class SecfnLab:
    """ue, gnb, upf, dn namespaces with the security function on upf (see module doc)."""

    def __init__(self, name: str, sf: Secfn, run_dir: Path, bin_dir: Path, profile: str = "baseline",
                 state_dir: Path | None = None, values: dict[str, Any] | None = None) -> None:
        self.name = name
        self.sf = sf
        self.run_dir = Path(run_dir).resolve()
        self.bin_dir = Path(bin_dir)
        self.values = values or stack.load()
        self.n3 = netns.Lab(name, "n3", profile, nodes=["gnb", "upf"], state_dir=state_dir, values=self.values)
        self.procs: dict[str, subprocess.Popen] = {}
        self.captures: list[netns.Capture] = []
        self.iptables = iptables()
        self.engine_dir = self.run_dir / "engine"
        self.server_dir = self.run_dir / "server"
        self.datapath: dict[str, str] = {}

    # ----------------------------------------------------------------------------- names
    def ns(self, node: str) -> str:
        return self.n3.netns(node) if node in ("gnb", "upf") else f"{self.name}-{node}"

    @property
    def ue_address(self) -> str:
        return str(self.values["ue_subnet"]["gateway"]).rsplit(".", 1)[0] + ".2"

    @property
    def server_address(self) -> str:
        return str(self.values["dn_server"]["address"])

    @property
    def upf_n6(self) -> str:
        return stack.address("upf", "n6", self.values)

    @property
    def ue_subnet(self) -> str:
        return str(self.values["ue_subnet"]["subnet"])

    def exec(self, node: str, argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", self.ns(node), *argv], capture_output=True,
                              text=True, check=False, **kw)

    def popen(self, node: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        with log.open("w", encoding="utf-8") as fh:
            return subprocess.Popen(["ip", "netns", "exec", self.ns(node), *argv], stdout=fh,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                                    start_new_session=True, env={**environment.mapping(), **(env or {})})

    # -------------------------------------------------------------------------------- up
    def up(self, n3_capture: Path | None = None, captures: dict[str, Path] | None = None,
           capture_packets: int = 20000, timeout: float = READY_TIMEOUT_S) -> None:
        """Build everything; `captures` {"ue"|"n6": path} start (whole packets, the first
        `capture_packets`) before the engine and before any UE packet; `n3_capture` on the n3
        bridge before the overlay starts."""
        try:
            self.datapath = self.n3.up(timeout, capture=n3_capture, capture_packets=capture_packets)
            if self.n3.boot_capture is not None:
                self.captures.append(self.n3.boot_capture)
                self.n3.boot_capture = None
            self._network()
            for where, path in (captures or {}).items():
                self.captures.append(self._capture(where, path, capture_packets))
            self._nat()
            self._server(timeout)
            if self.sf.engine:
                self._engine(timeout)
        except BaseException:
            self.down()
            raise

    def _network(self) -> None:
        ue_net = self.values["ue_subnet"]
        plen = self.ue_subnet.split("/")[1]
        n6len = stack.prefixlen("n6", self.values)
        mtu = int(self.values["ue_mtu"]) - VXLAN_EXTRA
        gnb_n3, upf_n3 = stack.address("gnb", "n3", self.values), stack.address("upf", "n3", self.values)
        for node in ("ue", "dn"):
            _run(["ip", "netns", "add", self.ns(node)], f"namespace {self.ns(node)}")
            _run(["ip", "-n", self.ns(node), "link", "set", "lo", "up"], "lo up")
            # IPv4 only: no router/multicast listener chatter in the engine's counters and alerts
            _run(["ip", "netns", "exec", self.ns(node), "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                  "net.ipv6.conf.default.disable_ipv6=1"], "IPv6 off")
        # UE <-> gNB: the radio side, bridged into the n3 tunnel
        _run(["ip", "link", "add", "ran0", "netns", self.ns("ue"), "type", "veth", "peer", "name", "ue0",
              "netns", self.ns("gnb")], "veth ue-gnb")
        # VXLAN on the GTP-U port between the n3 addresses (no `dev`: the overlay's routes apply)
        for node, local, remote, dev in (("gnb", gnb_n3, upf_n3, "vx-n3"), ("upf", upf_n3, gnb_n3, UE_IFACE)):
            _run(["ip", "-n", self.ns(node), "link", "add", dev, "type", "vxlan", "id", str(VXLAN_ID),
                  "local", local, "remote", remote, "dstport", str(GTPU_PORT), "nolearning"],
                 f"VXLAN {dev} on {node}")
            _run(["ip", "-n", self.ns(node), "link", "set", dev, "mtu", str(mtu)], f"{dev} mtu")
        _run(["ip", "-n", self.ns("gnb"), "link", "add", "br-ran", "type", "bridge"], "gnb bridge")
        for dev in ("ue0", "vx-n3"):
            _run(["ip", "-n", self.ns("gnb"), "link", "set", dev, "master", "br-ran", "up"], f"{dev} into br-ran")
        _run(["ip", "-n", self.ns("gnb"), "link", "set", "br-ran", "up"], "br-ran up")
        # upf <-> dn: N6
        _run(["ip", "link", "add", "n6", "netns", self.ns("upf"), "type", "veth", "peer", "name", "n6",
              "netns", self.ns("dn")], "veth upf-dn")
        for node, dev, addr in (("ue", "ran0", f"{self.ue_address}/{plen}"),
                                ("upf", UE_IFACE, f"{ue_net['gateway']}/{plen}"),
                                ("upf", "n6", f"{self.upf_n6}/{n6len}"),
                                ("dn", "n6", f"{self.server_address}/{n6len}")):
            _run(["ip", "-n", self.ns(node), "addr", "add", addr, "dev", dev], f"address {addr} on {node}")
            _run(["ip", "-n", self.ns(node), "link", "set", dev, "up"], f"{dev} up on {node}")
        _run(["ip", "-n", self.ns("ue"), "link", "set", "ran0", "mtu", str(mtu)], "UE mtu")
        _run(["ip", "-n", self.ns("ue"), "route", "add", "default", "via", str(ue_net["gateway"])], "ue route")
        _run(["ip", "netns", "exec", self.ns("upf"), "sysctl", "-qw", "net.ipv4.ip_forward=1"], "forwarding")

    def _nat(self) -> None:
        if self.sf.nat:
            # as Open5GS deployments write it: the UE subnet, leaving by anything but ogstun
            _run(["ip", "netns", "exec", self.ns("upf"), self.iptables, "-t", "nat", "-A", "POSTROUTING",
                  "-s", self.ue_subnet, "!", "-o", UE_IFACE, "-j", "MASQUERADE"], "NAT on upf")

    def _capture(self, where: str, path: Path, packets: int) -> netns.Capture:
        node, dev = {"ue": ("ue", "ran0"), "n6": ("dn", "n6")}[where]
        return netns.start_dumpcap(self.ns(node), dev, path, path.with_suffix(".dumpcap.log"), packets=packets)

    def _server(self, timeout: float) -> None:
        from testbed.secfn import rules
        ready = self.server_dir / "server-ready"
        env = {"SECFN_SERVER_READY": str(ready)}
        if not self.sf.nat:           # without NAT the server must know the way back to the UEs
            env.update(ROUTE_TO=self.ue_subnet, ROUTE_VIA=self.upf_n6)
        self.server_dir.mkdir(parents=True, exist_ok=True)
        log = self.run_dir / "server.log"
        self.procs["server"] = self.popen("dn", ["bash", str(HERE / "server.sh"), str(self.server_dir),
                                                 str(rules.DROP_PORT)], log, env)
        _wait_file(ready, self.procs["server"], "the N6 server (server.sh)", log, timeout)

    def engine_program(self) -> tuple[str, str]:
        """(executable, LD_LIBRARY_PATH) of the engine on this host."""
        try:
            return engines.plugin(str(self.sf.engine)).host_program(self.bin_dir)
        except FileNotFoundError as exc:
            raise LabError(str(exc)) from None

    def _engine(self, timeout: float) -> None:
        program, libs = self.engine_program()
        try:
            engines.render_dir(self.sf, self.engine_dir, log_at=self.engine_dir, iface=UE_IFACE,
                               ue_subnet=self.ue_subnet, home_net=str(self.values["networks"]["n6"]["subnet"]),
                               iptables=self.iptables, program=program, library_path=libs)
        except SecfnError as exc:
            raise LabError(str(exc)) from exc
        ready = self.engine_dir / engines.READY_NAME
        log = self.run_dir / "engine.log"
        self.procs["engine"] = self.popen("upf", ["bash", str(HERE / "entrypoint.sh"), str(self.engine_dir)], log,
                                          {"SECFN_READY": str(ready), "SECFN_READY_TIMEOUT": str(int(timeout))})
        _wait_file(ready, self.procs["engine"], f"{self.sf.engine} (testbed/secfn/entrypoint.sh)", log, timeout + 5)

    # ------------------------------------------------------------------------------ use
    def engine_alive(self) -> bool:
        p = self.procs.get("engine")
        return p is not None and p.poll() is None

    def kill_engine_only(self) -> int:
        """SIGKILL the engine process itself, not its entrypoint: a crashed IPS. The queue rules
        stay; the kernel does what FAIL_OPEN told it. Returns the pid killed."""
        pid_file = self.engine_dir / engines.PID_FILE
        try:
            pid = int(pid_file.read_text(encoding="utf-8").strip())
        except (OSError, ValueError) as exc:
            raise LabError(f"no engine pid in {pid_file}: {exc}") from exc
        os.kill(pid, signal.SIGKILL)
        return pid

    def stop(self, name: str, grace: float = 40.0) -> int | None:
        """SIGTERM one started process (its own handler cleans up) and wait; SIGKILL its group after grace."""
        p = self.procs.pop(name, None)
        if p is None:
            return None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        try:
            os.killpg(p.pid, signal.SIGKILL)     # anything of its session it left behind (its own group)
        except (ProcessLookupError, PermissionError):
            pass
        return p.returncode

    def stop_captures(self) -> None:
        for c in self.captures:
            c.stop()
        self.captures = []

    def down(self) -> None:
        for name in ("engine", "server"):
            try:
                self.stop(name)
            except (OSError, subprocess.SubprocessError):
                pass
        self.stop_captures()
        for node in ("ue", "dn"):
            # whatever still runs in them was started by this lab (an exec, a child a process left)
            pids = subprocess.run(["ip", "netns", "pids", self.ns(node)], capture_output=True, text=True,
                                  check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", self.ns(node)], capture_output=True, check=False)
        self.n3.down()


@contextmanager
def lab(name: str, sf: Secfn, run_dir: Path, bin_dir: Path, profile: str = "baseline",
        **up_kw: Any) -> Iterator[SecfnLab]:
    lb = SecfnLab(name, sf, run_dir, bin_dir, profile)
    lb.up(**up_kw)
    try:
        yield lb
    finally:
        lb.down()
