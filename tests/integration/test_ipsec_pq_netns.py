"""Post-quantum IKEv2 for real: strongSwan 6 (Debian sid's, run from its root: IPSEC_ROOT) between two
namespaces on N3 with every key exchange of the catalogue's `pq` part. The capture from before the
first packet must show the profile's key exchange (ipsec/ike_sas.py): IKE_SA_INIT's method and, for a
hybrid, the IKE_INTERMEDIATE exchange at least as large as the ML-KEM key and ciphertext; a
classical handshake checked as a post-quantum profile is invalid. The host's strongSwan 5.9.8 is
refused naming the version. docs/overlays/ipsec.md "Post-quantum key exchange"."""
from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from ipsec import ike_sas
from ipsec import overlay as ipsec
from testbed import netns, profiles, registry
from tests.conftest import ROOT, require_root, require_tools
from tests.integration.suite_roots import require_root_fs

pytestmark = pytest.mark.netns


@pytest.fixture
def sid_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    require_root()
    require_tools("ip", "dumpcap", "tshark", "nft")
    root = require_root_fs("ipsec")
    monkeypatch.setenv("IPSEC_ROOT", str(root))
    return root


def _lab(profile: str, state: Path) -> netns.Lab:
    return netns.Lab(f"pq{secrets.token_hex(3)}", "n3", profile, nodes=["gnb", "upf"], state_dir=state)


def _run(profile: str, tmp_path: Path, rekey: bool = False) -> tuple[netns.Lab, Path, str]:
    lab = _lab(profile, tmp_path / "state")
    pcap = tmp_path / f"{profile}.pcap"
    try:
        lab.up(timeout=120, capture=pcap)
        ping = lab.exec("gnb", ["ping", "-c", "2", "-W", "3", lab.address("upf")])
        assert ping.returncode == 0, ping.stdout + ping.stderr
        if rekey:            # the CHILD_SA's PFS: CREATE_CHILD_SA (+ IKE_FOLLOWUP_KE for the extra KE)
            res = lab.exec("gnb", ["swanctl", "--rekey", "--child", "upf"])
            assert res.returncode == 0, res.stderr
            lab.exec("gnb", ["sleep", "1"])
        sas = lab.exec("gnb", ["swanctl", "--list-sas"]).stdout
        lab.exec("gnb", ["ping", "-c", "1", "-W", "3", lab.address("upf")])
        assert lab.boot_capture is not None
        lab.boot_capture.stop()
    finally:
        lab.down()
    return lab, pcap, sas


@pytest.mark.parametrize("ke", ["x25519-mlkem768", "x25519-mlkem1024", "mlkem768", "x25519"])
def test_key_exchange_negotiated_and_proven_from_the_capture(sid_root: Path, tmp_path: Path, ke: str) -> None:
    prof = profiles.get(f"aes128gcm-{ke}", "n3")
    lab, pcap, sas = _run(prof.id, tmp_path)
    assert ipsec.expected_ike(prof) in sas, sas            # the daemon's word: e.g. .../CURVE_25519/KE1_ML_KEM_768
    assert ipsec.check_sas(sas, prof) == [], sas
    verdict = registry.overlay("ipsec").verify_capture(pcap, prof, "n3", lab.values)
    assert verdict.valid, verdict.details
    done = [sa for sa in ike_sas.read(pcap) if sa.complete]
    assert len(done) == 1, [sa.record() for sa in done]
    rec = done[0].record()
    hybrid = "-mlkem" in ke and ke.startswith("x25519")
    assert ("IKE_INTERMEDIATE_request_packets" in rec) == hybrid, rec
    init = done[0].msg(34, False)
    assert init is not None
    if hybrid:
        ek, ct = ike_sas.KE_SIZES[ike_sas.KE_METHODS[ke.split("-")[1]]]
        assert rec["IKE_INTERMEDIATE_request_udp_bytes"] >= ek and rec["IKE_INTERMEDIATE_response_udp_bytes"] >= ct
        assert init.ke_method == 31 and init.ke_bytes == 32           # X25519 in IKE_SA_INIT
        if ke.endswith("1024"):                                       # 1,568 B + headers > 1280: RFC 7383 fragments
            assert rec["IKE_INTERMEDIATE_request_packets"] >= 2 and rec["IKE_INTERMEDIATE_response_packets"] >= 2
    elif ke == "mlkem768":
        assert (init.ke_method, init.ke_bytes) == (36, 1184)
        resp = done[0].msg(34, True)
        assert resp is not None and (resp.ke_method, resp.ke_bytes) == (36, 1088)


def test_classical_handshake_is_invalid_as_a_post_quantum_profile(sid_root: Path, tmp_path: Path) -> None:
    """The X25519 reference's capture, judged as the hybrid and as ML-KEM alone, is invalid with the reason."""
    lab, pcap, _ = _run("aes128gcm-x25519", tmp_path)
    ov = registry.overlay("ipsec")
    for pq in ("aes128gcm-x25519-mlkem768", "aes128gcm-mlkem768"):
        verdict = ov.verify_capture(pcap, profiles.get(pq, "n3"), "n3", lab.values)
        assert not verdict.valid, verdict.details
        assert "IKE_INTERMEDIATE" in verdict.details or "KE method X25519" in verdict.details, verdict.details
    assert ov.verify_capture(pcap, profiles.get("aes128gcm-x25519", "n3"), "n3", lab.values).valid


def test_child_sa_rekey_uses_the_hybrid_for_pfs(sid_root: Path, tmp_path: Path) -> None:
    """With PFS the CHILD_SA's rekey runs CREATE_CHILD_SA with X25519 and IKE_FOLLOWUP_KE (RFC 9370) with
    ML-KEM-768, and the new CHILD_SA lists both methods."""
    prof = profiles.get("aes128gcm-x25519-mlkem768", "n3")
    lab, pcap, sas = _run(prof.id, tmp_path, rekey=True)
    assert "ESP:AES_GCM_16-128/CURVE_25519/KE1_ML_KEM_768" in sas, sas
    assert ipsec.check_sas(sas, prof) == [], sas
    exchanges = {k[0] for sa in ike_sas.read(pcap) for k in sa.messages}
    assert {36, 44} <= exchanges, exchanges


def _host_too_old(monkeypatch: pytest.MonkeyPatch) -> None:
    require_root()
    require_tools("ip", "dumpcap", "swanctl", "tshark", "nft")
    monkeypatch.setenv("IPSEC_ROOT", "")
    have = ipsec.charon_version()
    if have is None or tuple(map(int, have.split(".")[:3])) >= (6, 0, 2):
        pytest.skip(f"the host's strongSwan is {have}: nothing to refuse, no root to take")


def test_host_strongswan_is_refused_naming_the_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without IPSEC_ROOT and without a root made, a charon older than the profile's floor stops the
    entrypoint before it starts, naming `make pq-roots`."""
    _host_too_old(monkeypatch)
    monkeypatch.setenv("G5TB_ROOTS", str(tmp_path / "no-roots"))
    lab = _lab("aes128gcm-x25519-mlkem768", tmp_path / "state")
    with pytest.raises(netns.LabError, match=r"needs strongSwan >= 6\.0\.2.*this charon is 5\..*`sudo make pq-roots`"):
        lab.up(timeout=30)


def test_the_made_root_is_taken_without_ipsec_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30 §3: after `make pq-roots`, the post-quantum profile runs with no IPSEC_ROOT given: the
    lab takes the made root's strongSwan for it (ipsec/overlay.py lab_environment)."""
    _host_too_old(monkeypatch)
    root = require_root_fs("ipsec")
    monkeypatch.setenv("IPSEC_ROOT", "")      # require_root_fs read it; the lab must find the root itself
    prof = profiles.get("aes128gcm-x25519-mlkem768", "n3")
    lab, pcap, sas = _run(prof.id, tmp_path)
    assert ipsec.expected_ike(prof) in sas, sas
    assert f"strongSwan from IPSEC_ROOT={root}" in lab.log_path("gnb").read_text(errors="replace")


def test_suite_root_script_is_shellcheck_clean() -> None:
    require_tools("shellcheck")
    for f in ("scripts/suite-root.sh", "ipsec/entrypoint.sh", "ipsec/rehandshake.sh"):
        res = subprocess.run(["shellcheck", str(ROOT / f)], capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stdout
