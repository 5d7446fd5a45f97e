"""compose/entrypoints/upf.sh in a fresh network namespace with the real ip, nft and
/dev/net/tun: ogstun gets the UE gateway address, UE traffic is masqueraded toward every other
interface, a second start is idempotent, and the entrypoint then execs open5gs-upfd (here a
stand-in on PATH that records the state it finds, since this checks the entrypoint, not the UPF).
"""
from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import stack
from testbed.render import compose_env as cenv
from tests.conftest import ROOT, require_root, require_tools

pytestmark = pytest.mark.netns
UPF_SH = ROOT / "compose" / "entrypoints" / "upf.sh"


@pytest.fixture
def netns() -> Iterator[str]:
    require_root()
    require_tools("ip", "nft")
    if not Path("/dev/net/tun").exists():
        pytest.skip("no /dev/net/tun on this host")
    name = f"stack-upf-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_upf_entrypoint_sets_up_ogstun_and_nat(netns: str, tmp_path: Path) -> None:
    values = stack.load()
    env_vars = cenv.ue_vars(values)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "state.txt"
    stub = bindir / "open5gs-upfd"
    stub.write_text("#!/usr/bin/env bash\nset -eu\n"
                    f"{{ echo \"args: $*\"; ip -4 -o addr show dev \"$OGSTUN\"; ip -o link show dev \"$OGSTUN\"; "
                    f"nft list table ip testbed_upf; }} >> {record}\n")
    stub.chmod(0o755)
    cfg = tmp_path / "upf.yaml"
    cfg.write_text("upf: {}\n")
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "OGSTUN": env_vars["OGSTUN"],
           "UE_SUBNET": env_vars["UE_SUBNET"], "UE_GATEWAY_CIDR": env_vars["UE_GATEWAY_CIDR"]}
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
