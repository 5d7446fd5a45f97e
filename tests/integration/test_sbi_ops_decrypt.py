"""The per-operation SBI table of protected traffic, decrypted with the key material the run itself
exports, equals the cleartext table of the same exchange, operation for operation.

- TLS 1.3: nghttpd (OpenSSL) and curl (OpenSSL, ALPN h2) on the loopback of a fresh namespace;
  curl writes the NSS key log (SSLKEYLOGFILE), tshark decrypts with it;
- IPsec: real strongSwan between two namespaces of the lab (testbed/netns.py; kernel ESP or, on
  this host, kernel-libipsec: ESP-in-UDP), the ESP SAs read from charon's key log in the holder
  (ipsec/keylog.py) and handed to tshark's esp_sa table;
each against the same exchange without the overlay (cleartext HTTP/2). No mock anywhere.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from analysis import decrypt, sbi_breakdown
from analysis.parse import sbi_ops
from analysis.results import Run, load_run
from testbed import keys, netns, profiles, tshark
from ipsec import keylog as esp
from ipsec import overlay as ipsec
from tests.conftest import require_root, require_tools
from tests.integration import h2_exchange as h2
from tests.integration.labs import lab_factory

pytestmark = pytest.mark.netns


def _run_dir(tmp_path: Path, protocol: str, capture: Path, keyfiles: dict[str, Path]) -> Run:
    """A run directory as run-sbi KEYS=1 leaves it (manifest, the SBI capture, the key files of
    iteration 1), read back the way the analysis reads runs."""
    d = tmp_path / f"run-{protocol}"
    d.mkdir()
    shutil.copy(capture, d / "it01-sbi.pcap")
    files = [{"path": "it01-sbi.pcap", "kind": "pcap", "iface": "sbi", "purpose": "validation", "iteration": 1}]
    for name, (kind, path) in {n: (n.split("-")[0], p) for n, p in keyfiles.items()}.items():
        shutil.copy(path, d / name)
        (d / name).chmod(0o600)
        files.append({"path": name, "kind": "keylog", "protocol": kind, "iteration": 1})
    (d / "manifest.json").write_text(json.dumps({
        "experiment": "sbi", "profile": "p", "protocol": protocol, "plane": "sbi", "state": "complete",
        "valid": True, "datapath": {"userspace": True}, "parameters": {"keys": 1}, "files": files}))
    return load_run(d)


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANALYSIS_CACHE", "off")       # every table from its own tshark pass


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_root()
    require_tools("nghttpd", "curl", "dumpcap", "tshark", "ss", "openssl")
    return keys.ensure(tmp_path_factory.getbasetemp() / "sbi-ops-keys-state")


# client ports within Linux's ephemeral range that tshark gives to another dissector (EtherNet/IP,
# EtherCAT): a connection from one is read as that protocol unless the server's port is decoded by
# port (a TLS connection from 34980 went unread in CI when the test left TLS to tshark's heuristic)
CLAIMED_PORTS = {False: 44818, True: 34980}


def _loopback_exchange(fresh_netns: str, tmp_path: Path, name: str, keys_root: Path,
                       tls: bool) -> tuple[Path, Path | None, list[str]]:
    """(capture, key log or None, status codes) of the exchange on the namespace's loopback."""
    import subprocess
    subprocess.run(["ip", "-n", fresh_netns, "link", "set", "lo", "up"], check=True)
    work = tmp_path / name
    work.mkdir()
    pcap, keylog = work / "lo.pcap", (work / "keys.log" if tls else None)
    node = keys_root / "nodes" / "nrf"
    server = h2.start_server(work, fresh_netns, "127.0.0.1",
                             (node / "ecdsa.key", node / "ecdsa.crt") if tls else None)
    cap = netns.start_dumpcap(fresh_netns, "lo", pcap, work / "dumpcap.log")
    try:
        codes = h2.send(fresh_netns, "nrf.localdomain", "127.0.0.1",
                        tls_ca=keys_root / "ca" / "ca.crt" if tls else None, keylog=keylog,
                        local_ports=[None, None, CLAIMED_PORTS[tls]])
    finally:
        cap.stop()
        server.terminate()
        server.wait(timeout=10)
    return pcap, keylog, codes


def test_tls13_h2_decrypted_equals_cleartext(fresh_netns: str, keys_dir: Path, tmp_path: Path) -> None:
    clear_pcap, _, clear_codes = _loopback_exchange(fresh_netns, tmp_path, "clear", keys_dir, tls=False)
    tls_pcap, keylog, tls_codes = _loopback_exchange(fresh_netns, tmp_path, "tls", keys_dir, tls=True)
    assert clear_codes == tls_codes
    assert keylog is not None and keylog.stat().st_size > 0
    # the protected exchange is TLS 1.3 (ServerHello) with ALPN h2 offered (ClientHello; the
    # server's choice travels encrypted in TLS 1.3), and unreadable without the key log
    # (nghttpd's OpenSSL may answer curl's first key share with a HelloRetryRequest: two per connection)
    as_tls = ["-d", f"tcp.port=={h2.PORT},tls"]
    server = tshark.fields(tls_pcap, "tls.handshake.type == 2",
                           ["tcp.stream", "tls.handshake.extensions.supported_version"], extra=as_tls)
    client = tshark.fields(tls_pcap, "tls.handshake.type == 1", ["tls.handshake.extensions_alpn_str"], extra=as_tls)
    assert len({h[0] for h in server}) == len(h2.REQUESTS) and all(h[1] == "0x0304" for h in server), server
    assert all(c[0].split(",")[0] == "h2" for c in client), client
    assert sbi_ops.requests(tls_pcap) == [], "no HTTP/2 readable without the key log"
    clear = sbi_ops.requests(clear_pcap)         # the preface's connections, and the claimed port's by detection
    decode = sbi_ops.Decode(prefs={"tls.keylog_file": str(keylog)}, inputs=(keylog,), label="tls", carrier="tls")
    decrypted = sbi_ops.requests(tls_pcap, decode, ports=[h2.PORT])
    # left to tshark's heuristic, the connection from the claimed port is lost
    heuristic = sbi_ops.requests(tls_pcap, sbi_ops.Decode(prefs=decode.prefs, inputs=decode.inputs, label="tls"))
    assert len(heuristic) == len(h2.REQUESTS) - 1 and str(CLAIMED_PORTS[True]) not in {str(r["client_port"]) for r in heuristic}
    assert len(clear) == len(h2.REQUESTS)
    h2.assert_same(decrypted, clear)
    assert [r["operation"] for r in clear][:2] == ["PUT /nnrf-nfm/v1/nf-instances/{id}",
                                                 "POST /nausf-auth/v1/ue-authentications"]
    assert all(r["ns_response"] > r["ns_request"] for r in decrypted)
    # the same from a run directory, as the results-tree analysis reads it
    run = _run_dir(tmp_path, "tls", tls_pcap, {"tls-keys.log": keylog})
    plan = decrypt.plan(run, run.files("pcap")[0])
    assert plan.status == "decrypted (TLS key log)" and plan.decode is not None
    h2.assert_same(sbi_ops.requests(run.files("pcap")[0].path, plan.decode, ports=[h2.PORT]), clear)
    # as the results-tree analysis reads it (one pass, the SBI port 7777 left to TLS + ALPN)
    rows, status = sbi_breakdown.read_capture(run, run.files("pcap")[0])
    assert status == plan.status
    h2.assert_same(rows, clear)


@pytest.fixture
def make_lab(keys_dir: Path, tmp_path: Path) -> Iterator[Callable[..., netns.Lab]]:
    require_tools("swanctl", "nft", "ip", "unshare", "nsenter")
    with lab_factory("sbiops", tmp_path / "state", keys_dir, up_timeout=60) as make:
        yield make


def _lab_exchange(lab: netns.Lab, tmp_path: Path) -> tuple[Path, list[str]]:
    """The exchange AUSF -> NRF across the lab's SBI bridge, captured on the bridge."""
    work = tmp_path / lab.name
    work.mkdir()
    server = h2.start_server(work, lab.netns("nrf"), lab.address("nrf"))
    pcap = work / "sbi.pcap"
    try:
        with lab.capture(pcap):
            codes = h2.send(lab.netns("ausf"), "nrf.localdomain", lab.address("nrf"))
    finally:
        server.terminate()
        server.wait(timeout=10)
    return pcap, codes


@pytest.mark.parametrize("profile", ["aes128gcm", "aes256cbc"])
def test_esp_decrypted_equals_cleartext(make_lab: Callable[..., netns.Lab], tmp_path: Path, profile: str) -> None:
    ok, why = ipsec.libipsec_capable(profiles.get(profile))
    assert ok, why
    base = make_lab("sbi", "baseline", nodes=["ausf", "nrf"])
    clear_pcap, clear_codes = _lab_exchange(base, tmp_path)
    lab = make_lab("sbi", profile, nodes=["ausf", "nrf"])
    esp_pcap, esp_codes = _lab_exchange(lab, tmp_path)
    assert esp_codes == clear_codes
    # the SAs as the holders know them, read at the end (both ends log every SA of the pair)
    logs = {n: lab.exec(n, ["cat", ipsec.KEYS_LOG], check=True).stdout for n in ("ausf", "nrf")}
    sas = {n: esp.parse(text.splitlines()) for n, text in logs.items()}
    assert all(len(s) == 2 for s in sas.values()), sas          # one CHILD_SA: inbound + outbound
    assert {(s.spi, s.src, s.dst, s.encryption_key) for s in sas["ausf"]} == \
           {(s.spi, s.src, s.dst, s.encryption_key) for s in sas["nrf"]}, "both ends agree on every SA"
    spis_on_wire = {int(v, 16) for row in tshark.fields(esp_pcap, "esp", ["esp.spi"]) for v in row[0].split(",")}
    assert spis_on_wire <= {s.spi for s in sas["ausf"]}, (spis_on_wire, sas)
    assert sbi_ops.requests(esp_pcap) == [], "no HTTP/2 readable without the SAs"
    # one end's log is enough
    args, skipped = esp.uat_args(sas["nrf"])
    assert not skipped
    decode = sbi_ops.Decode(prefs=esp.PREFS, extra=tuple(args), label="esp")
    decrypted = sbi_ops.requests(esp_pcap, decode)
    clear = sbi_ops.requests(clear_pcap)
    assert len(clear) == len(h2.REQUESTS)
    h2.assert_same(decrypted, clear)
    assert {(r["client"], r["server"]) for r in decrypted} == {(lab.address("ausf"), lab.address("nrf"))}
    # the same from a run directory holding both holders' key logs
    for n, text in logs.items():
        (tmp_path / f"{n}.log").write_text(text)
    run = _run_dir(tmp_path, "ipsec", esp_pcap, {f"esp-keys-{n}.log": tmp_path / f"{n}.log" for n in logs})
    plan = decrypt.plan(run, run.files("pcap")[0])
    assert plan.status == "decrypted (ESP, 2 SA(s))", plan.status
    h2.assert_same(sbi_ops.requests(run.files("pcap")[0].path, plan.decode, ports=[h2.PORT]), clear)
    rows, status = sbi_breakdown.read_capture(run, run.files("pcap")[0])
    assert status == plan.status
    h2.assert_same(rows, clear)
    assert {(r["client_nf"], r["server_nf"]) for r in rows} == {("ausf", "nrf")}
    assert os.environ.get("ANALYSIS_CACHE") == "off"
