"""testbed/datapath.py against the real kernel of this host (no mocks).

Each detected fact is cross-checked by an independent observation: the same operation in a
named namespace (`ip netns add`), the program or plugin file itself, a socket.
"""
from __future__ import annotations

import json
import sys
import os
import socket
import subprocess
from pathlib import Path

import pytest

from testbed import ROOT, datapath
from tests.conftest import require_tools


@pytest.fixture(scope="module")
def facts() -> dict:
    require_tools("ip", "unshare")
    return datapath.detect()


@pytest.fixture
def netns(fresh_netns: str) -> str:
    return fresh_netns


def _ns(name: str, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", name, *cmd], capture_output=True, text=True)


def test_probe_machinery_tells_success_from_failure() -> None:
    require_tools("ip", "unshare")
    assert datapath.in_fresh_netns(["ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1"]) == (True, "ok")
    ok, why = datapath.in_fresh_netns(["ip", "link", "add", "x0", "type", "no-such-link-type"])
    assert not ok and why


def test_xfrm_esp_matches_a_named_namespace(facts: dict, netns: str) -> None:
    res = _ns(netns, "ip", "xfrm", "state", "add", "src", "192.0.2.1", "dst", "192.0.2.2", "proto", "esp",
              "spi", "0x200", "mode", "tunnel", "aead", "rfc4106(gcm(aes))", "0x" + "22" * 20, "128")
    assert facts["ipsec_kernel"] == (res.returncode == 0), res.stderr


def test_wireguard_kernel_matches_a_named_namespace(facts: dict, netns: str) -> None:
    res = _ns(netns, "ip", "link", "add", "wg0", "type", "wireguard")
    assert facts["wireguard_kernel"] == (res.returncode == 0), res.stderr


def test_tun_matches_a_named_namespace(facts: dict, netns: str) -> None:
    res = _ns(netns, "ip", "tuntap", "add", "dev", "t0", "mode", "tun")
    assert facts["tun"] == (res.returncode == 0), res.stderr


def test_sctp_matches_a_socket_and_proc() -> None:
    ok, why = datapath.probe_sctp()
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP).close()
        works = True
    except OSError:
        works = False
    assert ok == works, why
    if works:       # the module is loaded now that a socket was made
        assert Path("/proc/net/sctp").exists()


def test_userspace_fallbacks_are_the_real_programs(facts: dict) -> None:
    if facts["wireguard_userspace"]:
        assert os.access(facts["wireguard_userspace"], os.X_OK)
    if facts["ipsec_userspace"]:
        assert Path(facts["ipsec_userspace"]).is_file()


# (overlay, the kernel's fact, the userspace fallback's fact, the fallback's name); this development
# machine has neither kernel ESP nor a WireGuard module, so it takes the fallbacks
@pytest.mark.parametrize("overlay, kernel, userspace, fallback", [
    ("ipsec", "ipsec_kernel", "ipsec_userspace", "libipsec"),
    ("wireguard", "wireguard_kernel", "wireguard_userspace", "wireguard-go"),
])
def test_datapath_choice_follows_the_facts(facts: dict, overlay: str, kernel: str, userspace: str,
                                           fallback: str) -> None:
    if facts[kernel]:
        assert facts[overlay] == "kernel"
    elif facts[userspace] and facts["tun"]:
        assert facts[overlay] == fallback
    else:
        assert facts[overlay] == "unavailable"


def test_manifest_entry_marks_userspace(facts: dict) -> None:
    wg = datapath.manifest_entry("wireguard", facts)
    assert "ipsec" not in wg and wg["wireguard"] in ("kernel", "wireguard-go", None)
    assert wg["userspace"] == (facts["wireguard"] == "wireguard-go")
    assert datapath.manifest_entry("none", facts) == {"userspace": False}


def test_probes_leave_no_interfaces_behind(facts: dict) -> None:
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert "wgprobe0" not in links and "tunprobe0" not in links


def test_cli_line_and_json(facts: dict) -> None:
    line = subprocess.run([sys.executable, "-m", "testbed", "datapath"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.splitlines()[0]
    assert line == datapath.summary(facts)
    assert line.startswith(f"datapath: ipsec={facts['ipsec']} wireguard={facts['wireguard']} ")
    out = subprocess.run([sys.executable, "-m", "testbed", "datapath", "--json"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out)["wireguard"] == facts["wireguard"]
