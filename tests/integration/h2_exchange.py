"""A real HTTP/2 exchange shaped like the SBI, for the decryption tests: nghttpd (nghttp2's server,
Debian's nghttp2-server) answers, curl (HTTP/2, cleartext with prior knowledge or TLS with ALPN
h2) sends the requests an AMF, an AUSF and a UDM send in one registration (paths of Open5GS
v2.7.7), one connection per request. The same exchange runs cleartext and protected, so its
decrypted table can be set against the cleartext one operation for operation."""
from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

PORT = 7777
# (method, path, JSON body or None): paths as Open5GS sends them
REQUESTS: list[tuple[str, str, dict[str, object] | None]] = [
    ("PUT", "/nnrf-nfm/v1/nf-instances/38c9ca6c-610c-41ee-b951-973e863a8887",
     {"nfInstanceId": "38c9ca6c-610c-41ee-b951-973e863a8887", "nfType": "AUSF", "nfStatus": "REGISTERED"}),
    ("POST", "/nausf-auth/v1/ue-authentications",
     {"supiOrSuci": "suci-0-001-01-0000-0-0-0000000001", "servingNetworkName": "5G:mnc001.mcc001.3gppnetwork.org"}),
    ("POST", "/nudm-ueau/v1/suci-0-001-01-0000-0-0-0000000001/security-information/generate-auth-data",
     {"servingNetworkName": "5G:mnc001.mcc001.3gppnetwork.org", "ausfInstanceId": "38c9ca6c"}),
    ("GET", "/nudm-sdm/v2/imsi-001010000000001/am-data?plmn-id=%7B%22mcc%22%3A%22001%22%7D", None),
    ("PATCH", "/nnrf-nfm/v1/nf-instances/38c9ca6c-610c-41ee-b951-973e863a8887",
     {"op": "replace", "path": "/nfStatus", "value": "REGISTERED"}),
]


def ns_prefix(netns: str | None) -> list[str]:
    return ["ip", "netns", "exec", netns] if netns else []


def start_server(workdir: Path, netns: str | None, address: str, tls: tuple[Path, Path] | None = None
                 ) -> subprocess.Popen[bytes]:
    """nghttpd on address:PORT (echoing uploads, so PUT/POST/PATCH answers carry a body), TLS
    with (key, cert) when given; returns once it listens."""
    htdocs = workdir / "htdocs"
    htdocs.mkdir(exist_ok=True)
    argv = [*ns_prefix(netns), "nghttpd", "--echo-upload", "-d", str(htdocs), "-a", address, str(PORT)]
    argv += [str(tls[0]), str(tls[1])] if tls else ["--no-tls"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(workdir / "nghttpd.log", "ab"))  # noqa: SIM115
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = subprocess.run([*ns_prefix(netns), "ss", "-Htln", f"sport = :{PORT}"], capture_output=True, text=True)
        if out.stdout.strip():
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"nghttpd did not listen on {address}:{PORT}: {(workdir / 'nghttpd.log').read_text()}")


def send(netns: str | None, host: str, address: str, tls_ca: Path | None = None,
         keylog: Path | None = None, local_ports: Sequence[int | None] = ()) -> list[str]:
    """Every request of REQUESTS with curl, one connection each; the HTTP status codes.
    `local_ports`: the client port of each request in turn (None or past the end: the kernel's)."""
    codes = []
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    if keylog is not None:
        env["SSLKEYLOGFILE"] = str(keylog)
    for i, (method, path, body) in enumerate(REQUESTS):
        scheme = "https" if tls_ca else "http"
        argv = [*ns_prefix(netns), "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", method,
                "--resolve", f"{host}:{PORT}:{address}", "--max-time", "10"]
        argv += ["--http2", "--cacert", str(tls_ca)] if tls_ca else ["--http2-prior-knowledge"]
        if i < len(local_ports) and local_ports[i] is not None:
            argv += ["--local-port", str(local_ports[i])]
        if body is not None:
            argv += ["-H", "content-type: application/json", "--data-binary", json.dumps(body)]
        argv.append(f"{scheme}://{host}:{PORT}{path}")
        res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"curl {method} {path}: exit {res.returncode}: {res.stderr.strip()}")
        codes.append(res.stdout.strip())
    return codes


def comparable(rows: Sequence[dict[str, object]]) -> list[tuple[object, ...]]:
    """What must be equal between the cleartext and the decrypted table of the same exchange:
    per request in order, method, path, operation, status, server port, HTTP/2 stream id, the
    request's bytes, and whether it was answered (times and client ports differ by nature; the
    response's bytes by up to DATE_SLACK: assert_same)."""
    return [(r["method"], r["path"], r["operation"], r["status"], r["server_port"], r["stream_id"],
             r["request_bytes"], r["ns_response"] is not None) for r in rows]


# nghttpd answers with a `date` header, HPACK Huffman-coded: its digits take 5 or 6 bits each, so
# the same response is a byte or two longer or shorter from one second to the next (CI saw 184
# against 185)
DATE_SLACK = 2


def assert_same(decrypted: Sequence[dict[str, object]], clear: Sequence[dict[str, object]]) -> None:
    """The decrypted table is the cleartext exchange's: comparable() equal, response bytes within
    DATE_SLACK of each other."""
    assert comparable(decrypted) == comparable(clear)
    diffs = [int(str(d["response_bytes"])) - int(str(c["response_bytes"])) for d, c in zip(decrypted, clear)]
    assert all(abs(x) <= DATE_SLACK for x in diffs), diffs
