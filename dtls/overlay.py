"""DTLS relay overlay on an SCTP link (N2 now; F1-C and E1 of the split RAN later), as the RAN
study ran it: socat carries the link's SCTP stream over DTLS/UDP between the two nodes.

    client node (gnb)                                   server node (amf)
    NF --SCTP--> socat SCTP-LISTEN <listen>:<port>      socat OPENSSL-DTLS-SERVER <addr>:<relay_port>
                   OPENSSL-DTLS-CLIENT ---- DTLS/UDP ---->   SCTP <addr>:<port> --> NF

The link is plane data, never code: network, port and the client -> server pair from the plane
(nf-configs/channels.yaml), the local listen address and the relay's UDP port from
nf-configs/stack.yaml `relay_links`. The client's NF is pointed at the local
listener through `nf_config_overrides` (UERANSIM: the AMF address; the server's NF is unchanged:
the relay connects to it from inside its namespace, so that leg never reaches the wire). Both
ends are pinned to the profile's version and suite (socat options and an OPENSSL_CONF with
Min/MaxProtocol, CipherString, Groups P-256), present their ECDSA certificate from `make keys` and
verify the peer's against the testbed CA (the client also checks the server's name).
`dtls-relay-plain` runs the same socat path with plain UDP: the relay's own cost, a profile of
its own. DTLS 1.3 profiles are listed but refused (profiles.yaml says why).

`render()` writes per node: `overlay.env` (what dtls/entrypoint.sh reads), `openssl.cnf`, and the
node's key, certificate and the CA certificate (key 0600). `verify_capture()` proves from a
capture of the link's network: DTLS records on the relay port with the profile's version and
suite in every ServerHello, ClientHellos offering only that suite, application data carried, and
no SCTP/NGAP (or the TCP stand-in's stream) between the two nodes in the clear.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import shlex
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from testbed import keys, planes, stack, tshark
from testbed.files import write_atomic as _write
from tls.overlay import SUITE_IDS
from tls.verify import SCSV
from testbed.verdict import Verdict

log = logging.getLogger(__name__)

GROUPS = "P-256"
READY_TIMEOUT_S = 30
# profile version -> (OpenSSL protocol name, socat proto-version value, wire version)
VERSIONS = {"1.2": ("DTLSv1.2", "DTLS1.2", 0xFEFD), "1.3": ("DTLSv1.3", "DTLS1.3", 0xFEFC)}
RELAYS = ("dtls", "plain")
CERT_FILES = ("node.key", "node.crt", "ca.crt")


class DtlsError(ValueError):
    """A profile/plane/node the DTLS relay cannot render or check; the message says why."""


@dataclasses.dataclass(frozen=True)
class RelayLink:
    """One SCTP link a relay carries (nf-configs/stack.yaml `relay_links.<plane>`)."""
    plane: str
    network: str
    client: str            # node whose NF opens the association (gnb, du, cuup)
    server: str            # node whose NF listens (amf, cucp)
    port: int              # the NF's SCTP port (38412 NGAP)
    listen: str            # where the client's NF connects instead (in the client's namespace)
    relay_port: int        # UDP port of the relay's server side

    def client_address(self, values: dict[str, Any]) -> str:
        return stack.address(self.client, self.network, values)

    def server_address(self, values: dict[str, Any]) -> str:
        return stack.address(self.server, self.network, values)


def links(values: dict[str, Any] | None = None) -> dict[str, RelayLink]:
    """Every relay link, by plane: network, port and the one client -> server pair from the plane
    data (nf-configs/channels.yaml), the relay's own addresses from stack.yaml `relay_links`
    (DtlsError names what is missing or ambiguous)."""
    from testbed import channels, ran
    v = values or ran.restrict(stack.load(), ran.default())
    out = {}
    for plane, spec in (v.get("relay_links") or {}).items():
        try:
            pl = planes.get(plane)
            # the link between the nodes that run (testbed/ran: N2 is the gNB's, or the CU-CP's)
            ends = sorted({(c.client, c.server) for c in channels.channels(plane)
                           if c.client in v["nodes"] and c.server in v["nodes"]})
        except (planes.PlaneError, channels.ChannelError) as exc:
            raise DtlsError(f"nf-configs/stack.yaml: relay_links.{plane}: {exc}") from None
        if not ends:
            continue                   # a plane of another RAN variant (f1c, e1 without the split)
        if len(ends) != 1:
            raise DtlsError(f"relay_links.{plane}: a relay carries one client -> server link, the plane has "
                            f"{len(ends)} ({', '.join(f'{a}->{b}' for a, b in ends) or 'none'})")
        try:
            out[plane] = RelayLink(plane, pl.network, ends[0][0], ends[0][1], pl.port(v),
                                   str(spec["listen"]), int(spec["relay_port"]))
        except KeyError as exc:
            raise DtlsError(f"nf-configs/stack.yaml: relay_links.{plane} lacks {exc.args[0]!r}") from None
    return out


def link(plane: str, values: dict[str, Any] | None = None) -> RelayLink:
    found = links(values)
    if plane not in found:
        raise DtlsError(f"no relay link on plane {plane!r} in nf-configs/stack.yaml relay_links "
                        f"(links: {', '.join(found) or 'none'})")
    return found[plane]


@dataclasses.dataclass(frozen=True)
class DtlsSettings:
    relay: str             # dtls | plain
    version: str | None    # "1.2" | "1.3" (dtls only)
    cipher: str | None     # OpenSSL name (1.2) or IANA name (1.3)
    cert: str | None       # ecdsa

    @property
    def openssl_version(self) -> str:
        return VERSIONS[str(self.version)][0]

    @property
    def socat_version(self) -> str:
        return VERSIONS[str(self.version)][1]

    @property
    def wire_version(self) -> int:
        return VERSIONS[str(self.version)][2]

    @property
    def suite_id(self) -> int:
        return SUITE_IDS[str(self.cipher)]


def settings(profile: Any) -> DtlsSettings:
    """The profile's relay settings; DtlsError for a refused or malformed profile."""
    if getattr(profile, "protocol", None) != "dtls":
        raise DtlsError(f"profile {getattr(profile, 'id', profile)!r} is not a DTLS profile")
    if getattr(profile, "refused", None):
        raise DtlsError(f"profile {profile.id!r} is refused on this testbed: {profile.refused}")
    p = profile.params
    s = DtlsSettings(str(p.get("relay", "dtls")), p.get("version"), p.get("cipher"), p.get("cert"))
    if s.relay not in RELAYS:
        raise DtlsError(f"profile {profile.id!r}: relay {s.relay!r} unknown; known: {', '.join(RELAYS)}")
    if s.relay == "plain":
        return s
    if s.version not in VERSIONS:
        raise DtlsError(f"profile {profile.id!r}: DTLS version {s.version!r} unknown; known: {', '.join(VERSIONS)}")
    if s.cipher not in SUITE_IDS:
        raise DtlsError(f"profile {profile.id!r}: cipher {s.cipher!r} has no code point in "
                        "tls/overlay.py SUITE_IDS; add it there")
    if (s.version == "1.3") != str(s.cipher).startswith("TLS_"):
        raise DtlsError(f"profile {profile.id!r}: DTLS {s.version} with cipher {s.cipher!r} (1.3 takes IANA "
                        "TLS_... names, 1.2 OpenSSL names)")
    if s.cert != "ecdsa":
        raise DtlsError(f"profile {profile.id!r}: cert {s.cert!r}; the relay uses the ECDSA certificates")
    return s


def _planes(profile: Any, values: dict[str, Any]) -> list[str]:
    """The planes the relay covers in this render: the renderer's (values["overlay_planes"]),
    else the profile's planes; only planes with a relay link."""
    wanted = values.get("overlay_planes") or list(getattr(profile, "planes", ()))
    have = links(values)
    return [p for p in wanted if p in have]


def endpoints(plane: str, values: dict[str, Any] | None = None) -> list[str]:
    """The ends of the link(s) of a PLANE expression: client, server (per plane, no repeats)."""
    out: list[str] = []
    for p in planes.split(plane):
        lk = link(p, values)
        out += [n for n in (lk.client, lk.server) if n not in out]
    return out


# --- hooks of the stack renderer ------------------------------------------------------------

def _ueransim_client(lk: RelayLink) -> dict[str, Any]:
    # UERANSIM's gNB: connect the NGAP association to the relay's local listener, bound locally too
    return {"ngapIp": lk.listen, "amfConfigs": [{"address": lk.listen, "port": lk.port}]}


def _oai_client(lk: RelayLink) -> dict[str, Any]:
    # OpenAirInterface (RAN=oai|split, docs/ran.md; merged per element into its one-element lists,
    # testbed/ran/oai/services.py merge): the DU's F1-C, the CU-UP's E1, the CU-CP's / gNB's N2 association
    # go to the relay's local listener, bound locally too
    if lk.plane == "f1c":
        return {"MACRLCs": [{"remote_n_address": lk.listen, "local_n_address": lk.listen}]}
    if lk.plane == "e1":
        return {"gNBs": [{"E1_INTERFACE": [{"ipv4_cucp": lk.listen, "ipv4_cuup": lk.listen}]}]}
    return {"gNBs": [{"amf_ip_address": [{"ipv4": lk.listen}],
                      "NETWORK_INTERFACES": {"GNB_IPV4_ADDRESS_FOR_NG_AMF": lk.listen}}]}


# how a client node's NF is pointed at the relay, by the node's kind in stack.yaml (the RAN variant's
# node_kind: OAI's DU/CU-UP/CU-CP take the peer's address from their F1/E1/NG sections)
CLIENT_OVERRIDES = {"ueransim": _ueransim_client, "oai": _oai_client}


def nf_config_overrides(node: str, profile: Any, values: dict[str, Any]) -> dict[str, Any]:
    """What is deep-merged into the client node's config so its NF connects to the local relay
    ({} for every other node)."""
    settings(profile)
    out: dict[str, Any] = {}
    for plane in _planes(profile, values):
        lk = links(values)[plane]
        if node != lk.client:
            continue
        kind = str(values["nodes"][node].get("kind", ""))
        if kind not in CLIENT_OVERRIDES:
            raise DtlsError(f"relay link {plane}: no way to point a {kind!r} node ({node}) at the relay; "
                            f"known kinds: {', '.join(CLIENT_OVERRIDES)} (dtls/overlay.py)")
        out.update(CLIENT_OVERRIDES[kind](lk))
    return out


def compose_services(profile: Any, plane: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The link ends' holders run dtls/entrypoint.sh with their rendered dir (the render's overlay
    fragment, testbed/render/compose_overlay.py). socat itself needs no privilege; the holder keeps
    NET_ADMIN only for run-sbi's gNB-side timing capture (an nftables log rule on the gNB's NGAP to
    the relay's listener, scripts/run-sbi.sh). No device, no sysctl; the NF side is real SCTP."""
    from testbed.render import compose_overlay
    settings(profile)
    out = {}
    for node in endpoints(plane, values):
        svc = compose_overlay.holder_service("dtls", node, userspace=False,
                                             environment={"DTLS_NF_TRANSPORT": "sctp"}, sysctls={})
        svc.pop("sysctls", None)
        out[f"{node}-net"] = svc
    return out


def host_needs(profile: Any, plane: str) -> list[str]:
    settings(profile)
    return ["sctp (kernel module)", "socat with OpenSSL DTLS"]


def plaintext_tap(plane: str, values: dict[str, Any] | None = None) -> dict[str, str]:
    """Where the link's traffic is still readable with the relay in force: the client namespace's
    loopback, between the NF and the relay's listener (run-sbi's timing capture must be there:
    the link's own network carries only DTLS)."""
    lk = link(plane, values)
    return {"node": lk.client, "iface": "lo", "capture_filter": f"sctp port {lk.port}"}


# --- rendered files -------------------------------------------------------------------------

def openssl_conf(s: DtlsSettings, title: str = "") -> str:
    """OPENSSL_CONF for socat: exactly the profile's DTLS version, suite and group."""
    lines = [f"# OpenSSL configuration of DTLS profile {title}.",
             "# Rendered by dtls/overlay.py; dtls/entrypoint.sh runs socat with it.",
             "openssl_conf = openssl_init", "", "[openssl_init]", "ssl_conf = ssl_module", "",
             "[ssl_module]", "system_default = dtls_profile", "", "[dtls_profile]",
             f"MinProtocol = {s.openssl_version}", f"MaxProtocol = {s.openssl_version}"]
    lines.append(f"CipherString = {s.cipher}" if s.version == "1.2" else f"Ciphersuites = {s.cipher}")
    lines.append(f"Groups = {GROUPS}")
    return "\n".join(lines) + "\n"


def relay_lines(node: str, profile: Any, values: dict[str, Any], planes: Iterable[str]) -> list[str]:
    """One relay per line (role plane listen_host listen_port connect_host connect_port peer_name):
    client = listen for the NF, connect to the server's relay; server = listen for the client's
    relay, connect to the NF."""
    out = []
    for plane in planes:
        lk = link(plane, values)
        if node == lk.client:
            out.append(" ".join(["client", plane, lk.listen, str(lk.port), lk.server_address(values),
                                 str(lk.relay_port), stack.fqdn(lk.server, values)]))
        elif node == lk.server:
            addr = lk.server_address(values)
            out.append(" ".join(["server", plane, addr, str(lk.relay_port), addr, str(lk.port),
                                 stack.fqdn(lk.client, values)]))
    return out


def overlay_env(node: str, profile: Any, values: dict[str, Any], planes: Iterable[str]) -> dict[str, str]:
    s = settings(profile)
    env = {"DTLS_PROFILE": profile.id, "DTLS_NODE": node, "DTLS_RELAY": s.relay,
           "DTLS_RELAYS": ";".join(relay_lines(node, profile, values, planes)),
           "DTLS_READY_TIMEOUT": str(READY_TIMEOUT_S)}
    if s.relay == "dtls":
        env.update({"DTLS_VERSION": s.socat_version, "DTLS_CIPHER": str(s.cipher)})
    return env


def _copy_keys(keys_dir: Path, node: str, cert: str, dest: Path) -> None:
    src = keys.node_dir(keys_dir, node)
    pairs = ((src / f"{cert}.key", dest / "node.key", 0o600), (src / f"{cert}.crt", dest / "node.crt", 0o644),
             (keys.ca_prefix(keys_dir, cert).with_suffix(".crt"), dest / "ca.crt", 0o644))
    for s, d, mode in pairs:
        if not s.is_file():
            raise DtlsError(f"{s} missing: run `make keys` (the relay presents the node's certificate)")
        shutil.copyfile(s, d)
        os.chmod(d, mode)


def render(profile: Any, plane: str, values: dict[str, Any], keys_dir: Path,
           out_dir: Path, nodes: Iterable[str] | None = None) -> dict[str, Path]:
    """out_dir/<node>/{overlay.env, openssl.cnf, node.key, node.crt, ca.crt} for both ends of the
    plane's link (`nodes`: only those); returns {node: dir}."""
    s = settings(profile)
    covered = planes.split(plane)
    if not set(covered) <= set(profile.planes):
        raise DtlsError(f"profile {profile.id!r} does not cover the {plane} plane "
                        f"(it covers: {', '.join(profile.planes)})")
    ends = endpoints(plane, values)
    chosen = ends if nodes is None else [n for n in ends if n in set(nodes)]
    unknown = sorted(set(nodes or ()) - set(ends))
    if unknown:
        raise DtlsError(f"{', '.join(unknown)}: not an end of the {plane} relay link (ends: {', '.join(ends)})")
    out: dict[str, Path] = {}
    for node in chosen:
        d = Path(out_dir) / node
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
        env = overlay_env(node, profile, values, covered)
        _write(d / "overlay.env", "# rendered by dtls/overlay.py for dtls/entrypoint.sh\n"
               + "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()), 0o644)
        if s.relay == "dtls":
            _write(d / "openssl.cnf", openssl_conf(s, profile.id), 0o644)
            _copy_keys(Path(keys_dir), node, str(s.cert), d)
        out[node] = d
    log.info("rendered the %s relay (%s) for %s under %s", s.relay, plane, ", ".join(chosen), out_dir)
    return out


# --- capture check --------------------------------------------------------------------------

FIELDS = ["frame.number", "frame.protocols", "udp.srcport", "udp.dstport", "tcp.srcport", "tcp.dstport",
          "dtls.record.content_type", "dtls.handshake.type", "dtls.handshake.version",
          "dtls.handshake.extensions.supported_version", "dtls.handshake.ciphersuite"]


def _ints(field: str) -> list[int]:
    return [int(x, 0) for x in field.split(",") if x.strip()]


@dataclasses.dataclass
class LinkCount:
    """What a capture shows between the two ends of a relay link."""
    dtls: int = 0                     # packets with DTLS records on the relay port
    relay_other: int = 0              # other UDP on the relay port (the plain relay's packets)
    plaintext: int = 0                # SCTP/NGAP, or the TCP stand-in's stream on the NF port
    application: int = 0              # DTLS application_data records
    client_offers: list[tuple[int, ...]] = dataclasses.field(default_factory=list)
    server_hellos: list[tuple[int, int]] = dataclasses.field(default_factory=list)   # (version, suite)


def count_link(pcap: Path, lk: RelayLink, values: dict[str, Any]) -> LinkCount:
    a, b = lk.client_address(values), lk.server_address(values)
    flt = f"ip.addr == {a} && ip.addr == {b}"
    try:
        rows = tshark.fields(pcap, flt, FIELDS, extra=["-d", f"udp.port=={lk.relay_port},dtls"], timeout=300)
    except tshark.TsharkError as exc:
        raise DtlsError(str(exc)) from None
    c = LinkCount()
    relay = str(lk.relay_port)
    nf = str(lk.port)
    for r in (r + [""] * (len(FIELDS) - len(r)) for r in rows):
        _, protos, usrc, udst, tsrc, tdst, content, hs_type, hs_version, sup, suites = r[:len(FIELDS)]
        layers = set(protos.split(":"))
        if relay in (usrc, udst):
            if "dtls" in layers and content:
                c.dtls += 1
                c.application += _ints(content).count(23)
                types = _ints(hs_type)
                if 1 in types:
                    c.client_offers.append(tuple(x for x in _ints(suites) if x not in SCSV))
                if 2 in types:
                    version = max(_ints(sup)) if sup else (_ints(hs_version)[0] if hs_version else -1)
                    c.server_hellos.append((version, _ints(suites)[-1] if suites else -1))
            else:
                c.relay_other += 1
        elif layers & {"sctp", "ngap"} or nf in (tsrc, tdst):
            c.plaintext += 1
    return c


def verify_capture(pcap: Path, profile: Any, plane: str, values: dict[str, Any] | None = None) -> Verdict:
    """DTLS relay: DTLS records on the relay port between the link's ends, every ServerHello
    with the profile's version and suite, every ClientHello offering only that suite, application
    data carried, and none of the link's traffic (SCTP/NGAP, or the TCP stand-in on the NF port)
    in the clear. Plain relay: UDP relay packets present, no DTLS, nothing direct in the clear."""
    from testbed import ran
    v = values or ran.restrict(stack.load(), ran.default())
    s = settings(profile)
    lk = link(plane, v)
    c = count_link(Path(pcap), lk, v)
    where = (f"{lk.client} {lk.client_address(v)} <-> {lk.server} {lk.server_address(v)}, relay udp/{lk.relay_port}, "
             f"NF port {lk.port}")
    problems: list[str] = []
    if c.plaintext:
        problems.append(f"{c.plaintext} packet(s) of the link's traffic (SCTP/NGAP or the NF port) in the clear")
    if s.relay == "plain":
        if not c.relay_other:
            problems.append("no relay packets on the relay port")
        if c.dtls:
            problems.append(f"{c.dtls} DTLS packet(s) on a relay that should carry plain UDP")
        details = (f"plain relay {plane} ({profile.id}): {where}: {c.relay_other} relay UDP packet(s) carrying "
                   f"the link unencrypted (by design: the relay's own cost), {c.plaintext} direct in the clear")
        if problems:
            details += "; INVALID: " + "; ".join(problems)
        return Verdict(not problems, 0, c.plaintext, details)
    want = (s.wire_version, s.suite_id)
    if not c.dtls:
        problems.append("no DTLS records on the relay port")
    if c.relay_other:
        problems.append(f"{c.relay_other} non-DTLS packet(s) on the relay port")
    if not c.server_hellos:
        problems.append("no DTLS ServerHello: the handshake (from before the first packet) is not in the capture")
    wrong = sorted({h for h in c.server_hellos if h != want})
    if wrong:
        problems.append(f"{len(wrong)} ServerHello(s) with another version/suite: "
                        + ", ".join(f"0x{a:04x}/0x{b:04x}" for a, b in wrong))
    loose = sorted({o for o in c.client_offers if set(o) != {s.suite_id}})
    if loose:
        problems.append("ClientHello offering more than the profile's suite (client not pinned): "
                        + ", ".join(str([hex(x) for x in o]) for o in loose[:2]))
    if not c.application:
        problems.append("no DTLS application data: the link's traffic did not go through the relay")
    details = (f"dtls {plane} ({profile.id}): {where}: {c.dtls} DTLS packet(s), {len(c.server_hellos)} ServerHello(s), "
               f"{c.application} application record(s); want DTLS {s.version} {s.cipher} "
               f"(0x{s.wire_version:04x}/0x{s.suite_id:04x}); {c.plaintext} in the clear")
    if problems:
        details += "; INVALID: " + "; ".join(problems)
    return Verdict(not problems, c.dtls, c.plaintext, details)
