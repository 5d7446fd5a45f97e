"""Patch 0003 with real NFs: open5gs-nrfd (TLS server, OpenSSL) and open5gs-ausfd (TLS client,
libcurl-gnutls) write their key logs when OGS_SBI_TLS_KEYLOG is set (what the keylog render
dimension sets, testbed/keylog/plugin.py); the server's key log alone decrypts the capture,
and the decrypted per-operation table is the one of the same NFs run without TLS.

Needs root and a patched Open5GS build ($OPEN5GS_BUILD, docs/patches.md); skips otherwise.
"""
from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from analysis import decrypt
from analysis.parse import sbi_ops
from testbed import keys, profiles
from testbed.keylog.plugin import KeylogDimension
from tls import overlay as tls
from tests.integration.tls_support import NfLab, nf_lab, open5gs_build, require_netns, shared_keys

pytestmark = [pytest.mark.netns, pytest.mark.open5gs]

NFS = ("nrf", "ausf")
START_S = 15


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANALYSIS_CACHE", "off")


@pytest.fixture(scope="module")
def build() -> Path:
    require_netns()
    return open5gs_build("tls", "keylog")


@pytest.fixture(scope="module")
def lab(build: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NfLab]:
    yield from nf_lab(list(NFS), tmp_path_factory.mktemp("tls-keylog"))


def _register(lab: NfLab, build: Path, name: str, profile_id: str | None) -> tuple[Path, dict[str, Path]]:
    """NRF + AUSF (NFRegister, subscriptions), stopped; the capture and each NF's key log."""
    root = shared_keys()
    v = lab.values
    prof = profiles.get(profile_id, "sbi") if profile_id else None
    logs = {nf: lab.work / f"{name}-{nf}-keys.log" for nf in NFS}
    configs, envs = {}, {}
    for nf in NFS:
        if prof is None:
            configs[nf], envs[nf] = lab.config(nf), {}
            continue
        configs[nf] = lab.config(nf, tls.nf_config_overrides(nf, prof, v, node_key_dir=keys.node_dir(root, nf),
                                                             ca_dir=root / "ca"))
        dim_env = KeylogDimension().nf_environment(nf, prof, v)
        assert dim_env == {"OGS_SBI_TLS_KEYLOG": "/run/open5gs/tls-keys.log"}
        envs[nf] = {**tls.nf_environment(nf, prof, v), "OGS_SBI_TLS_KEYLOG": str(logs[nf])}
    pcap = lab.work / f"{name}.pcapng"

    def key_log_opened() -> None:
        if prof is not None:
            lab.wait_log("ausf", r"TLS key log: \S+ \(mode 0600", 1)

    lab.register(build, configs, envs, pcap, key_log_opened, START_S)
    return pcap, logs


def _lines(path: Path, label: str) -> set[str]:
    return {ln.split()[1].lower() for ln in path.read_text().splitlines() if ln.startswith(label + " ")}


@pytest.mark.parametrize("profile_id", ["tls13-aes128gcm", "tls12-aes128gcm"])
def test_server_key_log_decrypts_the_sbi(profile_id: str, build: Path, lab: NfLab) -> None:
    clear_pcap, _ = _register(lab, build, f"clear-{profile_id}", None)
    tls_pcap, logs = _register(lab, build, profile_id, profile_id)
    for nf, path in logs.items():
        assert path.is_file() and path.stat().st_size > 0, f"{nf} wrote no key log"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, oct(path.stat().st_mode)
    # TLS 1.3: 5 secrets per session; TLS 1.2: one CLIENT_RANDOM; the GnuTLS client logs the same
    # sessions as the OpenSSL server
    label = "CLIENT_TRAFFIC_SECRET_0" if profile_id.startswith("tls13") else "CLIENT_RANDOM"
    assert _lines(logs["ausf"], label) and _lines(logs["ausf"], label) == _lines(logs["nrf"], label)
    clear = sbi_ops.requests(clear_pcap)
    assert sbi_ops.requests(tls_pcap) == []
    # as the analysis reads it: the plug-in's Decryption, the SBI port decoded as TLS by port (left
    # to tshark's heuristic, an AUSF client port that another dissector registers lost every
    # operation under load in CI: analysis/parse/sbi_ops.py Decode.carrier)
    decode = decrypt.for_files({"tls": [logs["nrf"]]})
    assert decode.carrier == "tls"
    decrypted = sbi_ops.requests(tls_pcap, decode, ports=[int(lab.values["sbi_port"])])
    ops = [r["operation"] for r in decrypted]
    assert ops[0] == "PUT /nnrf-nfm/v1/nf-instances/{id}", ops
    # the same NFs without TLS send the same operations in the same order (heartbeats aside:
    # how many fall into the run is timing)
    core = [o for o in ops if "PATCH" not in o]
    assert core == [r["operation"] for r in clear if r["method"] != "PATCH"], (core, clear)
    assert all(r["status"] for r in decrypted if r["method"] != "DELETE")
