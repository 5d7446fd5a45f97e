"""Does a run's own capture show the overlay it claims? (a run counts only if it does)

For every capture the run recorded with purpose "validation", the profile's overlay plug-in
checks it (`verify_capture`, testbed/contract.py) for the plane that capture shows (its `iface`
attribute; a run may cover several planes, PLANE=n2,n4,n3,sbi, with one capture per plane).
Every plane the run claims needs its own valid capture. The baseline has its own rule: no
overlay of any plug-in on the wire (their `wire_filter`s) and the plane's traffic in the clear.
Then the overlay plug-in and every dimension plug-in add their run-level checks (`check_run`:
the daemons' negotiated SAs, WireGuard's cold/warm sessions, the NAS algorithms ...).
The namespace micro-benchmark (experiment "overlay") adds a rule of its own for the overlays:
its pings between the two endpoints must never appear in the clear on the overlaid network.
A capture of every interface out of an overlay endpoint's namespace (purpose "leak") must hold
none of the plane's packets in the clear: a dead overlay may route them out of another interface.
The UPF security-function experiments (secfn, secfn-lab) add their own checks
(testbed/secfn/verdict.py): NAT and the inline drop from the n6 capture, the UE's side from the
ue capture, and the engine's counters and the D-ITG flows from the run directory.
The verdict is written into the run's manifest (`valid`, `validity`).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from testbed import manifest, planes, profiles, ran, registry, stack, tshark
from testbed.contract import RunCheck
from testbed.verdict import Verdict

log = logging.getLogger(__name__)
# written by the drivers' overlay watchers (scripts/lib/watch.sh, scripts/run-overlay.sh)
OVERLAY_DIED = "overlay-died.txt"
# the captures of a security-function run on its own sides (testbed/secfn/verdict.py checks them)
SECFN_IFACES = ("n6", "ue")


CaptureError = tshark.TsharkError      # tshark could not read a capture


def count(pcap: Path, display_filter: str) -> int:
    """Packets of a capture matching a tshark display filter (real tshark, no dissection in Python)."""
    return tshark.count(pcap, display_filter, timeout=300)


def plane_filter(experiment: str, plane: str, values: dict[str, Any]) -> str:
    """The traffic the run is about, as it looks without an overlay."""
    if experiment == "overlay":
        return "icmp"
    return planes.get(plane).plaintext_filter(values)


def _overlay_lab_peers(values: dict[str, Any]) -> tuple[str, str]:
    """The two endpoints the micro-benchmark pings between (gNB -> UPF on n3)."""
    return stack.address("gnb", "n3", values), stack.address("upf", "n3", values)


def overlay_filter() -> str:
    """Overlay traffic of any kind the plug-ins can put on the wire (a baseline run shows none)."""
    return " || ".join(ov.wire_filter for ov in registry.overlays() if ov.wire_filter)


def baseline_verdict(pcap: Path, experiment: str, plane: str, values: dict[str, Any]) -> Verdict:
    protected = count(pcap, overlay_filter())
    flt = plane_filter(experiment, plane, values)
    plaintext = count(pcap, flt)
    valid = protected == 0 and plaintext > 0
    why = ("" if valid else
           " -> INVALID: " + ("overlay packets on a baseline run; " if protected else "")
           + ("none of the plane's traffic was captured" if plaintext == 0 else ""))
    return Verdict(valid, protected, plaintext,
                   f"baseline: {protected} overlay packets ({overlay_filter()}), "
                   f"{plaintext} plaintext ({flt}){why}")


def lab_leak_verdict(pcap: Path, values: dict[str, Any]) -> Verdict:
    """Micro-benchmark rule for overlays: no ICMP between the endpoints in the clear."""
    a, b = _overlay_lab_peers(values)
    flt = f"icmp && ip.addr == {a} && ip.addr == {b} && !({overlay_filter()})"
    leaked = count(pcap, flt)
    return Verdict(leaked == 0, 0, leaked,
                   f"lab: {leaked} plaintext pings between {a} and {b} ({flt})"
                   + (" -> INVALID: plaintext leaked past the overlay" if leaked else ""))


def leak_verdict(pcap: Path, m: dict[str, Any], values: dict[str, Any], plane: str,
                 node: str | None = None) -> Verdict:
    """A capture of every interface out of an overlay endpoint's namespace (purpose "leak", from
    before the first packet to the end, a fault included): none of the plane's packets may be
    there in the clear, whichever interface a dead overlay let them take. Counted: what is sent to
    a partner endpoint (to any endpoint without `node`); a capture inside a kernel-IPsec endpoint
    also sees its inbound ESP once more, decrypted (xfrm hands the inner packet back to the same
    device), which is addressed to the node itself and left out (ip.dst#1: the outer header, not the
    one an ICMP error quotes)."""
    prof = profiles.get(m["profile"])
    overlay = registry.overlay(prof.protocol)
    if not overlay.protects:
        return Verdict(True, 0, 0, "baseline: the plane in the clear is expected")
    # by destination (a packet routed out of another interface takes that one's source address)
    net = "n3" if m["experiment"] == "overlay" else planes.network(plane)
    nodes = ["gnb", "upf"] if m["experiment"] == "overlay" else overlay.endpoints(plane, values)
    dsts = [stack.address(n, net, values) for n in nodes if n != node]
    flt = (f"({plane_filter(m['experiment'], plane, values)}) && ip.dst#1 in {{{', '.join(dsts)}}} "
           f"&& !({overlay_filter()})")
    leaked = count(pcap, flt)
    return Verdict(leaked == 0, 0, leaked,
                   f"every interface of the namespace: {leaked} packets of {plane} in the clear ({flt})"
                   + (" -> INVALID: plaintext left the overlay's namespace" if leaked else ""))


def combine(verdicts: list[Verdict]) -> Verdict:
    if not verdicts:
        return Verdict(False, 0, 0, "no validation capture recorded -> INVALID")
    return Verdict(all(v.valid for v in verdicts),
                   sum(v.protected_packets for v in verdicts),
                   sum(v.plaintext_packets for v in verdicts),
                   "; ".join(v.details for v in verdicts))


# Experiments whose timing captures are whole-packet captures of the interfaces the overlay covers:
# each such capture proves (or disproves) the overlay on its own interface (its iface attribute).
TIMING_CAPTURES_VALIDATE = {"ran-procedures": ("f1c", "e1")}


def validates(f: dict[str, Any], experiment: str) -> bool:
    """Whether a file of the run is checked for the overlay: a validation capture, or a timing
    capture TIMING_CAPTURES_VALIDATE names for the experiment."""
    if f["kind"] != "pcap":
        return False
    # a node's own plaintext view (attribute view) shows the traffic before encryption, never the wire
    return f.get("purpose") in ("validation", "leak") or (
        f.get("purpose") == "timing" and "view" not in f
        and f.get("iface") in TIMING_CAPTURES_VALIDATE.get(experiment, ()))


def run_values(m: dict[str, Any]) -> dict[str, Any]:
    """The stack values as the run's RAN variant ran them (parameters.ran; UERANSIM by default):
    a plane's endpoints are the nodes that ran (testbed/ran)."""
    variant = str((m.get("parameters") or {}).get("ran") or ran.default())
    return ran.restrict(stack.load(), variant)


def run_planes(m: dict[str, Any]) -> tuple[str, ...]:
    """The planes a run covers (manifest `plane`: one plane or a PLANE expression)."""
    return planes.split(str(m["plane"]))


def check_capture(pcap: Path, m: dict[str, Any], values: dict[str, Any] | None = None,
                  plane: str | None = None) -> Verdict:
    """Check one capture of the plane it shows (default: the run's first plane)."""
    values = values or run_values(m)
    prof = profiles.get(m["profile"])
    plane, experiment = plane or run_planes(m)[0], m["experiment"]
    overlay = registry.overlay(prof.protocol)
    if not overlay.protects:
        return baseline_verdict(pcap, experiment, plane, values)
    verdicts = [overlay.verify_capture(pcap, prof, plane, values)]
    if experiment == "overlay":
        verdicts.append(lab_leak_verdict(pcap, values))
    return combine(verdicts)


def attach_verdict(m: dict[str, Any]) -> Verdict | None:
    """A run whose UEs all failed to attach measured nothing: invalid, whatever its captures show
    (the overlay may well have been in force while the core or the RAN refused every UE). Runs
    that record no UEs (run-n3's own pings, run-secfn) are not judged here; a run where some
    attached keeps its failures in attach_failures and stays valid."""
    ues = [u for u in m.get("ues") or [] if isinstance(u, dict)]
    if not ues:
        return None
    attached = sum(1 for u in ues if u.get("attached") is True)
    if attached:
        return Verdict(True, 0, 0, f"{attached} of {len(ues)} UE registrations attached")
    failures = len([a for a in m.get("attach_failures") or [] if isinstance(a, dict)])
    return Verdict(False, 0, 0, f"no UE attached: {len(ues)} registrations, {failures} failed "
                   "attempts (attach_failures) -> INVALID")


def plugin_checks(run_dir: Path, m: dict[str, Any], values: dict[str, Any]) -> list[RunCheck]:
    """The run-level checks of the run's overlay plug-in, then of every dimension plug-in."""
    checks = list(registry.overlay(str(m["protocol"])).check_run(run_dir, m, values))
    for dim in registry.dimensions():
        checks += dim.check_run(run_dir, m, values)
    return checks


def check_run(run_dir: Path, record: bool = True) -> Verdict:
    """Check every validation capture of a run; write the verdict into its manifest."""
    run_dir = Path(run_dir)
    m = manifest.load(run_dir)
    values = run_values(m)
    verdicts: list[Verdict] = []
    covered = run_planes(m)
    checked: set[str] = set()
    for f in m["files"]:
        if validates(f, str(m.get("experiment", ""))):
            # the capture's own interface says which plane it shows (run-overlay: "overlay")
            iface = str(f.get("iface") or "")
            secfn_capture = m["experiment"] in manifest.SECFN_EXPERIMENTS and iface in SECFN_IFACES
            plane = iface if iface in covered else covered[0]
            if not secfn_capture and f.get("purpose") != "leak":      # a leak capture proves no plane
                checked.add(plane)
            try:
                if f.get("purpose") == "leak":
                    v = leak_verdict(run_dir / f["path"], m, values, plane, f.get("node"))
                elif secfn_capture:       # the function's own sides (N6, the UE): not a plane
                    from testbed.secfn import verdict as secfn_verdict
                    v = secfn_verdict.capture_verdict(run_dir / f["path"], iface, m, values)
                else:
                    v = check_capture(run_dir / f["path"], m, values, plane)
            except Exception as exc:
                v = Verdict(False, 0, 0, f"check failed: {exc} -> INVALID")
            verdicts.append(Verdict(v.valid, v.protected_packets, v.plaintext_packets,
                                    f"{f['path']}: {v.details}"))
    if not verdicts:
        verdicts.append(Verdict(False, 0, 0, "no validation capture recorded -> INVALID"))
    elif set(covered) - checked:
        verdicts.append(Verdict(False, 0, 0, "no validation capture of the "
                                + ", ".join(p for p in covered if p not in checked) + " plane -> INVALID"))
    if m["experiment"] in manifest.SECFN_EXPERIMENTS:
        from testbed.secfn import verdict as secfn_verdict
        verdicts.extend(secfn_verdict.run_verdicts(run_dir, m, values))
    for chk in plugin_checks(run_dir, m, values):
        if chk.verdict is not None:           # None: a record only (the NAS choice observed, not asked)
            verdicts.append(chk.verdict)
        if record and chk.field is not None:
            manifest.set_field(run_dir, chk.field, chk.record)
    attach = attach_verdict(m)
    if attach is not None:
        verdicts.append(attach)
    died = run_dir / OVERLAY_DIED
    if died.is_file() and died.read_text().strip():
        # a watcher saw an overlay daemon or holder go during the measurement (docs/experiments.md):
        # what was measured from then on was not the overlay, whatever the captures show
        verdicts.append(Verdict(False, 0, 0, f"the overlay died during the measurement ({OVERLAY_DIED}: "
                                f"{died.read_text().strip().splitlines()[0]}) -> INVALID"))
    verdict = combine(verdicts)
    if record:
        manifest.set_validity(run_dir, verdict.valid, verdict.protected_packets,
                              verdict.plaintext_packets, verdict.details)
    if not verdict.valid:
        log.error("run %s is INVALID: %s", run_dir, verdict.details)
    return verdict
