"""IPsec and WireGuard on N2 and N4, and on several planes at once, in network namespaces: the
very renderings and entrypoints the holder containers use, with real charon/swanctl
(kernel-libipsec where the kernel has no ESP, as here) and wireguard-go, real dumpcap captures
on each plane's bridge, and the validity step's own checks.

Stand-ins for the plane's traffic, because the namespaces run no Open5GS/UERANSIM:
- N2 (NGAP over SCTP 38412): THIS KERNEL HAS NO SCTP, so a TCP echo (socat) on the NGAP port
  between the gnb and amf namespaces carries one line; the full-kernel guest runs real SCTP.
  The plane's plaintext filter counts anything on the NGAP port, whatever the transport.
- N4 (PFCP over UDP 8805, no SCTP needed): a real PFCP Heartbeat Request (TS 29.244 7.4.4.1,
  with its Recovery Time Stamp IE) from the smf to a UDP echo on the upf; tshark decodes it.
- N3: ping (ICMP echo, which the IPsec check counts as plaintext too).
Verdicts are positive on the protected captures and negative on a baseline lab's captures of
the same exchange (plaintext on the wire, no overlay).
"""
from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ipsec import run_checks as ipsec_checks
from ipsec import datapath as ipsec_datapath
from testbed import channels, keys, netns, planes, profiles, ran, stack, validity
from ipsec import overlay as ipsec
from wireguard import overlay as wireguard
from tests.conftest import ipsec_param, require_root, require_tools
from tests.integration.labs import lab_factory

pytestmark = pytest.mark.netns

VALUES = ran.restrict(stack.load(), "ueransim")   # the nodes the default RAN runs (testbed/ran)
# PFCP Heartbeat Request: version 1, no SEID, type 1, length 12, sequence 1; IE 96 Recovery Time Stamp
PFCP_HEARTBEAT = "2001000c00000100006000" "04e9000000"


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_root()
    require_tools("openssl", "wg", "ip", "nft", "swanctl", "unshare", "nsenter", "socat", "dumpcap", "tshark",
                  "wireguard-go")
    return keys.ensure(tmp_path_factory.getbasetemp() / "planes-keys-state")


@pytest.fixture
def make_lab(keys_dir: Path, tmp_path: Path) -> Iterator[Callable[..., netns.Lab]]:
    with lab_factory("pl", tmp_path / "state", keys_dir) as make:
        yield make


def _bg(lab: netns.Lab, node: str, argv: list[str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["ip", "netns", "exec", lab.netns(node), *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)                        # socat binds at once; nothing to poll for
    return proc


def exchange(lab: netns.Lab, plane: str) -> None:
    """One round trip of the plane's stand-in traffic between its link's two nodes."""
    link = channels.links(plane, lab.values, lab.nodes)[0]
    ch = next(c for c in channels.channels(plane) if {c.client, c.server} == {link.a, link.b})
    net = planes.network(plane)
    server = lab.address(ch.server, net)
    port = planes.get(plane).port(lab.values)
    if plane == "n3":
        res = lab.exec(ch.client, ["ping", "-c", "2", "-i", "0.2", "-W", "2", server])
        assert res.returncode == 0, res.stdout + res.stderr
        return
    kind = "TCP" if planes.get(plane).transport in ("tcp", "sctp") else "UDP"   # SCTP: TCP stand-in
    echo = _bg(lab, ch.server, ["socat", f"{kind}4-LISTEN:{port},bind={server},reuseaddr,fork", "PIPE"])
    try:
        if kind == "UDP":
            code = ("import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); "
                    f"s.bind(('{lab.address(ch.client, net)}', {port})); "
                    f"s.sendto(bytes.fromhex('{PFCP_HEARTBEAT}'), ('{server}', {port})); print(s.recv(64).hex())")
            res = lab.exec(ch.client, ["python3", "-c", code])
            assert res.stdout.strip() == PFCP_HEARTBEAT, res.stdout + res.stderr
        else:
            res = lab.exec(ch.client, ["sh", "-c", f"echo ngap-stand-in | socat -T 3 - TCP4:{server}:{port}"])
            assert res.stdout.strip() == "ngap-stand-in", res.stdout + res.stderr
    finally:
        echo.terminate()
        echo.wait(timeout=5)


def captured(lab: netns.Lab, tmp_path: Path, tag: str) -> dict[str, Path]:
    """Capture every plane's bridge at once while each plane exchanges its traffic."""
    caps = {p: lab.capture(tmp_path / f"{tag}-{p}.pcap", network=planes.network(p)) for p in lab.planes}
    try:
        for p in lab.planes:
            exchange(lab, p)
    finally:
        for c in caps.values():
            c.stop()
    return {p: c.path for p, c in caps.items()}


def _baseline_negative(make_lab: Callable[..., netns.Lab], plane: str, nodes: list[str], prof: profiles.Profile,
                       module: object, tmp_path: Path) -> None:
    """The same exchange without an overlay: the overlay's check refuses it, the baseline rule accepts it."""
    lab = make_lab(plane, "baseline", nodes)
    pcap = captured(lab, tmp_path, "baseline")[plane]
    bad = module.verify_capture(pcap, prof, plane, VALUES)             # type: ignore[attr-defined]
    assert not bad.valid and bad.plaintext_packets > 0 and bad.protected_packets == 0, bad.details
    base = validity.baseline_verdict(pcap, "sbi", plane, VALUES)
    assert base.valid and base.plaintext_packets > 0, base.details


ESPS = ("aes128gcm", "aes256gcm", "aes128cbc", "aes256cbc", "nullsha256", "nullgmac")
# the 12 configurations (6 ESP x cert|psk), each on one of N2/N4, and every ESP proposal on both
# planes: N2 takes certificates for the first three proposals and PSK for the others, N4 the rest
IPSEC_CASES = ([("n2", e + ("" if i < 3 else "-psk")) for i, e in enumerate(ESPS)]
               + [("n4", e + ("-psk" if i < 3 else "")) for i, e in enumerate(ESPS)])


@pytest.mark.parametrize("plane,profile_id", [ipsec_param((pl, p), p, pl) for pl, p in IPSEC_CASES])
def test_ipsec_on_n2_and_n4(plane: str, profile_id: str, make_lab: Callable[..., netns.Lab],
                            tmp_path: Path) -> None:
    prof = profiles.get(profile_id, plane)
    ok, why = ipsec.libipsec_capable(prof)
    if not ok and not ipsec_datapath.probe_xfrm_esp()[0]:
        pytest.skip(f"kernel xfrm ESP datapath missing on this host and {why}")
    lab = make_lab(plane, profile_id)
    assert sorted(lab.nodes) == sorted(channels.endpoints(plane, VALUES)) and len(lab.nodes) == 2
    for node in lab.nodes:
        sas = lab.exec(node, ["swanctl", "--list-sas"], check=True).stdout
        assert ipsec.check_sas(sas, prof) == [], sas
    pcap = captured(lab, tmp_path, "ipsec")[plane]
    verdict = ipsec.verify_capture(pcap, prof, plane, VALUES)
    assert verdict.valid and verdict.protected_packets >= 2 and verdict.plaintext_packets == 0, verdict.details
    if profile_id.startswith("aes128gcm"):
        _baseline_negative(make_lab, plane, lab.nodes, prof, ipsec, tmp_path)


@pytest.mark.parametrize("plane", ["n2", "n4"])
def test_wireguard_on_n2_and_n4(plane: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    prof = profiles.get("wireguard", plane)
    lab = make_lab(plane, "wireguard")
    pcap = captured(lab, tmp_path, "wg")[plane]
    verdict = wireguard.verify_capture(pcap, prof, plane, VALUES)
    assert verdict.valid and verdict.protected_packets >= 2, verdict.details
    _baseline_negative(make_lab, plane, lab.nodes, prof, wireguard, tmp_path)


@pytest.mark.parametrize("profile_id", ["aes128gcm", "wireguard"])
def test_all_protected_gnb_amf_smf_upf(profile_id: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """N2, N3 and N4 at once: the UPF (n3 + n4) and the gNB (n2 + n3) each run ONE overlay whose
    config covers all their peers; every plane's own capture proves its overlay, and the
    per-plane reading of the daemons' SAs (validity) finds every link of every plane."""
    plane = "n2,n3,n4"
    prof = profiles.get(profile_id, plane)
    lab = make_lab(plane, profile_id)
    assert lab.nodes == ["amf", "gnb", "smf", "upf"] and lab.networks == ["n3", "n2", "n4"]
    module = ipsec if prof.protocol == "ipsec" else wireguard
    caps = captured(lab, tmp_path, "all")
    for p, pcap in caps.items():
        v = module.verify_capture(pcap, prof, p, VALUES)
        assert v.valid and v.protected_packets > 0, f"{p}: {v.details}"
    if prof.protocol == "ipsec":
        records = {n: lab.exec(n, ["swanctl", "--list-sas"], check=True).stdout for n in lab.nodes}
        assert ipsec_checks.sas_by_plane(records, prof, plane, VALUES) == {p: [] for p in lab.planes}
        upf = records["upf"]
        assert "gnb: #" in upf and "smf: #" in upf and upf.count("INSTALLED") == 2, upf
        # a node missing a plane's SA is named under that plane
        records["upf"] = "\n".join(ln for ln in upf.splitlines() if not ln.strip().startswith("smf"))
        problems = ipsec_checks.sas_by_plane(records, prof, plane, VALUES)
        assert problems["n4"] and not problems["n3"], problems
    else:
        env = (lab.dir / "render" / "upf" / "overlay.env").read_text()
        assert "WG_ROUTE_SRC='10.100.3.50=10.100.3.7 10.100.4.4=10.100.4.7'" in env, env


@pytest.mark.kernel("xfrm-esp")
@pytest.mark.parametrize("profile_id", ["aes128gcm-trap-drop", "aes128gcm-trap-queue"])
def test_n4_trap_first_pfcp_message(profile_id: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """The unpatched trap modes on N4 (docs/overlays/ipsec.md): the SMF's first PFCP message
    triggers IKE; trap-drop loses it (Open5GS would retransmit after T1 = 2.5 s), trap-queue
    delivers it once the SA exists. Kernel xfrm only (kernel-libipsec sends no acquires)."""
    lab = make_lab("n4", profile_id)
    assert "ESTABLISHED" not in lab.exec("smf", ["swanctl", "--list-sas"], check=True).stdout
    upf = lab.address("upf", "n4")
    echo = _bg(lab, "upf", ["socat", f"UDP4-LISTEN:8805,bind={upf},reuseaddr,fork", "PIPE"])
    try:
        code = ("import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); "
                f"s.bind(('{lab.address('smf', 'n4')}', 8805)); "
                f"s.sendto(bytes.fromhex('{PFCP_HEARTBEAT}'), ('{upf}', 8805))\n"
                "try:\n    print(s.recv(64).hex())\nexcept OSError:\n    print('lost')")
        first = lab.exec("smf", ["python3", "-c", code]).stdout.strip()
        assert first == ("lost" if profile_id.endswith("drop") else PFCP_HEARTBEAT), first
        assert "ESTABLISHED" in lab.exec("smf", ["swanctl", "--list-sas"], check=True).stdout
        assert lab.exec("smf", ["python3", "-c", code]).stdout.strip() == PFCP_HEARTBEAT
    finally:
        echo.terminate()
        echo.wait(timeout=5)


@pytest.mark.kernel("sctp")
@pytest.mark.parametrize("profile_id", ["baseline", "aes128gcm", "wireguard"])
def test_n2_over_real_sctp(profile_id: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """N2 as the stack carries it, NGAP's transport SCTP (not the TCP stand-in), between the gnb and
    amf namespaces: through IPsec and WireGuard the bridge shows no SCTP and the overlay's check
    passes; without an overlay the same association is SCTP in the clear and the plane's plaintext
    filter counts it (so a leaked NGAP would be seen)."""
    lab = make_lab("n2", profile_id, ["gnb", "amf"])
    amf, port = lab.address("amf", "n2"), planes.get("n2").port(lab.values)
    cap = lab.capture(tmp_path / "n2-sctp.pcap", network="n2")
    echo = _bg(lab, "amf", ["socat", f"SCTP4-LISTEN:{port},bind={amf},reuseaddr,fork", "PIPE"])
    try:
        # the listener, before the client (an emulated CPU starts socat in more than _bg's 0.3 s)
        deadline = time.monotonic() + 30
        while f"{amf}:{port}" not in lab.exec("amf", ["ss", "-Hln", "--sctp"]).stdout:
            assert echo.poll() is None and time.monotonic() < deadline, "socat did not listen on SCTP"
            time.sleep(0.1)
        # SCTP has no half-close (socat's EOF after `echo` ends the association before the echo comes
        # back): the client sends, reads the echo, then closes
        code = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP); "
                f"s.settimeout(10); s.connect(({amf!r}, {port})); s.sendall(b'ngap-over-sctp'); "
                "print(s.recv(64).decode()); s.close()")
        res = lab.exec("gnb", ["python3", "-c", code])
        assert res.stdout.strip() == "ngap-over-sctp", res.stdout + res.stderr
    finally:
        echo.terminate()
        echo.wait(timeout=5)
        pcap = cap.stop()
    prof = profiles.get(profile_id, "n2")
    sctp = validity.count(pcap, f"sctp.port == {port}")
    if prof.protocol == "none":
        assert sctp >= 4, "the association's INIT, INIT ACK, COOKIE and DATA in the clear"
        assert validity.count(pcap, planes.get("n2").plaintext_filter(lab.values)) == sctp
        return
    module = ipsec if prof.protocol == "ipsec" else wireguard
    v = module.verify_capture(pcap, prof, "n2", VALUES)
    assert v.valid and v.plaintext_packets == 0 and v.protected_packets >= 4, v.details
    assert sctp == 0
