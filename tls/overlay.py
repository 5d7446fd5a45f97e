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
- `verify_capture(pcap, ...)` (tls/verify.py): every TCP connection to the SBI port starts with a TLS
  handshake whose ServerHello carries the profile's version and suite, and no HTTP/2 is
  readable in the clear.
"""
from __future__ import annotations

import dataclasses
import logging
import subprocess
from pathlib import Path
from typing import Any

from testbed import keys, privileges, stack

log = logging.getLogger(__name__)

PLANE = "sbi"
SBI_NFS = stack.SBI_NFS                            # the UPF and the RAN take no part in the SBI
# the classical profile every post-quantum TLS profile is set beside in the report (profiles.yaml)
PQ_REFERENCE = "tls13-x25519"
GROUPS = "P-256"                                   # both papers: ECDHE over P-256 (the default)
KEYS_IN_CONTAINER = Path("/etc/testbed/keys")      # docs/contracts.md, "Paths inside containers"
NODE_KEYS = KEYS_IN_CONTAINER / "node"
CA_CERTS = KEYS_IN_CONTAINER / "ca"

ENV_MIN_VERSION = "OGS_SBI_TLS_MIN_VERSION"
ENV_MAX_VERSION = "OGS_SBI_TLS_MAX_VERSION"
ENV_CIPHERS = "OGS_SBI_TLS_CIPHERS"                # OpenSSL cipher list, TLS <= 1.2
ENV_CIPHERSUITES = "OGS_SBI_TLS_CIPHERSUITES"      # TLS 1.3 suites (IANA names)
ENV_GROUPS = "OGS_SBI_TLS_GROUPS"
ENV_GNUTLS_PRIORITY = "OGS_SBI_TLS_GNUTLS_PRIORITY"  # the libcurl-gnutls client's whole priority string
ENV_CLIENT_GROUPS = "OGS_SBI_TLS_CLIENT_GROUPS"    # patches/open5gs/0004: the client's groups (libcurl's curves)
# IANA TLS Supported Groups code points (RFC 8446, RFC 7919; draft-ietf-tls-ecdhe-mlkem and
# draft-ietf-tls-mlkem, as OpenSSL 3.5 names and numbers them) of every group the catalogue uses
GROUP_IDS: dict[str, int] = {
    "P-256": 0x0017, "secp256r1": 0x0017, "P-384": 0x0018, "X25519": 0x001D,
    "SecP256r1MLKEM768": 0x11EB, "X25519MLKEM768": 0x11EC, "SecP384r1MLKEM1024": 0x11ED,
    "MLKEM512": 0x0200, "MLKEM768": 0x0201, "MLKEM1024": 0x0202,
}
# groups whose key share holds an ML-KEM part: they need OpenSSL >= 3.5 at both ends
PQ_GROUPS = frozenset(g for g in GROUP_IDS if "MLKEM" in g)
# GnuTLS names of the bulk ciphers in the OpenSSL/IANA names of the profiles (gnutls-cli --list)
GNUTLS_CIPHERS = (("AES128-GCM", "AES-128-GCM"), ("AES256-GCM", "AES-256-GCM"),
                  ("AES_128_GCM", "AES-128-GCM"), ("AES_256_GCM", "AES-256-GCM"),
                  ("AES128-CCM", "AES-128-CCM"), ("AES256-CCM", "AES-256-CCM"),
                  ("CHACHA20", "CHACHA20-POLY1305"))

VERSIONS = {"1.2": ("TLSv1.2", 0x0303), "1.3": ("TLSv1.3", 0x0304)}   # profile -> (OpenSSL, wire)
CERT_TYPES = ("ecdsa", "rsa", "mldsa65")

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
    cert: str               # ecdsa | rsa | mldsa65
    groups: str = GROUPS    # the server's key-exchange groups (OpenSSL list): the negotiated one is the first
    client_groups: str = ""  # the client's list if it differs; its first group's key share goes first
    retries: int = 0        # HelloRetryRequests per connection the profile forces (client guesses wrong)

    @property
    def group(self) -> str:
        """The group every ServerHello must carry (the server's first)."""
        return self.groups.split(":")[0]

    @property
    def group_id(self) -> int:
        return GROUP_IDS[self.group]

    @property
    def offered_groups(self) -> str:
        """What the client offers (supported_groups), in order."""
        return self.client_groups or self.groups

    @property
    def post_quantum(self) -> bool:
        return self.group in PQ_GROUPS or self.cert == "mldsa65"

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
    s = TlsSettings(str(p["version"]), str(p["cipher"]), str(p["cert"]), str(p.get("groups") or GROUPS),
                    str(p.get("client_groups") or ""), int(p.get("hrr") or 0))
    unknown = [g for g in f"{s.groups}:{s.client_groups}".split(":") if g and g not in GROUP_IDS]
    if unknown:
        raise TlsError(f"profile {profile.id!r}: group(s) {', '.join(unknown)} have no code point in "
                       "tls/overlay.py GROUP_IDS; known: " + ", ".join(GROUP_IDS))
    if (s.post_quantum or s.client_groups) and s.version != "1.3":
        raise TlsError(f"profile {profile.id!r}: ML-KEM groups, ML-DSA and client groups need TLS 1.3")
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


def check_plane(plane: str) -> None:
    if plane != PLANE:
        raise TlsError(f"the TLS overlay covers the {PLANE} plane only, not {plane!r}")


def endpoints(plane: str, values: dict[str, Any] | None = None) -> list[str]:
    """The SBI NFs of stack.yaml (the SCP only with use_scp), in stack.yaml order."""
    check_plane(plane)
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


# the NFs' key log inside their containers (tmpfs /run/open5gs, compose/base.yaml), written under
# patches/open5gs/0003-sbi-tls-keylog.patch when a run exports keys (KEYS=1)
NF_KEYLOG = "/run/open5gs/tls-keys.log"
ENV_KEYLOG = "OGS_SBI_TLS_KEYLOG"


def keylog_environment(node: str, values: dict[str, Any]) -> dict[str, str]:
    """Patch 0003's switch for the Open5GS NFs on the SBI."""
    if "sbi" not in (values["nodes"].get(node, {}).get("networks") or {}):
        return {}
    return {ENV_KEYLOG: NF_KEYLOG}


def tls_environment(s: TlsSettings) -> dict[str, str]:
    env = {ENV_MIN_VERSION: s.version, ENV_MAX_VERSION: s.version, ENV_GROUPS: s.groups,
           ENV_GNUTLS_PRIORITY: s.gnutls_priority}
    env[ENV_CIPHERSUITES if s.version == "1.3" else ENV_CIPHERS] = s.cipher
    if s.client_groups or s.groups != GROUPS:
        env[ENV_CLIENT_GROUPS] = s.offered_groups
    return env


def openssl_has_mldsa(openssl: str = "openssl") -> bool:
    """Whether this openssl can issue ML-DSA-65 certificates (OpenSSL >= 3.5)."""
    try:
        out = subprocess.run([openssl, "list", "-signature-algorithms"], capture_output=True, text=True,
                             timeout=30, check=False)
    except OSError:
        return False
    return "ML-DSA-65" in out.stdout


def ensure_mldsa_keys(root: Path, nodes: list[str], values: dict[str, Any]) -> None:
    """ML-DSA-65 CA and node certificates (keys/ca/ca-mldsa65.*, keys/nodes/<node>/mldsa65.*) for the
    ML-DSA profiles, where openssl can make them; elsewhere those profiles stop at render naming it."""
    if not openssl_has_mldsa():
        log.info("openssl has no ML-DSA (OpenSSL < 3.5): no ML-DSA certificates; the mldsa65 TLS "
                 "profiles need `make keys` on a host with OpenSSL >= 3.5 (Debian 13)")
        return
    keys.ensure_type(root, "mldsa65", [n for n in nodes if n in SBI_NFS], values)


def check_keys(s: TlsSettings, keys_dir: Path, nodes: list[str]) -> None:
    """The profile's certificate type exists for every node (ML-DSA ones only where made)."""
    missing = [n for n in nodes if not (keys.node_dir(keys_dir, n) / f"{s.cert}.crt").is_file()]
    if missing:
        raise TlsError(f"no {s.cert} certificate for {', '.join(missing)} under {keys_dir}: run `make keys`"
                       + (" with OpenSSL >= 3.5 (ML-DSA; Debian 13)" if s.cert == "mldsa65" else ""))


def compose_env(profile: Any, plane: str, values: dict[str, Any]) -> dict[str, str]:
    """Compose interpolation: the same variables (the NFs get them through env/<nf>.env)."""
    check_plane(plane)
    s = settings(profile)
    return {**tls_environment(s), "TLS_CERT_TYPE": s.cert}


def compose_services(profile: Any, plane: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each SBI NF container (the SCP too when it runs) gets its own key directory and the two
    CA certificates (never the CA keys), read-only, at the paths of docs/contracts.md. The
    holders keep the baseline command: there is no tunnel."""
    check_plane(plane)
    kdir = "${KEYS_DIR:?run through scripts/lib/compose.sh (make up)}"
    # role nf-tls (nf-configs/privileges.yaml): reading the 0600 node key takes DAC_READ_SEARCH
    role = privileges.role("nf-tls").compose_fields()
    cas = ["ca", "ca-rsa"] + ([keys.CA_PREFIX["mldsa65"]] if settings(profile).cert == "mldsa65" else [])
    return {node: {"labels": role["labels"], "cap_add": role["cap_add"],
                   "volumes": [f"{kdir}/nodes/{node}:{NODE_KEYS}:ro",
                               *(f"{kdir}/ca/{ca}.crt:{CA_CERTS}/{ca}.crt:ro" for ca in cas)]}
            for node in endpoints(plane, values)}


def host_needs(profile: Any, plane: str) -> list[str]:
    """Nothing from the host kernel: TLS runs inside the NFs (the Open5GS image must carry
    patches/open5gs/0001-sbi-tls-knobs.patch, which the image build applies)."""
    check_plane(plane)
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
    lines.append(f"Groups = {s.groups}")
    return "\n".join(lines) + "\n"


def client_openssl_conf(s: TlsSettings, title: str = "") -> str:
    """The client end's OPENSSL_CONF: the server's settings with the client's groups (a profile
    that forces a HelloRetryRequest offers another group's key share first)."""
    return openssl_conf(s, title).replace(f"Groups = {s.groups}\n", f"Groups = {s.offered_groups}\n")


def render(profile: Any, plane: str, values: dict[str, Any], keys_dir: Path, out_dir: Path) -> dict[str, Path]:
    """Per SBI NF: out_dir/<nf>/openssl.cnf (server), openssl-client.cnf, tls.env and lab.env (the
    node's key, certificate, CA and address on this host, for the namespace lab's scripts:
    tls/rehandshake.sh, tls/bench-server.sh); returns {nf: dir}."""
    check_plane(plane)
    s = settings(profile)
    nodes = endpoints(plane, values)
    if s.cert == "mldsa65":
        check_keys(s, Path(keys_dir), nodes)
    env_text = "".join(f"{k}={v}\n" for k, v in tls_environment(s).items())
    out: dict[str, Path] = {}
    for node in nodes:
        d = Path(out_dir) / node
        d.mkdir(parents=True, exist_ok=True)
        (d / "openssl.cnf").write_text(openssl_conf(s, profile.id), encoding="utf-8")
        (d / "openssl-client.cnf").write_text(client_openssl_conf(s, profile.id), encoding="utf-8")
        (d / "tls.env").write_text(env_text, encoding="utf-8")
        kdir = keys.node_dir(Path(keys_dir), node)
        lab = {"TLS_KEY": kdir / f"{s.cert}.key", "TLS_CERT": kdir / f"{s.cert}.crt",
               "TLS_CA": Path(keys_dir) / "ca" / f"{keys.CA_PREFIX[s.cert]}.crt",
               "TLS_ADDRESS": stack.address(node, "sbi", values), "TLS_PORT": int(values["sbi_port"]),
               "TLS_NAME": stack.fqdn(node, values), "TLS_PROFILE": profile.id}
        (d / "lab.env").write_text("".join(f"{k}={v}\n" for k, v in lab.items()), encoding="utf-8")
        out[node] = d
    return out

