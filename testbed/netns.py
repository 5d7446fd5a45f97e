"""Network-namespace lab: the planes' endpoints as namespaces on bridges, with an overlay.

    lab = Lab("ipsec-3f2a", "n3", "aes128gcm", nodes=["gnb", "upf"])
    lab.up()                                   # namespaces, bridge, addresses, overlay ready
    lab.exec("gnb", ["ping", "-c1", lab.address("upf")])
    with lab.capture(path):                    # dumpcap on the bridge: exactly the wire
        ...
    lab.down()                                 # idempotent; kills what up() started

Layout: one namespace `<lab>-hub` holding one bridge `br-<network>` per network of the lab's
planes (a PLANE expression: `n2`, or several such as `n2,n4,n3`); one namespace `<lab>-<node>`
per endpoint with a veth `<network>` into each bridge of a network the node is on and the
node's address there from nf-configs/stack.yaml. `capture(path, network=...)` listens on one
bridge: one plane. The root namespace's networking is never touched. The overlay
entrypoint (`<protocol>/entrypoint.sh <rendered dir>`, the same as in the containers) runs in
each node namespace with a private /run (its own charon pid file and sockets); logs go to
`$STATE/lab/<lab>/<node>.log`; `lab.json` there records what was started, so `down` works
from another process (the CLI). CLI: `python -m testbed lab up|down|exec|list`.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from testbed import channels, environment, keys, planes, profiles, ran, registry, stack

log = logging.getLogger(__name__)

READY_FILE = "run/testbed/overlay-ready"      # relative to /proc/<pid>/root
DEFAULT_READY_TIMEOUT_S = 90.0
CAPTURE_SETTLE_S = 0.3
PRIVATE_RUN_WRAPPER = 'mount -t tmpfs -o mode=0755 tmpfs /run && exec "$0" "$@"'


class LabError(RuntimeError):
    """A lab step failed; the message names the namespace/node and what to do next."""


def _run(argv: Sequence[str], what: str, check: bool = True,
         timeout: float | None = 30) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=timeout)
    if check and res.returncode != 0:
        raise LabError(f"{what} failed: `{' '.join(argv)}`: {res.stderr.strip() or res.stdout.strip()}")
    return res


def state_root(state_dir: Path | None = None) -> Path:
    return Path(state_dir) if state_dir is not None else keys.default_state_dir()


def lab_dir(name: str, state_dir: Path | None = None) -> Path:
    return state_root(state_dir) / "lab" / name


def existing_namespaces() -> list[str]:
    res = _run(["ip", "netns", "list"], "listing namespaces", check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


@dataclasses.dataclass
class Capture:
    """A running dumpcap on the lab's bridge; stop() (or leaving the `with`) ends it."""
    path: Path
    proc: subprocess.Popen[bytes]

    def stop(self, timeout: float = 10, linger: float = 0.6) -> Path:
        """End the capture. dumpcap (libpcap TPACKET_V3) hands frames over in blocks retired
        by a 250 ms timeout and drops an unretired block on SIGINT (measured: the last pings of
        a run were missing), so frames get `linger` seconds to arrive first."""
        if self.proc.poll() is None:
            time.sleep(linger)
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.path

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Lab:
    """Namespaces for a plane's endpoints joined by the profile's overlay (see module doc)."""

    def __init__(self, name: str, plane: str, profile: str = "baseline",
                 nodes: Iterable[str] | None = None, state_dir: Path | None = None,
                 keys_dir: Path | None = None, values: dict[str, Any] | None = None,
                 entrypoint_args: Sequence[str] = (),
                 profile_overrides: dict[str, str] | None = None) -> None:
        if not name or len(name) > 20 or not all(c.isalnum() or c == "-" for c in name):
            raise LabError(f"lab name {name!r}: use 1-20 letters, digits or '-'")
        self.name = name
        self.profile = profiles.get(profile, plane)
        self.planes = profiles.planes_for(self.profile, plane)
        # the nodes of the RAN variant whose interfaces these are (the split's f1c, f1u, e1; the
        # default RAN's gnb otherwise), as the stack renderer sees them (testbed/ran)
        variant = next((r.name for r in registry.rans() if set(r.planes) & set(self.planes)), ran.default())
        self.values = ran.restrict(values or stack.load(), variant)
        self.plane = planes.expr(self.planes)
        self.networks = list(dict.fromkeys(planes.network(p) for p in self.planes))
        self.network = self.networks[0]
        overlay = registry.overlay(self.profile.protocol)
        all_nodes = (overlay.endpoints(self.plane, self.values) if overlay.protects
                     else channels.endpoints(self.planes, self.values))
        self.nodes = list(nodes) if nodes is not None else all_nodes
        bad = [n for n in self.nodes if not self.node_networks(n)]
        if bad:
            raise LabError(f"{', '.join(bad)}: no address on network {' or '.join(map(repr, self.networks))} in stack.yaml; "
                           f"endpoints of {self.plane}: {', '.join(all_nodes)}")
        self.state_dir = state_root(state_dir)
        self.dir = lab_dir(name, self.state_dir)
        self.keys_dir = keys_dir
        self.entrypoint_args = list(entrypoint_args)
        # node -> another profile of the same protocol (tests: a peer that renders something else)
        self.profile_overrides = {n: profiles.get(p, self.plane) for n, p in (profile_overrides or {}).items()}
        self.pids: dict[str, int] = {}
        self.boot_capture: Capture | None = None
        self._entry_env: dict[str, str] | None = None

    # --- names ----------------------------------------------------------------------------
    @property
    def hub(self) -> str:
        return f"{self.name}-hub"

    def netns(self, node: str) -> str:
        return f"{self.name}-{node}"

    @property
    def bridge(self) -> str:
        return self.bridge_of(self.network)

    @staticmethod
    def bridge_of(network: str) -> str:
        return f"br-{network}"[:15]

    def node_networks(self, node: str) -> list[str]:
        """The lab's networks the node has an address on (stack.yaml), in plane order."""
        have = self.values["nodes"].get(node, {}).get("networks", {}) or {}
        return [n for n in self.networks if n in have]

    def address(self, node: str, network: str | None = None) -> str:
        """The node's address on `network` (default: the first lab network it is on)."""
        return stack.address(node, network or self.node_networks(node)[0], self.values)

    def log_path(self, node: str) -> Path:
        return self.dir / f"{node}.log"

    # --- state file (so `down` works from another process) ------------------------------------
    def _save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        data = {"name": self.name, "plane": self.plane, "profile": self.profile.id,
                "nodes": self.nodes, "pids": self.pids,
                "namespaces": [self.hub] + [self.netns(n) for n in self.nodes]}
        (self.dir / "lab.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, name: str, state_dir: Path | None = None) -> Lab:
        f = lab_dir(name, state_dir) / "lab.json"
        if not f.is_file():
            raise LabError(f"no lab {name!r} under {f.parent} (see `python -m testbed lab list`)")
        data = json.loads(f.read_text(encoding="utf-8"))
        lab = cls(name, data["plane"], data["profile"], data["nodes"], state_dir)
        lab.pids = {k: int(v) for k, v in data["pids"].items()}
        return lab

    # --- up ----------------------------------------------------------------------------------
    def up(self, timeout: float = DEFAULT_READY_TIMEOUT_S, capture: Path | None = None,
           capture_packets: int | None = None) -> dict[str, str]:
        """Build the lab and start the overlay; returns {node: datapath line or ''}.
        `capture`: start dumpcap on the bridge before any overlay starts (self.boot_capture;
        stop it, or down() does), so the overlay's own handshakes are on it; it keeps the
        first `capture_packets` packets when given (long measurements), else all.
        On failure everything started is torn down and LabError says why."""
        taken = set(existing_namespaces()) & {self.hub, *map(self.netns, self.nodes)}
        if taken:
            raise LabError(f"namespaces {', '.join(sorted(taken))} exist already: "
                           f"`python -m testbed lab down --name {self.name}` first")
        self.dir.mkdir(parents=True, exist_ok=True)
        self._save()
        try:
            self._build_network()
            if capture is not None:
                self.boot_capture = self.capture(capture, packets=capture_packets)
            dirs = self._render()
            for node in self.nodes:
                if node in dirs:
                    self._start(node, dirs[node])
            self._save()
            return self._wait_ready(timeout)
        except BaseException:
            self.down()
            raise

    def _build_network(self) -> None:
        _run(["ip", "netns", "add", self.hub], f"creating namespace {self.hub}")
        self._quiet(self.hub)
        for net in self.networks:
            br = self.bridge_of(net)
            _run(["ip", "-n", self.hub, "link", "add", br, "type", "bridge"], f"bridge {br} in {self.hub}")
            _run(["ip", "-n", self.hub, "link", "set", br, "up"], f"bridge {br} up in {self.hub}")
        for i, node in enumerate(self.nodes):
            ns = self.netns(node)
            _run(["ip", "netns", "add", ns], f"creating namespace {ns}")
            self._quiet(ns)
            for j, net in enumerate(self.node_networks(node)):
                port, br = f"v{i}{j}-{node}"[:15], self.bridge_of(net)
                _run(["ip", "link", "add", net, "netns", ns, "type", "veth",
                      "peer", "name", port, "netns", self.hub], f"veth {ns}:{net} <-> {self.hub}:{port}")
                _run(["ip", "-n", self.hub, "link", "set", port, "master", br, "up"], f"{port} into {br}")
                plen = stack.prefixlen(net, self.values)
                _run(["ip", "-n", ns, "addr", "add", f"{self.address(node, net)}/{plen}", "dev", net],
                     f"address of {node} on {net}")
                _run(["ip", "-n", ns, "link", "set", net, "up"], f"{node}: {net} up")
            _run(["ip", "-n", ns, "link", "set", "lo", "up"], f"{node}: lo up")

    @staticmethod
    def _quiet(ns: str) -> None:
        """No IPv6 (router solicitations, MLD) so captures show only the plane's traffic."""
        _run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
              "net.ipv6.conf.default.disable_ipv6=1"], f"disabling IPv6 in {ns}", check=False)

    def _render(self) -> dict[str, Path]:
        overlay = registry.overlay(self.profile.protocol)
        if not overlay.protects:
            return {}
        keys_dir = self.keys_dir or keys.ensure(self.state_dir, self.values)
        dirs = dict(overlay.render(self.profile, self.plane, self.values, keys_dir, self.dir / "render", nodes=self.nodes))
        for node, prof in self.profile_overrides.items():
            if prof.protocol != self.profile.protocol:
                raise LabError(f"override for {node}: {prof.id} is {prof.protocol}, the lab runs {self.profile.protocol}")
            dirs[node] = overlay.render(prof, self.plane, self.values, keys_dir, self.dir / f"render-{node}",
                                        nodes=self.nodes)[node]
        return dirs

    def _entrypoint_environment(self) -> dict[str, str]:
        """This process's environment with what the overlay plug-in selects for the lab's profiles
        on this host (e.g. IPSEC_ROOT: the Debian root of `make pq-roots` for a strongSwan newer
        than the host's; a variable already set wins), asked once."""
        if self._entry_env is None:
            overlay = registry.overlay(self.profile.protocol)
            chosen = overlay.lab_environment([self.profile, *self.profile_overrides.values()])
            for name, value in chosen.items():
                log.info("lab %s: %s=%s for profile %s (the overlay plug-in's choice on this host)",
                         self.name, name, value, self.profile.id)
            self._entry_env = {**environment.mapping(), **chosen}
        return self._entry_env

    def _start(self, node: str, config_dir: Path) -> None:
        overlay = registry.overlay(self.profile.protocol)
        entry = overlay.folder / overlay.entrypoint if overlay.entrypoint else None
        if entry is None or not entry.is_file():
            raise LabError(f"the {self.profile.protocol} overlay has no entrypoint ({overlay.folder})")
        argv = ["ip", "netns", "exec", self.netns(node), "unshare", "--mount", "--propagation", "private",
                "sh", "-c", PRIVATE_RUN_WRAPPER, str(entry), *self.entrypoint_args, str(config_dir)]
        logf = open(self.log_path(node), "ab")
        try:
            proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=self._entrypoint_environment())
        finally:
            logf.close()
        self.pids[node] = proc.pid
        log.info("lab %s: started %s overlay of %s (pid %d, log %s)",
                 self.name, self.profile.protocol, node, proc.pid, self.log_path(node))

    def _wait_ready(self, timeout: float) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        ready: dict[str, str] = {n: "" for n in self.nodes if n not in self.pids}
        while len(ready) < len(self.nodes):
            for node, pid in self.pids.items():
                if node in ready:
                    continue
                f = Path(f"/proc/{pid}/root") / READY_FILE
                try:
                    ready[node] = f.read_text(encoding="utf-8").strip()
                    continue
                except OSError:
                    pass
                if not _alive(pid):
                    raise LabError(f"lab {self.name}: the overlay entrypoint of {node} exited before it "
                                   f"was ready: {self.tail(node)}")
            if len(ready) < len(self.nodes):
                if time.monotonic() > deadline:
                    late = [n for n in self.nodes if n not in ready]
                    raise LabError(f"lab {self.name}: {', '.join(late)} not ready within {timeout:.0f}s: "
                                   + " | ".join(f"{n}: {self.tail(n)}" for n in late))
                time.sleep(0.1)
        log.info("lab %s up: %s", self.name, ", ".join(f"{n} {d}".strip() for n, d in ready.items()))
        return ready

    def tail(self, node: str, lines: int = 4) -> str:
        """The entrypoint's ERROR line if there is one, else the log's last lines."""
        try:
            text = self.log_path(node).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        errors = [ln for ln in text.splitlines() if "ERROR:" in ln]
        if errors:
            return errors[-1]
        return " / ".join(text.strip().splitlines()[-lines:])

    def ready(self, node: str) -> str | None:
        """The node's ready file (first line: the datapath line) if its overlay is ready,
        "" for a node without overlay, else None."""
        pid = self.pids.get(node)
        if pid is None:
            return ""
        try:
            return (Path(f"/proc/{pid}/root") / READY_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            return None

    # --- use ---------------------------------------------------------------------------------
    def exec(self, node: str, argv: Sequence[str], check: bool = False, timeout: float | None = 60,
             ) -> subprocess.CompletedProcess[str]:
        """Run argv in the node's namespace (and the overlay's mount namespace, so swanctl/wg
        reach the node's daemon)."""
        if node not in self.nodes:
            raise LabError(f"{node} is not in lab {self.name} ({', '.join(self.nodes)})")
        pid = self.pids.get(node)
        if pid is not None and _alive(pid):
            prefix = ["nsenter", "-t", str(pid), "-m", "-n"]
        else:
            prefix = ["ip", "netns", "exec", self.netns(node)]
        res = subprocess.run(prefix + list(argv), capture_output=True, text=True, check=False, timeout=timeout)
        if check and res.returncode != 0:
            raise LabError(f"{node}: `{' '.join(argv)}` exited {res.returncode}: {res.stderr.strip() or res.stdout.strip()}")
        return res

    def capture(self, path: Path, capture_filter: str | None = None, timeout: float = 10,
                packets: int | None = None, network: str | None = None) -> Capture:
        """Start dumpcap on a network's bridge (default: the first plane's; hub side: exactly the
        wire of that plane); returns once it captures. `packets`: stop after that many (the first
        ones, whole)."""
        if network is not None and network not in self.networks:
            raise LabError(f"lab {self.name} has no network {network!r} ({', '.join(self.networks)})")
        return start_dumpcap(self.hub, self.bridge_of(network or self.network), Path(path),
                             self.dir / f"dumpcap-{Path(path).stem}.log",
                             capture_filter=capture_filter, packets=packets, timeout=timeout)

    def capture_namespace(self, node: str, path: Path, timeout: float = 10) -> Capture:
        """dumpcap on every interface by which a packet can leave the node's namespace
        (exit_interfaces): what a dead overlay leaks shows there, whichever way it is routed."""
        ns = self.netns(node)
        return start_dumpcap(ns, exit_interfaces(ns), Path(path), self.dir / f"dumpcap-{Path(path).stem}.log",
                             timeout=timeout)

    # --- down --------------------------------------------------------------------------------
    def down(self) -> None:
        """Stop the overlay processes and delete the namespaces. Idempotent."""
        if self.boot_capture is not None:
            self.boot_capture.stop(linger=0)
            self.boot_capture = None
        for node, pid in list(self.pids.items()):
            _terminate_group(pid)
        ours = {self.hub, *map(self.netns, self.nodes)}
        for ns in sorted(ours & set(existing_namespaces())):
            # anything still running in our namespaces was started by this lab (exec, capture)
            res = _run(["ip", "netns", "pids", ns], f"pids in {ns}", check=False)
            for p in res.stdout.split():
                _terminate_group(int(p), own_group=False)
            _run(["ip", "netns", "delete", ns], f"deleting namespace {ns}", check=False)
        self.pids = {}
        if self.dir.is_dir():
            (self.dir / "lab.json").unlink(missing_ok=True)
        log.info("lab %s down", self.name)


# Link kinds an overlay makes inside a namespace: their packets are the plaintext side (or the
# overlay's own device), never a way out of the namespace.
OVERLAY_LINK_KINDS = frozenset({"macsec", "wireguard", "tun", "xfrm", "vti", "ipip", "gre", "sit"})


def exit_interfaces(ns: str) -> list[str]:
    """The interfaces of namespace `ns` by which a packet can leave it (veth, macvlan, a physical
    device): every one but loopback and the overlays' own devices (OVERLAY_LINK_KINDS)."""
    res = _run(["ip", "-n", ns, "-d", "-j", "link", "show"], f"listing the interfaces of {ns}")
    out = []
    for link in json.loads(res.stdout or "[]"):
        kind = (link.get("linkinfo") or {}).get("info_kind")
        if link.get("link_type") != "loopback" and kind not in OVERLAY_LINK_KINDS:
            out.append(str(link["ifname"]))
    if not out:
        raise LabError(f"namespace {ns} has no interface to the outside")
    return out


def start_dumpcap(ns: str, iface: str | Sequence[str], path: Path, errlog: Path, *,
                  capture_filter: str | None = None, packets: int | None = None, timeout: float = 10) -> Capture:
    """dumpcap on `iface` (one, or several into one pcapng) in namespace `ns` into `path` (whole
    packets; the first `packets` when given); returns once it captures, LabError (with dumpcap's
    words) if it does not start."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ifaces = [iface] if isinstance(iface, str) else list(iface)
    argv = ["ip", "netns", "exec", ns, "dumpcap", "-q", *(a for i in ifaces for a in ("-i", i)), "-w", str(path)]
    if capture_filter:
        argv += ["-f", capture_filter]
    if packets:
        argv += ["-c", str(int(packets))]
    with open(errlog, "wb") as fh:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=fh, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.stat().st_size > 0):
        if proc.poll() is not None:
            raise LabError(f"dumpcap on {ns}:{','.join(ifaces)} exited: {errlog.read_text().strip()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise LabError(f"dumpcap on {ns}:{','.join(ifaces)} did not start within {timeout}s")
        time.sleep(0.05)
    # dumpcap writes the file header a moment before the first frames are delivered (a
    # frame sent at once can be missed, measured here); there is nothing to poll for that
    time.sleep(CAPTURE_SETTLE_S)
    return Capture(path, proc)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _terminate_group(pid: int, own_group: bool = True, grace: float = 5.0) -> None:
    """SIGTERM the process (group, if it leads one we started), SIGKILL after `grace` s."""
    def send(sig: int) -> None:
        try:
            if own_group:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    if not _alive(pid):
        _reap(pid)
        return
    send(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.05)
    if _alive(pid):
        send(signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def list_labs(state_dir: Path | None = None) -> list[dict[str, Any]]:
    root = state_root(state_dir) / "lab"
    out = []
    for f in sorted(root.glob("*/lab.json")) if root.is_dir() else []:
        data = json.loads(f.read_text(encoding="utf-8"))
        present = set(existing_namespaces())
        data["alive"] = {n: _alive(int(p)) for n, p in data["pids"].items()}
        data["namespaces_present"] = [ns for ns in data["namespaces"] if ns in present]
        out.append(data)
    return out


def require_tools() -> list[str]:
    """Programs the lab needs that are missing."""
    return [t for t in ("ip", "unshare", "nsenter", "dumpcap") if shutil.which(t) is None]
