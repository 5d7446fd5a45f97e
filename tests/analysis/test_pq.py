"""The report's post-quantum section (analysis/pq.py) over real handshake-benchmark rows
(tests/data/pq-handshakes/SOURCE.md): intervals over boots, the plug-ins' classical references and
post-quantum flags, the bytes the ML-KEM key exchange adds against the analytic sizes, the seed's
sentence as the paper prints it, and the verdict."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis import pq
from testbed import profiles, registry
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "pq-handshakes"
PAPER = ROOT.parent.parent / "shared" / "papers" / "michaelides2025-network-layer-security-latency.txt"


def test_every_post_quantum_profile_has_a_classical_reference_in_the_catalogue() -> None:
    cat = profiles.load()
    pq_profiles = [p for p in cat.values() if not p.refused and registry.overlay(p.protocol).post_quantum(p)]
    assert {p.protocol for p in pq_profiles} == {"ipsec", "tls", "wireguard"}
    for p in pq_profiles:
        ref_id = registry.overlay(p.protocol).classical_reference(p)
        assert ref_id in cat, (p.id, ref_id)
        ref = cat[ref_id]
        assert ref.protocol == p.protocol and not registry.overlay(ref.protocol).post_quantum(ref), (p.id, ref_id)
        if p.protocol == "ipsec":          # all else equal: planes, ESP, authentication, mode
            assert ref.planes == p.planes and all(ref.params[k] == p.params[k] for k in ("esp", "auth", "mode")), p.id
    assert pq.reference_of("aes128gcm-x25519-mlkem768-psk-trap") == "aes128gcm-x25519-psk-trap"
    assert pq.reference_of("aes128gcm-x25519") is None and pq.reference_of("tls13-x25519") is None


def test_handshake_table_over_boots_with_the_overhead_against_the_reference() -> None:
    hs = pq.load_handshakes(DATA)
    assert set(hs["profile"]) == {"aes128gcm-x25519", "aes128gcm-x25519-mlkem768", "tls13-x25519",
                                  "tls13-x25519mlkem768"}
    assert set(hs["phase"]) == {"bench"}                       # the overlays' own start-up handshakes left out
    tab = pq.with_overhead(pq.handshake_table(hs)).set_index("profile")
    assert (tab["n_boots"] == 5).all() and (tab["n_samples"] == 100).all()
    assert tab.loc["aes128gcm-x25519-mlkem768", "post_quantum"] and not tab.loc["aes128gcm-x25519", "post_quantum"]
    # the hybrid's IKE_INTERMEDIATE carries the ML-KEM-768 encapsulation key (1,184 B) in 2 fragments
    assert tab.loc["aes128gcm-x25519-mlkem768", "IKE_INTERMEDIATE_request_packets"] == 2
    assert tab.loc["aes128gcm-x25519-mlkem768", "IKE_INTERMEDIATE_request_udp_bytes"] > 1184
    ipsec_added = tab.loc["aes128gcm-x25519-mlkem768", "ip_bytes_overhead"]
    assert 1184 + 1088 < ipsec_added < 1184 + 1088 + 600, ipsec_added     # key + ciphertext + IKE headers
    # TLS: the hybrid key shares (1,216 B client, 1,120 B server) instead of X25519's 32 B; OpenSSL's
    # classical ClientHello also carries ec_point_formats (8 B: an EC group is offered), the hybrid's not
    assert tab.loc["tls13-x25519mlkem768", "ClientHello_bytes"] - tab.loc["tls13-x25519", "ClientHello_bytes"] == 1184 - 8
    assert tab.loc["tls13-x25519mlkem768", "ServerHello_bytes"] - tab.loc["tls13-x25519", "ServerHello_bytes"] == 1088
    assert pd_isnan(tab.loc["tls13-x25519", "ms_overhead"]) and tab.loc["tls13-x25519mlkem768", "ms_overhead_ci"] > 0


def pd_isnan(x: object) -> bool:
    return x != x


def test_seed_sentence_is_the_papers() -> None:
    if not PAPER.is_file():
        pytest.skip(f"the paper's text is not at {PAPER} (the project's shared papers)")
    text = " ".join(PAPER.read_text(encoding="utf-8").split())
    assert pq.SEED_SENTENCE.strip('"') in text
    assert "section 7" in pq.SEED_SOURCE and re.search(r"^7\b|\n7 ", PAPER.read_text(encoding="utf-8"), re.M)


def test_section_has_table_figure_analytic_sizes_and_verdict(tmp_path: Path) -> None:
    text = pq.markdown_section(DATA, tmp_path)
    assert text.startswith("## Post-quantum key exchange") and pq.SEED_SENTENCE in text
    assert (tmp_path / "fig-pq-handshakes.png").is_file() and (tmp_path / "pq-handshakes.csv").is_file()
    assert "| ML-KEM-768 | encapsulation key / ciphertext | 1184 | 1088 |" in text
    assert "IKEv2 KE payload, ML-KEM-768 (IKE_INTERMEDIATE)" in text and "TLS key share X25519MLKEM768" in text
    assert "Rosenpass InitHello / RespHello" in text            # every plug-in's rows, asked through the contract
    verdict = text.split("### Verdict", 1)[1]
    assert "aes128gcm-x25519-mlkem768 (ipsec)" in verdict and "against aes128gcm-x25519 (5 boots)" in verdict
    assert "tls13-x25519mlkem768 (tls)" in verdict and "against tls13-x25519" in verdict
    assert "No run-sbi runs of post-quantum profiles" in verdict          # says what is missing


def test_nothing_to_say_without_runs(tmp_path: Path) -> None:
    assert pq.markdown_section(tmp_path, tmp_path / "out") == ""
