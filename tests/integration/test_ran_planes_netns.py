"""IPsec and WireGuard on the split RAN's F1-C, F1-U and E1 (RAN=split, docs/ran.md) in network
namespaces: the renderings and entrypoints the holder containers use, with real charon/swanctl
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

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testbed import channels, keys, netns, profiles, validity
from testbed.overlays import ipsec, wireguard
from tests.conftest import require_root, require_tools
from tests.integration.labs import lab_factory
from tests.integration.test_planes_netns import captured

pytestmark = pytest.mark.netns
RAN_PLANES = "f1c,f1u,e1"


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_root()
    require_tools("openssl", "wg", "ip", "nft", "swanctl", "unshare", "nsenter", "socat", "dumpcap", "tshark",
                  "wireguard-go")
    return keys.ensure(tmp_path_factory.getbasetemp() / "ran-planes-keys-state")


@pytest.fixture
def make_lab(keys_dir: Path, tmp_path: Path) -> Iterator[Callable[..., netns.Lab]]:
    with lab_factory("rp", tmp_path / "state", keys_dir) as make:
        yield make


@pytest.mark.parametrize("profile_id", ["aes128gcm", "aes256cbc-psk", "nullgmac", "wireguard"])
def test_overlays_on_f1c_f1u_e1(profile_id: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    prof = profiles.get(profile_id, RAN_PLANES)
    if prof.protocol == "ipsec":
        from testbed import datapath
        ok, why = ipsec.libipsec_capable(prof)
        if not ok and not datapath.probe_xfrm_esp()[0]:
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
        assert validity.sas_by_plane(records, prof, RAN_PLANES, lab.values) == {p: [] for p in lab.planes}
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

    from testbed import datapath, tshark
    from tests.conftest import ROOT
    prof = profiles.get("aes128gcm", "f1c")
    if not ipsec.libipsec_capable(prof)[0] and not datapath.probe_xfrm_esp()[0]:
        pytest.skip("no ESP datapath on this host")
    lab = make_lab("f1c", "aes128gcm")
    port = int(lab.values["f1ap_port"])
    rules = subprocess.run(["bash", "-c", f'source scripts/lib/common.sh; plaintext_view_rules tcp {port} 39'],
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
