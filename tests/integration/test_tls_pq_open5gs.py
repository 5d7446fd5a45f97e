"""The post-quantum TLS profiles between real, patched Open5GS NFs built on Debian 13 (OpenSSL 3.5,
libcurl on OpenSSL: the open5gs image's libraries): open5gs-nrfd (server: OGS_SBI_TLS_GROUPS, patch
0001) and open5gs-ausfd (client: OGS_SBI_TLS_CLIENT_GROUPS, patch 0004) in two namespaces, run with
that root's dynamic loader and libraries. The capture must show the profile's group in the
ServerHello and exactly its HelloRetryRequests (the client guesses right, or the server forces one).

Needs root, a Debian 13 Open5GS build of nrfd/ausfd with the patches ($OPEN5GS_PQ_BUILD, default
../ext/open5gs-pq-build) and the Debian 13 root it was built in ($OPEN5GS_PQ_ROOT: a root with
libcurl4t64, libssl3t64 and the build dependencies of images/open5gs/Dockerfile); skips naming them.
docs/overlays/tls.md "Post-quantum groups".
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import ROOT, keys, profiles
from tests.integration.suite_roots import require_root_fs
from tests.integration.tls_support import GROUP_PROFILES, NfLab, nf_lab, open5gs_build, require_netns, shared_keys, wait_pcap
from tls import overlay as tls
from tls import verify as tls_verify

pytestmark = [pytest.mark.netns, pytest.mark.open5gs]

PQ_PROFILES = list(GROUP_PROFILES)
NFS = ("nrf", "ausf")
START_S = 20


@pytest.fixture(scope="module")
def build() -> Path:
    require_netns()
    return open5gs_build("tls", "groups", variable="OPEN5GS_PQ_BUILD", default=ROOT.parent / "ext" / "open5gs-pq-build")


@pytest.fixture(scope="module")
def launcher(build: Path) -> list[str]:
    root = Path(os.environ.get("OPEN5GS_PQ_ROOT", ""))
    lib = root / "usr/lib/x86_64-linux-gnu"
    if not (root / "usr/lib64/ld-linux-x86-64.so.2").is_file() or not (lib / "libcurl.so.4").is_file():
        pytest.skip(f"no Debian 13 root with libcurl4t64 at OPEN5GS_PQ_ROOT={root or '(unset)'}: the root the "
                    "Open5GS build was made in (images/open5gs/Dockerfile's open5gs-build packages)")
    return [str(root / "usr/lib64/ld-linux-x86-64.so.2"), "--library-path", str(lib)]


@pytest.fixture(scope="module")
def mldsa_keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared keys plus ML-DSA-65 ones made with Debian 13's openssl (tls/openssl.sh)."""
    trixie = require_root_fs("tls")
    root = shared_keys()
    bindir = tmp_path_factory.mktemp("bin")
    (bindir / "openssl").write_text(f"#!/bin/sh\nTLS_ROOT={trixie} exec {ROOT}/tls/openssl.sh openssl \"$@\"\n")
    (bindir / "openssl").chmod(0o755)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{bindir}:{old}"
    try:
        from testbed import stack
        keys.ensure_type(root, "mldsa65", list(NFS), stack.load())
    finally:
        os.environ["PATH"] = old
    return root


@pytest.fixture(scope="module")
def lab(build: Path, launcher: list[str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[NfLab]:
    for lab_ in nf_lab(list(NFS), tmp_path_factory.mktemp("tls-pq-open5gs")):
        lab_.launcher = launcher
        yield lab_


@pytest.mark.parametrize("profile_id", PQ_PROFILES)
def test_nf_register_with_the_profiles_group(profile_id: str, build: Path, lab: NfLab, mldsa_keys: Path) -> None:
    root = mldsa_keys
    prof = profiles.get(profile_id, "sbi")
    s = tls.settings(prof)
    v = lab.values
    port = int(v["sbi_port"])
    configs = {nf: lab.config(nf, tls.nf_config_overrides(nf, prof, v, node_key_dir=keys.node_dir(root, nf),
                                                          ca_dir=root / "ca")) for nf in NFS}
    pcap = lab.work / f"{profile_id}.pcapng"
    cap = lab.lab.capture(pcap, f"tcp port {port}")
    try:
        lab.start("nrf", build, configs["nrf"], tls.nf_environment("nrf", prof, v))
        lab.wait_log("nrf", r"NRF initialize\.\.\.done", START_S)
        lab.start("ausf", build, configs["ausf"], tls.nf_environment("ausf", prof, v))
        lab.wait_log("ausf", r"NF registered", START_S)
        line = lab.wait_log("ausf", r"TLS client groups: '([^']*)' \(([^)]*)\)", 1)
        assert line.groups() == (s.offered_groups, "libcurl on OpenSSL applies them"), line.group(0)
        lab.wait_log("ausf", r"OpenSSL/3\.\S+ applies versions and ciphers", 1)
        lab.stop("ausf")
        lab.stop("nrf")
        wait_pcap(pcap, f"tcp.port=={port} && (tcp.flags.fin==1 || tcp.flags.reset==1)", 1, 10)
    finally:
        lab.stop("ausf")
        lab.stop("nrf")
        cap.stop()
    verdict = tls_verify.verify_capture(pcap, prof, "sbi", v)
    assert verdict.valid, verdict.details
    assert f"group {s.group} (0x{s.group_id:04x}), {s.retries} HelloRetryRequest(s)" in verdict.details
    assert f"1 final ServerHello(s), {s.retries} HelloRetryRequest(s)" in verdict.details, verdict.details
