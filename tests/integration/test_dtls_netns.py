"""DTLS relay on N2 end to end in network namespaces: the very entrypoint and rendered configs,
real socat and OpenSSL, dumpcap on the link's bridge, tshark for the verdict; nothing mocked.

The kernel here has no SCTP, so the NF side of both relays is TCP (`dtls/entrypoint.sh
--nf-transport tcp`, the entrypoint's stand-in option) and the "AMF" is a socat echo on the
AMF's N2 address and NGAP port; the relay leg between the nodes (DTLS/UDP) is exactly the one
the stack runs. The real SCTP path runs in the full-kernel guest (docs/overlays/dtls.md).
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testbed import ROOT, netns, profiles, stack
from dtls import overlay as dtls
from tests.conftest import require_root, require_tools
from tests.testbed.render.helpers import keys_root

pytestmark = pytest.mark.netns

MESSAGES = [f"NGAP-STAND-IN-{i:02d}-{secrets.token_hex(4)}" for i in range(5)]


@pytest.fixture
def make_lab(tmp_path: Path) -> Iterator[Callable[..., netns.Lab]]:
    require_root()
    require_tools("ip", "socat", "openssl", "ss", "tshark", "dumpcap", "unshare", "nsenter")
    labs: list[netns.Lab] = []

    def make(profile: str, overrides: dict[str, str] | None = None, capture: Path | None = None,
             nodes: list[str] | None = None) -> netns.Lab:
        lab = netns.Lab(f"dtls-{secrets.token_hex(3)}", "n2", profile, nodes=nodes,
                        state_dir=tmp_path / "state", keys_dir=keys_root(),
                        entrypoint_args=["--nf-transport", "tcp"], profile_overrides=overrides)
        labs.append(lab)
        lab.up(timeout=30, capture=capture)
        return lab

    yield make
    for lab in labs:
        lab.down()


def _echo_amf(lab: netns.Lab) -> subprocess.Popen[bytes]:
    """The AMF stand-in: echoes every byte back on the AMF's N2 address and NGAP port."""
    v = stack.load()
    argv = ["ip", "netns", "exec", lab.netns("amf"), "socat",
            f"TCP-LISTEN:{v['ngap_port']},bind={lab.address('amf')},reuseaddr,fork", "EXEC:cat"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 5
    while "LISTEN" not in lab.exec("amf", ["ss", "-Hltn", f"sport = :{v['ngap_port']}"]).stdout:
        assert time.monotonic() < deadline, "echo stand-in did not listen"
        time.sleep(0.05)
    return proc


def _send(lab: netns.Lab, target: str) -> subprocess.CompletedProcess[str]:
    """The gNB stand-in: one connection, the known messages, what came back."""
    port = stack.load()["ngap_port"]
    text = "".join(m + "\n" for m in MESSAGES)
    return lab.exec("gnb", ["sh", "-c", f"printf '%s' '{text}' | timeout 8 socat -t2 - TCP:{target}:{port}"],
                    timeout=15)


def _exchange(lab: netns.Lab, target: str) -> subprocess.CompletedProcess[str]:
    """The AMF stand-in up, the gNB stand-in's messages sent to `target`, the stand-in stopped."""
    echo = _echo_amf(lab)
    try:
        return _send(lab, target)
    finally:
        echo.kill()
        echo.wait()


def _stop(cap: netns.Capture | None) -> Path:
    assert cap is not None
    return cap.stop()


@pytest.mark.parametrize("profile_id", ["dtls12-aes128gcm", "dtls12-aes256gcm"])
def test_dtls_relay_carries_the_stream_and_the_capture_proves_it(
        make_lab: Callable[..., netns.Lab], tmp_path: Path, profile_id: str) -> None:
    pcap = tmp_path / "n2.pcap"
    lab = make_lab(profile_id, capture=pcap)
    assert all(line.startswith("datapath: dtls=socat") for line in map(lab.ready, lab.nodes))
    res = _exchange(lab, "127.0.0.1")              # the gNB's NF connects to the local relay
    assert res.stdout.split() == MESSAGES, res.stderr
    wire = _stop(lab.boot_capture).read_bytes()
    assert not any(m.encode() in wire for m in MESSAGES), "a message crossed the link in the clear"
    prof = profiles.get(profile_id)
    verdict = dtls.verify_capture(pcap, prof, "n2")
    assert verdict.valid, verdict.details
    assert verdict.protected_packets > 0 and verdict.plaintext_packets == 0
    s = dtls.settings(prof)
    assert f"want DTLS 1.2 {s.cipher} (0xfefd/0x{s.suite_id:04x})" in verdict.details
    # the same capture does not prove another suite
    other = "dtls12-aes256gcm" if profile_id == "dtls12-aes128gcm" else "dtls12-aes128gcm"
    wrong = dtls.verify_capture(pcap, profiles.get(other), "n2")
    assert not wrong.valid and "ServerHello(s) with another version/suite" in wrong.details
    # and is no valid plain relay either
    assert not dtls.verify_capture(pcap, profiles.get("dtls-relay-plain"), "n2").valid


def test_ends_pinned_to_different_suites_never_connect(make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """Client pinned to AES-128-GCM, server to AES-256-GCM: no handshake completes, nothing is
    carried, and the capture is invalid for both profiles."""
    pcap = tmp_path / "n2.pcap"
    lab = make_lab("dtls12-aes128gcm", overrides={"amf": "dtls12-aes256gcm"}, capture=pcap)
    res = _exchange(lab, "127.0.0.1")
    assert not any(m in res.stdout for m in MESSAGES)
    _stop(lab.boot_capture)
    for pid in ("dtls12-aes128gcm", "dtls12-aes256gcm"):
        v = dtls.verify_capture(pcap, profiles.get(pid), "n2")
        assert not v.valid and "no DTLS application data" in v.details, v.details


def test_plain_relay_carries_the_stream_in_udp_and_is_told_apart(
        make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    pcap = tmp_path / "n2.pcap"
    lab = make_lab("dtls-relay-plain", capture=pcap)
    res = _exchange(lab, "127.0.0.1")
    assert res.stdout.split() == MESSAGES
    wire = _stop(lab.boot_capture).read_bytes()
    assert all(m.encode() in wire for m in MESSAGES), "the plain relay should carry the messages readable"
    ok = dtls.verify_capture(pcap, profiles.get("dtls-relay-plain"), "n2")
    assert ok.valid and ok.protected_packets == 0 and "by design" in ok.details, ok.details
    bad = dtls.verify_capture(pcap, profiles.get("dtls12-aes128gcm"), "n2")
    assert not bad.valid and "no DTLS records" in bad.details


def test_direct_connection_is_plaintext_for_every_relay_profile(
        make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """No relay (baseline lab): the gNB stand-in talks to the AMF's address directly."""
    pcap = tmp_path / "n2.pcap"
    lab = make_lab("baseline", capture=pcap, nodes=["gnb", "amf"])
    res = _exchange(lab, lab.address("amf"))
    assert res.stdout.split() == MESSAGES
    _stop(lab.boot_capture)
    for pid in ("dtls12-aes128gcm", "dtls-relay-plain"):
        v = dtls.verify_capture(pcap, profiles.get(pid), "n2")
        assert not v.valid and v.plaintext_packets > 0 and "in the clear" in v.details, v.details


def test_entrypoint_stops_cleanly_on_sigterm_and_fails_when_a_relay_dies(
        make_lab: Callable[..., netns.Lab]) -> None:
    lab = make_lab("dtls12-aes128gcm")
    # a relay (socat child of the gNB's entrypoint) killed: the entrypoint exits 1, naming it
    gnb = lab.pids["gnb"]
    socats = subprocess.run(["pgrep", "-g", str(gnb), "-x", "socat"], capture_output=True, text=True).stdout.split()
    assert socats, "no socat in the gNB entrypoint's process group"
    os.kill(int(socats[0]), signal.SIGKILL)
    assert _exit_code(gnb) == 1
    assert "a relay exited; the link is no longer protected" in lab.log_path("gnb").read_text()
    os.kill(lab.pids["amf"], signal.SIGTERM)
    assert _exit_code(lab.pids["amf"]) == 0
    assert lab.log_path("amf").read_text().rstrip().endswith("relays stopped (exit 0)")


def _exit_code(pid: int, timeout: float = 5) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        assert time.monotonic() < deadline, f"pid {pid} still running"
        time.sleep(0.05)


def test_usage_errors_exit_2() -> None:
    entry = ROOT / "dtls" / "entrypoint.sh"
    for args in ([], ["--nf-transport", "quic", "/tmp"], ["--timeout", "soon", "/tmp"]):
        res = subprocess.run(["bash", str(entry), *args], capture_output=True, text=True)
        assert res.returncode == 2, (args, res.stderr)
