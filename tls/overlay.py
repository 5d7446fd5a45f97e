"""TLS overlay on the SBI: Open5GS's own https between the NFs, one version and suite per profile.

Unlike IPsec and WireGuard this overlay lives inside the NFs, not in the namespace holders:

- `nf_config_overrides(node, profile, values)`: what is deep-merged into each SBI NF's YAML:
  server `scheme: https` on the NF's FQDN (`<nf>.<fqdn_domain>`: https needs FQDNs) and the
  SBI port, the node's key/certificate of the profile's type (ecdsa|rsa) from
  /etc/testbed/keys/node/, client verification against the testbed CA of that type, and
  https URIs for the NRF (and the SCP, the NSSF's NSI).
- `nf_environment(node, profile, values)`: the variables of patches/open5gs/0001-sbi-tls-knobs.patch
  (OGS_SBI_TLS_MIN_VERSION/MAX_VERSION = the profile's version, OGS_SBI_TLS_CIPHERS (TLS 1.2)
  or OGS_SBI_TLS_CIPHERSUITES (TLS 1.3) = its suite, OGS_SBI_TLS_GROUPS = P-256). The NF's
  server (OpenSSL) then allows exactly that suite; its client (libcurl-gnutls) is held to the
  version, and the peer's server picks the suite (docs/overlays/tls.md).
- `render(...)`: per NF an `openssl.cnf` (OPENSSL_CONF syntax, the same settings for the
  openssl CLI: the namespace tests and documentation of the exact settings) and `tls.env`.
- `verify_capture(pcap, ...)`: every TCP connection to the SBI port starts with a TLS
  handshake whose ServerHello carries the profile's version and suite, and no HTTP/2 is
  readable in the clear.
"""
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from testbed import keys, privileges, stack, tshark
from testbed.verdict import Verdict

log = logging.getLogger(__name__)

PLANE = "sbi"
SBI_NFS = stack.SBI_NFS                            # the UPF and the RAN take no part in the SBI
GROUPS = "P-256"                                   # both papers: ECDHE over P-256
KEYS_IN_CONTAINER = Path("/etc/testbed/keys")      # docs/contracts.md, "Paths inside containers"
NODE_KEYS = KEYS_IN_CONTAINER / "node"
CA_CERTS = KEYS_IN_CONTAINER / "ca"

ENV_MIN_VERSION = "OGS_SBI_TLS_MIN_VERSION"
ENV_MAX_VERSION = "OGS_SBI_TLS_MAX_VERSION"
ENV_CIPHERS = "OGS_SBI_TLS_CIPHERS"                # OpenSSL cipher list, TLS <= 1.2
ENV_CIPHERSUITES = "OGS_SBI_TLS_CIPHERSUITES"      # TLS 1.3 suites (IANA names)
ENV_GROUPS = "OGS_SBI_TLS_GROUPS"
ENV_GNUTLS_PRIORITY = "OGS_SBI_TLS_GNUTLS_PRIORITY"  # the libcurl-gnutls client's whole priority string
# GnuTLS names of the bulk ciphers in the OpenSSL/IANA names of the profiles (gnutls-cli --list)
GNUTLS_CIPHERS = (("AES128-GCM", "AES-128-GCM"), ("AES256-GCM", "AES-256-GCM"),
                  ("AES_128_GCM", "AES-128-GCM"), ("AES_256_GCM", "AES-256-GCM"),
                  ("AES128-CCM", "AES-128-CCM"), ("AES256-CCM", "AES-256-CCM"),
                  ("CHACHA20", "CHACHA20-POLY1305"))

VERSIONS = {"1.2": ("TLSv1.2", 0x0303), "1.3": ("TLSv1.3", 0x0304)}   # profile -> (OpenSSL, wire)
CERT_TYPES = ("ecdsa", "rsa")

# IANA code points of every suite the catalogue uses (RFC 5288/5289/6655/7251/7905/8446).
SUITE_IDS: dict[str, int] = {
    "ECDHE-ECDSA-AES128-GCM-SHA256": 0xC02B,
    "ECDHE-ECDSA-AES256-GCM-SHA384": 0xC02C,
    "ECDHE-RSA-AES128-GCM-SHA256": 0xC02F,
    "ECDHE-RSA-AES256-GCM-SHA384": 0xC030,
    "ECDHE-ECDSA-AES128-CCM": 0xC0AC,
    "ECDHE-ECDSA-AES256-CCM": 0xC0AD,
    "ECDHE-RSA-CHACHA20-POLY1305": 0xCCA8,
    "ECDHE-ECDSA-CHACHA20-POLY1305": 0xCCA9,
    "TLS_AES_128_GCM_SHA256": 0x1301,
    "TLS_AES_256_GCM_SHA384": 0x1302,
    "TLS_CHACHA20_POLY1305_SHA256": 0x1303,
}


class TlsError(ValueError):
    """A profile/plane/node the TLS overlay cannot render or check."""


@dataclasses.dataclass(frozen=True)
class TlsSettings:
    """The exact TLS settings of a profile."""
    version: str            # "1.2" | "1.3"
    cipher: str             # OpenSSL name (1.2) or IANA name (1.3)
    cert: str               # ecdsa | rsa

    @property
    def openssl_version(self) -> str:
        return VERSIONS[self.version][0]

    @property
    def wire_version(self) -> int:
        return VERSIONS[self.version][1]

    @property
    def suite_id(self) -> int:
        return SUITE_IDS[self.cipher]

    @property
    def gnutls_priority(self) -> str:
        """A GnuTLS priority string allowing exactly this version and suite (for the libcurl-gnutls
        client: `gnutls-cli --priority <it> --list` prints the one suite)."""
        bulk = next(g for o, g in GNUTLS_CIPHERS if o in self.cipher)
        kx = "ECDHE-RSA" if self.cert == "rsa" else "ECDHE-ECDSA"
        return (f"NONE:+VERS-TLS{self.version}:+{bulk}:+AEAD:+{kx}:+GROUP-SECP256R1:+SIGN-ALL:"
                "+COMP-NULL:+CTYPE-X509")


def settings(profile: Any) -> TlsSettings:
    """The profile's TLS settings, or TlsError naming what is wrong."""
    if getattr(profile, "protocol", None) != "tls":
        raise TlsError(f"profile {getattr(profile, 'id', profile)!r} is not a TLS profile")
    p = profile.params
    s = TlsSettings(str(p["version"]), str(p["cipher"]), str(p["cert"]))
    if s.version not in VERSIONS:
        raise TlsError(f"profile {profile.id!r}: TLS version {s.version!r} unknown; known: {', '.join(VERSIONS)}")
    if s.cipher not in SUITE_IDS:
        raise TlsError(f"profile {profile.id!r}: cipher {s.cipher!r} has no code point in "
                       "tls/overlay.py SUITE_IDS; add it there")
    if s.version == "1.3" and not s.cipher.startswith("TLS_"):
        raise TlsError(f"profile {profile.id!r}: TLS 1.3 needs an IANA suite name (TLS_...), got {s.cipher!r}")
    if s.version == "1.2" and s.cipher.startswith("TLS_"):
        raise TlsError(f"profile {profile.id!r}: TLS 1.2 needs an OpenSSL cipher name, got {s.cipher!r}")
    if s.cert not in CERT_TYPES:
        raise TlsError(f"profile {profile.id!r}: cert {s.cert!r} unknown; known: {', '.join(CERT_TYPES)}")
    return s


def _check_plane(plane: str) -> None:
    if plane != PLANE:
        raise TlsError(f"the TLS overlay covers the {PLANE} plane only, not {plane!r}")


def endpoints(plane: str, values: dict[str, Any] | None = None) -> list[str]:
    """The SBI NFs of stack.yaml (the SCP only with use_scp), in stack.yaml order."""
    _check_plane(plane)
    v = values or stack.load()
    use_scp = bool(v.get("use_scp", False))
    return [n for n, spec in v["nodes"].items()
            if n in SBI_NFS and "sbi" in spec.get("networks", {}) and (n != "scp" or use_scp)]


def sbi_uri(node: str, values: dict[str, Any]) -> str:
    return f"https://{stack.fqdn(node, values)}:{int(values['sbi_port'])}"


# --- hooks of the stack renderer ------------------------------------------------------------

def nf_config_overrides(node: str, profile: Any, values: dict[str, Any], *,
                        node_key_dir: Path = NODE_KEYS, ca_dir: Path = CA_CERTS) -> dict[str, Any]:
    """What is deep-merged into the Open5GS YAML of `node` ({} for nodes off the SBI).

    Key paths are the containers' (docs/contracts.md); the namespace tests pass the host's
    `keys.node_dir(root, node)` and `root / "ca"` instead."""
    s = settings(profile)
    if node not in SBI_NFS:
        return {}
    ca = str(Path(ca_dir) / f"{keys.CA_PREFIX[s.cert]}.crt")
    key, crt = str(Path(node_key_dir) / f"{s.cert}.key"), str(Path(node_key_dir) / f"{s.cert}.crt")
    section: dict[str, Any] = {
        "default": {"tls": {
            "server": {"scheme": "https", "private_key": key, "cert": crt,
                       "verify_client": True, "verify_client_cacert": ca},
            "client": {"scheme": "https", "cacert": ca,
                       "client_private_key": key, "client_cert": crt},
        }},
        "sbi": {"server": [{"address": stack.fqdn(node, values), "port": int(values["sbi_port"])}]},
    }
    if node != "nrf":
        client: dict[str, Any] = {"nrf": [{"uri": sbi_uri("nrf", values)}]}
        if values.get("use_scp") and node != "scp":
            client["scp"] = [{"uri": sbi_uri("scp", values)}]
        if node == "nssf":
            client["nsi"] = [{"uri": sbi_uri("nrf", values), "s_nssai": dict(sn)}
                             for sn in values["s_nssai"]]
        section["sbi"]["client"] = client
    return {node: section}


def nf_environment(node: str, profile: Any, values: dict[str, Any]) -> dict[str, str]:
    """The patched NF's TLS variables ({} for nodes off the SBI)."""
    if node not in SBI_NFS:
        settings(profile)
        return {}
    return tls_environment(settings(profile))


def tls_environment(s: TlsSettings) -> dict[str, str]:
    env = {ENV_MIN_VERSION: s.version, ENV_MAX_VERSION: s.version, ENV_GROUPS: GROUPS,
           ENV_GNUTLS_PRIORITY: s.gnutls_priority}
    env[ENV_CIPHERSUITES if s.version == "1.3" else ENV_CIPHERS] = s.cipher
    return env


def compose_env(profile: Any, plane: str, values: dict[str, Any]) -> dict[str, str]:
    """Compose interpolation: the same variables (the NFs get them through env/<nf>.env)."""
    _check_plane(plane)
    s = settings(profile)
    return {**tls_environment(s), "TLS_CERT_TYPE": s.cert}


def compose_services(profile: Any, plane: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each SBI NF container (the SCP too when it runs) gets its own key directory and the two
    CA certificates (never the CA keys), read-only, at the paths of docs/contracts.md. The
    holders keep the baseline command: there is no tunnel."""
    _check_plane(plane)
    kdir = "${KEYS_DIR:?run through scripts/lib/compose.sh (make up)}"
    # role nf-tls (nf-configs/privileges.yaml): reading the 0600 node key takes DAC_READ_SEARCH
    role = privileges.role("nf-tls").compose_fields()
    return {node: {"labels": role["labels"], "cap_add": role["cap_add"],
                   "volumes": [f"{kdir}/nodes/{node}:{NODE_KEYS}:ro",
                               f"{kdir}/ca/ca.crt:{CA_CERTS}/ca.crt:ro",
                               f"{kdir}/ca/ca-rsa.crt:{CA_CERTS}/ca-rsa.crt:ro"]}
            for node in endpoints(plane, values)}


def host_needs(profile: Any, plane: str) -> list[str]:
    """Nothing from the host kernel: TLS runs inside the NFs (the Open5GS image must carry
    patches/open5gs/0001-sbi-tls-knobs.patch, which the image build applies)."""
    _check_plane(plane)
    settings(profile)
    return []


# --- rendered files -------------------------------------------------------------------------

def openssl_conf(s: TlsSettings, title: str = "") -> str:
    """An OPENSSL_CONF file that holds OpenSSL programs to exactly these settings."""
    lines = [
        f"# OpenSSL configuration of TLS profile {title or s.version + ' ' + s.cipher}.",
        "# Rendered by tls/overlay.py; the patched Open5GS reads the same settings from",
        f"# {ENV_MIN_VERSION}/{ENV_MAX_VERSION}/{ENV_CIPHERS}/{ENV_CIPHERSUITES}/{ENV_GROUPS}.",
        "openssl_conf = openssl_init",
        "",
        "[openssl_init]",
        "ssl_conf = ssl_module",
        "",
        "[ssl_module]",
        "system_default = tls_profile",
        "",
        "[tls_profile]",
        f"MinProtocol = {s.openssl_version}",
        f"MaxProtocol = {s.openssl_version}",
    ]
    if s.version == "1.2":
        lines.append(f"CipherString = {s.cipher}")
    else:
        lines.append(f"Ciphersuites = {s.cipher}")
    lines.append(f"Groups = {GROUPS}")
    return "\n".join(lines) + "\n"


def render(profile: Any, plane: str, values: dict[str, Any], keys_dir: Path, out_dir: Path) -> dict[str, Path]:
    """Per SBI NF: out_dir/<nf>/openssl.cnf and tls.env; returns {nf: dir}."""
    _check_plane(plane)
    s = settings(profile)
    env_text = "".join(f"{k}={v}\n" for k, v in tls_environment(s).items())
    out: dict[str, Path] = {}
    for node in endpoints(plane, values):
        d = Path(out_dir) / node
        d.mkdir(parents=True, exist_ok=True)
        (d / "openssl.cnf").write_text(openssl_conf(s, profile.id), encoding="utf-8")
        (d / "tls.env").write_text(env_text, encoding="utf-8")
        out[node] = d
    return out


# --- capture check --------------------------------------------------------------------------

@dataclasses.dataclass
class _Stream:
    syn: bool = False
    client_port: int | None = None          # the SYN's source port: tells the two directions apart
    client_payload: bool = False            # the client sent any byte
    server_plain: bool = False              # the server sent a complete non-TLS segment
    first_payload_tls: bool | None = None
    first_payload_truncated: bool = False
    client_hello: bool = False
    client_offers: list[tuple[tuple[int, ...], tuple[int, ...]]] = dataclasses.field(default_factory=list)
    server_hellos: list[tuple[int, int]] = dataclasses.field(default_factory=list)   # (version, suite), final ones
    retries: int = 0                                                                 # HelloRetryRequests


# RFC 8446 4.1.3: a ServerHello whose random is SHA-256("HelloRetryRequest") is a HelloRetryRequest,
# not the final ServerHello: its suite is the same, but the handshake goes on with a second ClientHello.
HRR_RANDOM = "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c"
# Signalling values a client may list beside its real suites (RFC 5746, RFC 7507): not offers.
SCSV = frozenset({0x00FF, 0x5600})


def _tshark_fields(pcap: Path, decode_as: str, display_filter: str, fields: list[str]) -> list[list[str]]:
    try:
        return tshark.fields(pcap, display_filter, fields, extra=["-d", decode_as], timeout=300)
    except tshark.TsharkError as exc:
        raise TlsError(str(exc)) from None


def _ints(field: str) -> list[int]:
    return [int(x, 0) for x in field.split(",") if x.strip()]


def verify_capture(pcap: Path, profile: Any, plane: str, values: dict[str, Any] | None = None,
                   require_start: bool = True) -> Verdict:
    """Every TCP connection to the SBI port negotiated the profile's TLS version and suite,
    both ends offered nothing else, and no HTTP/2 is readable in the clear on that port.

    Only complete frames count: a frame cut by a snaplen (frame.cap_len < frame.len) is
    "unknown", never plaintext and never protected, and is reported. Valid: TLS records seen;
    no cleartext HTTP/2 in a complete frame; at least one connection seen from its SYN
    (`require_start`: a capture that misses every connection start cannot prove the suite) and
    every such connection starts with a ClientHello that offers only the profile's version and
    suite, and gets a final ServerHello (a HelloRetryRequest is not one) with exactly them."""
    _check_plane(plane)
    s = settings(profile)
    v = values or stack.load()
    port = int(v["sbi_port"])
    rows = _tshark_fields(
        Path(pcap), f"tcp.port=={port},tls", f"tcp.port=={port}",
        ["tcp.stream", "tcp.flags.syn", "tcp.flags.ack", "tcp.len", "frame.cap_len", "frame.len",
         "tls.record.content_type", "tls.record.opaque_type", "tls.handshake.type",
         "tls.handshake.ciphersuite", "tls.handshake.version", "tls.handshake.extensions.supported_version",
         "tls.handshake.random", "tcp.srcport"])
    streams: dict[int, _Stream] = {}
    protected = truncated = 0
    for (stream_f, syn, ack, tcp_len, cap_len, wire_len, content, opaque, hs_type, suites, hs_version,
         sup, rnd, srcport) in (r + [""] * (14 - len(r)) for r in rows):
        st = streams.setdefault(int(stream_f), _Stream())
        if tshark.flag(syn) and not tshark.flag(ack):
            st.syn = True
            st.client_port = int(srcport or 0)
        if int(tcp_len or 0) == 0:
            continue
        from_client = st.client_port is not None and int(srcport or 0) == st.client_port
        st.client_payload = st.client_payload or from_client
        if int(cap_len or 0) < int(wire_len or 0):
            truncated += 1                       # unknown: neither protected nor plaintext
            if st.first_payload_tls is None:
                st.first_payload_truncated = True
                st.first_payload_tls = False
            continue
        is_tls = bool(content or opaque)         # TLS 1.3 protected records: opaque_type
        if is_tls:
            protected += 1
        elif not from_client:
            st.server_plain = True
        if st.first_payload_tls is None:
            st.first_payload_tls = is_tls
        types = _ints(hs_type)
        if 1 in types:
            st.client_hello = True
            st.client_offers.append((tuple(x for x in _ints(suites) if x not in SCSV),
                                     tuple(_ints(sup)) if sup else tuple(_ints(hs_version))))
        if 2 in types:
            if rnd.split(",")[0].replace(":", "").lower() == HRR_RANDOM:
                st.retries += 1
                continue
            # final ServerHello: one suite; the supported_versions extension carries 1.3
            suite = _ints(suites)[-1] if suites else -1
            version = max(_ints(sup)) if sup else (_ints(hs_version)[0] if hs_version else -1)
            st.server_hellos.append((version, suite))
    # any HTTP/2 frame readable in the clear (also mid-stream, without the connection preface),
    # in complete frames only: a truncated TLS segment can look like anything
    plain = _tshark_fields(Path(pcap), f"tcp.port=={port},http2",
                           f"tcp.port=={port} && http2.type && frame.cap_len == frame.len", ["frame.number"])
    plaintext = len(plain)

    problems: list[str] = []
    hellos = [h for st in streams.values() for h in st.server_hellos]
    want = (s.wire_version, s.suite_id)
    wrong = [h for h in hellos if h != want]
    if not protected:
        problems.append("no TLS records on the SBI port")
    if wrong:
        problems.append(f"{len(wrong)} ServerHello(s) with another version/suite: "
                        + ", ".join(f"0x{a:04x}/0x{b:04x}" for a, b in sorted(set(wrong))))
    offers = [o for st in streams.values() for o in st.client_offers]
    loose = [o for o in offers if set(o[0]) != {s.suite_id} or (o[1] and set(o[1]) != {s.wire_version})]
    if loose:
        problems.append(f"{len(loose)} ClientHello(s) offering more than the profile (client not pinned): "
                        + ", ".join(f"suites {[hex(x) for x in a]} versions {[hex(x) for x in b]}"
                                    for a, b in sorted(set(loose))[:2]))
    # A client that gave up before its ClientHello (a cancelled connect, docs/vm-check.md section 10:
    # the server answered its FIN with a TLS decode_error alert) sent nothing that could leak; such
    # a connection proves nothing either, so it is counted apart and never as a proven start.
    unused = [i for i, st in streams.items()
              if st.syn and st.first_payload_tls is not None and not st.client_payload and not st.server_plain]
    starts = [i for i, st in streams.items()
              if st.syn and st.first_payload_tls is not None and i not in unused]
    if require_start and not starts:
        problems.append("no connection seen from its SYN: the capture began after every connection "
                        "was made, so the negotiated version and suite cannot be proven")
    unknown_start = [i for i in starts if streams[i].first_payload_truncated]
    if unknown_start:
        problems.append(f"{len(unknown_start)} connection(s) whose first segment is truncated "
                        "(capture snaplen): their handshake cannot be read")
    not_tls = [i for i in starts if i not in unknown_start
               and (not streams[i].first_payload_tls or not streams[i].client_hello)]
    if not_tls:
        problems.append(f"{len(not_tls)} connection(s) that do not start with a TLS ClientHello "
                        f"(tcp.stream {', '.join(map(str, not_tls[:5]))})")
    no_sh = [i for i in starts if streams[i].client_hello and not streams[i].server_hellos]
    if no_sh:
        problems.append(f"{len(no_sh)} connection(s) without a final ServerHello (tcp.stream "
                        f"{', '.join(map(str, no_sh[:5]))})")
    if plaintext:
        problems.append(f"{plaintext} packet(s) of cleartext HTTP/2 on port {port}")
    retries = sum(st.retries for st in streams.values())
    closed = (f"{len(unused)} closed by the client before its ClientHello (tcp.stream "
              f"{', '.join(map(str, unused[:5]))}), " if unused else "")
    details = (f"tcp.port=={port}: {len(streams)} connection(s), {len(starts)} seen from the SYN, {closed}"
               f"{len(hellos)} final ServerHello(s), {retries} HelloRetryRequest(s); want TLS {s.version} "
               f"{s.cipher} (0x{s.wire_version:04x}/0x{s.suite_id:04x}); {protected} TLS record packet(s), "
               f"{plaintext} cleartext HTTP/2 packet(s), {truncated} truncated (unknown) packet(s)")
    if problems:
        details += "; INVALID: " + "; ".join(problems)
    return Verdict(valid=not problems, protected_packets=protected, plaintext_packets=plaintext,
                   details=details)
