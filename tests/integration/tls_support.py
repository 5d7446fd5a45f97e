"""Helpers of the TLS tests: the testbed's keys, and a patched Open5GS build run in a namespace lab.

Keys: `shared_keys()` is the key set of $STATE (`make keys`; idempotent, created if missing),
made once per test process.

The build is found at $OPEN5GS_BUILD, else ../ext/open5gs-tls-build beside the repository, else
the one `make open5gs-host-build` cached in G5TB_CACHE (testbed/open5gs_host.py; docs/patches.md); $OPEN5GS_LIBRARY_PATH, if set, else the
build's own (build-info library_path) becomes the NFs' LD_LIBRARY_PATH (to run them with the
images' libcurl 8.14 instead of the host's 7.88). Tests that need it skip with a reason naming what is
missing. The lab is testbed.netns's (baseline profile: namespaces, bridge, stack.yaml
addresses, no overlay); `ip netns exec` bind-mounts /etc/netns/<namespace>/hosts over
/etc/hosts, which gives the NFs their FQDNs as Docker's DNS aliases do.
"""
from __future__ import annotations

import functools
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import keys, netns, open5gs_host, stack
from testbed.render import open5gs
from testbed.render.merge import deep_merge

BINARIES = {"nrf": "src/nrf/open5gs-nrfd", "ausf": "src/ausf/open5gs-ausfd"}
PATCH_MARKERS = {"tls": b"OGS_SBI_TLS_MIN_VERSION", "wait": b"OGS_SBI_WAIT_PEER_MS", "keylog": b"OGS_SBI_TLS_KEYLOG",
                 "groups": b"OGS_SBI_TLS_CLIENT_GROUPS"}
NETNS_ETC = Path("/etc/netns")
# The profiles whose key-exchange groups only a client on libcurl built with OpenSSL applies (patch
# 0004; the host's libcurl-gnutls offers P-256 alone): the Debian 13 build runs them
# (test_tls_pq_open5gs.py), the host build the others (test_tls_open5gs.py).
GROUP_PROFILES = ("tls13-x25519mlkem768", "tls13-x25519mlkem768-hrr", "tls13-p256mlkem768", "tls13-mlkem768",
                  "tls13-mldsa-x25519mlkem768", "tls13-x25519")


@functools.lru_cache(maxsize=1)
def _keys_root() -> Path:
    return keys.ensure(keys.default_state_dir())


def shared_keys() -> Path:
    """keys/ of $STATE (CA, per-node ECDSA and RSA certificates), or pytest.skip."""
    for tool in ("openssl", "wg"):
        if shutil.which(tool) is None:
            pytest.skip(f"missing {tool} (testbed.keys needs it): run `make setup`")
    return _keys_root()


def open5gs_build(*needs: str, variable: str = "OPEN5GS_BUILD", default: Path | None = None) -> Path:
    """The build dir with the NF binaries and the patches named in `needs`, or pytest.skip.
    Without `default`: $variable, else beside the repository, else the cached host build
    (testbed/open5gs_host.py find)."""
    if default is None:
        found, why = open5gs_host.find(variable)
        if found is None:
            pytest.skip(why)
        build = found
    else:
        build = Path(os.environ.get(variable) or default)
    missing = [b for b in BINARIES.values() if not (build / b).is_file()]
    if missing:
        how = open5gs_host.how_to_build() if default is None else "docs/patches.md"
        pytest.skip(f"no Open5GS build with {', '.join(missing)} at {build} (set {variable}; {how})")
    lib = build / "lib" / "sbi" / "libogssbi.so"
    data = lib.read_bytes() if lib.is_file() else b""
    unpatched = [n for n in needs if PATCH_MARKERS[n] not in data]
    if unpatched:
        pytest.skip(f"the Open5GS build at {build} lacks the patches/open5gs patch(es) "
                    f"{', '.join(unpatched)} ({lib} has no {PATCH_MARKERS[unpatched[0]].decode()})")
    return build


def require_netns() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces): run `sudo make test`")
    missing = [t for t in ("ip", "dumpcap", "tshark") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing {', '.join(missing)}: run `make setup`")


class NfLab:
    """A testbed.netns lab with /etc/netns hosts files and NF processes started in it."""

    def __init__(self, nodes: list[str], work: Path, values: dict[str, Any] | None = None,
                 profile: str = "baseline", keys_dir: Path | None = None) -> None:
        self.values = values or stack.load()
        self.work = work
        self.lab = netns.Lab(f"tls-{secrets.token_hex(3)}", "sbi", profile, nodes=nodes,
                             state_dir=work / "state", keys_dir=keys_dir, values=self.values)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.launcher: list[str] = []     # e.g. another Debian root's dynamic loader and libraries

    def up(self, timeout: float = 60) -> None:
        """Namespaces, bridge, addresses; with an overlay profile, the overlay up and ready."""
        self.lab.up(timeout=timeout)
        hosts = "127.0.0.1 localhost\n" + "".join(
            f"{stack.address(n, 'sbi', self.values)} {stack.fqdn(n, self.values)} {n}\n"
            for n in self.lab.nodes)
        for node in self.lab.nodes:
            d = NETNS_ETC / self.lab.netns(node)
            d.mkdir(parents=True, exist_ok=True)
            (d / "hosts").write_text(hosts, encoding="utf-8")

    def down(self) -> None:
        for node in list(self.procs):
            self.stop(node)
        self.lab.down()
        for node in self.lab.nodes:
            shutil.rmtree(NETNS_ETC / self.lab.netns(node), ignore_errors=True)

    def config(self, node: str, extra: dict[str, Any] | None = None) -> Path:
        """Write the node's rendered Open5GS YAML (+ extra merged in), logging to work/."""
        cfg = open5gs.nf_config(node, self.values, use_scp=False)
        cfg = deep_merge(cfg, extra or {})
        cfg["logger"] = {"file": {"path": str(self.log(node))}, "level": "info"}
        cfg["global"] = {"max": {"ue": 16}}
        path = self.work / f"{node}.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        return path

    def log(self, node: str) -> Path:
        return self.work / f"{node}.log"

    def start(self, node: str, build: Path, config: Path, env: dict[str, str]) -> None:
        self.log(node).unlink(missing_ok=True)
        argv = ["ip", "netns", "exec", self.lab.netns(node), *self.launcher, str(build / BINARIES[node]),
                "-c", str(config)]
        full_env = {**os.environ, **env}
        libs = open5gs_host.library_path(build)
        if libs:
            # e.g. the libcurl 8.14 of the images (bookworm-backports), unpacked beside the build
            full_env["LD_LIBRARY_PATH"] = libs
        with open(self.work / f"{node}.out", "wb") as out:
            self.procs[node] = subprocess.Popen(argv, env=full_env, stdout=out,
                                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                start_new_session=True)

    def stop(self, node: str) -> None:
        proc = self.procs.pop(node, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def register(self, build: Path, configs: dict[str, Path], envs: dict[str, dict[str, str]], pcap: Path,
                 while_registered: Callable[[], object] = lambda: None, timeout: float = 15) -> None:
        """The NRF starts, the AUSF registers with it (NFRegister, subscriptions), `while_registered`
        runs (checks of their logs), then both stop (NFDeregister, the connection closes), all on a
        capture of the SBI port written to `pcap`; `timeout` bounds each start-up and the
        registration. The NFs are stopped and the capture closed whatever happens."""
        port = int(self.values["sbi_port"])
        cap = self.lab.capture(pcap, f"tcp port {port}")
        try:
            self.start("nrf", build, configs["nrf"], envs["nrf"])
            self.wait_log("nrf", r"NRF initialize\.\.\.done", timeout)
            self.start("ausf", build, configs["ausf"], envs["ausf"])
            self.wait_log("ausf", r"NF registered", timeout)
            while_registered()
            self.stop("ausf")
            self.stop("nrf")
            wait_pcap(pcap, f"tcp.port=={port} && (tcp.flags.fin==1 || tcp.flags.reset==1)", 1, 10)
        finally:
            self.stop("ausf")
            self.stop("nrf")
            cap.stop()

    def wait_log(self, node: str, pattern: str, timeout: float) -> re.Match[str]:
        """The first match of pattern in the node's log, or AssertionError at the deadline."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.log(node).read_text(errors="replace") if self.log(node).exists() else ""
            m = rx.search(text)
            if m:
                return m
            proc = self.procs.get(node)
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"{node} exited ({proc.returncode}) before /{pattern}/: {text[-1500:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{node}: no /{pattern}/ within {timeout}s; log tail: {text[-1500:]}")
            time.sleep(0.05)


def pcap_count(pcap: Path, display_filter: str) -> int:
    """Frames matching the filter in a capture that may still be written (partial ok)."""
    res = subprocess.run(["tshark", "-n", "-r", str(pcap), "-Y", display_filter, "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True, check=False, timeout=60)
    return sum(1 for line in res.stdout.splitlines() if line.strip())


def wait_pcap(pcap: Path, display_filter: str, count: int, timeout: float) -> int:
    """Wait until the capture file holds `count` frames matching the filter (dumpcap writes
    in blocks, so the last packets reach the file a moment after they were sent)."""
    deadline = time.monotonic() + timeout
    while True:
        n = pcap_count(pcap, display_filter)
        if n >= count:
            return n
        if time.monotonic() > deadline:
            raise AssertionError(f"{pcap}: {n} < {count} frames matching {display_filter!r} "
                                 f"after {timeout}s")
        time.sleep(0.1)


def nf_lab(nodes: list[str], work: Path, profile: str = "baseline",
           keys_dir: Path | None = None) -> Iterator[NfLab]:
    """Generator body of the fixtures: an NfLab that is always torn down."""
    lab = NfLab(nodes, work, profile=profile, keys_dir=keys_dir)
    try:
        lab.up()
        yield lab
    finally:
        lab.down()
