"""The rendered OpenAirInterface configs run in the real OAI programs (an install tree as
images/oai/Dockerfile's build stage makes it, $OAI_INSTALL; docs/ran.md), in network namespaces
on their stack addresses:

- the DU takes its split roles from the rendered du.conf: F1-C from its f1c address to the
  CU-CP's, its F1-U GTP-U socket on its own f1u address (the kernel here has no SCTP, so the F1
  association itself is left to the full-kernel host);
- the monolithic gNB's rendered cell and the nrUE's derived command line meet over the RF
  simulator: the UE decodes the PBCH and synchronises (both in --phy-test: no core needed).

Needs root and OAI_INSTALL; skips naming what is missing.
"""
from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from testbed import stack
from testbed.render import layout
from testbed.ran.oai import config as oai
from tests.conftest import require_root
from tests.testbed.render.helpers import render_to

pytestmark = [pytest.mark.netns]


def _install() -> Path:
    require_root()
    path = os.environ.get("OAI_INSTALL")
    if not path:
        pytest.skip("OAI_INSTALL not set (an OpenAirInterface install tree: bin/nr-softmodem, lib/*.so)")
    tree = Path(path)
    missing = [p for p in ("bin/nr-softmodem", "bin/nr-uesoftmodem", "lib/librfsimulator.so") if not (tree / p).exists()]
    if missing:
        pytest.skip(f"OAI_INSTALL={tree} lacks {', '.join(missing)}")
    return tree


class Netns:
    def __init__(self, addresses: list[str]) -> None:
        self.name = f"oai-{secrets.token_hex(3)}"
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        subprocess.run(["ip", "-n", self.name, "link", "set", "lo", "up"], check=True)
        for a in addresses:
            subprocess.run(["ip", "-n", self.name, "addr", "add", f"{a}/32", "dev", "lo"], check=True)

    def start(self, tree: Path, argv: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
        env = {**os.environ, "LD_LIBRARY_PATH": str(tree / "lib")}
        return subprocess.Popen(["ip", "netns", "exec", self.name, str(tree / "bin" / argv[0]), *argv[1:]],
                                stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env, cwd=cwd)

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], check=False)


def _command(variant: str, node: str, render_dir: Path) -> list[str]:
    """The node's command exactly as the rendered Compose file runs it (without the log wrapper),
    its config path the rendered file's."""
    import yaml
    svc = yaml.safe_load((render_dir / layout.RAN_COMPOSE_FILE).read_text())["services"][node]
    conf = f"/etc/oai/{node}.conf"
    return [str(render_dir / layout.OAI_DIR / f"{node}.conf") if a == conf else str(a) for a in svc["command"][1:]]


def _wait_for(log: Path, text: str, deadline_s: float, proc: subprocess.Popen[bytes]) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if text in log.read_text(errors="replace"):
            return True
        if proc.poll() is not None:
            return text in log.read_text(errors="replace")
        time.sleep(0.5)       # polling a test's log file, not a measurement
    return False


def _stop(*procs: subprocess.Popen[bytes]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()


def test_du_takes_its_f1c_and_f1u_addresses_from_the_rendered_config(tmp_path: Path) -> None:
    tree = _install()
    r = render_to("baseline", "f1c", tmp_path / "r", ran="split")
    v = stack.load()
    ns = Netns([stack.address("du", n) for n in ("f1c", "f1u", "ran")])
    log = tmp_path / "du.log"
    try:
        du = ns.start(tree, _command("split", "du", r.dir), log, tmp_path)
        ok = _wait_for(log, "waiting for F1 Setup Response", 60, du)
    finally:
        _stop(*(p for p in [locals().get("du")] if p is not None))
        ns.close()
    text = log.read_text(errors="replace")
    assert ok, text[-3000:]
    assert (f"F1-C DU IPaddr {stack.address('du', 'f1c', v)}, connect to F1-C CU {stack.address('cucp', 'f1c', v)}, "
            f"binding GTP to {stack.address('du', 'f1u', v)}") in text
    assert f"Initializing UDP for local address {stack.address('du', 'f1u', v)} with port {v['gtpu_port']}" in text
    assert "ABSFREQSSB 641280" in text


def test_nrue_synchronises_to_the_rendered_cell_over_the_rf_simulator(tmp_path: Path) -> None:
    tree = _install()
    r = render_to("baseline", "n3", tmp_path / "r", ran="oai")
    gnb_ip = stack.address("gnb", "ran")
    ns = Netns([gnb_ip, stack.address("gnb", "n2"), stack.address("gnb", "n3"), stack.address("ue1", "ran")])
    gnb_log, ue_log = tmp_path / "gnb.log", tmp_path / "ue.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(ns.start(tree, [*_command("oai", "gnb", r.dir), "--phy-test"], gnb_log, tmp_path))
        assert _wait_for(gnb_log, "Frame.Slot", 60, procs[0]), gnb_log.read_text(errors="replace")[-3000:]
        args = oai.ue_args("gnb")
        procs.append(ns.start(tree, ["nr-uesoftmodem", "-O", str(r.dir / layout.OAI_DIR / "ue1.conf"), "--phy-test",
                                     *args], ue_log, tmp_path))
        synced = _wait_for(ue_log, "UE synchronized!", 90, procs[1])
    finally:
        _stop(*procs)
        ns.close()
    text = ue_log.read_text(errors="replace")
    assert synced, text[-3000:]
    assert "Initial sync: pbch decoded sucessfully" in text and "Initial sync successful, PCI: 0" in text
