"""IPsec overlay (strongSwan, swanctl, IKEv2, ESP tunnel mode): rendering and capture check.

Per endpoint node, `render()` writes one self-contained config dir (docs/overlays/ipsec.md):

    swanctl.conf              one connection per peer link (channel map), mode 0600 (PSKs)
    x509/<node>.crt, x509ca/ca.crt, private/<node>.key (0600)   swanctl credential layout (cert auth)
    strongswan.conf           charon on the kernel xfrm datapath
    strongswan-libipsec.conf  charon on kernel-libipsec (userspace ESP via TUN) when the kernel lacks ESP
    nftables.conf             fail-closed filter: nothing but IKE/ESP to/from the planes' subnets
    nftables-egress.rules     the same filter's outbound rules for the devices' egress hook, where a
                              drop is never an error to the sender (ipsec/entrypoint.sh loads them)
    overlay.env               what ipsec/entrypoint.sh needs (node, mode, children, addresses)

`plane` is a PLANE expression (testbed/planes.py): one plane or several (`n2,n4,n3,sbi`). A
node on several of them gets one config with a connection for each link (plane, peer), named
after the peer (`<peer>-<plane>` where the same peer is met on two planes), each between the
two nodes' addresses on that plane's network.

Who initiates in start mode: of each pair only the node whose name sorts first initiates
(start_action=start, dpd_action=restart); the other only responds (start_action=none,
dpd_action=clear). So exactly one IKE_SA and one CHILD_SA pair per host pair, no
duplicate-SA race at start-up. In the trap modes both ends install trap policies: either
NF may send first (NF->NRF registration, NRF->NF notify).
"""
from __future__ import annotations

import re

import ipaddress
import logging
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ipsec import keys as psk_keys
from testbed import channels, environment, keys, planes, programs, stack, tshark
from testbed.files import write_atomic as _write
from testbed.verdict import Verdict
from testbed.profiles import Profile

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 60          # entrypoint deadline for start mode (all CHILD_SAs INSTALLED)
IKE_FWMARK = "0x42"           # keeps charon's IKE packets off the libipsec TUN route
# plugins charon loads (explicit list: kdf is required on 5.9.8 or IKE key derivation fails)
# ml: strongSwan's own ML-KEM (6.0+, --enable-ml; the tools image builds it), which a charon without
# it skips with a warning; the openssl plugin offers ML-KEM too with OpenSSL >= 3.5 (6.0.2+)
BASE_PLUGINS = ("random nonce openssl pem pkcs1 pkcs8 x509 pubkey revocation constraints kdf "
                "hmac gcm aes sha1 sha2 gmp curve25519 ml")
NET_PLUGINS = "kernel-netlink socket-default vici"
# ESP transforms strongSwan's userspace ESP (kernel-libipsec, 5.9.8) does not implement:
# "failed to create ESP context: unsupported AEAD algorithm NULL_AES_GMAC" (measured); RFC 4543
# NULL-GMAC exists only in the kernel's xfrm (rfc4543(gcm(aes)))
LIBIPSEC_UNSUPPORTED_ESP = frozenset({"aes128gmac", "aes192gmac", "aes256gmac"})
ICMP_ECHO = "(icmp.type == 8 || icmp.type == 0)"     # the namespace tests' pings


class IpsecRenderError(ValueError):
    """The overlay cannot be rendered (wrong protocol/plane, missing key material)."""


# --- who talks to whom ------------------------------------------------------------------------

def network(plane: str) -> str:
    try:
        return planes.network(plane)
    except planes.PlaneError as exc:
        raise IpsecRenderError(str(exc)) from None


def _split(plane: str) -> tuple[str, ...]:
    try:
        return planes.split(plane)
    except planes.PlaneError as exc:
        raise IpsecRenderError(str(exc)) from None


def endpoints(plane: str, values: dict[str, Any]) -> list[str]:
    """Nodes that take part on the plane(s): every node of the channel map with an address there."""
    return channels.endpoints(_split(plane), values)


def peers(node: str, plane: str, values: dict[str, Any], nodes: Iterable[str] | None = None) -> list[str]:
    """The node's peers on the plane(s) (channel map), limited to `nodes` if given."""
    return sorted({link.other(node) for link in channels.peers(node, _split(plane), values, nodes)})


def connections(node: str, plane: str, values: dict[str, Any],
                nodes: Iterable[str] | None = None) -> list[tuple[str, channels.Link]]:
    """(connection name, link) of every link of the node: named after the peer, or
    `<peer>-<plane>` where the node meets the same peer on two planes."""
    links = channels.peers(node, _split(plane), values, nodes)
    count: dict[str, int] = {}
    for link in links:
        count[link.other(node)] = count.get(link.other(node), 0) + 1
    return [(link.other(node) if count[link.other(node)] == 1 else f"{link.other(node)}-{link.plane}", link)
            for link in links]


def initiates(node: str, peer: str) -> bool:
    """In start mode the node whose name sorts first initiates; the other only responds."""
    return node < peer


# --- rendering --------------------------------------------------------------------------------

def _subject_dn(crt: Path) -> str:
    st = crt.stat()
    return _subject_dn_cached(str(crt), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=256)
def _subject_dn_cached(crt: str, _mtime_ns: int, _size: int) -> str:
    out = subprocess.run(["openssl", "x509", "-in", str(crt), "-noout", "-subject", "-nameopt", "RFC2253"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0 or not out.stdout.startswith("subject="):
        raise IpsecRenderError(f"cannot read the subject of {crt}: {out.stderr.strip()}; run `make keys`")
    return out.stdout.strip().removeprefix("subject=")


def _cert_paths(keys_dir: Path, node: str) -> tuple[Path, Path]:
    ndir = keys.node_dir(keys_dir, node)
    crt, key = ndir / "ecdsa.crt", ndir / "ecdsa.key"
    for f in (crt, key):
        if not f.is_file():
            raise IpsecRenderError(f"missing {f} (ECDSA key material of {node}): run `make keys`")
    return crt, key


def _q(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _child(peer: str, local: str, remote: str, profile: Profile, start: str, dpd: str) -> list[str]:
    p = profile.params
    return [
        f"      {peer} {{",
        "        mode = tunnel",
        f"        local_ts = {local}/32",
        f"        remote_ts = {remote}/32",
        f"        esp_proposals = {p['esp_proposal']}",
        f"        start_action = {start}",
        f"        dpd_action = {dpd}",
        "        rekey_time = 1h",
        "      }",
    ]


def swanctl_conf(node: str, plane: str, profile: Profile, values: dict[str, Any], keys_dir: Path,
                 conns: list[tuple[str, channels.Link]]) -> str:
    """The node's swanctl.conf: one IKEv2 connection with one tunnel CHILD_SA per link."""
    p = profile.params
    auth = p["auth"]
    lines = ["# rendered by ipsec/overlay.py; do not edit",
             f"# node {node}, plane {plane}, profile {profile.id}: {profile.label}",
             "connections {"]
    secrets: list[str] = []
    my_id = _subject_dn(_cert_paths(keys_dir, node)[0]) if auth == "cert" else stack.fqdn(node, values)
    for name, link in conns:
        peer = link.other(node)
        net = network(link.plane)
        me, remote = stack.address(node, net, values), stack.address(peer, net, values)
        if p["mode"] == "start":
            start, dpd = ("start", "restart") if initiates(node, peer) else ("none", "clear")
        else:
            start, dpd = "trap", "trap"
        if auth == "cert":
            peer_id = _subject_dn(_cert_paths(keys_dir, peer)[0])
            local_auth = ["        auth = pubkey", f"        certs = {node}.crt", f"        id = {_q(my_id)}"]
            remote_auth = ["        auth = pubkey", f"        id = {_q(peer_id)}"]
        elif auth == "psk":
            peer_id = stack.fqdn(peer, values)
            local_auth = ["        auth = psk", f"        id = {_q(my_id)}"]
            remote_auth = ["        auth = psk", f"        id = {_q(peer_id)}"]
            if f"  ike-{peer} {{" not in secrets:
                secrets += [f"  ike-{peer} {{", f"    id-1 = {_q(my_id)}", f"    id-2 = {_q(peer_id)}",
                            f"    secret = 0x{psk_keys.psk(keys_dir, node, peer)}", "  }"]
        else:
            raise IpsecRenderError(f"profile {profile.id}: unknown auth {auth!r} (cert|psk)")
        # post-quantum key exchanges make IKE messages larger than the path MTU (ML-KEM-1024's
        # IKE_INTERMEDIATE): RFC 7383 fragmentation, strongSwan's default, is written out for them
        frag = ["    fragmentation = yes"] if p.get("ke") else []
        lines += [
            f"  {name} {{",
            f"    # {link.plane}: {node} {me} <-> {peer} {remote}",
            "    version = 2",
            f"    proposals = {p['ike_proposal']}",
            *frag,
            f"    local_addrs = {me}",
            f"    remote_addrs = {remote}",
            "    encap = no",
            "    mobike = no",
            "    keyingtries = 0",
            "    dpd_delay = 10s",
            "    rekey_time = 4h",
            "    local {", *local_auth, "    }",
            "    remote {", *remote_auth, "    }",
            "    children {",
            *_child(name, me, remote, profile, start, dpd),
            "    }",
            "  }",
        ]
    lines.append("}")
    if secrets:
        lines += ["secrets {", *secrets, "}"]
    return "\n".join(lines) + "\n"


# charon's ESP key log in the holder (tmpfs): read at the end of a run that exports keys
KEYS_LOG = "/run/testbed/charon-keys.log"


def strongswan_conf(datapath: str) -> str:
    """charon's strongswan.conf for the kernel xfrm datapath or kernel-libipsec (userspace ESP)."""
    libipsec = datapath == "libipsec"
    plugins = BASE_PLUGINS + (" kernel-libipsec " if libipsec else " ") + NET_PLUGINS
    extra = ([
        "    # userspace ESP through the TUN device ipsec0 (kernel without xfrm ESP):",
        "    # allow host-to-host tunnels (traffic selectors = IKE peers) and keep IKE packets",
        "    # off the tunnel route by fwmark (docs/overlays/ipsec.md)",
        "    kernel-libipsec {", "      allow_peer_ts = yes", "    }",
        "    socket-default {", f"      fwmark = {IKE_FWMARK}", "    }",
        "    kernel-netlink {", f"      fwmark = !{IKE_FWMARK}", "    }",
    ] if libipsec else [])
    return "\n".join([
        "# rendered by ipsec/overlay.py; do not edit",
        f"# datapath: {datapath}",
        "charon {",
        f"  load = {plugins}",
        f"  install_routes = {'yes' if libipsec else 'no'}",
        "  retransmit_timeout = 1.0",
        "  retransmit_base = 1.4",
        "  retransmit_tries = 5",
        "  filelog {",
        "    charon {",
        "      path = /run/testbed/charon.log",
        "      default = 1",
        "      ike = 2",
        "      cfg = 2",
        "      flush_line = yes",
        "      time_format = %b %e %T",
        "    }",
        "    stdout {",
        "      default = 1",
        "      flush_line = yes",
        "      time_format = %b %e %T",
        "    }",
        "    # the ESP keys of every CHILD_SA (chd level 4) and its SPIs (ike 1), per IKE_SA: what",
        "    # tshark needs to decrypt the capture (ipsec/keylog.py). Written once per CHILD_SA,",
        "    # in every run alike; copied into the run only when it asks for key export (KEYS=1)",
        "    keys {",
        f"      path = {KEYS_LOG}",
        "      default = -1",
        "      ike = 1",
        "      chd = 4",
        "      ike_name = yes",
        "      flush_line = yes",
        "    }",
        "  }",
        "  plugins {",
        *extra,
        "  }",
        "}",
    ]) + "\n"


def _guarded_subnets(plane: str, values: dict[str, Any], node: str | None) -> str:
    """The nftables set of the planes' subnets the fail-closed filter guards (those `node` is on,
    if given): one subnet, or `{ a, b }`."""
    nets = [network(p) for p in _split(plane)]
    if node is not None:
        nets = [n for n in nets if n in (values["nodes"][node].get("networks") or {})]
    subnets = [str(values["networks"][n]["subnet"]) for n in dict.fromkeys(nets)]
    return subnets[0] if len(subnets) == 1 else "{ " + ", ".join(subnets) + " }"


def nftables_conf(plane: str, values: dict[str, Any], node: str | None = None) -> str:
    """Fail-closed filter: to/from the planes' subnets (those `node` is on, if given) only IKE
    and ESP, or packets that the kernel protects (rt ipsec exists / meta ipsec exists), or
    libipsec's TUN (ipsec0)."""
    subnet = _guarded_subnets(plane, values, node)
    return "\n".join([
        f"# rendered by ipsec/overlay.py: nothing of the plane(s) {plane} leaves or enters in plaintext",
        "table inet testbed_ipsec",
        "delete table inet testbed_ipsec",
        "table inet testbed_ipsec {",
        "  chain out {",
        "    type filter hook postrouting priority 0; policy accept;",
        '    oifname "ipsec0" accept',
        f"    ip daddr != {subnet} accept",
        "    ip protocol esp accept",
        "    udp sport { 500, 4500 } accept",
        "    rt ipsec exists accept",
        "    counter drop",
        "  }",
        "  # charon answers IKE_SA_INIT with NO_PROPOSAL_CHOSEN until swanctl has loaded the",
        "  # connections; peers retransmit instead. ipsec/entrypoint.sh deletes this chain once loaded.",
        "  chain ike_gate {",
        "    type filter hook input priority -10; policy accept;",
        "    udp dport { 500, 4500 } drop",
        "  }",
        "  chain in {",
        "    type filter hook input priority 0; policy accept;",
        '    iifname "ipsec0" accept',
        f"    ip saddr != {subnet} accept",
        "    ip protocol esp accept",
        "    udp dport { 500, 4500 } accept",
        "    meta ipsec exists accept",
        "    counter drop",
        "  }",
        "}",
    ]) + "\n"


def nftables_egress_rules(plane: str, values: dict[str, Any], node: str | None = None) -> str:
    """The outbound half of the fail-closed filter for each network device's egress hook (netdev
    family, Linux 5.16+): only IKE and ESP (ESP-in-UDP included) to the planes' subnets. A drop in
    the output or postrouting hook hands EPERM to the sending socket (nr-gnb aborted on it, issue
    22.13); a drop at egress reaches the sender as a lost packet at most (UDP: sendto succeeds),
    so the RAN survives and the loss is measured. A packet the kernel protects is ESP by then; one
    for libipsec's TUN (ipsec0) never reaches these devices. ipsec/entrypoint.sh wraps the rules in
    one chain per device of the namespace (lo apart) and removes nftables.conf's postrouting drop
    once they are in; a kernel without the egress hook keeps that one (fail-closed, with EPERM)."""
    subnet = _guarded_subnets(plane, values, node)
    return "\n".join([
        "meta protocol != ip accept",
        f"ip daddr != {subnet} accept",
        "ip protocol esp accept",
        "udp sport { 500, 4500 } accept",
        "counter drop",
    ]) + "\n"


def overlay_env(node: str, plane: str, profile: Profile, values: dict[str, Any],
                conns: list[tuple[str, channels.Link]]) -> str:
    p = profile.params
    mine = [stack.address(node, network(pl), values) for pl in _split(plane)
            if network(pl) in (values["nodes"][node].get("networks") or {})]
    env = {
        "NODE": node,
        "PLANE": planes.expr(_split(plane)),
        "PROFILE": profile.id,
        "MODE": p["mode"],
        "CHILDREN": " ".join(name for name, _ in conns),
        "INITIATES": " ".join(name for name, link in conns if initiates(node, link.other(node))),
        "LOCAL_ADDR": " ".join(dict.fromkeys(mine)),
        "XFRM_LARVAL_DROP": str(p["xfrm_larval_drop"]),
        "ESP_PROPOSAL": p["esp_proposal"],
        "LIBIPSEC_SUPPORTS_ESP": "0" if p["esp_proposal"] in LIBIPSEC_UNSUPPORTED_ESP else "1",
        "READY_TIMEOUT": str(READY_TIMEOUT_S),
        "MIN_STRONGSWAN": str(p.get("min_strongswan") or ""),
    }
    return ("# rendered by ipsec/overlay.py; sourced by ipsec/entrypoint.sh\n"
            + "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()))


def _copy(src: Path, dst: Path, mode: int) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    os.chmod(dst, mode)


def render(profile: Profile, plane: str, values: dict[str, Any], keys_dir: Path, out_dir: Path,
           nodes: Iterable[str] | None = None) -> dict[str, Path]:
    """Write out_dir/<node>/ for every endpoint (or only `nodes`); return {node: dir}."""
    if profile.protocol != "ipsec":
        raise IpsecRenderError(f"profile {profile.id} is {profile.protocol}, not ipsec")
    missing = [pl for pl in _split(plane) if pl not in profile.planes]
    if missing:
        raise IpsecRenderError(f"profile {profile.id} does not run on the {', '.join(missing)} plane "
                               f"({', '.join(profile.planes)})")
    all_eps = endpoints(plane, values)
    selected = all_eps if nodes is None else list(nodes)
    unknown = [n for n in selected if n not in all_eps]
    if unknown:
        raise IpsecRenderError(f"{', '.join(unknown)}: not an endpoint of the {plane} plane; "
                               f"endpoints: {', '.join(all_eps)}")
    keys_dir, out_dir = Path(keys_dir), Path(out_dir)
    result: dict[str, Path] = {}
    for node in selected:
        conns = connections(node, plane, values, selected)
        d = out_dir / node
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True, mode=0o700)           # holds the node's key / PSKs
        os.chmod(d, 0o700)
        if profile.params["auth"] == "cert":
            crt, key = _cert_paths(keys_dir, node)
            _copy(crt, d / "x509" / f"{node}.crt", 0o644)
            _copy(keys.ca_prefix(keys_dir, "ecdsa").with_suffix(".crt"), d / "x509ca" / "ca.crt", 0o644)
            _copy(key, d / "private" / f"{node}.key", 0o600)
            os.chmod(d / "private", 0o700)
        _write(d / "swanctl.conf", swanctl_conf(node, plane, profile, values, keys_dir, conns), 0o600)
        _write(d / "strongswan.conf", strongswan_conf("kernel"))
        _write(d / "strongswan-libipsec.conf", strongswan_conf("libipsec"))
        _write(d / "nftables.conf", nftables_conf(plane, values, node))
        _write(d / "nftables-egress.rules", nftables_egress_rules(plane, values, node))
        _write(d / "overlay.env", overlay_env(node, plane, profile, values, conns))
        result[node] = d
        log.info("rendered IPsec %s for %s (%s): connections %s", profile.id, node, plane,
                 ", ".join(n for n, _ in conns) or "-")
    return result


# --- optional hooks ---------------------------------------------------------------------------

def compose_env(profile: Profile, plane: str, values: dict[str, Any]) -> dict[str, str]:
    """Variables the rendered Compose fragment interpolates."""
    return {"IPSEC_XFRM_LARVAL_DROP": str(profile.params["xfrm_larval_drop"])}


def compose_services(profile: Profile, plane: str, values: dict[str, Any],
                     userspace_possible: bool) -> dict[str, dict[str, Any]]:
    """The holders of the plane(s)' endpoints run ipsec/entrypoint.sh with their rendered dir
    (testbed/render/compose_overlay.py writes them into the render's overlay fragment)."""
    from testbed.render import compose_overlay
    userspace = userspace_possible and libipsec_capable(profile)[0]
    return {f"{node}-net": compose_overlay.holder_service(
                "ipsec", node, userspace=userspace, waits_for_peers=True,
                environment={"IPSEC_DATAPATH": "${IPSEC_DATAPATH:-auto}"},
                # per network namespace; 0 only for the trap-queue profiles: the kernel queues
                # packets while IKE runs instead of dropping them (docs/overlays/ipsec.md)
                sysctls={"net.core.xfrm_larval_drop": "${IPSEC_XFRM_LARVAL_DROP:-1}"})
            for node in endpoints(plane, values)}


# Bounded wait of the trap-mode patch (patches/open5gs/0002-sbi-trap-path-wait.patch): long
# enough for IKE_SA_INIT + IKE_AUTH with certificates on a loaded host, short enough that a
# broken tunnel shows up as a logged "path-wait: ... result=fallback" (an invalid run) instead of a hang.
TRAP_WAIT_MS = 2000


def nf_environment(node: str, profile: Profile, values: dict[str, Any]) -> dict[str, str]:
    """The program container's extra environment: the trap-wait patch's switch for SBI NFs
    in the paper's `trap` mode (the other modes run the NFs unpatched in behaviour)."""
    if not profile.params.get("patched_wait"):
        return {}
    if "sbi" not in values["nodes"].get(node, {}).get("networks", {}):
        return {}
    return {"OGS_SBI_WAIT_PEER_MS": str(TRAP_WAIT_MS)}


def libipsec_capable(profile: Profile) -> tuple[bool, str]:
    """Whether the profile can run on kernel-libipsec (userspace ESP), and why not."""
    p = profile.params
    if p["esp_proposal"] in LIBIPSEC_UNSUPPORTED_ESP:
        return False, (f"ESP {p['esp_label']} ({p['esp_proposal']}) is not implemented by strongSwan's "
                       "userspace ESP (kernel-libipsec); it needs the kernel xfrm ESP datapath")
    if p["mode"] != "start":
        return False, ("trap modes need the kernel xfrm ESP datapath: strongSwan 5.9.8 kernel-libipsec "
                       "sends no acquires for trap policies")
    return True, ""


def host_needs(profile: Profile, plane: str) -> list[str]:
    needs = ["xfrm-esp or kernel-libipsec", "tun"]
    if not libipsec_capable(profile)[0]:
        needs = [f"xfrm-esp ({libipsec_capable(profile)[1]})"]
    return needs


# --- capture check ----------------------------------------------------------------------------

# NULL-encrypted ESP must stay ESP in the counts, not be decoded as its plaintext payload.
NO_ESP_NULL_HEURISTIC = ["-o", "esp.enable_null_encryption_decode_heuristic:FALSE"]


def _count(pcap: Path, display_filters: list[str]) -> list[int]:
    """Frames matching each display filter, in one tshark pass (io,stat; no per-packet Python).
    Filters must not contain commas (io,stat separates columns by comma)."""
    if any("," in f for f in display_filters):
        raise ValueError(f"io,stat filters cannot contain commas: {display_filters}")
    out = tshark.run(pcap, ["-q", *NO_ESP_NULL_HEURISTIC, "-z", "io,stat,0," + ",".join(display_filters)])
    rows = [ln for ln in out.splitlines() if "<>" in ln]
    if not rows:    # tshark 4.0 prints no interval row for a capture of duration 0 (0 or 1 frame)
        return [_count_one(pcap, f) for f in display_filters]
    cells = [c.strip() for c in rows[-1].strip().strip("|").split("|")][1:]
    cells = [c for c in cells if c]                # the table is padded to its header's width
    frames = [int(c) for c in cells[0::2]]         # per filter: Frames | Bytes
    if len(frames) != len(display_filters):
        raise RuntimeError(f"unexpected tshark io,stat output for {pcap}: {rows[-1]}")
    return frames


def _count_one(pcap: Path, display_filter: str) -> int:
    return tshark.count(pcap, display_filter, extra=NO_ESP_NULL_HEURISTIC)


def verify_capture(pcap: Path, profile: Profile, plane: str, values: dict[str, Any],
                   nodes: Iterable[str] | None = None) -> Verdict:
    """ESP (or ESP-in-UDP, NAT-T as with libipsec) between the plane's endpoints and no
    plaintext of the plane's traffic (its protocol on its port, or ICMP echo) between endpoint
    addresses. One capture shows one plane (one network)."""
    net = network(plane)
    eps = list(nodes) if nodes is not None else endpoints(plane, values)
    addrs = sorted({str(ipaddress.ip_address(stack.address(n, net, values))) for n in eps
                    if net in (values["nodes"][n].get("networks") or {})})
    if not Path(pcap).is_file():
        return Verdict(False, 0, 0, f"capture {pcap} does not exist")
    if not addrs:
        return Verdict(False, 0, 0, f"no endpoint of the {plane} plane among {', '.join(eps)}")
    # no `in {a, b}` sets: io,stat separates its filters by commas
    src_any = "(" + " || ".join(f"ip.src == {a}" for a in addrs) + ")"
    dst_any = "(" + " || ".join(f"ip.dst == {a}" for a in addrs) + ")"
    between = f"{src_any} && {dst_any}"
    plain_filter = f"({planes.get(plane).plaintext_filter(values)} || {ICMP_ECHO})"
    esp_raw, esp_udp, plaintext = _count(pcap, [
        f"{between} && ip.proto == 50",
        f"{between} && udp.port == 4500 && esp",
        f"{between} && !esp && !isakmp && {plain_filter}",
    ])
    protected = esp_raw + esp_udp
    ke = _ke_check(pcap, profile)
    valid = protected > 0 and plaintext == 0 and not ke[1]
    why = "" if valid else ("; INVALID: no ESP between the endpoints" if protected == 0
                            else "; INVALID: plaintext of the plane between the endpoints" if plaintext
                            else "; INVALID: " + "; ".join(ke[1][:3]))
    details = (f"{plane}: ESP {protected} (ip.proto 50: {esp_raw}, ESP-in-UDP/4500: {esp_udp}) and plaintext "
               f"{plaintext} ({plain_filter}) between {', '.join(addrs)} [profile {profile.id}]{ke[0]}{why}")
    return Verdict(valid, protected, plaintext, details)


def _ke_check(pcap: Path, profile: Profile) -> tuple[str, list[str]]:
    """For the post-quantum key-exchange profiles: (details, problems) of the IKE handshakes the
    capture holds (ipsec/ike_sas.py). A capture without a completed IKE SA proves nothing about
    the key exchange; the run-level check (ipsec/run_checks.py) requires one among the run's captures."""
    if not profile.params.get("ke"):
        return "", []
    from ipsec import ike_sas
    sas = ike_sas.read(Path(pcap))
    if not any(sa.complete for sa in sas):
        return "; key exchange not verified here (no complete IKE handshake in this capture)", []
    return f"; key exchange {profile.params['ike_proposal']}: {ike_sas.summary(sas)}", ike_sas.ke_problems(
        sas, str(profile.params["ike_proposal"]))


# --- negotiated proposals (from the daemon, not the config) -----------------------------------

# swanctl --list-sas prints the negotiated IKE algorithms as <ENCR>/<PRF>/<DH>; the catalogue's
# IKE proposal keyword in the same words (strongSwan's proposal keywords).
IKE_WORDS = {"aes128gcm16": "AES_GCM_16-128", "aes256gcm16": "AES_GCM_16-256", "prfsha256": "PRF_HMAC_SHA2_256",
             "prfsha384": "PRF_HMAC_SHA2_384", "ecp256": "ECP_256", "ecp384": "ECP_384", "curve25519": "CURVE_25519",
             "x25519": "CURVE_25519", "mlkem512": "ML_KEM_512", "mlkem768": "ML_KEM_768", "mlkem1024": "ML_KEM_1024"}
_ESP_LINE = re.compile(r"^\s+\S+: #\d+, reqid \d+, INSTALLED, TUNNEL(?:-in-UDP)?, ESP:(\S+)", re.M)
_IKE_LINE = re.compile(r"^\s+([A-Z0-9_-]+(?:/[A-Z0-9_-]+)+)\s*$", re.M)


def expected_esp(profile: Any) -> str:
    """The ESP algorithms as swanctl prints an installed CHILD_SA (ESP:<enc>[/<integ>])."""
    enc, integ = profile.params["esp_encryption"] or "NULL", profile.params["esp_integrity"]
    return enc + (f"/{integ}" if integ else "")


def _ike_word(word: str) -> str:
    """One proposal keyword as swanctl prints it; RFC 9370 additional key exchanges `ke<n>_<method>`
    print as KE<n>_<METHOD> (ke1_mlkem768 -> KE1_ML_KEM_768)."""
    if word.startswith("ke") and "_" in word:
        n, method = word.split("_", 1)
        return f"{n.upper()}_{IKE_WORDS.get(method, method.upper())}"
    return IKE_WORDS.get(word, word.upper())


def expected_ike(profile: Any) -> str:
    return "/".join(_ike_word(w) for w in str(profile.params["ike_proposal"]).split("-"))


def esp_forms(profile: Any) -> set[str]:
    """The CHILD_SA algorithms swanctl may print for the profile: the one created with IKE_AUTH has
    no key exchange; with a PFS proposal (the post-quantum profiles) a rekeyed one adds its methods."""
    base = expected_esp(profile)
    ke = str(profile.params.get("esp_proposal", "")).split("-")[1:] if profile.params.get("ke") else []
    return {base, "/".join([base, *(_ike_word(w) for w in ke)])} if ke else {base}


def check_sas(text: str, profile: Any) -> list[str]:
    """What is wrong with the SAs a daemon reports against the profile ([] = exactly the
    profile's IKE and ESP proposals on every installed CHILD_SA, and at least one of those)."""
    problems = []
    esp = _ESP_LINE.findall(text)
    if not esp:
        problems.append("no INSTALLED CHILD_SA")
    want = esp_forms(profile)
    wrong = sorted({e for e in esp if e not in want})
    if wrong:
        problems.append(f"ESP {', '.join(wrong)} negotiated, profile wants {' or '.join(sorted(want))}")
    ike = [i for i in _IKE_LINE.findall(text) if "PRF_" in i or "ECP_" in i or "MODP_" in i]
    want_ike = expected_ike(profile)
    wrong_ike = sorted({i for i in ike if i != want_ike})
    if wrong_ike:
        problems.append(f"IKE {', '.join(wrong_ike)} negotiated, profile wants {want_ike}")
    return problems



def _ipsec_root() -> Path | None:
    """The Debian root charon runs from (IPSEC_ROOT: ipsec/entrypoint.sh), None: the host's."""
    root = environment.get("IPSEC_ROOT")
    return Path(root) if root else None


def charon_version() -> str | None:
    """The strongSwan (charon) version the namespace lab runs: IPSEC_ROOT's when set, else the
    host's; None without it."""
    return _charon_version_in(_ipsec_root())


def _charon_version_in(root: Path | None) -> str | None:
    """The charon version in `root` (its package record, scripts/suite-root.sh, else its charon
    asked in the root: a compiled strongSwan copied in, as the tools image has), or the host's
    (None)."""
    if root is not None:
        rec = root / ".g5tb-root"
        lines = rec.read_text(encoding="utf-8").splitlines() if rec.is_file() else []
        ver = next((ln.split("=", 1)[1] for ln in lines if ln.startswith("strongswan-charon=")), None)
        if ver:
            return ver.split(":")[-1].split("-")[0]
        if not (root / "usr" / "lib" / "ipsec" / "charon").is_file():
            return None  # a root without strongSwan (chroot's own complaint is no version)
        return programs.program_version(["chroot", str(root), "/usr/lib/ipsec/charon", "--version"],
                                        r"strongSwan ([\d.]+)")
    return programs.program_version(["/usr/lib/ipsec/charon", "--version"], r"strongSwan ([\d.]+)")


# The Debian root `make pq-roots` makes for the profiles whose strongSwan floor this host's
# charon misses (scripts/suite-root.sh; docs/post-quantum.md)
PQ_ROOT_SPEC = Path(__file__).resolve().parent / "pq-root.env"


def _host_charon() -> str | None:
    """This host's own charon version (None: none installed)."""
    return _charon_version_in(None)


def _release(version: str) -> tuple[int, ...]:
    """"6.0.2" -> (6, 0, 2): strongSwan's release numbers, compared as numbers."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def lab_environment(profiles: Iterable[Profile]) -> dict[str, str]:
    """IPSEC_ROOT for the namespace lab: the root `make pq-roots` made (ipsec/pq-root.env) when one
    of `profiles` needs a newer strongSwan (min_strongswan) than this host's charon and that root's
    is new enough. Nothing when IPSEC_ROOT is set (it wins), when the host's charon will do, or
    when no such root is made (ipsec/entrypoint.sh then refuses the old charon naming `make
    pq-roots`)."""
    floors = [str(p.params.get("min_strongswan")) for p in profiles if p.params.get("min_strongswan")]
    if not floors or _ipsec_root() is not None:
        return {}
    floor = max(floors, key=_release)
    host = _host_charon()
    if host and _release(host) >= _release(floor):
        return {}
    from testbed import suite_root
    root = suite_root.built(PQ_ROOT_SPEC)
    have = _charon_version_in(root) if root is not None else None
    if root is None or not have or _release(have) < _release(floor):
        return {}
    return {"IPSEC_ROOT": str(root)}


def charon_plugins() -> str | None:
    """The charon plugins installed where it runs (IPSEC_ROOT's or the host's), space-separated: the
    run manifest says whether ML-KEM could come from the openssl or the ml plugin; None: none found."""
    base = (_ipsec_root() or Path("/")) / "usr" / "lib" / "ipsec" / "plugins"
    names = sorted(p.name[len("libstrongswan-"):-len(".so")] for p in base.glob("libstrongswan-*.so"))
    return " ".join(names) or None
