"""MACsec (IEEE 802.1AE) on the Ethernet link of one plane's network (docs/overlays/macsec.md).

Each endpoint gets a Linux macsec link (`macsec0`) on its interface of the plane's network, and
its address of that network moves from the interface onto macsec0 (the entrypoint does it): every
IPv4 packet to a partner, ARP included, then leaves as a MACsec frame (EtherType 0x88E5,
encrypted, SecTAG with the SCI, 16-octet ICV). No NF config and no capture filter changes: the
nodes keep their addresses.

Identifiers are derived from stack.yaml, so they are the same in every render and the capture
check can name them: the SCI of a node is 02:00:<its IPv4 address> as system identifier and
port 1 (`sci_of`); the SSCI of the XPN suites is its IPv4 address as a 32-bit number. Keys are
per render (macsec/keys.py): each node's SAK (and XPN salt) derived from its `make keys` secret
with the render's nonce; the key identifier is the nonce's first 12 bytes and the SSCI, so the
records of both ends show they came from one render.

`render()` writes per node: `overlay.env` (what macsec/entrypoint.sh needs; no secret) and
`sa.conf` (0600: the `ip macsec add <link>` arguments of its transmit SA, of one receive channel
per partner and of the partner's SA, with the SAKs).
"""
from __future__ import annotations

import ipaddress
import logging
import os
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from macsec import keys as mkeys
from testbed import channels, planes, stack
from testbed.files import write_atomic
from testbed.profiles import Profile

log = logging.getLogger(__name__)

PROTOCOL = "macsec"
IFNAME = "macsec0"
PORT = 1                       # the SCI's port identifier
AN = 0                         # the one association number each channel uses (no rekeying)
FIRST_PN = 1
FALLBACK_METRIC = 4242         # the lower device's route to the plane's subnet when macsec0 is gone
READY_TIMEOUT_S = 30           # deadline for ARP through MACsec with every partner
SALT_BYTES = 12                # XPN: 96-bit salt per SA


class MacsecError(ValueError):
    """A profile/plane/node the MACsec overlay cannot render."""


def network_of(plane: str) -> str:
    """The one network the PLANE expression's planes share (a MACsec link lives on one)."""
    try:
        nets = sorted({planes.network(p) for p in planes.split(plane)})
    except planes.PlaneError as exc:
        raise MacsecError(str(exc)) from None
    if len(nets) != 1:
        raise MacsecError(f"MACsec protects one Ethernet network per run; {plane} spans {', '.join(nets)}")
    return nets[0]


def links(plane: str, values: dict[str, Any], nodes: Iterable[str] | None = None) -> list[channels.Link]:
    """The plane's host pairs (the channel map) whose nodes have an address on its network."""
    network_of(plane)
    return channels.links(plane, values, nodes)


def endpoints(plane: str, values: dict[str, Any]) -> list[str]:
    return sorted({n for x in links(plane, values) for n in (x.a, x.b)})


def partners(node: str, plane: str, values: dict[str, Any], nodes: Iterable[str] | None = None) -> list[str]:
    return sorted({x.other(node) for x in links(plane, values, nodes) if node in (x.a, x.b)})


def system_identifier(address: str) -> str:
    """The SCI's system identifier of the node with this IPv4 address: 02:00:<the address>
    (a locally administered unicast MAC-48 value; the kernel never compares it with a MAC)."""
    return ":".join(f"{b:02x}" for b in (2, 0, *ipaddress.IPv4Address(address).packed))


def sci_of(address: str) -> str:
    """The SCI, 16 hex digits as iproute2 takes it (system identifier, then the port)."""
    return system_identifier(address).replace(":", "") + f"{PORT:04x}"


def ssci_of(address: str) -> int:
    """The XPN short SCI: the IPv4 address as a number (unique among a network's nodes)."""
    return int(ipaddress.IPv4Address(address))


def _check_profile(profile: Profile, plane: str) -> None:
    if profile.protocol != PROTOCOL:
        raise MacsecError(f"profile {profile.id!r} is not a MACsec profile")
    missing = [p for p in planes.split(plane) if p not in profile.planes]
    if missing:
        raise MacsecError(f"profile {profile.id!r} does not cover the {', '.join(missing)} plane "
                          f"(it covers: {', '.join(profile.planes)})")


class _Keys:
    """One render's SAKs, salts and key identifiers, per node (macsec/keys.py)."""

    def __init__(self, profile: Profile, keys_dir: Path, nonce: bytes) -> None:
        self.profile, self.keys_dir, self.nonce = profile, Path(keys_dir), nonce
        self.sak_bytes = int(profile.params["key_bits"]) // 8

    def sak(self, node: str) -> str:
        what = f"sak {self.profile.params['cipher']}"
        return mkeys.derive(self.keys_dir, node, self.nonce, what, self.sak_bytes).hex()

    def salt(self, node: str) -> str:
        return mkeys.derive(self.keys_dir, node, self.nonce, "xpn salt", SALT_BYTES).hex()

    def key_id(self, address: str) -> str:
        return self.nonce[:12].hex() + f"{ssci_of(address):08x}"


def _sa(profile: Profile, ks: _Keys, node: str, address: str) -> str:
    """`sa <an> pn|xpn <first> on [ssci .. salt ..] key <id> <sak>`: the SA `node` transmits on."""
    if profile.params["xpn"]:
        pn = f"xpn {FIRST_PN} on ssci {ssci_of(address):08x} salt {ks.salt(node)}"   # iproute2 reads ssci as hex
    else:
        pn = f"pn {FIRST_PN} on"
    return f"sa {AN} {pn} key {ks.key_id(address)} {ks.sak(node)}"


def sa_conf(node: str, profile: Profile, plane: str, values: dict[str, Any], ks: _Keys,
            nodes: Iterable[str] | None = None) -> str:
    """The node's `ip macsec add <link> ...` arguments, one a line: its transmit SA, then per
    partner the receive channel and the partner's transmit SA as a receive SA. Holds SAKs."""
    net = network_of(plane)
    lines = ["# rendered by macsec/overlay.py: `ip macsec add <link>` arguments, one a line (SAKs: secret)",
             f"tx {_sa(profile, ks, node, stack.address(node, net, values))}"]
    for peer in partners(node, plane, values, nodes):
        addr = stack.address(peer, net, values)
        lines += [f"# {peer} ({addr})", f"rx sci {sci_of(addr)} on",
                  f"rx sci {sci_of(addr)} {_sa(profile, ks, peer, addr)}"]
    return "\n".join(lines) + "\n"


def overlay_env(node: str, profile: Profile, plane: str, values: dict[str, Any],
                nodes: Iterable[str] | None = None) -> dict[str, str]:
    """What macsec/entrypoint.sh reads (shell variables; nothing secret)."""
    net = network_of(plane)
    own = stack.address(node, net, values)
    p = profile.params
    return {
        "MACSEC_PROFILE": profile.id,
        "MACSEC_NODE": node,
        "MACSEC_PLANE": planes.expr(planes.split(plane)),
        "MACSEC_NETWORK": net,
        "MACSEC_IF": IFNAME,
        "MACSEC_ADDRESS": own,
        "MACSEC_PREFIXLEN": str(stack.prefixlen(net, values)),
        "MACSEC_SUBNET": str(ipaddress.IPv4Network(f"{own}/{stack.prefixlen(net, values)}", strict=False)),
        "MACSEC_SCI": sci_of(own),
        "MACSEC_CIPHER": str(p["cipher"]),
        "MACSEC_ICV_LEN": str(p["icv_len"]),
        "MACSEC_REPLAY_WINDOW": str(p["replay_window"]),
        "MACSEC_PEERS": " ".join(f"{peer}={stack.address(peer, net, values)}"
                                 for peer in partners(node, plane, values, nodes)),
        "MACSEC_FALLBACK_METRIC": str(FALLBACK_METRIC),
        "MACSEC_READY_TIMEOUT": str(READY_TIMEOUT_S),
    }


def render(profile: Profile, plane: str, values: dict[str, Any], keys_dir: Path, out_dir: Path,
           nodes: Iterable[str] | None = None) -> dict[str, Path]:
    """Write out_dir/<node>/{overlay.env,sa.conf} for every endpoint (`nodes`: only these, each
    with only these partners); return {node: dir}. One nonce per call: fresh SAKs per render."""
    _check_profile(profile, plane)
    only = None if nodes is None else list(nodes)
    every = endpoints(plane, values)
    if only is not None and (unknown := sorted(set(only) - set(every))):
        raise MacsecError(f"{', '.join(unknown)}: not a MACsec endpoint of the {plane} plane "
                          f"(endpoints: {', '.join(every)})")
    chosen = sorted({n for x in links(plane, values, only) for n in (x.a, x.b)})
    if not chosen:
        raise MacsecError(f"no host pairs on the {plane} plane among "
                          f"{', '.join(only) if only is not None else 'the nodes of stack.yaml'} "
                          f"in the channel map ({channels.CHANNEL_FILE}): nothing to render")
    ks = _Keys(profile, keys_dir, mkeys.new_nonce())
    out: dict[str, Path] = {}
    for node in chosen:
        d = Path(out_dir) / node
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
        write_atomic(d / "sa.conf", sa_conf(node, profile, plane, values, ks, only), 0o600)
        env = overlay_env(node, profile, plane, values, only)
        write_atomic(d / "overlay.env", "# rendered by macsec/overlay.py for macsec/entrypoint.sh\n"
                     + "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()), 0o644)
        out[node] = d
    log.info("rendered MACsec %s (%s) for %s under %s", profile.params["cipher"], plane, ", ".join(chosen), out_dir)
    return out


def compose_services(plane: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The holders of the plane's endpoints run macsec/entrypoint.sh with their rendered dir
    (testbed/render/compose_overlay.py writes them into the render's overlay fragment); a kernel
    datapath only: no TUN, no environment, no sysctl."""
    from testbed.render import compose_overlay
    return {f"{node}-net": compose_overlay.holder_service(PROTOCOL, node, userspace=False, environment={},
                                                          sysctls={})
            for node in endpoints(plane, values)}
