"""Every TLS profile with the real openssl CLI: the rendered OpenSSL configuration makes
s_server and s_client negotiate exactly the profile's version and suite, with mutual
certificate verification (testbed.keys certificates); a client without a certificate and a
client offering only another suite are refused. Then a loopback capture in a namespace
checks verify_capture on real handshakes.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import keys, profiles, stack
from tls import overlay as tls
from tls import verify as tls_verify
from tests.conftest import require_tools
from tests.integration.tls_support import require_netns, shared_keys, wait_pcap

# the classical profiles: the post-quantum ones (hybrid groups, ML-DSA certificates) need OpenSSL >= 3.5
# and run in tests/integration/test_tls_pq_netns.py with the Debian 13 root's; this host's openssl may
# be older (Debian 12: 3.0), where make keys makes no ML-DSA key
ALL_TLS_PROFILES = [p for p in profiles.names("sbi") if profiles.get(p).protocol == "tls"]
TLS_PROFILES = [p for p in ALL_TLS_PROFILES if not tls.settings(profiles.get(p, "sbi")).post_quantum]
SERVER, CLIENT = "nrf", "ausf"
REQUEST = b"GET / HTTP/1.0\r\n\r\n"
OK_LINE = "HTTP/1.0 200 ok"
OFFER_ALL = ["-cipher", "ALL", "-ciphersuites", ":".join(c for c in tls.SUITE_IDS if c.startswith("TLS_"))]
OTHER_SUITE = {"1.2": ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"),
               "1.3": ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """openssl s_server -www with the profile's OPENSSL_CONF, requiring a verified client cert."""

    def __init__(self, root: Path, s: tls.TlsSettings, conf: Path, work: Path,
                 netns: str | None = None, host: str = "127.0.0.1", port: int | None = None) -> None:
        self.port = port or _free_port()
        self.host = host
        node = keys.node_dir(root, SERVER)
        argv = ["openssl", "s_server", "-accept", f"{host}:{self.port}", "-www",
                "-cert", str(node / f"{s.cert}.crt"), "-key", str(node / f"{s.cert}.key"),
                "-CAfile", f"{keys.ca_prefix(root, s.cert)}.crt", "-Verify", "1", "-verify_return_error"]
        if netns:
            argv = ["ip", "netns", "exec", netns] + argv
        self.log = work / f"s_server-{self.port}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, env={**os.environ, "OPENSSL_CONF": str(conf)}, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while "ACCEPT" not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"s_server did not start: {self.log.read_text(errors='replace')}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def client(root: Path, s: tls.TlsSettings, port: int, conf: Path | None, *, cert: bool = True,
           extra: list[str] | None = None, netns: str | None = None, host: str = "127.0.0.1") -> str:
    """One s_client connection sending an HTTP request; returns its stdout+stderr."""
    node = keys.node_dir(root, CLIENT)
    argv = ["openssl", "s_client", "-connect", f"{host}:{port}", "-CAfile", f"{keys.ca_prefix(root, s.cert)}.crt",
            "-verify_return_error", "-verify_hostname", stack.fqdn(SERVER), "-ign_eof"]
    if cert:
        argv += ["-cert", str(node / f"{s.cert}.crt"), "-key", str(node / f"{s.cert}.key")]
    argv += extra or []
    if netns:
        argv = ["ip", "netns", "exec", netns] + argv
    env = dict(os.environ)
    if conf is None:
        env.pop("OPENSSL_CONF", None)
    else:
        env["OPENSSL_CONF"] = str(conf)
    res = subprocess.run(argv, input=REQUEST, capture_output=True, env=env, timeout=20, check=False)
    return (res.stdout + res.stderr).decode(errors="replace")


def _negotiated(out: str) -> tuple[str | None, str | None]:
    proto = re.search(r"^\s*Protocol\s*:\s*(\S+)", out, flags=re.M)
    cipher = re.search(r"^\s*Cipher\s*:\s*(\S+)", out, flags=re.M)
    return (proto.group(1) if proto else None, cipher.group(1) if cipher else None)


@pytest.fixture(scope="module")
def root() -> Path:
    require_tools("openssl")
    return shared_keys()


@pytest.mark.parametrize("profile_id", TLS_PROFILES)
def test_profile_negotiates_exactly_its_version_and_suite(profile_id: str, root: Path, tmp_path: Path) -> None:
    prof = profiles.get(profile_id, "sbi")
    s = tls.settings(prof)
    conf = tmp_path / "openssl.cnf"
    conf.write_text(tls.openssl_conf(s, prof.id), encoding="utf-8")
    server = Server(root, s, conf, tmp_path)
    try:
        # both ends configured (the testbed), then a client that offers every suite of
        # TLS 1.2 and 1.3: the server's configuration alone decides, as the patched Open5GS
        # server does for its GnuTLS clients
        for client_conf, extra in ((conf, []), (None, OFFER_ALL)):
            out = client(root, s, server.port, client_conf, extra=extra)
            assert _negotiated(out) == (s.openssl_version, s.cipher), out[-2000:]
            assert "Verify return code: 0 (ok)" in out, out[-2000:]
            assert OK_LINE in out, f"mutual TLS failed: {out[-2000:]}"

        # no client certificate: refused by the server (verify_client)
        out = client(root, s, server.port, None, cert=False)
        assert OK_LINE not in out, out[-2000:]
        assert re.search(r"alert (certificate required|handshake failure)|peer did not return a certificate",
                         out + server.log.read_text(errors="replace")), out[-2000:]

        # a client that offers only another suite of the same version: no common suite
        other = next(c for c in OTHER_SUITE[s.version] if c != s.cipher)
        opt = ["-ciphersuites", other] if s.version == "1.3" else ["-cipher", other, "-no_tls1_3"]
        out = client(root, s, server.port, None, extra=opt)
        assert OK_LINE not in out and _negotiated(out)[1] in (None, "0000"), out[-2000:]
    finally:
        server.stop()


def test_rendered_conf_matches_the_patch_variables() -> None:
    """The OpenSSL file and the NF environment carry the same settings."""
    for pid in ALL_TLS_PROFILES:
        s = tls.settings(profiles.get(pid))
        conf = tls.openssl_conf(s, pid)
        env = tls.tls_environment(s)
        assert f"MinProtocol = {s.openssl_version}\nMaxProtocol = {s.openssl_version}\n" in conf
        assert env[tls.ENV_MIN_VERSION] == env[tls.ENV_MAX_VERSION] == s.version
        key, env_key = ("CipherString", tls.ENV_CIPHERS) if s.version == "1.2" else ("Ciphersuites", tls.ENV_CIPHERSUITES)
        assert f"{key} = {s.cipher}\n" in conf and env[env_key] == s.cipher


# --- verify_capture on real handshakes --------------------------------------------------------

@pytest.fixture
def loop_ns() -> Iterator[str]:
    require_netns()
    name = f"tls-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
        for pid in pids:
            subprocess.run(["kill", pid], check=False)
        subprocess.run(["ip", "netns", "delete", name], check=False)


@pytest.mark.netns
@pytest.mark.parametrize("profile_id", ["tls12-ecdsa-aes256ccm", "tls13-rsa-chacha20"])
def test_verify_capture_on_a_loopback_capture(profile_id: str, root: Path, loop_ns: str, tmp_path: Path) -> None:
    values = stack.load()
    port = int(values["sbi_port"])
    prof = profiles.get(profile_id, "sbi")
    s = tls.settings(prof)
    conf = tmp_path / "openssl.cnf"
    conf.write_text(tls.openssl_conf(s, prof.id), encoding="utf-8")
    pcap = tmp_path / "lo.pcapng"
    cut = tmp_path / "lo-512.pcapng"           # the same traffic with the snaplen the drivers once used
    caps = [subprocess.Popen(["ip", "netns", "exec", loop_ns, "dumpcap", "-q", "-i", "lo", *snap,
                              "-f", f"tcp port {port}", "-w", str(path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for path, snap in ((pcap, []), (cut, ["-s", "512"]))]
    try:
        deadline = time.monotonic() + 10
        while not all(p.exists() and p.stat().st_size > 0 for p in (pcap, cut)):
            assert all(c.poll() is None for c in caps) and time.monotonic() < deadline, "dumpcap did not start"
            time.sleep(0.05)
        server = Server(root, s, conf, tmp_path, netns=loop_ns, port=port)
        try:
            for _ in range(2):
                out = client(root, s, port, conf, netns=loop_ns, extra=["-alpn", "h2"])
                assert OK_LINE in out, out[-2000:]
            # the request goes out before the capture may have been live: count until both
            # connections' ServerHellos and closes are in the files
            for path in (pcap, cut):
                wait_pcap(path, f"tcp.port=={port} && tcp.flags.fin==1", 4, 15)
        finally:
            server.stop()
    finally:
        for c in caps:
            c.terminate()
            c.wait(timeout=10)
    verdict = tls_verify.verify_capture(pcap, prof, "sbi", values)
    assert verdict.valid, verdict.details
    assert verdict.plaintext_packets == 0 and verdict.protected_packets >= 8, verdict.details
    assert "2 connection(s), 2 seen from the SYN, 2 final ServerHello(s), 0 HelloRetryRequest(s)" in verdict.details
    assert "0 truncated" in verdict.details

    # the same exchange cut at 512 B: truncated frames are unknown, never cleartext HTTP/2
    # (this was every real TLS run's verdict: "N packet(s) of cleartext HTTP/2", all cut frames)
    truncated = tls_verify.verify_capture(cut, prof, "sbi", values)
    assert truncated.plaintext_packets == 0, truncated.details
    assert "cleartext HTTP/2" not in truncated.details.split("INVALID")[-1], truncated.details
    assert re.search(r"[1-9]\d* truncated \(unknown\)", truncated.details), truncated.details

    other = "tls13-ecdsa-aes256gcm" if s.version == "1.2" else "tls12-rsa-chacha20"
    wrong = tls_verify.verify_capture(pcap, profiles.get(other), "sbi", values)
    assert not wrong.valid and "another version/suite" in wrong.details, wrong.details
    assert "client not pinned" in wrong.details, wrong.details

    # only the encrypted records (as a capture that began after the connections): no connection
    # start is seen, so the version and suite cannot be proven: invalid, never skipped
    warm = tmp_path / "warm.pcapng"
    subprocess.run(["tshark", "-r", str(pcap), "-d", f"tcp.port=={port},tls",
                    "-Y", "tls.app_data && !tls.handshake.type", "-w", str(warm)],
                   check=True, capture_output=True)
    late = tls_verify.verify_capture(warm, prof, "sbi", values)
    assert not late.valid and late.protected_packets >= 4 and late.plaintext_packets == 0, late.details
    assert "no connection seen from its SYN" in late.details and "0 seen from the SYN" in late.details
    assert tls_verify.verify_capture(warm, prof, "sbi", values, require_start=False).valid


def _tls13_setup(tmp_path: Path) -> tuple[dict, int, profiles.Profile, tls.TlsSettings, Path]:
    """The stack values, SBI port, tls13-ecdsa-aes256gcm profile, its settings and OpenSSL file."""
    values = stack.load()
    prof = profiles.get("tls13-ecdsa-aes256gcm", "sbi")
    s = tls.settings(prof)
    conf = tmp_path / "openssl.cnf"
    conf.write_text(tls.openssl_conf(s, prof.id), encoding="utf-8")
    return values, int(values["sbi_port"]), prof, s, conf


@contextlib.contextmanager
def _captured_server(root: Path, s: tls.TlsSettings, conf: Path, work: Path, netns: str, port: int,
                     pcap: Path) -> Iterator[None]:
    """A whole-packet capture of the SBI port on the namespace's loopback, then s_server; both
    stopped on leaving."""
    cap = subprocess.Popen(["ip", "netns", "exec", netns, "dumpcap", "-q", "-i", "lo", "-f", f"tcp port {port}",
                            "-w", str(pcap)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not (pcap.exists() and pcap.stat().st_size > 0):
            assert cap.poll() is None and time.monotonic() < deadline, "dumpcap did not start"
            time.sleep(0.05)
        server = Server(root, s, conf, work, netns=netns, port=port)
        try:
            yield
        finally:
            server.stop()
    finally:
        cap.terminate()
        cap.wait(timeout=10)


@pytest.mark.netns
def test_hello_retry_request_is_not_the_final_server_hello(root: Path, loop_ns: str, tmp_path: Path) -> None:
    """A client whose first key share is a group the server does not take gets a
    HelloRetryRequest; the verdict skips it and judges the final ServerHello."""
    values, port, prof, s, conf = _tls13_setup(tmp_path)
    client_conf = tmp_path / "client.cnf"                     # same pins, but X25519 first in Groups
    client_conf.write_text(conf.read_text().replace(f"Groups = {tls.GROUPS}", f"Groups = X25519:{tls.GROUPS}"))
    pcap = tmp_path / "hrr.pcapng"
    with _captured_server(root, s, conf, tmp_path, loop_ns, port, pcap):
        out = client(root, s, port, client_conf, netns=loop_ns)
        assert OK_LINE in out, out[-2000:]
        wait_pcap(pcap, f"tcp.port=={port} && tcp.flags.fin==1", 2, 15)
    verdict = tls_verify.verify_capture(pcap, prof, "sbi", values)
    assert "1 final ServerHello(s), 1 HelloRetryRequest(s)" in verdict.details, verdict.details
    # the profile declares no groups: the details must not claim a retry count it never checked
    assert "HelloRetryRequests not pinned (the profile declares no groups)" in verdict.details, verdict.details
    assert "HelloRetryRequest(s) per connection" not in verdict.details, verdict.details
    assert verdict.valid, verdict.details


def _raw_connection(netns: str, port: int, payload: bytes) -> bytes:
    """A plain TCP client in the namespace: sends `payload` (maybe nothing), half-closes, and
    returns what the server answered before it closed."""
    code = ("import socket, sys\n"
            f"s = socket.create_connection(('127.0.0.1', {port}), timeout=10)\n"
            f"s.sendall({payload!r})\n"
            "s.shutdown(socket.SHUT_WR)\n"
            "data = b''\n"
            "while chunk := s.recv(4096):\n"
            "    data += chunk\n"
            "sys.stdout.buffer.write(data)\n")
    res = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", code], capture_output=True,
                         timeout=30, check=True)
    return res.stdout


@pytest.mark.netns
def test_a_client_that_sends_nothing_is_neither_plaintext_nor_proof(root: Path, loop_ns: str,
                                                                     tmp_path: Path) -> None:
    """A client that connects and closes before its ClientHello (seen in the emulated guest,
    docs/vm-check.md section 10: the server answers its FIN with a TLS decode_error alert) sent
    nothing: the run stays valid and the connection is counted apart. A client that sends
    cleartext still makes the run invalid, and a capture holding only the empty connection proves
    nothing."""
    values, port, prof, s, conf = _tls13_setup(tmp_path)
    pcap = tmp_path / "mixed.pcapng"
    with _captured_server(root, s, conf, tmp_path, loop_ns, port, pcap):
        out = client(root, s, port, conf, netns=loop_ns)                  # tcp.stream 0: TLS
        assert OK_LINE in out, out[-2000:]
        alert = _raw_connection(loop_ns, port, b"")                        # tcp.stream 1: nothing
        assert alert[:1] == b"\x15", f"s_server answered the empty connection with {alert!r}"
        _raw_connection(loop_ns, port, REQUEST)                            # tcp.stream 2: cleartext
        wait_pcap(pcap, f"tcp.port=={port} && tcp.flags.fin==1", 6, 15)

    def only(streams: str) -> Path:
        out = tmp_path / f"streams-{streams.replace(',', '-')}.pcapng"
        wanted = " || ".join(f"tcp.stream == {i}" for i in streams.split(","))   # tshark 4.0 to 4.4
        subprocess.run(["tshark", "-r", str(pcap), "-Y", wanted, "-w", str(out)], check=True, capture_output=True)
        return out

    mixed = tls_verify.verify_capture(pcap, prof, "sbi", values)
    assert not mixed.valid, mixed.details
    assert "1 connection(s) that do not start with a TLS ClientHello (tcp.stream 2)" in mixed.details
    assert "1 closed by the client before its ClientHello (tcp.stream 1)" in mixed.details

    clean = tls_verify.verify_capture(only("0,1"), prof, "sbi", values)
    assert clean.valid, clean.details
    assert ("2 connection(s), 1 seen from the SYN, 1 closed by the client before its ClientHello "
            "(tcp.stream 1), 1 final ServerHello(s)") in clean.details, clean.details

    empty = tls_verify.verify_capture(only("1"), prof, "sbi", values)
    assert not empty.valid and "no connection seen from its SYN" in empty.details, empty.details
