"""IPsec, WireGuard and the DTLS relay on the split RAN's F1-C, F1-U and E1 (RAN=split,
docs/ran.md) in network namespaces: the renderings and entrypoints the holder containers use, with real charon/swanctl
(kernel-libipsec where the kernel has no ESP, as here) and wireguard-go, dumpcap on each plane's
bridge, and the validity step's own checks; one overlay per node covering all its peers (the
CU-CP meets the DU on F1-C and the CU-UP on E1; the CU-UP meets the DU on F1-U).

Stand-ins for the planes' traffic (tests/integration/test_planes_netns.py `exchange`): F1AP and
E1AP run over SCTP, which THIS KERNEL LACKS, so a TCP echo on the F1AP / E1AP port carries one line
(the plane's plaintext filter counts anything on the port, whatever the transport); F1-U is a UDP
datagram on the GTP-U port. The full-kernel guest runs the real OAI stack (docs/ran.md). Verdicts
are positive on the protected captures and negative on a baseline lab's captures.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ipsec import run_checks as ipsec_checks
from ipsec import datapath as ipsec_datapath
from testbed import channels, netns, profiles, validity
from ipsec import overlay as ipsec
from wireguard import overlay as wireguard
# the same fixtures (real keys, a lab factory that always takes its labs down) and stand-in exchange
from tests.conftest import ipsec_param
from tests.integration.test_planes_netns import captured, keys_dir, make_lab  # noqa: F401

pytestmark = pytest.mark.netns
RAN_PLANES = "f1c,f1u,e1"


@pytest.mark.parametrize("profile_id", [ipsec_param(p, p, RAN_PLANES) for p in ("aes128gcm", "aes256cbc-psk", "nullgmac")]
                         + ["wireguard"])
def test_overlays_on_f1c_f1u_e1(profile_id: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    prof = profiles.get(profile_id, RAN_PLANES)
    if prof.protocol == "ipsec":
        ok, why = ipsec.libipsec_capable(prof)
        if not ok and not ipsec_datapath.probe_xfrm_esp()[0]:
            pytest.skip(f"kernel xfrm ESP datapath missing on this host and {why}")
    lab = make_lab(RAN_PLANES, profile_id)
    assert lab.nodes == ["cucp", "cuup", "du"] and lab.networks == ["f1c", "f1u", "e1"]
    assert [(x.plane, x.a, x.b) for x in channels.links(RAN_PLANES, lab.values)] == [
        ("f1c", "cucp", "du"), ("f1u", "cuup", "du"), ("e1", "cucp", "cuup")]
    module = ipsec if prof.protocol == "ipsec" else wireguard
    caps = captured(lab, tmp_path, "ran")
    for plane, pcap in caps.items():
        v = module.verify_capture(pcap, prof, plane, lab.values)
        assert v.valid and v.protected_packets > 0 and v.plaintext_packets == 0, f"{plane}: {v.details}"
    if prof.protocol == "ipsec":
        records = {n: lab.exec(n, ["swanctl", "--list-sas"], check=True).stdout for n in lab.nodes}
        for n, sas in records.items():
            assert ipsec.check_sas(sas, prof) == [], sas
        assert ipsec_checks.sas_by_plane(records, prof, RAN_PLANES, lab.values) == {p: [] for p in lab.planes}
        assert records["cucp"].count("INSTALLED") == 2, records["cucp"]     # DU (F1-C) and CU-UP (E1)


def test_baseline_captures_refute_an_overlay(make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    lab = make_lab(RAN_PLANES, "baseline")
    caps = captured(lab, tmp_path, "plain")
    for plane, pcap in caps.items():
        for prof_id, module in (("aes128gcm", ipsec), ("wireguard", wireguard)):
            bad = module.verify_capture(pcap, profiles.get(prof_id, plane), plane, lab.values)
            assert not bad.valid and bad.plaintext_packets > 0, f"{plane} {prof_id}: {bad.details}"
        base = validity.baseline_verdict(pcap, "ran-procedures", plane, lab.values)
        assert base.valid and base.plaintext_packets > 0, base.details


def test_the_cu_cps_plaintext_view_times_a_protected_f1c(make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """run-ran-procedures' timing of a protected interface: the bridge shows ESP only, while the
    ruleset of plaintext_view_start (scripts/lib/common.sh) in the CU-CP's namespace logs the F1AP
    port's packets to nflog before encryption / after decryption, each once, and dumpcap writes them
    (TCP here: the stand-in for SCTP, which this kernel lacks)."""
    import subprocess
    import time

    from testbed import tshark
    from tests.conftest import ROOT
    prof = profiles.get("aes128gcm", "f1c")
    if not ipsec.libipsec_capable(prof)[0] and not ipsec_datapath.probe_xfrm_esp()[0]:
        pytest.skip("no ESP datapath on this host")
    lab = make_lab("f1c", "aes128gcm")
    port = int(lab.values["f1ap_port"])
    rules = subprocess.run(["bash", "-c", f'source scripts/lib/common.sh; plaintext_view_rules tcp {port} 39 server'],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout
    subprocess.run(["ip", "netns", "exec", lab.netns("cucp"), "nft", "-f", "-"], input=rules, text=True, check=True)
    view = tmp_path / "f1c-view.pcap"
    dumpcap = subprocess.Popen(["ip", "netns", "exec", lab.netns("cucp"), "dumpcap", "-q", "-i", "nflog:39",
                                "-w", str(view)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)                     # dumpcap opens the nflog socket: nothing to poll for
        wire = captured(lab, tmp_path, "view")["f1c"]
        time.sleep(0.5)
    finally:
        dumpcap.terminate()
        dumpcap.wait(timeout=10)
    du, cucp = lab.address("du", "f1c"), lab.address("cucp", "f1c")
    rows = tshark.fields(view, f"tcp.port == {port}", ["ip.src", "ip.dst"])
    assert {(r[0], r[1]) for r in rows} == {(du, cucp), (cucp, du)}, rows
    # each tunnelled packet once in the view: as many as the wire carried ESP between the two
    assert len(rows) == tshark.count(wire, f"esp && ip.addr == {du} && ip.addr == {cucp}")
    v = ipsec.verify_capture(wire, prof, "f1c", lab.values)
    assert v.valid and v.plaintext_packets == 0, v.details


@pytest.mark.parametrize("profile_id", ["dtls12-aes128gcm", "dtls-relay-plain"])
def test_dtls_relays_on_f1c_and_e1(profile_id: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """The DTLS relay on the split's SCTP interfaces: the DU's F1-C and the CU-UP's E1 go to their
    namespace's relay listener (127.0.0.1, as the rendered OAI configs say), the CU-CP's relays
    (one per plane, in one entrypoint) connect to its F1AP / E1AP listeners; the wire carries
    DTLS (or, for the plain relay, readable UDP) and dtls.verify_capture judges each plane.
    The NF side is the entrypoint's TCP stand-in (--nf-transport tcp: this kernel lacks SCTP)."""
    import subprocess
    import time

    from testbed import planes, tshark
    from dtls import overlay as dtls
    from tests.conftest import require_tools
    require_tools("socat", "openssl", "ss")
    prof = profiles.get(profile_id, "f1c,e1")
    lab = make_lab("f1c,e1", profile_id, entrypoint_args=["--nf-transport", "tcp"], timeout=30)
    assert sorted(lab.nodes) == ["cucp", "cuup", "du"], lab.nodes
    caps = {p: lab.capture(tmp_path / f"dtls-{p}.pcap", network=planes.network(p)) for p in ("f1c", "e1")}
    try:
        for plane in ("f1c", "e1"):
            lk = dtls.link(plane, lab.values)
            server = lk.server_address(lab.values)
            echo = subprocess.Popen(["ip", "netns", "exec", lab.netns(lk.server), "socat",
                                     f"TCP4-LISTEN:{lk.port},bind={server},reuseaddr,fork", "PIPE"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 5
                while f"{server}:{lk.port}" not in lab.exec(lk.server, ["ss", "-Hltn"]).stdout:
                    assert time.monotonic() < deadline, "echo stand-in did not listen"
                    time.sleep(0.05)
                line = f"{plane}-stand-in"
                res = lab.exec(lk.client, ["sh", "-c", f"echo {line} | timeout 8 socat -t2 - TCP4:{lk.listen}:{lk.port}"],
                               timeout=15)
                assert res.stdout.strip() == line, res.stdout + res.stderr
            finally:
                echo.terminate()
                echo.wait(timeout=5)
    finally:
        for c in caps.values():
            c.stop()
    for plane, c in caps.items():
        v = dtls.verify_capture(c.path, prof, plane, lab.values)
        assert v.valid, f"{plane}: {v.details}"
        lk = dtls.link(plane, lab.values)
        assert tshark.count(c.path, f"udp.port == {lk.relay_port}") > 0
        if prof.id != "dtls-relay-plain":
            assert v.protected_packets > 0 and v.plaintext_packets == 0, v.details
            assert f"{plane}-stand-in".encode() not in c.path.read_bytes()
