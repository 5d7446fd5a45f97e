"""IPsec overlay end to end in network namespaces: the very entrypoint and renderings the
containers use, with real charon/swanctl, nftables, ping, dumpcap and tshark.

Every start-mode profile is negotiated on the N3 rendering (gnb<->upf, certificates: the
only N3 auth) and on the SBI rendering (ausf<->nrf, one channel of the map, certificates and
PSK): IKE completes, `swanctl --list-sas` shows exactly the catalogue's algorithms, a ping
crosses, the bridge capture shows ESP (or ESP-in-UDP with kernel-libipsec) and no plaintext
ICMP, verify_capture agrees. Plus: an ESP proposal mismatch fails with NO_PROPOSAL_CHOSEN,
the fail-closed filter, the full SBI channel map, and the trap modes (kernel ESP only).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ipsec import datapath as ipsec_datapath
from testbed import ROOT, channels, keys, netns, profiles, ran, stack
from ipsec import overlay as ipsec
from tests.conftest import ipsec_param, require_root, require_tools
from tests.integration.labs import lab_factory

pytestmark = pytest.mark.netns

VALUES = ran.restrict(stack.load(), "ueransim")   # the nodes the default RAN runs (testbed/ran)
# the classical start profiles; those that need a newer strongSwan (the post-quantum part of the
# catalogue: min_strongswan) run in test_ipsec_pq_netns.py
START_PROFILES = [p for p in profiles.load().values()
                  if p.protocol == "ipsec" and p.params["mode"] == "start" and not p.params.get("min_strongswan")]
N3_CASES = [ipsec_param(p.id, p.id) for p in START_PROFILES if "n3" in p.planes]
SBI_CASES = [ipsec_param(p.id, p.id) for p in START_PROFILES if "sbi" in p.planes]
SBI_PAIR = ["ausf", "nrf"]


def _libipsec_sends_acquires() -> str | None:
    """The charon version when it is one whose kernel-libipsec sends acquires for trap policies
    (5.9.11 and later: the entrypoint then allows trap modes on userspace ESP), else None."""
    v = ipsec.charon_version()
    return v if v and tuple(int(x) for x in v.split(".")[:3]) >= (5, 9, 11) else None


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_root()
    require_tools("openssl", "wg", "ip", "nft", "swanctl", "unshare", "nsenter", "ping", "dumpcap", "tshark")
    # one state dir for every IPsec test module of the session (keys.ensure is idempotent)
    return keys.ensure(tmp_path_factory.getbasetemp() / "ipsec-keys-state")


@pytest.fixture
def make_lab(keys_dir: Path, tmp_path: Path) -> Iterator[Callable[..., netns.Lab]]:
    with lab_factory("ipsec", tmp_path / "state", keys_dir, up_timeout=45) as make:
        yield make


def _esp_line(text: str, child: str) -> str:
    m = re.search(rf"^  {child}: #\d+, reqid \d+, INSTALLED, (TUNNEL(?:-in-UDP)?), ESP:(\S+)", text, flags=re.M)
    assert m, f"no INSTALLED CHILD_SA {child} in:\n{text}"
    return m.group(2)


def _expected_esp(prof: profiles.Profile) -> str:
    # profiles.yaml writes `encryption: NULL`, which YAML reads as null: swanctl prints NULL
    enc, integ = prof.params["esp_encryption"] or "NULL", prof.params["esp_integrity"]
    return enc + (f"/{integ}" if integ else "")


def _datapath_line(lab: netns.Lab, node: str) -> str:
    line = lab.ready(node) or ""
    assert re.fullmatch(r"datapath: ipsec=(kernel|libipsec)", line), line
    return line.split("=")[1]


def _negotiate_ping_capture(lab: netns.Lab, a: str, b: str, tmp_path: Path) -> None:
    prof = lab.profile
    for node, peer in ((a, b), (b, a)):
        sas = lab.exec(node, ["swanctl", "--list-sas"], check=True).stdout
        assert _esp_line(sas, peer) == _expected_esp(prof), sas
        ike = re.search(r"^  (\S+/PRF\S+)$", sas, flags=re.M)
        assert ike and ike.group(1) == ipsec.expected_ike(prof), sas
        assert sas.count("INSTALLED") == 1, "exactly one CHILD_SA per pair (one side initiates)"
        # the validity step's own reading of the daemon's SAs (testbed/validity.py) agrees, and
        # refuses them for any other ESP proposal
        assert ipsec.check_sas(sas, prof) == [], sas
        other = next(p for p in START_PROFILES if p.params["esp_proposal"] != prof.params["esp_proposal"])
        assert any("negotiated, profile wants" in p for p in ipsec.check_sas(sas, other)), sas
    kind = _datapath_line(lab, a)
    pcap = tmp_path / f"{lab.name}.pcap"
    with lab.capture(pcap):
        ping = lab.exec(a, ["ping", "-c", "3", "-i", "0.2", "-W", "2", lab.address(b)])
        assert ping.returncode == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
    verdict = ipsec.verify_capture(pcap, prof, lab.plane, VALUES, nodes=[a, b])
    assert verdict.valid, verdict.details
    assert verdict.protected_packets >= 6 and verdict.plaintext_packets == 0
    # the wire form follows the datapath: plain ESP on the kernel, ESP-in-UDP (NAT-T) on libipsec
    form = "ESP-in-UDP/4500: 0" if kind == "kernel" else "ip.proto 50: 0"
    assert form in verdict.details, verdict.details


def _require_datapath_for(profile_id: str) -> None:
    ok, why = ipsec.libipsec_capable(profiles.get(profile_id))
    if not ok and not ipsec_datapath.probe_xfrm_esp()[0]:
        pytest.skip(f"kernel xfrm ESP datapath missing on this host and {why}")


@pytest.mark.parametrize("profile_id", N3_CASES)
def test_n3_start_profile(profile_id: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    _require_datapath_for(profile_id)
    lab = make_lab("n3", profile_id)
    assert lab.nodes == ["gnb", "upf"]
    _negotiate_ping_capture(lab, "gnb", "upf", tmp_path)


@pytest.mark.parametrize("profile_id", SBI_CASES)
def test_sbi_start_profile(profile_id: str, make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    _require_datapath_for(profile_id)
    lab = make_lab("sbi", profile_id, SBI_PAIR)
    _negotiate_ping_capture(lab, *SBI_PAIR, tmp_path)


def test_esp_proposal_mismatch_fails_clearly(make_lab: Callable[..., netns.Lab]) -> None:
    lab = make_lab("sbi", "aes128gcm", SBI_PAIR, up=False, profile_overrides={"nrf": "aes256cbc"})
    t0 = time.monotonic()
    with pytest.raises(netns.LabError) as err:
        lab.up(timeout=30)
    assert "NO_PROPOSAL_CHOSEN" in str(err.value) or "no acceptable proposal" in str(err.value), str(err.value)
    assert "same PROFILE" in str(err.value)
    assert time.monotonic() - t0 < 25, "a mismatch must fail fast, not at the deadline"


def test_fail_closed_when_charon_dies(make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """Kill the initiator's charon: the nftables filter drops the plaintext ping."""
    lab = make_lab("n3", "aes128gcm")
    pid = lab.exec("gnb", ["cat", "/run/charon.pid"], check=True).stdout.strip()
    lab.exec("gnb", ["kill", "-KILL", pid], check=True)
    pcap = tmp_path / "closed.pcap"
    with lab.capture(pcap):
        ping = lab.exec("gnb", ["ping", "-c", "2", "-i", "0.2", "-W", "1", lab.address("upf")])
    assert ping.returncode != 0
    verdict = ipsec.verify_capture(pcap, lab.profile, "n3", VALUES)
    assert verdict.plaintext_packets == 0, verdict.details
    counters = lab.exec("gnb", ["nft", "list", "table", "netdev", "testbed_ipsec_egress"], check=True).stdout
    assert re.search(r"counter packets [1-9]", counters), counters


# a UDP sender as the gNB's GTP-U is one (nr-gnb aborts on the first failed sendto): how many of its
# datagrams the kernel took, and the error of the first it refused
_SENDTO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sent = 0
for i in range(20):
    try:
        s.sendto(b"GTP-U in the clear? %d" % i, (sys.argv[1], 2152))
        sent += 1
    except OSError as exc:
        print(f"sent {sent}, then {exc.strerror} ({exc.errno})")
        sys.exit(1)
print(f"sent {sent}")
"""


def test_fail_closed_returns_no_error_to_the_sender(make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """The fail-closed filter turned the gNB's GTP-U sendto into EPERM and nr-gnb died (issue 22.13):
    a drop in the output path hands EPERM to the socket. With the overlay gone the datagrams are
    now dropped where the sender never hears of it (the devices' egress hook): sendto succeeds,
    nothing crosses in the clear, the filter counts them."""
    import sys
    lab = make_lab("n3", "aes128gcm")
    pid = lab.exec("gnb", ["cat", "/run/charon.pid"], check=True).stdout.strip()
    lab.exec("gnb", ["kill", "-KILL", pid], check=True)
    pcap = tmp_path / "closed.pcap"
    with lab.capture(pcap):
        res = lab.exec("gnb", [sys.executable, "-c", _SENDTO, lab.address("upf")])
    assert res.returncode == 0 and res.stdout.strip() == "sent 20", res.stdout + res.stderr
    verdict = ipsec.verify_capture(pcap, lab.profile, "n3", VALUES)
    assert verdict.plaintext_packets == 0, verdict.details
    out = tshark_count(pcap, "udp.port == 2152")
    assert out == 0, f"{out} plaintext GTP-U datagrams on the wire"
    counters = lab.exec("gnb", ["nft", "list", "table", "netdev", "testbed_ipsec_egress"], check=True).stdout
    assert sum(int(n) for n in re.findall(r"counter packets (\d+)", counters)) >= 20, counters


def tshark_count(pcap: Path, display_filter: str) -> int:
    res = subprocess.run(["tshark", "-r", str(pcap), "-Y", display_filter, "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, check=True)
    return len(res.stdout.split())


def test_full_sbi_channel_map(make_lab: Callable[..., netns.Lab], tmp_path: Path) -> None:
    """All SBI endpoints at once: every host pair of the map has its CHILD_SA (and exactly the
    map's pairs run IKE_SA_INIT on the wire, read back by channels-seen); a pair outside the
    map (amf<->bsf) gets none and its traffic is dropped, never sent in the clear."""
    lab = make_lab("sbi", "aes128gcm-psk", up=False)
    lab.up(timeout=90, capture=tmp_path / "boot.pcap")
    assert lab.boot_capture is not None
    boot = lab.boot_capture.stop()
    seen, unknown = channels.seen_pairs(boot, "sbi", VALUES)
    assert seen == channels.pairs("sbi") and unknown == []
    assert channels.diff(seen, "sbi").ok
    for node in lab.nodes:
        sas = lab.exec(node, ["swanctl", "--list-sas"], check=True).stdout
        for peer in channels.partners(node):
            assert _esp_line(sas, peer) == "AES_GCM_16-128"
    pcap = tmp_path / "sbi.pcap"
    with lab.capture(pcap):
        ok = lab.exec("pcf", ["ping", "-c", "2", "-i", "0.2", lab.address("bsf")])
        blocked = lab.exec("amf", ["ping", "-c", "1", "-W", "1", lab.address("bsf")])
    assert ok.returncode == 0 and blocked.returncode != 0
    verdict = ipsec.verify_capture(pcap, lab.profile, "sbi", VALUES)
    assert verdict.valid, verdict.details
    seen, _ = channels.seen_pairs(pcap, "sbi", VALUES)
    assert ("amf", "bsf") not in seen


def test_nullgmac_refused_on_libipsec(make_lab: Callable[..., netns.Lab]) -> None:
    """NULL-GMAC on a host without kernel ESP: the entrypoint names the missing datapath."""
    if ipsec_datapath.probe_xfrm_esp()[0]:
        pytest.skip("kernel has xfrm ESP: NULL-GMAC runs in test_n3_start_profile[nullgmac]")
    lab = make_lab("n3", "nullgmac", up=False)
    with pytest.raises(netns.LabError, match="needs the kernel xfrm ESP datapath"):
        lab.up(timeout=20)


def test_trap_mode_refused_on_libipsec(make_lab: Callable[..., netns.Lab]) -> None:
    """Where only kernel-libipsec exists the entrypoint says why trap cannot work."""
    if ipsec_datapath.probe_xfrm_esp()[0]:
        pytest.skip("kernel has xfrm ESP: the trap tests below run instead")
    if v := _libipsec_sends_acquires():
        pytest.skip(f"strongSwan {v}'s kernel-libipsec sends acquires: trap modes run (test_trap_mode_on_libipsec_where_it_sends_acquires)")
    lab = make_lab("sbi", "aes128gcm-trap", SBI_PAIR, up=False)
    with pytest.raises(netns.LabError, match="sends no acquires"):
        lab.up(timeout=20)


def test_libipsec_trap_really_sends_no_acquire(make_lab: Callable[..., netns.Lab],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The reason the entrypoint refuses trap on libipsec, checked on this strongSwan: with the
    refusal overridden, the trap policies are installed, yet a ping triggers no IKE_SA and is
    lost (dropped by the fail-closed filter, never sent in the clear)."""
    if ipsec_datapath.probe_xfrm_esp()[0]:
        pytest.skip("kernel has xfrm ESP: the trap tests below run instead")
    if v := _libipsec_sends_acquires():
        pytest.skip(f"strongSwan {v}'s kernel-libipsec sends acquires (5.9.11 on): nothing to refuse")
    monkeypatch.setenv("IPSEC_ALLOW_LIBIPSEC_TRAP", "1")
    lab = make_lab("sbi", "aes128gcm-trap", SBI_PAIR)
    assert "nrf/nrf, TUNNEL" in lab.exec("ausf", ["swanctl", "--list-pols", "--trap"], check=True).stdout
    ping = lab.exec("ausf", ["ping", "-c", "2", "-i", "0.3", "-W", "1", lab.address("nrf")])
    assert ping.returncode != 0
    assert "ESTABLISHED" not in lab.exec("ausf", ["swanctl", "--list-sas"], check=True).stdout
    assert "acquire" not in lab.log_path("ausf").read_text().lower()


def _child_sa_up_and_carrying(lab: netns.Lab) -> None:
    """After the first packet of a trap mode: ausf's CHILD_SA comes up within 10 s and carries pings."""
    deadline = time.monotonic() + 10
    while "INSTALLED" not in lab.exec("ausf", ["swanctl", "--list-sas"]).stdout:
        assert time.monotonic() < deadline, "the first packet did not trigger the CHILD_SA"
        time.sleep(0.1)
    again = lab.exec("ausf", ["ping", "-c", "2", "-i", "0.2", lab.address("nrf")])
    assert again.returncode == 0, again.stdout


@pytest.mark.kernel("xfrm-esp")
@pytest.mark.parametrize("mode,first_lost", [("trap-drop", True), ("trap-queue", False), ("trap", True)])
def test_trap_modes_on_kernel_esp(mode: str, first_lost: bool, make_lab: Callable[..., netns.Lab]) -> None:
    """First packet triggers IKE. trap-drop/trap: the kernel drops it while IKE runs;
    trap-queue (xfrm_larval_drop=0): it is queued and delivered. The kernel xfrm ESP datapath
    only: the trap modes' kernel behaviour (xfrm_larval_drop) cannot be checked on libipsec."""
    suffix = {"trap": "-trap", "trap-drop": "-trap-drop", "trap-queue": "-trap-queue"}[mode]
    lab = make_lab("sbi", f"aes128gcm{suffix}", SBI_PAIR)
    assert _datapath_line(lab, "ausf") == "kernel"
    sas = lab.exec("ausf", ["swanctl", "--list-sas"]).stdout
    assert "INSTALLED" not in sas, "trap mode: no CHILD_SA before the first packet"
    first = lab.exec("ausf", ["ping", "-c", "1", "-W", "3", lab.address("nrf")])
    assert (first.returncode != 0) == first_lost, first.stdout
    _child_sa_up_and_carrying(lab)
    larval = lab.exec("ausf", ["cat", "/proc/sys/net/core/xfrm_larval_drop"]).stdout.strip()
    assert larval == ("0" if mode == "trap-queue" else "1")


def test_trap_mode_on_libipsec_where_it_sends_acquires(make_lab: Callable[..., netns.Lab]) -> None:
    """strongSwan 5.9.11 and later (the tools image's compiled one): kernel-libipsec sends acquires
    for trap policies, so the entrypoint lets trap modes run on userspace ESP, and the first packet
    to the peer brings the CHILD_SA up."""
    if ipsec_datapath.probe_xfrm_esp()[0]:
        pytest.skip("kernel has xfrm ESP: test_trap_modes_on_kernel_esp runs instead")
    if not _libipsec_sends_acquires():
        pytest.skip(f"strongSwan {ipsec.charon_version()}'s kernel-libipsec sends no acquires (5.9.11 and later "
                    "do): run with IPSEC_ROOT=<a root with the tools image's strongSwan>")
    lab = make_lab("sbi", "aes128gcm-trap", SBI_PAIR)
    assert _datapath_line(lab, "ausf") == "libipsec"
    assert "INSTALLED" not in lab.exec("ausf", ["swanctl", "--list-sas"]).stdout, "no CHILD_SA before the first packet"
    lab.exec("ausf", ["ping", "-c", "1", "-W", "3", lab.address("nrf")])
    _child_sa_up_and_carrying(lab)


def test_lab_down_is_idempotent(make_lab: Callable[..., netns.Lab]) -> None:
    lab = make_lab("n3", "baseline")
    assert set(netns.existing_namespaces()) >= {lab.hub, lab.netns("gnb"), lab.netns("upf")}
    ping = lab.exec("gnb", ["ping", "-c", "1", "-W", "5", lab.address("upf")])
    assert ping.returncode == 0, "baseline lab: plain connectivity"
    lab.down()
    lab.down()
    assert not {lab.hub, lab.netns("gnb")} & set(netns.existing_namespaces())
    assert os.path.exists(lab.dir) and not (lab.dir / "lab.json").exists()


def test_sigterm_tears_the_overlay_down(make_lab: Callable[..., netns.Lab]) -> None:
    """SIGTERM to the entrypoint: charon stops (SAs gone), ready file removed, exit 0 logged;
    the fail-closed filter stays with the namespace."""
    lab = make_lab("n3", "aes128gcm")
    pid = lab.pids["upf"]
    ready = Path(f"/proc/{pid}/root/run/testbed/overlay-ready")
    assert ready.is_file()
    charon = lab.exec("upf", ["cat", "/run/charon.pid"], check=True).stdout.strip()
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while netns._alive(pid):
        assert time.monotonic() < deadline, "entrypoint still running 10 s after SIGTERM"
        time.sleep(0.05)
    assert not netns._alive(int(charon)), "charon survived the entrypoint's teardown"
    log = lab.log_path("upf").read_text()
    assert "SIGTERM: tearing the IPsec overlay down" in log and "ERROR" not in log
    rules = subprocess.run(["ip", "netns", "exec", lab.netns("upf"), "nft", "list", "table", "inet", "testbed_ipsec"],
                           capture_output=True, text=True)
    assert rules.returncode == 0 and "counter" in rules.stdout
    ping = subprocess.run(["ip", "netns", "exec", lab.netns("upf"), "ping", "-c", "1", "-W", "1", lab.address("gnb")],
                          capture_output=True, text=True)
    assert ping.returncode != 0, "after teardown nothing of the plane passes in the clear"


def test_the_responder_follows_the_stack_timeout_when_its_initiator_starts_late(
        make_lab: Callable[..., netns.Lab], keys_dir: Path, tmp_path: Path) -> None:
    """`make run-sbi PROFILE=aes128gcm` in the guest: ausf's holder gave up after its fixed 60 s
    (READY_TIMEOUT of overlay.env, from its own start: `not ready within 60s: no INSTALLED
    CHILD_SA ... for amf`) while amf's holder started about 50 s after it. Here upf (the
    responder: gnb sorts first and initiates) has a READY_TIMEOUT of 3 s and the stack's 40 s
    (STACK_UP_TIMEOUT, what up.sh's deadline gives the holders); gnb starts 6 s later: both
    come up. Without the stack's deadline the 3 s still hold (a lone holder is not kept waiting)."""
    from tests.integration.labs import Entrypoint
    entrypoint = ROOT / "ipsec" / "entrypoint.sh"
    dirs = ipsec.render(profiles.get("aes128gcm", "n3"), "n3", VALUES, keys_dir, tmp_path / "render", ["gnb", "upf"])
    for node in ("gnb", "upf"):
        env_file = dirs[node] / "overlay.env"
        env_file.write_text(re.sub(r"(?m)^READY_TIMEOUT=.*$", "READY_TIMEOUT=3", env_file.read_text()))
    lab = make_lab("n3", "baseline", ["gnb", "upf"])          # namespaces without an overlay
    alone = subprocess.run(["ip", "netns", "exec", lab.netns("upf"), str(entrypoint), "--private-run",
                            str(dirs["upf"])], capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "STACK_UP_TIMEOUT"})
    assert alone.returncode == 1 and "not ready within 3s" in alone.stderr, alone.stderr[-1500:]
    upf = Entrypoint(lab, "upf", entrypoint, dirs["upf"], STACK_UP_TIMEOUT="40")
    gnb = None
    try:
        time.sleep(6)
        assert upf.running(), "the responder gave up before its stack's deadline: " + upf.stop()[-1500:]
        gnb = Entrypoint(lab, "gnb", entrypoint, dirs["gnb"], STACK_UP_TIMEOUT="40")
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if "datapath: ipsec=" in upf.output() and "datapath: ipsec=" in gnb.output():
                break
            assert upf.running() and gnb.running(), upf.stop()[-1500:] + gnb.stop()[-1500:]
            time.sleep(0.2)
        else:
            pytest.fail("not ready within 40 s of the late start: " + upf.output()[-1500:] + gnb.output()[-1500:])
    finally:
        upf.stop()
        if gnb is not None:
            gnb.stop()
