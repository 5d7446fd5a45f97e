"""Does a capture of the plane's network show MACsec in force? (docs/overlays/macsec.md "Capture
check"; one tshark field export, classified here.)

On the wire a MACsec frame is EtherType 0x88E5 with a SecTAG; with encryption its payload
(the inner EtherType, IP header and all) is unreadable, and its SCI names the sender. Valid:
- MACsec frames with E and C set (encrypted) from the SCI of every endpoint (`overlay.sci_of`),
- no frame of an endpoint's in the clear: no IPv4 sent from an endpoint's address (the plane's
  GTP-U and ICMP, or anything else), no ARP from one once MACsec was on the wire (Docker may
  announce a container's address when it attaches it, before the overlay starts),
- no MACsec frame readable (integrity only: E and C clear) and none from an unknown SCI.
Every node with an address on the network counts as an endpoint of the plaintext rule, not only
the channel map's, so traffic with a node the overlay does not cover shows up as cleartext.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from macsec import overlay
from testbed import planes, tshark
from testbed.profiles import Profile
from testbed.verdict import Verdict

FIELDS = ["frame.number", "macsec.TCI.E", "macsec.TCI.C", "macsec.SCI.system_identifier",
          "ip.src", "arp.src.proto_ipv4", "udp.port", "tcp.port", "sctp.port", "icmp.type"]


def _addresses(network: str, values: dict[str, Any]) -> dict[str, str]:
    """{address: node} of every node with an address on the network."""
    return {str(spec["networks"][network]): node for node, spec in values["nodes"].items()
            if network in (spec.get("networks") or {})}


def display_filter(addresses: list[str]) -> str:
    group = ", ".join(addresses)
    return f"macsec || ip.src in {{{group}}} || arp.src.proto_ipv4 in {{{group}}}"


def _yes(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "set")


def classify(rows: list[list[str]], endpoints: dict[str, str], addresses: dict[str, str],
             port: int) -> dict[str, Any]:
    """Counts of the rows of FIELDS: protected frames per endpoint node, readable MACsec frames,
    frames of unknown SCIs, cleartext IPv4 (and how much of it was the plane's port or ICMP),
    cleartext ARP before and after the first protected frame."""
    by_sysid = {overlay.system_identifier(a): n for a, n in endpoints.items()}
    out: dict[str, Any] = {"protected": dict.fromkeys(sorted(endpoints.values()), 0), "readable": 0,
                           "foreign": 0, "cleartext_ip": 0, "plane_ip": 0, "arp_before": 0, "arp_after": 0}
    seen_macsec = False
    for r in rows:
        f = dict(zip(FIELDS, r + [""] * (len(FIELDS) - len(r))))
        if f["macsec.TCI.E"] or f["macsec.TCI.C"] or f["macsec.SCI.system_identifier"]:
            node = by_sysid.get(f["macsec.SCI.system_identifier"].split(",")[0].lower())
            if not (_yes(f["macsec.TCI.E"]) and _yes(f["macsec.TCI.C"])):
                out["readable"] += 1
            elif node is None:
                out["foreign"] += 1
            else:
                out["protected"][node] += 1
                seen_macsec = True
        elif f["ip.src"] and f["ip.src"].split(",")[0] in addresses:
            out["cleartext_ip"] += 1
            ports = {p for k in ("udp.port", "tcp.port", "sctp.port") for p in f[k].split(",") if p}
            out["plane_ip"] += bool(str(port) in ports or f["icmp.type"])
        elif f["arp.src.proto_ipv4"] in addresses:
            out["arp_after" if seen_macsec else "arp_before"] += 1
    return out


def verify_capture(pcap: Path, profile: Profile, plane: str, values: dict[str, Any]) -> Verdict:
    network = overlay.network_of(plane)
    addresses = _addresses(network, values)
    endpoints = {a: n for a, n in addresses.items() if n in overlay.endpoints(plane, values)}
    flt = display_filter(sorted(addresses))
    port = planes.get(planes.split(plane)[0]).port(values)
    rows = [r.split("\t") for r in tshark.run(
        pcap, ["-Y", flt, "-T", "fields", "-E", "separator=\t", *[x for f in FIELDS for x in ("-e", f)]]
    ).splitlines()]
    c = classify(rows, endpoints, addresses, port)
    protected = sum(c["protected"].values())
    plaintext = c["cleartext_ip"] + c["readable"] + c["arp_after"]
    silent = [n for n, k in c["protected"].items() if k == 0]
    problems = [s for s in (
        "no MACsec frames between the endpoints" if protected == 0 else
        f"no MACsec frames from {', '.join(silent)}" if silent else "",
        f"{c['cleartext_ip']} cleartext IPv4 frames from the endpoints ({c['plane_ip']} of them the plane's "
        f"port {port} or ICMP)" if c["cleartext_ip"] else "",
        f"{c['readable']} MACsec frames not encrypted (E/C clear: integrity only)" if c["readable"] else "",
        f"{c['arp_after']} cleartext ARP frames from the endpoints after MACsec was up" if c["arp_after"] else "",
        f"{c['foreign']} MACsec frames from an SCI that is no endpoint's" if c["foreign"] else "") if s]
    per_node = ", ".join(f"{n} {k}" for n, k in c["protected"].items())
    before = f", {c['arp_before']} cleartext ARP before it (the attach)" if c["arp_before"] else ""
    return Verdict(not problems, protected, plaintext,
                   f"macsec {plane} ({profile.id}): {protected} encrypted MACsec frames ({per_node}), "
                   f"{plaintext} plaintext{before} [{flt}]"
                   + (" -> INVALID: " + "; ".join(problems) if problems else ""))
