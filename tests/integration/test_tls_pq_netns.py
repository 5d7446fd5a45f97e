"""Post-quantum TLS 1.3 for real: Debian 13's OpenSSL 3.5 (run from its root: TLS_ROOT, tls/openssl.sh)
between two SBI namespaces (the handshake micro-benchmark's boot: tls/bench-server.sh and
tls/rehandshake.sh with the rendered settings, mutual TLS with the testbed certificates, ML-DSA-65
ones for the ML-DSA profile). The capture must show the profile's group in every ServerHello and
exactly the HelloRetryRequests it declares (tls/verify.py); a classical handshake checked as a
post-quantum profile is invalid. libcurl on OpenSSL (the Open5GS client's library in its Debian 13
image) offers the hybrid group through its curves option. docs/overlays/tls.md "Post-quantum groups"."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testbed import handshake_bench, keys, profiles, registry
from tests.conftest import ROOT, require_root, require_tools
from tests.integration.suite_roots import require_root_fs
from tls import overlay as tls
from tls import verify as tls_verify

pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def trixie(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """TLS_ROOT set, an `openssl` from the root first on PATH (ML-DSA certificates in `make keys`)."""
    require_root()
    require_tools("ip", "dumpcap", "tshark", "ss")
    root = require_root_fs("tls")
    bindir = tmp_path_factory.mktemp("bin")
    wrapper = bindir / "openssl"
    wrapper.write_text(f"#!/bin/sh\nTLS_ROOT={root} exec {ROOT}/tls/openssl.sh openssl \"$@\"\n")
    wrapper.chmod(0o755)
    old = {k: os.environ.get(k) for k in ("TLS_ROOT", "PATH")}
    os.environ["TLS_ROOT"] = str(root)
    os.environ["PATH"] = f"{bindir}:{os.environ['PATH']}"
    state = tmp_path_factory.mktemp("state")
    yield {"root": root, "state": state}
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _boot(trixie: dict[str, Any], profile_id: str, tmp_path: Path, count: int = 3) -> dict[str, Any]:
    prof = profiles.get(profile_id, "sbi")
    state = trixie["state"]
    values = handshake_bench.netns.Lab("hsprobe", "sbi", "baseline", state_dir=state).values
    keys_dir = keys.ensure(state, values)
    rec = handshake_bench.boot(prof, "sbi", count, tmp_path, 1, state, keys_dir, values)
    rec["profile"], rec["values"] = prof, values
    return rec


@pytest.mark.parametrize("pid", ["tls13-x25519mlkem768", "tls13-p256mlkem768", "tls13-mlkem768",
                                 "tls13-x25519mlkem768-hrr", "tls13-mldsa-x25519mlkem768", "tls13-x25519"])
def test_group_and_retries_proven_from_the_capture(trixie: dict[str, Any], tmp_path: Path, pid: str) -> None:
    rec = _boot(trixie, pid, tmp_path)
    s = tls.settings(rec["profile"])
    assert rec["valid"], rec["verdict"]
    assert f"group {s.group} (0x{s.group_id:04x}), {s.retries} HelloRetryRequest(s)" in rec["verdict"]
    rows = [r for r in rec["rows"] if r["phase"] == "bench"]
    assert len(rows) == 3, rows
    for r in rows:
        assert r["group"] == f"0x{s.group_id:04x}" and r["hello_retries"] == s.retries, r
        share = {"X25519MLKEM768": 1216, "SecP256r1MLKEM768": 1249, "MLKEM768": 1184, "X25519": 32}[s.group]
        first = "ClientHello2" if s.retries else "ClientHello"
        assert r[f"{first}_bytes"] > share, r          # the key share alone (draft-ietf-tls-ecdhe-mlkem)
        if s.group != "X25519":
            server_share = {"X25519MLKEM768": 1120, "SecP256r1MLKEM768": 1153, "MLKEM768": 1088}[s.group]
            assert r["ServerHello_bytes"] > server_share, r
        if s.retries:
            assert r["HelloRetryRequest_bytes"] > 0 and r["ClientHello_bytes"] < 1216, r


def test_classical_handshake_is_invalid_as_a_post_quantum_profile(trixie: dict[str, Any], tmp_path: Path) -> None:
    rec = _boot(trixie, "tls13-x25519", tmp_path, count=2)
    pcap = tmp_path / rec["pcap"]
    for pq in ("tls13-x25519mlkem768", "tls13-mlkem768"):
        verdict = tls_verify.verify_capture(pcap, profiles.get(pq, "sbi"), "sbi", rec["values"])
        assert not verdict.valid and "ServerHello key_share group(s) 0x001d" in verdict.details, verdict.details


def test_retry_count_is_part_of_the_proof(trixie: dict[str, Any], tmp_path: Path) -> None:
    """The HRR profile's capture is invalid as the one-round-trip profile, and the other way round."""
    hrr = _boot(trixie, "tls13-x25519mlkem768-hrr", tmp_path / "hrr", count=2)
    direct = _boot(trixie, "tls13-x25519mlkem768", tmp_path / "direct", count=2)
    v = tls_verify.verify_capture(tmp_path / "hrr" / hrr["pcap"], profiles.get("tls13-x25519mlkem768", "sbi"),
                                  "sbi", hrr["values"])
    assert not v.valid and "HelloRetryRequest(s), the profile declares 0" in v.details, v.details
    v = tls_verify.verify_capture(tmp_path / "direct" / direct["pcap"],
                                  profiles.get("tls13-x25519mlkem768-hrr", "sbi"), "sbi", direct["values"])
    assert not v.valid and "the profile declares 1" in v.details, v.details


def test_libcurl_on_openssl_offers_the_hybrid_group(trixie: dict[str, Any], tmp_path: Path) -> None:
    """curl --curves (CURLOPT_SSL_EC_CURVES, what patches/open5gs/0004 sets) with X25519 first and
    X25519MLKEM768 second: the server that takes only the hybrid answers with a HelloRetryRequest,
    then negotiates it; the capture proves both (the HRR profile's verdict is valid)."""
    prof = profiles.get("tls13-x25519mlkem768-hrr", "sbi")
    state = trixie["state"]
    lab = handshake_bench.netns.Lab("curlpq", "sbi", "baseline", nodes=["ausf", "nrf"], state_dir=state)
    keys_dir = keys.ensure(state, lab.values)
    pcap = tmp_path / "curl.pcap"
    server = None
    try:
        lab.up(capture=pcap)
        rendered = registry.overlay("tls").render(prof, "sbi", lab.values, keys_dir, tmp_path / "render")
        server = subprocess.Popen(["ip", "netns", "exec", lab.netns("nrf"), "bash", str(ROOT / "tls/bench-server.sh"),
                                   str(rendered["nrf"])], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        kd = keys.node_dir(keys_dir, "ausf")
        argv = ["bash", str(ROOT / "tls/openssl.sh"), "curl", "-sS", "-o", "/dev/null", "--max-time", "10",
                "--tlsv1.3", "--tls13-ciphers", tls.settings(prof).cipher, "--curves", s_groups(prof), "--cacert", str(keys_dir / "ca" / "ca.crt"),
                "--cert", str(kd / "ecdsa.crt"), "--key", str(kd / "ecdsa.key"),
                "--resolve", f"nrf.localdomain:{lab.values['sbi_port']}:{lab.address('nrf')}",
                "-w", "%{http_version}", f"https://nrf.localdomain:{lab.values['sbi_port']}/"]
        for _ in range(50):
            res = lab.exec("ausf", argv, timeout=30)
            if res.returncode not in (7,):              # 7: not listening yet
                break
            lab.exec("ausf", ["sleep", "0.2"])
        # s_server answers a GET without -www with nothing: curl may report an empty reply; the
        # handshake is what counts here
        assert res.returncode in (0, 52, 56), res.stderr
        assert lab.boot_capture is not None
        lab.boot_capture.stop()
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(timeout=10)
        lab.down()
    verdict = tls_verify.verify_capture(pcap, prof, "sbi", lab.values)
    assert verdict.valid, verdict.details
    assert "1 HelloRetryRequest(s)" in verdict.details, verdict.details


def s_groups(prof: profiles.Profile) -> str:
    return tls.settings(prof).offered_groups
