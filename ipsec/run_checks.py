"""IPsec's run-level checks (testbed/contract.py check_run), beside the capture's verdict:
- the proposals the daemons negotiated (their `swanctl --list-sas`, recorded by the drivers as
  *sa-before*/*sa-after* logs) must be exactly the profile's, for every link of every plane;
- in the paper's `trap` mode, the patched NFs must have waited for the path and never fallen
  back (patches/open5gs/0002-sbi-trap-path-wait.patch logs one line per wait)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipsec import overlay
from testbed import channels, planes
from testbed.contract import RunCheck
from testbed.profiles import Profile
from testbed.verdict import Verdict

_CHILD_LINE = re.compile(r"^  (\S+): #\d+, reqid \d+, INSTALLED, TUNNEL(?:-in-UDP)?, ESP:(\S+)", re.M)
_SA_AFTER = re.compile(r"^(.*?)-?sa-after-(.+)\.txt$")     # [itNN-]sa-after-<node>.txt
# patches/open5gs/0002-sbi-trap-path-wait.patch: one line per wait
PATH_WAIT = re.compile(r"path-wait: peer=(\S+) waited_us=(\d+) probes=(\d+) result=(ok|fallback)")


def sas_by_plane(records: dict[str, str], prof: Profile, plane: str, values: dict[str, Any]) -> dict[str, list[str]]:
    """{plane: problems} for the `swanctl --list-sas` records of the endpoints ({node: text}):
    on every plane, each link's CHILD_SA (named as ipsec/overlay.py renders it) must be
    INSTALLED at both ends with exactly the profile's ESP, and every IKE/ESP proposal in the
    record must be the profile's. A node without a record is a problem of each of its planes."""
    want = overlay.esp_forms(prof)
    out: dict[str, list[str]] = {p: [] for p in planes.split(plane)}
    for node in sorted({n for link in channels.links(plane, values) for n in (link.a, link.b)}):
        conns = overlay.connections(node, plane, values)
        text = records.get(node)
        if text is None:
            for p in {link.plane for _, link in conns}:
                out[p].append(f"{node}: no swanctl --list-sas record")
            continue
        children = dict(_CHILD_LINE.findall(text))
        wrong_ike = [x for x in overlay.check_sas(text, prof) if x.startswith("IKE ")]
        for name, link in conns:
            esp = children.get(name)
            if esp is None:
                out[link.plane].append(f"{node}: no INSTALLED CHILD_SA {name} ({link.plane} link to {link.other(node)})")
            elif esp not in want:
                out[link.plane].append(f"{node}: CHILD_SA {name} negotiated ESP {esp}, profile wants "
                                       + " or ".join(sorted(want)))
            out[link.plane] += [f"{node}: {x}" for x in wrong_ike if f"{node}: {x}" not in out[link.plane]]
    return out


def _records(run_dir: Path, m: Mapping[str, Any]) -> list[str]:
    return [f["path"] for f in m["files"] if f["kind"] == "log" and "sa-" in f["path"]
            and (run_dir / f["path"]).is_file()]


def negotiated_sas_verdict(run_dir: Path, m: Mapping[str, Any], prof: Profile, values: dict[str, Any]) -> Verdict:
    """Every record's proposals exactly the profile's, and per iteration (the after-records hold
    them all) every link's CHILD_SA at both ends, on every plane the run covers."""
    records = _records(run_dir, m)
    problems = []
    for rel in records:
        text = (run_dir / rel).read_text(encoding="utf-8", errors="replace")
        if "sa-before" in rel and prof.params.get("mode") != "start":
            continue                  # trap modes: no SA exists before the first packet
        problems += [f"{rel}: {p}" for p in overlay.check_sas(text, prof)]
    if not records:
        problems.append("no swanctl --list-sas record of the negotiated SAs")
    plane = planes.expr(planes.split(str(m["plane"])))
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
    return Verdict(True, 0, 0, f"negotiated SAs: {len(records)} record(s), exactly IKE {overlay.expected_ike(prof)}, "
                   f"ESP {overlay.expected_esp(prof)}, every link of {plane} at both ends")


def path_waits(run_dir: Path, m: Mapping[str, Any]) -> dict[str, Any]:
    """The patched NFs' waits for the trap path, from the run's container logs: count, fallbacks,
    mean and max wait (ms) and every line."""
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


def trap_verdict(waits: Mapping[str, Any]) -> Verdict:
    """A trap run is valid only if the NFs waited for the path and never fell back."""
    if waits["count"] == 0:
        return Verdict(False, 0, 0, "trap mode: no path-wait line in the NFs' logs (patched wait not in "
                       "force: image without patches/open5gs/0002?) -> INVALID")
    if waits["fallbacks"]:
        return Verdict(False, 0, 0, f"trap mode: {waits['fallbacks']} of {waits['count']} path waits fell back "
                       "(request sent without the SA) -> INVALID")
    return Verdict(True, 0, 0, f"trap mode: {waits['count']} path waits, mean {waits['mean_ms']} ms, "
                   f"max {waits['max_ms']} ms, no fallback")


def ke_verdict(run_dir: Path, m: Mapping[str, Any], prof: Profile) -> Verdict:
    """A post-quantum key-exchange run: at least one of its captures holds complete IKE handshakes,
    and every one of those used the profile's key exchange (ipsec/ike_sas.py)."""
    from ipsec import ike_sas
    proven, problems = [], []
    for f in m["files"]:
        if f["kind"] != "pcap" or not (run_dir / f["path"]).is_file():
            continue
        sas = [sa for sa in ike_sas.read(run_dir / f["path"]) if sa.complete]
        if sas:
            proven.append(f"{f['path']}: {ike_sas.summary(sas)}")
            problems += [f"{f['path']}: {x}" for x in ike_sas.ke_problems(sas, str(prof.params["ike_proposal"]))]
    if not proven:
        return Verdict(False, 0, 0, "key exchange: no capture of the run holds a complete IKE handshake, so "
                       f"{prof.params['ike_proposal']} cannot be proven -> INVALID")
    if problems:
        return Verdict(False, 0, 0, "key exchange: " + "; ".join(problems[:3]) + " -> INVALID")
    return Verdict(True, 0, 0, f"key exchange {prof.params['ike_proposal']}: " + "; ".join(proven))


def check_run(run_dir: Path, m: Mapping[str, Any], prof: Profile, values: dict[str, Any]) -> list[RunCheck]:
    checks = [RunCheck(negotiated_sas_verdict(run_dir, m, prof, values))]
    if prof.params.get("ke"):
        checks.append(RunCheck(ke_verdict(run_dir, m, prof)))
    if prof.params.get("patched_wait"):
        waits = path_waits(run_dir, m)
        checks.append(RunCheck(trap_verdict(waits), "path_waits", waits))
    return checks
