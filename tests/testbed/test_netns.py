"""testbed/netns.py: the namespace lab itself (baseline profile, no overlay), its CLI, and
its input checks. The overlays' own namespace tests live in tests/integration/."""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import ROOT, netns, stack
from tests.conftest import require_root, require_tools


def _name() -> str:
    return f"ipsec-{secrets.token_hex(3)}"


def test_bad_names_and_nodes_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(netns.LabError, match="lab name"):
        netns.Lab("bad name!", "n3", state_dir=tmp_path)
    with pytest.raises(netns.LabError, match="no address on network 'n3'"):
        netns.Lab(_name(), "n3", nodes=["gnb", "amf"], state_dir=tmp_path)


def test_names_are_prefixed_by_the_lab(tmp_path: Path) -> None:
    lab = netns.Lab("ipsec-x1", "sbi", nodes=["ausf", "nrf"], state_dir=tmp_path)
    assert lab.hub == "ipsec-x1-hub" and lab.netns("nrf") == "ipsec-x1-nrf"
    assert lab.address("nrf") == stack.address("nrf", "sbi")
    assert lab.dir == tmp_path / "lab" / "ipsec-x1"


def test_load_of_an_unknown_lab_says_so(tmp_path: Path) -> None:
    with pytest.raises(netns.LabError, match="no lab 'nolab'"):
        netns.Lab.load("nolab", tmp_path)


@pytest.fixture
def lab(tmp_path: Path):  # type: ignore[no-untyped-def]
    require_root()
    require_tools("ip", "unshare", "nsenter", "dumpcap", "tshark", "ping")
    lab = netns.Lab(_name(), "n3", "baseline", state_dir=tmp_path)
    yield lab
    lab.down()
    assert not {lab.hub, *map(lab.netns, lab.nodes)} & set(netns.existing_namespaces())


@pytest.mark.netns
def test_baseline_lab_up_exec_capture_down(lab: netns.Lab, tmp_path: Path) -> None:
    ready = lab.up(timeout=20)
    assert ready == {"gnb": "", "upf": ""}
    names = set(netns.existing_namespaces())
    assert {lab.hub, lab.netns("gnb"), lab.netns("upf")} <= names
    addr = lab.exec("upf", ["ip", "-4", "-o", "addr", "show", "dev", "n3"], check=True).stdout
    assert f"{lab.address('upf')}/{stack.prefixlen('n3')}" in addr
    with lab.capture(tmp_path / "plain.pcap") as cap:
        ping = lab.exec("gnb", ["ping", "-c", "2", "-i", "0.2", lab.address("upf")])
    assert ping.returncode == 0, ping.stdout
    out = subprocess.run(["tshark", "-n", "-r", str(cap.path), "-Y",
                          f"icmp.type == 8 && ip.src == {lab.address('gnb')}", "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert len(out) == 2, "the bridge capture sees exactly the wire"
    labs = [entry for entry in netns.list_labs(lab.state_dir) if entry["name"] == lab.name]
    assert labs and labs[0]["namespaces_present"]
    with pytest.raises(netns.LabError, match="exist already"):
        netns.Lab(lab.name, "n3", "baseline", state_dir=lab.state_dir).up()
    lab.down()
    lab.down()          # idempotent
    assert not {lab.hub, lab.netns("gnb")} & set(netns.existing_namespaces())


@pytest.mark.netns
def test_cli_up_exec_list_down(tmp_path: Path) -> None:
    require_root()
    require_tools("ip", "unshare", "nsenter", "ping")
    name = _name()
    base = [sys.executable, "-m", "testbed", "lab"]
    common = ["--name", name, "--state", str(tmp_path)]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)

    try:
        up = cli("up", *common, "--plane", "sbi", "--nodes", "ausf,nrf")
        assert up.returncode == 0, up.stderr
        assert f"{name}-ausf" in up.stdout
        ex = cli("exec", *common, "ausf", "--", "ping", "-c", "1", "-W", "2", stack.address("nrf", "sbi"))
        assert ex.returncode == 0, ex.stdout + ex.stderr
        listed = json.loads(cli("list", "--state", str(tmp_path)).stdout)
        assert [entry["name"] for entry in listed] == [name]
        bad = cli("up", "--name", _name(), "--state", str(tmp_path), "--profile", "nosuchprofile")
        assert bad.returncode == 2 and "unknown PROFILE" in bad.stderr
    finally:
        down = cli("down", *common)
    assert down.returncode == 0
    assert cli("down", *common).returncode == 0, "down is idempotent"
    assert not any(ns.startswith(name) for ns in netns.existing_namespaces())
