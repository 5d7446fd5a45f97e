"""compose/entrypoints/upf.sh in a fresh network namespace with the real ip, nft and
/dev/net/tun: ogstun gets the UE gateway address, UE traffic is masqueraded toward every other
interface, a second start is idempotent, and the entrypoint then execs open5gs-upfd (here a
stand-in on PATH that records the state it finds, since this checks the entrypoint, not the UPF).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testbed import stack
from testbed.render import compose_env as cenv
from tests.conftest import ROOT, require_tools

pytestmark = pytest.mark.netns
UPF_SH = ROOT / "compose" / "entrypoints" / "upf.sh"


@pytest.fixture
def netns(fresh_netns: str) -> str:
    require_tools("nft")
    if not Path("/dev/net/tun").exists():
        pytest.skip("no /dev/net/tun on this host")
    return fresh_netns


def upf_stub_env(tmp_path: Path, stub_body: str) -> tuple[dict[str, str], Path]:
    """(environment, config) to run upf.sh with an open5gs-upfd stand-in of `stub_body`."""
    ue = cenv.ue_vars(stack.load())
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "open5gs-upfd"
    stub.write_text(f"#!/usr/bin/env bash\nset -eu\n{stub_body}\n")
    stub.chmod(0o755)
    cfg = tmp_path / "upf.yaml"
    cfg.write_text("upf: {}\n")
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "OGSTUN": ue["OGSTUN"],
           "UE_SUBNET": ue["UE_SUBNET"], "UE_GATEWAY_CIDR": ue["UE_GATEWAY_CIDR"]}
    return env, cfg


def test_upf_entrypoint_sets_up_ogstun_and_nat(netns: str, tmp_path: Path) -> None:
    env_vars = cenv.ue_vars(stack.load())
    record = tmp_path / "state.txt"
    env, cfg = upf_stub_env(tmp_path, f"{{ echo \"args: $*\"; ip -4 -o addr show dev \"$OGSTUN\"; "
                            f"ip -o link show dev \"$OGSTUN\"; nft list table ip testbed_upf; }} >> {record}")
    for _ in range(2):                       # a restarted container finds ogstun already there
        res = subprocess.run(["ip", "netns", "exec", netns, "bash", str(UPF_SH), str(cfg)],
                             env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
    text = record.read_text()
    assert text.count(f"args: -c {cfg}") == 2
    gw = f"inet {env_vars['UE_GATEWAY_CIDR']}"
    assert text.count(gw) == 2, text
    assert "UP" in text.split("\n")[2]
    assert text.count(f'ip saddr {env_vars["UE_SUBNET"]} oifname != "{env_vars["OGSTUN"]}" masquerade') == 2, text
    # exactly one NAT table/rule after two starts
    listing = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "ruleset"], capture_output=True,
                             text=True, timeout=30).stdout
    assert listing.count("masquerade") == 1
    assert "warning: net.ipv4.ip_forward is 0" in res.stderr, "the entrypoint says when forwarding is off"


def _upfd(build: str | None) -> Path | None:
    for rel in ("src/upf/open5gs-upfd", "bin/open5gs-upfd"):
        if build and (Path(build) / rel).is_file():
            return Path(build) / rel
    return None


def test_real_upf_behind_the_entrypoint_turns_healthy(netns: str, tmp_path: Path) -> None:
    """The rendered upf.yaml with the real open5gs-upfd (testbed/open5gs_host.py find): PFCP on n4, GTP-U on n3,
    ogstun as the session device; the compose healthcheck of the upf service then passes."""
    import signal
    import time

    import yaml

    from testbed.check.compose_model import interpolate
    from tests.testbed.render.helpers import render_to

    from testbed import open5gs_host
    build, why = open5gs_host.find()
    if build is None:
        pytest.skip(why)
    upfd = _upfd(str(build))
    if upfd is None:
        pytest.skip(f"no open5gs-upfd in the Open5GS build at {build} ({open5gs_host.how_to_build()})")
    values = stack.load()
    r = render_to("baseline", "n3", tmp_path / "render")
    cfg = yaml.safe_load((r.dir / "open5gs" / "upf.yaml").read_text())
    log = tmp_path / "upf.log"
    cfg["logger"]["file"]["path"] = str(log)
    (tmp_path / "upf.yaml").write_text(yaml.safe_dump(cfg))
    ns = ["ip", "netns", "exec", netns]
    subprocess.run(ns + ["ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True)
    for net in ("n3", "n4", "n6"):
        subprocess.run(ns + ["ip", "addr", "add", f"{stack.address('upf', net, values)}/{stack.prefixlen(net, values)}",
                             "dev", "d0"], check=True)
    for cmd in (["ip", "link", "set", "d0", "up"], ["ip", "link", "set", "d1", "up"], ["ip", "link", "set", "lo", "up"],
                ["sysctl", "-qw", "net.ipv4.ip_forward=1"]):
        subprocess.run(ns + cmd, check=True)
    env_vars = cenv.ue_vars(values)
    env = {**os.environ, "PATH": f"{upfd.parent}:{os.environ['PATH']}", "OGSTUN": env_vars["OGSTUN"],
           "UE_SUBNET": env_vars["UE_SUBNET"], "UE_GATEWAY_CIDR": env_vars["UE_GATEWAY_CIDR"]}
    svc = yaml.safe_load((ROOT / "compose" / "base.yaml").read_text())["services"]["upf"]
    probe = interpolate(svc["healthcheck"]["test"][1], {}, pytest.fail)
    proc = subprocess.Popen(ns + ["bash", str(UPF_SH), str(tmp_path / "upf.yaml")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while subprocess.run(ns + ["sh", "-c", probe], env=env, capture_output=True).returncode != 0:
            assert proc.poll() is None, (proc.stderr.read().decode() if proc.stderr else "") + \
                (log.read_text() if log.exists() else "")
            assert time.monotonic() < deadline, "upf healthcheck did not pass: " + (log.read_text() if log.exists() else "")
            time.sleep(0.2)  # polling, bounded by the deadline
        text = log.read_text()
        assert "initialize...done" in text
        assert "ERROR" not in text, text
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
