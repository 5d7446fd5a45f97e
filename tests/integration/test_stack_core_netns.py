"""The rendered core configs run for real: the SBI NFs Open5GS builds cheaply on a host
(NRF, AUSF, UDM, UDR, PCF, BSF, NSSF, and the SCP for the indirect variant) start in one
network namespace on their stack addresses, with a MongoDB-compatible server (FerretDB)
provisioned by testbed/provision.py, and each turns healthy by its compose healthcheck.
AMF, SMF and UPF need SCTP/TUN/PFCP peers and are left to the e2e test on a Docker host.

Needs root, an Open5GS build with these NFs ($OPEN5GS_BUILD: a meson build dir or install
prefix, else the cached host build: testbed/open5gs_host.py) and FERRETDB_BIN (a FerretDB 1.x binary); skips naming what is missing. The SCP
variant also needs libcurl 8 (bookworm's 7.88 breaks every second request on an HTTP/2
connection, docs/images.md; e.g. LD_LIBRARY_PATH to libcurl3-gnutls from bookworm-backports).
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from testbed import open5gs_host, provision, stack
from testbed.render import layout
from tests.conftest import require_root, require_tools
from tests.integration.test_stack_healthchecks import healthy
from tests.testbed.render.helpers import render_to

pytestmark = [pytest.mark.netns, pytest.mark.open5gs]
NFS = ("nrf", "ausf", "udm", "udr", "pcf", "bsf", "nssf")
DEADLINE_S = 30


def _binary(build: Path, nf: str) -> Path | None:
    for rel in (f"src/{nf}/open5gs-{nf}d", f"bin/open5gs-{nf}d"):
        if (build / rel).is_file():
            return build / rel
    return None


@pytest.fixture(scope="module")
def build() -> Path:
    require_root()
    require_tools("ip")
    path, why = open5gs_host.find()
    if path is None:
        pytest.skip(why)
    missing = [nf for nf in NFS + ("scp",) if _binary(path, nf) is None]
    if missing:
        pytest.skip(f"the Open5GS build at {path} lacks open5gs-{{{','.join(missing)}}}d")
    if not (os.environ.get("FERRETDB_BIN") and Path(os.environ["FERRETDB_BIN"]).is_file()):
        pytest.skip("FERRETDB_BIN (a FerretDB 1.x binary) not set: UDR and PCF need a MongoDB-compatible server")
    return path


def _libcurl_major(binary: Path, libs: str) -> int | None:
    """Major version of the libcurl-gnutls the binary loads (as the dynamic linker resolves it,
    with `libs` as LD_LIBRARY_PATH)."""
    env = {**os.environ, "LD_LIBRARY_PATH": libs} if libs else None
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30, env=env).stdout
    m = re.search(r"libcurl-gnutls\.so\.4 => (\S+)", out)
    if not m:
        return None
    lib = ctypes.CDLL(m.group(1))
    lib.curl_version.restype = ctypes.c_char_p
    v = re.match(rb"libcurl/(\d+)\.", lib.curl_version())
    return int(v.group(1)) if v else None


class Core:
    def __init__(self, work: Path) -> None:
        self.ns = f"stack-core-{secrets.token_hex(3)}"
        self.work = work
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def up(self, values: dict) -> None:
        subprocess.run(["ip", "netns", "add", self.ns], check=True)
        self.exec_(["ip", "link", "set", "lo", "up"])
        self.exec_(["ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"])
        for dev in ("d0", "d1"):
            self.exec_(["ip", "link", "set", dev, "up"])
        for node, spec in values["nodes"].items():
            for net in ("sbi", "db"):
                if net in spec["networks"] and node in NFS + ("scp", "mongo", "provision"):
                    self.exec_(["ip", "addr", "add", f"{spec['networks'][net]}/{stack.prefixlen(net, values)}",
                                "dev", "d0"])

    def exec_(self, argv: list[str]) -> None:
        subprocess.run(["ip", "netns", "exec", self.ns, *argv], check=True, capture_output=True, timeout=30)

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        out = open(self.work / f"{name}.out", "wb")
        self.procs[name] = subprocess.Popen(["ip", "netns", "exec", self.ns, *argv], stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env={**os.environ, **(env or {})}, start_new_session=True)

    def down(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", self.ns], check=False)


@pytest.fixture
def core(tmp_path: Path) -> Iterator[Core]:
    c = Core(tmp_path)
    try:
        c.up(stack.load())
        yield c
    finally:
        c.down()


def _wait(what: str, check, proc: subprocess.Popen[bytes] | None, log: Path) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"{what} exited ({proc.returncode}): {log.read_text(errors='replace')[-2000:] if log.exists() else ''}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not ready within {DEADLINE_S}s: {log.read_text(errors='replace')[-2000:] if log.exists() else ''}")
        time.sleep(0.2)  # polling, bounded by the deadline


@pytest.mark.parametrize("use_scp", [False, True], ids=["direct", "scp"])
def test_core_nfs_register_with_rendered_configs(build: Path, core: Core, tmp_path: Path, use_scp: bool) -> None:
    libs = open5gs_host.library_path(build)
    if use_scp and (_libcurl_major(_binary(build, "scp"), libs) or 0) < 8:
        pytest.skip("the SCP forwards several requests per HTTP/2 connection: needs libcurl 8 "
                    "(this host's libcurl-gnutls is older; docs/images.md)")
    r = render_to("baseline", "sbi", tmp_path / "render", use_scp=use_scp)
    values = stack.load()
    env = dict(line.split("=", 1) for line in (r.dir / layout.COMPOSE_ENV).read_text().splitlines()
               if line and not line.startswith("#"))
    mongo = stack.address("mongo", "db", values)
    db = tmp_path / "db"
    db.mkdir()
    core.start("mongo", [os.environ["FERRETDB_BIN"], "--handler=sqlite", f"--sqlite-url=file:{db}/",
                         f"--listen-addr={mongo}:27017", "--debug-addr=127.0.0.1:0", f"--state-dir={tmp_path}",
                         "--telemetry=disable", "--log-level=error"])
    res = subprocess.run(["ip", "netns", "exec", core.ns, sys.executable, provision.__file__, "--uri", env["MONGO_URI"],
                          "--input", str(r.dir / layout.PROVISION_FILE), "--deadline", "30"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    count = len(json.loads((r.dir / layout.PROVISION_FILE).read_text())["subscribers"])
    assert f"{count} subscribers in open5gs.subscribers" in res.stderr

    order = ["nrf"] + (["scp"] if use_scp else []) + [nf for nf in NFS if nf != "nrf"]
    for nf in order:
        cfg = yaml.safe_load((r.dir / layout.OPEN5GS_DIR / f"{nf}.yaml").read_text())
        log = tmp_path / f"{nf}.log"
        cfg["logger"]["file"]["path"] = str(log)
        path = tmp_path / f"{nf}.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        extra = {"DB_URI": env["MONGO_URI"]} if nf in ("udr", "pcf") else {}
        if libs:
            extra["LD_LIBRARY_PATH"] = libs     # the build's libcurl 8 (patches/build-host.sh curl8)
        core.start(nf, [str(_binary(build, nf)), "-c", str(path)], extra)
        if nf == "nrf":
            # the NRF must be up before the others register (compose: depends_on nrf healthy)
            _wait("nrf", lambda log=log: healthy("nrf", log), core.procs["nrf"], log)
    for nf in order:
        log = tmp_path / f"{nf}.log"
        _wait(nf, lambda nf=nf, log=log: healthy(nf, log), core.procs[nf], log)
    if use_scp:
        # with the SCP, an NF's discovery goes through it: the PCF subscribes via the SCP
        scp_uri = f"http://{stack.address('scp', 'sbi', values)}:{values['sbi_port']}"
        pcf = yaml.safe_load((r.dir / layout.OPEN5GS_DIR / "pcf.yaml").read_text())
        assert pcf["pcf"]["sbi"]["client"]["scp"] == [{"uri": scp_uri}]
    shutil.rmtree(db, ignore_errors=True)
