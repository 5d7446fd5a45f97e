"""Every TLS profile between real, patched Open5GS NFs: open5gs-nrfd (TLS server) and
open5gs-ausfd (TLS client: NFRegister, subscriptions) in two namespaces of a lab on the
stack's SBI addresses, with configurations from the stack renderer + the TLS overlay's
overrides and the overlay's environment; the capture on the bridge must show the profile's
version and suite in every ServerHello and no cleartext HTTP/2 (tls.verify_capture).

Needs root and a patched Open5GS build ($OPEN5GS_BUILD, docs/patches.md); skips otherwise.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import keys, profiles
from tls import overlay as tls
from tls import verify as tls_verify
from tests.integration.tls_support import GROUP_PROFILES, NfLab, nf_lab, open5gs_build, require_netns, shared_keys

pytestmark = [pytest.mark.netns, pytest.mark.open5gs]

# the post-quantum and X25519 profiles need the client on OpenSSL: test_tls_pq_open5gs.py
TLS_PROFILES = [p for p in profiles.names("sbi") if profiles.get(p).protocol == "tls" and p not in GROUP_PROFILES]
NFS = ("nrf", "ausf")
START_S = 15          # deadline for an NF's start-up / the AUSF's registration


@pytest.fixture(scope="module")
def build() -> Path:
    require_netns()
    return open5gs_build("tls")


@pytest.fixture(scope="module")
def lab(build: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NfLab]:
    yield from nf_lab(list(NFS), tmp_path_factory.mktemp("tls-open5gs"))


@pytest.mark.parametrize("profile_id", TLS_PROFILES)
def test_nf_register_over_the_profiles_tls(profile_id: str, build: Path, lab: NfLab) -> None:
    root = shared_keys()
    prof = profiles.get(profile_id, "sbi")
    s = tls.settings(prof)
    v = lab.values
    configs = {nf: lab.config(nf, tls.nf_config_overrides(nf, prof, v, node_key_dir=keys.node_dir(root, nf),
                                                          ca_dir=root / "ca"))
               for nf in NFS}
    pcap = lab.work / f"{profile_id}.pcapng"

    def knobs_applied() -> None:
        knobs = lab.wait_log("ausf", r"TLS knobs: versions (\S+)\.\.(\S+), ", 1)
        assert knobs.groups() == (s.version, s.version)
        # the libcurl-gnutls client takes the priority string: it offers the profile's suite only
        lab.wait_log("ausf", r"GnuTLS/\S+ applies versions and the gnutls priority", 1)

    lab.register(build, configs, {nf: tls.nf_environment(nf, prof, v) for nf in NFS}, pcap, knobs_applied, START_S)
    verdict = tls_verify.verify_capture(pcap, prof, "sbi", v)
    assert verdict.valid, verdict.details
    assert "1 seen from the SYN, 1 final ServerHello(s)" in verdict.details, verdict.details
    assert verdict.protected_packets >= 4 and verdict.plaintext_packets == 0
    for nf in NFS:
        # no error while running (a request in flight at SIGTERM may log one on the way out)
        running = lab.log(nf).read_text(errors="replace").split("SIGTERM received")[0]
        assert "ERROR" not in running and "FATAL" not in running, running[-2000:]
