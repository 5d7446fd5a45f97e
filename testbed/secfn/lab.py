"""The UPF security function between network namespaces, no Docker (docs/secfn.md):

    ue (10.45.0.2) --veth-- [ogstun] upf [n6] --veth-- dn (the N6 server)

The upf namespace forwards between the UE subnet and N6, masquerades the UE subnet to N6 (SECFN
nat, ids-nat, ips-nat; with SECFN=none the server routes the UE subnet back instead), and runs
the engine: passive on ogstun (AF_PACKET), or inline behind an iptables-legacy NFQUEUE rule on
FORWARD for the UE subnet in both directions (this kernel has the xtables NFQUEUE target but not
nft's queue statement). The same addresses as the stack (nf-configs/stack.yaml).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator

from testbed import stack
from testbed.secfn import Secfn, suricata

UE_IFACE = "ogstun"
READY_LINE = {"suricata": "Engine started", "passthrough": "nfq-accept: serving queue"}
NFQ_SOURCE = Path(__file__).with_name("nfq_accept.c")


class LabError(RuntimeError):
    """The lab could not be built or an engine did not start; the message says what and why."""


def _run(argv: list[str], what: str) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    if res.returncode != 0:
        raise LabError(f"{what}: {' '.join(argv)}: {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def iptables() -> str:
    """iptables-legacy where present (the NFQUEUE target works there on kernels without nft queue)."""
    for name in ("iptables-legacy", "iptables"):
        if shutil.which(name):
            return name
    raise LabError("iptables not found: `apt-get install iptables` (make setup installs it)")


def build_nfq_accept(out_dir: Path) -> Path:
    """Compile the passthrough verdict program (gcc + libnetfilter-queue) once per source change."""
    binary = out_dir / "nfq-accept"
    if binary.is_file() and binary.stat().st_mtime >= NFQ_SOURCE.stat().st_mtime:
        return binary
    out_dir.mkdir(parents=True, exist_ok=True)
    if shutil.which("gcc") is None:
        raise LabError("gcc not found: the passthrough engine is compiled from testbed/secfn/nfq_accept.c")
    _run(["gcc", "-O2", "-Wall", "-o", str(binary), str(NFQ_SOURCE), "-lnetfilter_queue"],
         "compiling nfq-accept (needs libnetfilter-queue-dev)")
    return binary


@dataclass
class SecfnLab:
    name: str
    secfn: Secfn
    out_dir: Path                               # engine config, logs, alerts (the run dir)
    bin_dir: Path                               # where nfq-accept is compiled
    values: dict = field(default_factory=stack.load)
    engine_proc: subprocess.Popen | None = None

    def ns(self, node: str) -> str:
        return f"{self.name}-{node}"

    @property
    def ue_address(self) -> str:
        return str(self.values["ue_subnet"]["gateway"]).rsplit(".", 1)[0] + ".2"

    @property
    def server_address(self) -> str:
        return str(self.values["dn_server"]["address"])

    @property
    def upf_n6(self) -> str:
        return stack.address("upf", "n6", self.values)

    def exec(self, node: str, argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", self.ns(node), *argv], capture_output=True,
                              text=True, check=False, **kw)  # type: ignore[call-overload]

    def popen(self, node: str, argv: list[str], log: Path) -> subprocess.Popen:
        fh = log.open("w", encoding="utf-8")
        return subprocess.Popen(["ip", "netns", "exec", self.ns(node), *argv], stdout=fh,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)

    # ----------------------------------------------------------------------------------- up
    def up(self, ready_timeout: float = 60) -> None:
        try:
            self._network()
            self._functions()
            if self.secfn.engine:
                self._engine(ready_timeout)
        except BaseException:
            self.down()
            raise

    def _network(self) -> None:
        ue_net = self.values["ue_subnet"]
        plen = str(ue_net["subnet"]).split("/")[1]
        n6len = stack.prefixlen("n6", self.values)
        for node in ("ue", "upf", "dn"):
            _run(["ip", "netns", "add", self.ns(node)], f"namespace {self.ns(node)}")
            _run(["ip", "-n", self.ns(node), "link", "set", "lo", "up"], "lo up")
            # IPv4 only: no router/multicast listener chatter in the engine's counters and alerts
            _run(["ip", "netns", "exec", self.ns(node), "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                  "net.ipv6.conf.default.disable_ipv6=1"], "IPv6 off")
        _run(["ip", "link", "add", "sfx-ue0", "netns", self.ns("ue"), "type", "veth", "peer", "name",
              UE_IFACE, "netns", self.ns("upf")], "veth ue-upf")
        _run(["ip", "link", "add", "sfx-dn0", "netns", self.ns("dn"), "type", "veth", "peer", "name",
              "n6", "netns", self.ns("upf")], "veth upf-dn")
        for node, dev, addr in (("ue", "sfx-ue0", f"{self.ue_address}/{plen}"),
                                ("upf", UE_IFACE, f"{ue_net['gateway']}/{plen}"),
                                ("upf", "n6", f"{self.upf_n6}/{n6len}"),
                                ("dn", "sfx-dn0", f"{self.server_address}/{n6len}")):
            _run(["ip", "-n", self.ns(node), "addr", "add", addr, "dev", dev], f"address {addr} on {node}")
            _run(["ip", "-n", self.ns(node), "link", "set", dev, "up"], f"{dev} up on {node}")
        _run(["ip", "-n", self.ns("ue"), "route", "add", "default", "via", str(ue_net["gateway"])], "ue route")
        _run(["ip", "netns", "exec", self.ns("upf"), "sysctl", "-qw", "net.ipv4.ip_forward=1"], "forwarding")
        if not self.secfn.nat:       # without NAT the server must know the way back to the UEs
            _run(["ip", "-n", self.ns("dn"), "route", "add", str(ue_net["subnet"]), "via", self.upf_n6],
                 "dn route to the UE subnet")

    def _functions(self) -> None:
        ipt = iptables()
        subnet = str(self.values["ue_subnet"]["subnet"])
        if self.secfn.nat:
            # as Open5GS deployments write it: the UE subnet, leaving by anything but ogstun
            self._ipt(ipt, "-t", "nat", "-A", "POSTROUTING", "-s", subnet, "!", "-o", UE_IFACE, "-j", "MASQUERADE")
        if self.secfn.mode == "inline":
            queue = ["-j", "NFQUEUE", "--queue-num", str(self.secfn.queue_num)]
            if self.secfn.fail_open:
                queue.append("--queue-bypass")
            self._ipt(ipt, "-I", "FORWARD", "-s", subnet, *queue)
            self._ipt(ipt, "-I", "FORWARD", "-d", subnet, *queue)

    def _ipt(self, ipt: str, *args: str) -> None:
        _run(["ip", "netns", "exec", self.ns("upf"), ipt, *args], f"{ipt} in {self.ns('upf')}")

    def _engine(self, timeout: float) -> None:
        sf = self.secfn
        log = self.out_dir / f"{sf.engine}.out"
        if sf.engine == "suricata":
            if shutil.which("suricata") is None:
                raise LabError("suricata not found: `apt-get install -t bookworm-backports suricata` (make setup)")
            cfg = suricata.render(sf, self.out_dir / "engine", self.out_dir, UE_IFACE,
                                  str(self.values["networks"]["n6"]["subnet"]))
            argv = suricata.command(sf, cfg, UE_IFACE)
            ready_file = self.out_dir / "suricata.log"
        elif sf.engine == "passthrough":
            binary = build_nfq_accept(self.bin_dir)
            argv = [str(binary), str(sf.queue_num), str(sf.queue_maxlen), "1" if sf.fail_open else "0"]
            ready_file = log
        else:
            raise LabError(f"IDS={sf.engine} runs only in its image (docs/secfn.md): not in namespaces here")
        self.engine_proc = self.popen("upf", argv, log)
        (self.out_dir / "engine-command.txt").write_text(" ".join(argv) + "\n", encoding="utf-8")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:       # readiness before the measurement, never in it
            if self.engine_proc.poll() is not None:
                raise LabError(f"{sf.engine} exited ({self.engine_proc.returncode}) before it was ready: "
                               f"{log.read_text(errors='replace')[-600:]}")
            if ready_file.is_file() and READY_LINE[sf.engine] in ready_file.read_text(errors="replace"):
                if sf.engine == "suricata" and sf.mode == "inline":
                    self._queue_len()
                return
            time.sleep(0.1)
        raise LabError(f"{sf.engine} not ready within {timeout:.0f}s (no '{READY_LINE[sf.engine]}' in {ready_file})")

    def _queue_len(self) -> None:
        """Suricata has no queue-length option: the kernel's default (1024) stands, say so."""
        if self.secfn.queue_maxlen != 1024:
            raise LabError("QUEUE_MAXLEN other than 1024 needs IDS=passthrough: Suricata 7 sets no queue length")

    # ----------------------------------------------------------------------------- counters
    def queue_stats(self) -> dict[str, int] | None:
        """/proc/net/netfilter/nfnetlink_queue of the upf namespace: queued now, dropped by the
        kernel (queue full), dropped by the user (netlink buffer), last packet id."""
        out = self.exec("upf", ["cat", "/proc/net/netfilter/nfnetlink_queue"]).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 9 and int(f[0]) == self.secfn.queue_num:
                return {"queue_total": int(f[2]), "queue_dropped": int(f[5]),
                        "user_dropped": int(f[6]), "id_sequence": int(f[7])}
        return None

    def forward_counters(self) -> str:
        return self.exec("upf", [iptables(), "-vnxL", "FORWARD"]).stdout

    # --------------------------------------------------------------------------------- down
    def stop_engine(self) -> str:
        """SIGTERM the engine (it writes its final counters) and return its output."""
        p, self.engine_proc = self.engine_proc, None
        if p is None:
            return ""
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        log = self.out_dir / f"{self.secfn.engine}.out"
        return log.read_text(errors="replace") if log.is_file() else ""

    def down(self) -> None:
        self.stop_engine()
        for node in ("ue", "upf", "dn"):
            subprocess.run(["ip", "netns", "pids", self.ns(node)], capture_output=True, check=False)
            subprocess.run(["ip", "netns", "del", self.ns(node)], capture_output=True, check=False)


@contextmanager
def lab(name: str, secfn: Secfn, out_dir: Path, bin_dir: Path) -> Iterator[SecfnLab]:
    lb = SecfnLab(name, secfn, out_dir, bin_dir)
    lb.up()
    try:
        yield lb
    finally:
        lb.down()
