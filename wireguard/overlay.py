"""WireGuard overlay on any plane of nf-configs/channels.yaml (N3, SBI, N2, N4, ...) or several.

One WireGuard interface per node, one peer per channel partner, listening on UDP 51820
(WireGuard binds the port on every address; the peers reach it on the node's address on
the plane's network). The overlay is transparent to the NF configurations: every node keeps
its real address, and plaintext traffic to a partner's real address is steered into the
interface by fwmark policy routing:

    ip rule add not fwmark FWMARK table TABLE pref RULE_PREF
    ip route add <partner>/32 dev wg0 src <own address> table TABLE     (per partner)

WireGuard marks its own UDP packets with FWMARK, so they skip that table and leave through
the main table's route over the bridge; every other packet to a partner enters the tunnel.
AllowedIPs = the partner's real /32, which is also its endpoint: the fwmark is what stops
the encapsulated packets from looping (as wg-quick does for a full tunnel). Renumbering the NFs onto tunnel
addresses was the alternative; it would change every NF config and the capture filters.

`plane` is a PLANE expression (testbed/planes.py): a node on several of the planes (the AMF
on sbi and n2, the UPF on n3 and n4) gets one interface whose peers are its partners on every
one of them; a partner met on two planes is one peer (one public key) with both addresses in
AllowedIPs. Each route to a partner's address takes the node's own address on that plane as
its source (WG_ROUTE_SRC), so the partner's AllowedIPs accept the inner packets.

`render()` writes per node: `wg.conf` (wg setconf format: private key, port, fwmark, peers;
mode 0600) and `overlay.env` (what wireguard/entrypoint.sh needs to set up routing).
"""
from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wireguard import keys as wg_keys
from wireguard import rosenpass
from testbed import channels, planes, stack, tshark
from testbed.files import write_atomic as _write
from testbed.verdict import Verdict

log = logging.getLogger(__name__)

IFNAME = "wg0"
LISTEN_PORT = 51820
FWMARK = 0xCA6C            # 51820, as wg-quick uses
TABLE = 51820              # routing table of the steered partner /32s
RULE_PREF = 5182           # must sort before the main table's rule (32766)
MTU = 1420                 # 1500-byte bridge minus 80 bytes of WireGuard over IPv4/IPv6 (wg-quick's rule)
READY_TIMEOUT_S = 60       # deadline for the handshakes with every partner


class WireGuardError(ValueError):
    """A profile/plane/node the WireGuard overlay cannot render."""


def _split(plane: str) -> tuple[str, ...]:
    try:
        return planes.split(plane)
    except planes.PlaneError as exc:
        raise WireGuardError(f"{exc}; the WireGuard overlay covers any of them") from None


def links(plane: str, values: dict[str, Any] | None = None,
          nodes: Iterable[str] | None = None) -> list[channels.Link]:
    """The WireGuard peerings of the plane(s): the channel map's host pairs whose nodes have an
    address on the plane's network (and, if given, are both among `nodes`)."""
    return channels.links(_split(plane), values or stack.load(), nodes)


def pairs(plane: str, values: dict[str, Any] | None = None,
          nodes: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """Host pairs with a WireGuard peering on the plane(s), sorted, without repeats."""
    return sorted({(x.a, x.b) for x in links(plane, values, nodes)})


def endpoints(plane: str, values: dict[str, Any] | None = None) -> list[str]:
    """Nodes that take part on the plane(s), sorted."""
    return sorted({n for pair in pairs(plane, values) for n in pair})


def partners(node: str, plane: str, values: dict[str, Any] | None = None,
             nodes: Iterable[str] | None = None) -> list[str]:
    return sorted({b if a == node else a for a, b in pairs(plane, values, nodes) if node in (a, b)})


def _addr(node: str, plane: str, values: dict[str, Any]) -> str:
    return stack.address(node, planes.network(plane), values)


def _check_profile(profile: Any, plane: str) -> None:
    if getattr(profile, "protocol", None) != "wireguard":
        raise WireGuardError(f"profile {getattr(profile, 'id', profile)!r} is not a WireGuard profile")
    missing = [p for p in _split(plane) if p not in profile.planes]
    if missing:
        raise WireGuardError(f"profile {profile.id!r} does not cover the {', '.join(missing)} plane "
                             f"(it covers: {', '.join(profile.planes)})")


def wg_conf(node: str, plane: str, values: dict[str, Any], keys_dir: Path,
            nodes: Iterable[str] | None = None) -> str:
    """The node's `wg setconf` file (holds its private key): one peer per partner node."""
    private, _ = wg_keys.wg_keys(keys_dir, node)
    lines = ["# rendered by wireguard/overlay.py; `wg setconf` format",
             "[Interface]", f"PrivateKey = {private}", f"ListenPort = {LISTEN_PORT}",
             f"FwMark = {FWMARK:#x}"]
    mine = [x for x in links(plane, values, nodes) if node in (x.a, x.b)]
    for peer in sorted({x.other(node) for x in mine}):
        _, public = wg_keys.wg_keys(keys_dir, peer)
        addrs = [_addr(peer, x.plane, values) for x in mine if x.other(node) == peer]
        lines += ["", f"# {peer} ({', '.join(x.plane for x in mine if x.other(node) == peer)})", "[Peer]",
                  f"PublicKey = {public}", f"Endpoint = {addrs[0]}:{LISTEN_PORT}",
                  "AllowedIPs = " + ", ".join(f"{a}/32" for a in addrs)]
    return "\n".join(lines) + "\n"


def overlay_env(node: str, profile_id: str, plane: str, values: dict[str, Any],
                nodes: Iterable[str] | None = None) -> dict[str, str]:
    """What wireguard/entrypoint.sh reads (shell variables)."""
    mine = [x for x in links(plane, values, nodes) if node in (x.a, x.b)]
    own = list(dict.fromkeys(_addr(node, x.plane, values) for x in mine))
    return {
        "WG_PROFILE": profile_id,
        "WG_NODE": node,
        "WG_PLANE": planes.expr(_split(plane)),
        "WG_IF": IFNAME,
        "WG_ADDRESS": own[0] if own else "",
        "WG_ADDRESSES": " ".join(own),
        "WG_PEERS": " ".join(f"{x.other(node)}={_addr(x.other(node), x.plane, values)}" for x in mine),
        # the source of each route into the tunnel: the node's own address on that plane
        "WG_ROUTE_SRC": " ".join(f"{_addr(x.other(node), x.plane, values)}={_addr(node, x.plane, values)}"
                                 for x in mine),
        "WG_LISTEN_PORT": str(LISTEN_PORT),
        "WG_FWMARK": f"{FWMARK:#x}",
        "WG_TABLE": str(TABLE),
        "WG_RULE_PREF": str(RULE_PREF),
        "WG_MTU": str(MTU),
        "WG_READY_TIMEOUT": str(READY_TIMEOUT_S),
    }


def render(profile: Any, plane: str, values: dict[str, Any], keys_dir: Path,
           out_dir: Path, nodes: Iterable[str] | None = None) -> dict[str, Path]:
    """Write out_dir/<node>/{wg.conf,overlay.env} for every endpoint; return {node: dir}.

    `nodes` (the namespace lab's subsets) limits the endpoints, and the peers of each, to
    those nodes, so that no endpoint waits for a handshake with a node that is not there."""
    _check_profile(profile, plane)
    only = None if nodes is None else list(nodes)
    if only is not None:
        unknown = sorted(set(only) - set(endpoints(plane, values)))
        if unknown:
            raise WireGuardError(f"{', '.join(unknown)}: not a WireGuard endpoint of the {plane} plane "
                                 f"(endpoints: {', '.join(endpoints(plane, values))})")
    chosen = sorted({n for pair in pairs(plane, values, only) for n in pair})
    if not chosen:
        raise WireGuardError(f"no host pairs on the {plane} plane among "
                             f"{', '.join(only) if only is not None else 'the nodes of stack.yaml'} "
                             f"in the channel map ({channels.CHANNEL_FILE}): nothing to render")
    if profile.params.get("rosenpass"):
        # the key pairs of the nodes rendered (a partner of one is rendered too), made here and not
        # in every `make keys`; with no program to make them, the render names the missing key
        rosenpass.ensure(keys_dir, chosen)
    out: dict[str, Path] = {}
    for node in chosen:
        d = Path(out_dir) / node
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
        _write(d / "wg.conf", wg_conf(node, plane, values, keys_dir, only), 0o600)
        env = overlay_env(node, profile.id, plane, values, only)
        if profile.params.get("rosenpass"):
            env.update(_rosenpass_env(d, node, plane, values, keys_dir, only))
        _write(d / "overlay.env",
               "# rendered by wireguard/overlay.py for wireguard/entrypoint.sh\n"
               + "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()), 0o644)
        out[node] = d
    log.info("rendered WireGuard (%s) for %s under %s", plane, ", ".join(chosen), out_dir)
    return out


def _rosenpass_env(d: Path, node: str, plane: str, values: dict[str, Any], keys_dir: Path,
                   only: list[str] | None) -> dict[str, str]:
    """The Rosenpass companion's files and variables (wireguard/rosenpass.py): RP_PEERS lists
    `name=address=WireGuard public key` of every partner."""
    mine = [x for x in links(plane, values, only) if node in (x.a, x.b)]
    partners = sorted({x.other(node) for x in mine})
    try:
        lines = rosenpass.render(d, node, partners, keys_dir)
    except FileNotFoundError as exc:
        raise WireGuardError(str(exc)) from None
    env = dict(ln.split("=", 1) for ln in lines)
    env["RP_PEERS"] = " ".join(
        f"{p}={_addr(p, next(x.plane for x in mine if x.other(node) == p), values)}={wg_keys.wg_keys(keys_dir, p)[1]}"
        for p in partners)
    return env


def host_needs(profile: Any, plane: str) -> list[str]:
    return ["wireguard kernel module or wireguard-go", "tun"]


def compose_services(profile: Any, plane: str, values: dict[str, Any],
                     userspace_possible: bool) -> dict[str, dict[str, Any]]:
    """The holders of the plane(s)' endpoints run wireguard/entrypoint.sh with their rendered dir
    (testbed/render/compose_overlay.py writes them into the render's overlay fragment)."""
    from testbed.render import compose_overlay
    return {f"{node}-net": compose_overlay.holder_service(
                "wireguard", node, userspace=userspace_possible, waits_for_peers=True,
                environment={"WIREGUARD_DATAPATH": "${WIREGUARD_DATAPATH:-auto}"},
                # decrypted packets come in on wg0 from a peer the main table routes via the
                # bridge: strict reverse-path filtering would drop them (loose keeps the check)
                sysctls={"net.ipv4.conf.all.rp_filter": "2"})
            for node in endpoints(plane, values)}


# --- capture check ----------------------------------------------------------------------------

def plaintext_filter(plane: str, values: dict[str, Any]) -> str:
    """The plane's traffic as it looks without the overlay (plus ICMP)."""
    return f"{planes.get(plane).plaintext_filter(values)} || icmp"


def capture_filter(plane: str, values: dict[str, Any]) -> str:
    """Packets between two nodes on the plane's network that are WireGuard or the plane's
    plaintext. Every node with an address there counts, not only the channel map's
    endpoints, so traffic with a node the overlay does not cover (e.g. the SCP) shows up
    as plaintext instead of passing unseen."""
    try:
        net = planes.network(plane)
    except planes.PlaneError as exc:
        raise WireGuardError(str(exc)) from None
    addrs = ", ".join(str(spec["networks"][net]) for spec in values["nodes"].values()
                      if net in spec.get("networks", {}))
    return (f"ip.src in {{{addrs}}} && ip.dst in {{{addrs}}} && "
            f"(wg || {plaintext_filter(plane, values)})")


def verify_capture(pcap: Path, profile: Any, plane: str, values: dict[str, Any] | None = None) -> Verdict:
    """WireGuard present and no plaintext of the plane's traffic between the endpoints."""
    v = values or stack.load()
    flt = capture_filter(plane, v)
    rows = [(r.split("\t") + [""] * 4)[:4] for r in tshark.run(
        pcap, ["-d", f"udp.port=={LISTEN_PORT},wg", "-Y", flt, "-T", "fields", "-E", "separator=\t",
               "-e", "wg.type", "-e", "udp.srcport", "-e", "udp.dstport", "-e", "icmp.type"]).splitlines()]
    port = str(LISTEN_PORT)
    # protected only on WireGuard's own port: tshark's heuristic may call other UDP "wg"
    protected = sum(1 for r in rows if r[0].strip() and port in r[1:3])
    elsewhere = sum(1 for r in rows if r[0].strip() and port not in r[1:3])
    # With Rosenpass, an ICMP error quoting its own UDP (a message that reached an end whose daemon
    # was not, or no longer, listening: while the holders start or stop) is the overlay's control
    # traffic, outside the tunnel by design like Rosenpass's UDP itself, not the plane's: counted apart
    rp = bool(getattr(profile, "params", {}).get("rosenpass"))
    rp_icmp = sum(1 for r in rows if rp and not r[0].strip() and r[3].strip() and str(rosenpass.RP_PORT) in r[1:3])
    plaintext = len(rows) - protected - elsewhere - rp_icmp
    valid = protected > 0 and plaintext == 0 and elsewhere == 0
    why = ""
    if not valid:
        why = " -> INVALID: " + "; ".join(
            s for s in ("no WireGuard packets between the endpoints" if protected == 0 else "",
                        f"{plaintext} plaintext packets of the {plane} plane on the wire" if plaintext else "",
                        f"{elsewhere} WireGuard-like packets off port {port}" if elsewhere else "")
            if s)
    pid = getattr(profile, "id", profile)
    rp_details, rp_problems = "", list[str]()
    if rp:
        rp_details, rp_problems = rosenpass.capture_problems(Path(pcap), LISTEN_PORT, len(pairs(plane, v)))
        rp_details += f", {rp_icmp} ICMP error(s) about it"
        if rp_problems:
            valid = False
            why += ("; " if why else " -> INVALID: ") + "; ".join(rp_problems[:3])
    return Verdict(valid, protected, plaintext,
                   f"wireguard {plane} ({pid}): {protected} WireGuard packets, {plaintext} plaintext "
                   f"[{flt}]{rp_details}{why}")
