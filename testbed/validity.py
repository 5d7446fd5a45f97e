"""Does a run's own capture show the overlay it claims? (a run counts only if it does)

For every capture the run recorded with purpose "validation", the profile's overlay module
checks it (`verify_capture`, docs/contracts.md "Overlays") for the plane that capture shows
(its `iface` attribute; a run may cover several planes, PLANE=n2,n4,n3,sbi, with one capture
per plane). Every plane the run claims needs its own valid capture. The baseline has its own
rule: no overlay on the wire (no ESP, IKE or WireGuard) and the plane's traffic in the clear.
IPsec runs also have the daemons' negotiated SAs checked per plane (`sas_by_plane`).
The namespace micro-benchmark (experiment "overlay") adds a rule of its own for the overlays:
its pings between the two endpoints must never appear in the clear on the overlaid network.
The UPF security-function experiments (secfn, secfn-lab) add their own checks
(testbed/secfn/verdict.py): NAT and the inline drop from the n6 capture, the UE's side from the
ue capture, and the engine's counters and the D-ITG flows from the run directory.
The verdict is written into the run's manifest (`valid`, `validity`).
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from testbed import channels, manifest, overlays, planes, profiles, ran, stack, tshark
from testbed.overlays.verdict import Verdict

log = logging.getLogger(__name__)

# overlay traffic of any kind the testbed can put on the wire
OVERLAY_FILTER = "esp || isakmp || udpencap || wg || dtls"
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


def baseline_verdict(pcap: Path, experiment: str, plane: str, values: dict[str, Any]) -> Verdict:
    protected = count(pcap, OVERLAY_FILTER)
    flt = plane_filter(experiment, plane, values)
    plaintext = count(pcap, flt)
    valid = protected == 0 and plaintext > 0
    why = ("" if valid else
           " -> INVALID: " + ("overlay packets on a baseline run; " if protected else "")
           + ("none of the plane's traffic was captured" if plaintext == 0 else ""))
    return Verdict(valid, protected, plaintext,
                   f"baseline: {protected} overlay packets ({OVERLAY_FILTER}), "
                   f"{plaintext} plaintext ({flt}){why}")


def lab_leak_verdict(pcap: Path, values: dict[str, Any]) -> Verdict:
    """Micro-benchmark rule for overlays: no ICMP between the endpoints in the clear."""
    a, b = _overlay_lab_peers(values)
    flt = f"icmp && ip.addr == {a} && ip.addr == {b} && !esp && !udpencap && !wg"
    leaked = count(pcap, flt)
    return Verdict(leaked == 0, 0, leaked,
                   f"lab: {leaked} plaintext pings between {a} and {b} ({flt})"
                   + (" -> INVALID: plaintext leaked past the overlay" if leaked else ""))


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
    return f.get("purpose") == "validation" or (
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
    if prof.protocol == "none":
        return baseline_verdict(pcap, experiment, plane, values)
    try:
        module = overlays.get(prof.protocol)
        verify = module.verify_capture            # type: ignore[union-attr]
    except (ImportError, AttributeError) as exc:
        return Verdict(False, 0, 0, f"cannot check a {prof.protocol} capture: no verify_capture in "
                       f"testbed/overlays/{prof.protocol}.py ({exc}) -> INVALID until it exists")
    verdicts = [verify(pcap, prof, plane, values)]
    if experiment == "overlay":
        verdicts.append(lab_leak_verdict(pcap, values))
    return combine(verdicts)


# patches/open5gs/0002-sbi-trap-path-wait.patch: one line per wait
PATH_WAIT = re.compile(r"path-wait: peer=(\S+) waited_us=(\d+) probes=(\d+) result=(ok|fallback)")


def path_waits(run_dir: Path, m: dict[str, Any]) -> dict[str, Any] | None:
    """The patched NFs' waits for the IPsec trap path, from the run's container logs: count,
    fallbacks, mean and max wait (ms) and every line; None for profiles without the patched wait."""
    prof = profiles.get(m["profile"])
    if not prof.params.get("patched_wait"):
        return None
    waits: list[dict[str, Any]] = []
    for f in m["files"]:
        if f["kind"] == "log" and f["path"].endswith("containers.log") and (run_dir / f["path"]).is_file():
            for line in (run_dir / f["path"]).read_text(encoding="utf-8", errors="replace").splitlines():
                hit = PATH_WAIT.search(line)
                if hit:
                    waits.append({"file": f["path"], "peer": hit.group(1), "waited_ms": int(hit.group(2)) / 1000,
                                  "probes": int(hit.group(3)), "result": hit.group(4)})
    ok = [w["waited_ms"] for w in waits if w["result"] == "ok"]
    return {"count": len(waits), "fallbacks": sum(w["result"] == "fallback" for w in waits),
            "mean_ms": round(sum(ok) / len(ok), 3) if ok else None, "max_ms": max(ok) if ok else None,
            "waits": waits}


def trap_verdict(waits: dict[str, Any]) -> Verdict:
    """A trap run is valid only if the NFs waited for the path and never fell back."""
    if waits["count"] == 0:
        return Verdict(False, 0, 0, "trap mode: no path-wait line in the NFs' logs (patched wait not in "
                       "force: image without patches/open5gs/0002?) -> INVALID")
    if waits["fallbacks"]:
        return Verdict(False, 0, 0, f"trap mode: {waits['fallbacks']} of {waits['count']} path waits fell back "
                       "(request sent without the SA) -> INVALID")
    return Verdict(True, 0, 0, f"trap mode: {waits['count']} path waits, mean {waits['mean_ms']} ms, "
                   f"max {waits['max_ms']} ms, no fallback")


WG_REKEY_AFTER_S = 120      # WireGuard's REKEY_AFTER_TIME: a session older than this is not warm


def _wg_port() -> int:
    from testbed.overlays import wireguard
    return int(wireguard.LISTEN_PORT)


def _wg_files(m: dict[str, Any], marker: str) -> dict[str, list[str]]:
    """{iteration tag: [file, ...]} of the run-sbi WireGuard holder records with `marker`."""
    out: dict[str, list[str]] = {}
    for f in m["files"]:
        if f["kind"] == "log" and f"-{marker}-" in f["path"]:
            out.setdefault(f["path"].split("-", 1)[0], []).append(f["path"])
    return out


def _stamped(path: Path) -> tuple[int, int, list[int]]:
    """(unix time of the record, time its reset began, every peer's latest handshake) of a holder
    record; the first line is `<time> [<reset began>]` (wireguard/reset-sessions.sh)."""
    lines = [ln.split() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    at = int(lines[0][0])
    return at, int(lines[0][1]) if len(lines[0]) > 1 else at, [int(ln[-1]) for ln in lines[1:]]


def wireguard_sessions(run_dir: Path, m: dict[str, Any]) -> tuple[dict[str, Any], Verdict] | None:
    """run-sbi with WireGuard: cold = every session forgotten right before UE 1 and new
    handshakes in that iteration's SBI capture after that instant; warm = every session younger
    than 120 s when UE 2 starts. None for other runs. A session in a reset record whose handshake is
    not older than that reset's start was made after it (the live core's NRF heartbeats keep
    talking; seen in the emulated guest, docs/vm-check.md section 10): counted, not a leftover."""
    if m.get("experiment") != "sbi" or m.get("protocol") != "wireguard":
        return None
    resets, warms = _wg_files(m, "wg-reset"), _wg_files(m, "wg-before-warm")
    problems, iters = [], {}
    for tag, files in sorted(resets.items()):
        stamps = [_stamped(run_dir / f) for f in files]
        reset_at = max(t for t, _, _ in stamps)
        if any(h != 0 and h < began for _, began, hs in stamps for h in hs) or not any(hs for _, _, hs in stamps):
            problems.append(f"{tag}: sessions left after the reset")
        remade = sum(1 for _, began, hs in stamps for h in hs if h != 0 and h >= began)
        # the iteration's capture of every plane the run covers (itNN-<plane>.pcap)
        pcaps = [run_dir / f"{tag}-{pl}.pcap" for pl in run_planes(m)]
        times = [float(r[0]) for pcap in pcaps if pcap.is_file()
                 for r in tshark.fields(pcap, "wg.type == 1", ["frame.time_epoch"],
                                        extra=["-d", f"udp.port=={_wg_port()},wg"])]
        new = [t for t in times if t >= reset_at]
        if not new:
            problems.append(f"{tag}: no WireGuard handshake after the reset in "
                            f"{', '.join(p.name for p in pcaps)}: the cold UE's attach did not include them")
        ages = []
        for f in warms.get(tag, []):
            at, _, hs = _stamped(run_dir / f)
            ages += [at - h if h else None for h in hs]
        if any(a is None or a >= WG_REKEY_AFTER_S for a in ages):
            problems.append(f"{tag}: a session was missing or older than {WG_REKEY_AFTER_S} s when the warm UE started")
        iters[tag] = {"reset_at": reset_at, "handshakes_after_reset": len(new), "remade_during_reset": remade,
                      "warm_max_age_s": max((a for a in ages if a is not None), default=None)}
    if not resets:
        problems.append("no session reset recorded before the cold UE (wg-reset records missing)")
    summary = {"iterations": iters, "problems": problems}
    if problems:
        return summary, Verdict(False, 0, 0, "wireguard cold/warm: " + "; ".join(problems) + " -> INVALID")
    return summary, Verdict(True, 0, 0, f"wireguard cold/warm: {len(iters)} iteration(s), handshakes after "
                            "each reset, warm sessions younger than 120 s")


_CHILD_LINE = re.compile(r"^  (\S+): #\d+, reqid \d+, INSTALLED, TUNNEL(?:-in-UDP)?, ESP:(\S+)", re.M)


def sas_by_plane(records: dict[str, str], prof: Any, plane: str, values: dict[str, Any]) -> dict[str, list[str]]:
    """{plane: problems} for the `swanctl --list-sas` records of the endpoints ({node: text}):
    on every plane, each link's CHILD_SA (named as testbed/overlays/ipsec.py renders it) must be
    INSTALLED at both ends with exactly the profile's ESP, and every IKE/ESP proposal in the
    record must be the profile's. A node without a record is a problem of each of its planes."""
    from testbed.overlays import ipsec
    want = ipsec.expected_esp(prof)
    out: dict[str, list[str]] = {p: [] for p in planes.split(plane)}
    for node in sorted({n for link in channels.links(plane, values) for n in (link.a, link.b)}):
        conns = ipsec.connections(node, plane, values)
        text = records.get(node)
        if text is None:
            for p in {link.plane for _, link in conns}:
                out[p].append(f"{node}: no swanctl --list-sas record")
            continue
        children = dict(_CHILD_LINE.findall(text))
        wrong_ike = [x for x in ipsec.check_sas(text, prof) if x.startswith("IKE ")]
        for name, link in conns:
            esp = children.get(name)
            if esp is None:
                out[link.plane].append(f"{node}: no INSTALLED CHILD_SA {name} ({link.plane} link to {link.other(node)})")
            elif esp != want:
                out[link.plane].append(f"{node}: CHILD_SA {name} negotiated ESP {esp}, profile wants {want}")
            out[link.plane] += [f"{node}: {x}" for x in wrong_ike if f"{node}: {x}" not in out[link.plane]]
    return out


_SA_AFTER = re.compile(r"^(.*?)-?sa-after-(.+)\.txt$")     # [itNN-]sa-after-<node>.txt


def negotiated_sas_verdict(run_dir: Path, m: dict[str, Any]) -> Verdict | None:
    """IPsec: the proposals the daemons negotiated (their `swanctl --list-sas`, recorded by the
    drivers as *sa-before*/*sa-after* logs) must be exactly the profile's, on every plane the run
    covers, for every link of it (records *sa-after* per iteration); None for other runs."""
    prof = profiles.get(m["profile"])
    if prof.protocol != "ipsec":
        return None
    from testbed.overlays import ipsec
    records = [f["path"] for f in m["files"] if f["kind"] == "log" and "sa-" in f["path"]
               and (run_dir / f["path"]).is_file()]
    problems = []
    for rel in records:
        text = (run_dir / rel).read_text(encoding="utf-8", errors="replace")
        if "sa-before" in rel and prof.params.get("mode") != "start":
            continue                  # trap modes: no SA exists before the first packet
        problems += [f"{rel}: {p}" for p in ipsec.check_sas(text, prof)]
    if not records:
        problems.append("no swanctl --list-sas record of the negotiated SAs")
    # per plane: every link's CHILD_SA at both ends, per iteration (the after-records hold them all)
    plane = planes.expr(run_planes(m))
    values = run_values(m)
    by_iteration: dict[str, dict[str, str]] = {}
    for rel in records:
        hit = _SA_AFTER.match(Path(rel).name)
        if hit:
            by_iteration.setdefault(hit.group(1), {})[hit.group(2)] = (run_dir / rel).read_text(
                encoding="utf-8", errors="replace")
    for it, recs in sorted(by_iteration.items()):
        for pl, probs in sas_by_plane(recs, prof, plane, values).items():
            problems += [f"{it or 'run'} {pl}: {x}" for x in probs]
    if problems:
        return Verdict(False, 0, 0, "negotiated SAs: " + "; ".join(problems[:4]) + " -> INVALID")
    return Verdict(True, 0, 0, f"negotiated SAs: {len(records)} record(s), exactly IKE {ipsec.expected_ike(prof)}, "
                   f"ESP {ipsec.expected_esp(prof)}, every link of {plane} at both ends")


def _n2_timing_captures(m: dict[str, Any]) -> list[str]:
    """The run's N2 captures the attach times come from (run-sbi: one per iteration)."""
    return [f["path"] for f in m["files"] if f["kind"] == "pcap" and f.get("iface") == "n2"
            and f.get("purpose", "timing") == "timing"]


def nas_record(run_dir: Path, m: dict[str, Any]) -> tuple[dict[str, Any], Verdict | None] | None:
    """NAS algorithms of a run with N2 timing captures: what was asked (parameters.nas) and what
    every Security Mode Command in those captures selected (testbed/nas.py). The verdict: with a
    requested choice, every capture must hold at least one SMC and all must carry exactly it
    (another choice, or none readable, makes the run invalid); without one, the observed choice
    is only recorded (the analysis groups attach times by it). None for runs without N2 captures."""
    from testbed import nas
    captures = _n2_timing_captures(m)
    if not captures:
        return None
    requested = (m.get("parameters") or {}).get("nas") or None
    per_capture: dict[str, list[str]] = {}
    problems: list[str] = []
    for rel in captures:
        pcap = run_dir / rel
        if not pcap.is_file():
            problems.append(f"{rel}: missing")
            continue
        try:
            smcs = nas.security_mode_commands(pcap)
        except tshark.TsharkError as exc:
            problems.append(f"{rel}: unreadable ({exc})")
            continue
        per_capture[rel] = [f"nea{e}-nia{i}" for _, e, i in smcs]
        if not smcs:
            problems.append(f"{rel}: no Security Mode Command readable (an N2 capture behind an overlay "
                            "must be taken at its plaintext tap)")
    seen = sorted({c for cs in per_capture.values() for c in cs})
    proven = seen[0] if len(seen) == 1 and not problems else None
    record = {"requested": requested, "proven": proven, "seen": seen,
              "smc": sum(len(cs) for cs in per_capture.values()), "per_capture": per_capture}
    if requested is None:
        return record, None
    wrong = [c for c in seen if c != requested]
    if wrong:
        problems.append(f"Security Mode Commands select {', '.join(wrong)}, not the requested {requested}")
    if problems:
        return record, Verdict(False, 0, 0, f"NAS {requested}: " + "; ".join(problems[:4]) + " -> INVALID")
    return record, Verdict(True, 0, 0, f"NAS {requested}: proven by {record['smc']} Security Mode Command(s) "
                           f"in {len(per_capture)} N2 capture(s)")


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
            if not secfn_capture:
                checked.add(plane)
            try:
                if secfn_capture:       # the function's own sides (N6, the UE): not a plane
                    from testbed.secfn import verdict as secfn_verdict
                    v = secfn_verdict.capture_verdict(run_dir / f["path"], iface, m, values)
                else:
                    v = check_capture(run_dir / f["path"], m, values, plane)
            except Exception as exc:  # noqa: BLE001 - a check that cannot run never counts as valid
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
    sas = negotiated_sas_verdict(run_dir, m)
    if sas is not None:
        verdicts.append(sas)
    sessions = wireguard_sessions(run_dir, m)
    if sessions is not None:
        verdicts.append(sessions[1])
        if record:
            manifest.set_field(run_dir, "wireguard_sessions", sessions[0])
    nas_rec = nas_record(run_dir, m)
    if nas_rec is not None:
        if nas_rec[1] is not None:
            verdicts.append(nas_rec[1])
        if record:
            manifest.set_field(run_dir, "nas", nas_rec[0])
    attach = attach_verdict(m)
    if attach is not None:
        verdicts.append(attach)
    waits = path_waits(run_dir, m)
    if waits is not None:
        verdicts.append(trap_verdict(waits))
        if record:
            manifest.set_path_waits(run_dir, waits)
    verdict = combine(verdicts)
    if record:
        manifest.set_validity(run_dir, verdict.valid, verdict.protected_packets,
                              verdict.plaintext_packets, verdict.details)
    if not verdict.valid:
        log.error("run %s is INVALID: %s", run_dir, verdict.details)
    return verdict
