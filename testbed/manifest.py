"""Run directories and their manifest.json (docs/manifest.md; schema: testbed/schemas/).

A run directory `$RESULTS/<campaign>/<experiment>/<profile>/<run>/` is created once with a
fresh, never reused run id. Its manifest is written at start (state "running") and rewritten
atomically (temporary file + rename) whenever the driver records a file, a command, a UE,
a failed attach or the end state. Raw files are written once by the drivers and never touched
here. No statistics are computed here.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import platform
import re
import secrets
import socket
from functools import lru_cache
from pathlib import Path
from typing import Any

from testbed import environment
from testbed import ROOT, profiles, programs, runparams, stack

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
SCHEMA_FILE = ROOT / "testbed" / "schemas" / "manifest.schema.json"
MANIFEST = "manifest.json"
STATES = ("running", "complete", "incomplete", "interrupted", "failed")
END_STATES = STATES[1:]
KINDS = ("ping", "pcap", "iperf3", "cpu", "log", "ditg", "keylog")
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{4}$")


class ManifestError(RuntimeError):
    """A run directory or manifest is missing, malformed, or would be overwritten."""


def utcnow() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_run_id(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


# ---------------------------------------------------------------- facts about host and tools

_out = programs.first_line
_version = programs.version


def host_facts() -> dict[str, Any]:
    cpu_model, flags = None, ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and cpu_model is None:
                cpu_model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = value
    except OSError:
        pass
    return {"kernel": platform.release(), "cpu_model": cpu_model,
            "aes_ni": "aes" in flags.split(), "hostname": socket.gethostname(),
            "nproc": os.cpu_count() or 0, **cpu_power_facts()}


def _sysfs(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None


def cpu_power_facts() -> dict[str, Any]:
    """What moves CPU and latency figures between runs: the frequency governor, turbo/boost,
    SMT, and the CPUs this process may run on (a cpuset pins the stack). None where the host
    does not say (VMs often have no cpufreq)."""
    no_turbo = _sysfs("/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = _sysfs("/sys/devices/system/cpu/cpufreq/boost")
    turbo = (no_turbo == "0") if no_turbo is not None else ((boost == "1") if boost is not None else None)
    smt = _sysfs("/sys/devices/system/cpu/smt/active")
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = []
    return {"governor": _sysfs("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "turbo": turbo, "smt": (smt == "1") if smt is not None else None,
            "cpus_allowed": ",".join(map(str, allowed))}


def image_facts(refs: list[str]) -> dict[str, Any]:
    """Image reference -> what the local Docker engine says of it (testbed/images.py facts: id,
    digests, version/inputs/base/source labels, the contents file read from inside), None when
    absent. The contents are cached per image id under $STATE/images/."""
    from testbed import images, keys
    cache = keys.default_state_dir() / "images"
    return {ref: images.facts(ref, cache_dir=cache) for ref in refs}


# What the stack's programs are, read from inside the images that ran them (the contents file of
# images/*/Dockerfile): manifest key -> (image, key in its /etc/testbed-image.txt). The overlay
# and RAN plug-ins add their own (`image_versions`).
IMAGE_VERSIONS = {
    "open5gs": ("open5gs", "open5gs_version"),
    "open5gs_commit": ("open5gs", "open5gs_commit"),
    # the NFs' TLS library and SBI client library: Debian 13's package names (OpenSSL under libcurl
    # too), else those of the bookworm images before (libcurl on GnuTLS); "a|b" = the first recorded
    "openssl": ("open5gs", "libssl3t64|libssl3"),
    "libcurl": ("open5gs", "libcurl4t64|libcurl3-gnutls"),
    "image_tshark": ("tools", "tshark"),
}


# Debian 13's tshark ends its first line with a dot ("TShark (Wireshark) 4.4.19."); bookworm's
# has "(Git v4.0.17 packaged as ...)": only the dotted number is the version.
TSHARK_VERSION = r"TShark \(Wireshark\) (\d+(?:\.\d+)*)"


@lru_cache(maxsize=1)
def tool_versions() -> dict[str, str | None]:
    """Versions of the host programs a run uses (probed once per process): the overlay plug-ins'
    own, tshark, iperf3, ping, openssl."""
    from testbed import registry
    return {
        **{k: v for ov in registry.overlays() for k, v in ov.versions().items()},
        "tshark": _version(TSHARK_VERSION, _out(["tshark", "--version"])),
        "iperf3": _version(r"iperf ([\d.]+)", _out(["iperf3", "--version"])),
        "ping": _version(r"iputils (\S+)", _out(["ping", "-V"])),
        "openssl": _version(r"OpenSSL (\S+)", _out(["openssl", "version"])),
    }


# experiments that run no 5G stack claim no Open5GS/UERANSIM version
NO_STACK = ("overlay", "secfn-lab")
# the UPF security-function experiments (docs/secfn.md): their runs go to
# <experiment>/<profile>.<secfn unit>/ and carry the resolved function in "secfn"
SECFN_EXPERIMENTS = ("secfn", "secfn-lab")


def versions(images: list[str] | None = None, stack_run: bool = True, ran: str | None = None) -> dict[str, Any]:
    """The versions that ran. A stack run's programs are read from inside its images (their
    contents files; null where an image could not be read), beside the versions stack.yaml pins;
    the host's programs otherwise (`programs_from` says which). `tshark` is always the host's:
    it takes the captures and judges validity."""
    values = stack.load()
    commit, dirty = programs.git_revision()
    facts = image_facts(images or [])
    host = tool_versions()
    out: dict[str, Any] = {"testbed_commit": commit, "testbed_dirty": dirty}
    if stack_run:
        inside = {str(c.get("image")): c for f in facts.values()
                  if f and isinstance(c := f.get("contents"), dict)}
        out.update(_image_versions(inside, ran, values))
        out.update({"tshark": host["tshark"], "programs_from": "images"})
    else:
        # no stack ran: no Open5GS nor RAN version is claimed; the host's programs are the ones that ran
        from testbed import registry
        out.update({key: None for r in registry.rans() for key in r.image_versions()})
        out.update({"open5gs": None, **host, "programs_from": "host"})
    out["images"] = facts
    return out


def _image_versions(inside: dict[str, Any], ran_name: str | None, values: dict[str, Any]) -> dict[str, Any]:
    """The stack's programs read from its images: the core's, every overlay plug-in's and the run's
    RAN's (the other RANs' keys null), with the versions stack.yaml pins."""
    from testbed import ran, registry
    run_ran = registry.ran(ran_name or ran.default(values))
    table = {**IMAGE_VERSIONS, **{k: v for ov in registry.overlays() for k, v in ov.image_versions().items()}}
    out: dict[str, Any] = {key: None for r in registry.rans() for key in r.image_versions()}
    out.update({key: None for r in registry.rans() if r.pinned_key for key in [r.pinned_key.replace("_version", "_pinned")]})
    table.update(run_ran.image_versions())
    out.update({key: next((inside.get(img, {}).get(f) for f in field.split("|") if inside.get(img, {}).get(f)), None)
                for key, (img, field) in table.items()})
    out["open5gs_pinned"] = values.get("open5gs_version")
    if run_ran.pinned_key:
        out[run_ran.pinned_key.replace("_version", "_pinned")] = values.get(run_ran.pinned_key)
    return out


def _instance() -> dict[str, Any]:
    """Which stack of the host this run used (STATE's project and address slot, testbed/instance.py)."""
    from testbed import instance
    inst = instance.of()
    return {"state": str(inst.state), "project": inst.project, "slot": inst.slot}


def datapath_for(protocol: str, facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest's datapath object: what the host offers for the profile's protocol
    (testbed/datapath.py manifest_entry). `facts` is testbed.datapath.detect() when available. The
    driver overwrites it with what the overlay entrypoint actually reported (`datapath: <name>=...`
    lines) via set_datapath()."""
    from testbed import datapath, registry
    if not registry.overlay(protocol).datapaths:
        return {"userspace": False}          # baseline and TLS: no kernel/userspace choice to record
    if facts is None:
        try:
            facts = datapath.detect()
        except Exception as exc:
            log.warning("datapath detection unavailable: %s", exc)
            facts = {}
    return datapath.manifest_entry(protocol, facts)


def datapath_problems(dp: dict[str, Any]) -> list[str]:
    """What is wrong with a manifest's datapath object: every key but `userspace` must name an
    overlay plug-in and hold one of its datapaths (or null)."""
    from testbed import registry
    problems = []
    for key, value in dp.items():
        if key == "userspace":
            continue
        try:
            allowed = registry.overlay(key).datapaths
        except registry.UnknownPlugin:
            problems.append(f"datapath/{key}: not an overlay")
            continue
        if value is not None and value not in allowed:
            problems.append(f"datapath/{key}: {value!r} is not one of {', '.join(allowed)}")
    return problems


# ---------------------------------------------------------------- reading and writing

def path_of(run_dir: Path) -> Path:
    return Path(run_dir) / MANIFEST


def load(run_dir: Path) -> dict[str, Any]:
    p = path_of(run_dir)
    try:
        with open(p, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise ManifestError(f"{p}: no manifest (is {run_dir} a run directory?)") from None
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{p}: not valid JSON ({exc})") from None


def write(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Replace manifest.json atomically: a reader sees the old or the new file, never half."""
    p = path_of(run_dir)
    tmp = p.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, p)


def validate(manifest: dict[str, Any]) -> list[str]:
    """Schema errors, one line each ('' path = top level); empty when valid."""
    import jsonschema
    with open(SCHEMA_FILE, encoding="utf-8") as fh:
        schema = json.load(fh)
    validator = jsonschema.Draft202012Validator(schema)
    errors = []
    for e in sorted(validator.iter_errors(manifest), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(x) for x in e.absolute_path) or "(top)"
        errors.append(f"{where}: {e.message}")
    if isinstance(manifest.get("protocol"), str):
        errors += protocol_problems(manifest["protocol"])
    if isinstance(manifest.get("datapath"), dict):
        errors += datapath_problems(manifest["datapath"])
    if manifest.get("experiment") not in runparams.EXPERIMENTS:
        errors.append(f"experiment: {manifest.get('experiment')!r} is not one of {', '.join(runparams.EXPERIMENTS)}")
    return errors


def protocol_problems(protocol: str) -> list[str]:
    """What is wrong with a manifest's protocol: it must be the baseline's or a registered overlay
    plug-in's (testbed/registry.py), so a new plug-in needs no edit of the schema."""
    from testbed import registry
    known = registry.protocols()
    return [] if protocol in known else [f"protocol: {protocol!r} is not one of {', '.join(known)}"]


# ---------------------------------------------------------------- lifecycle

def _secfn_record(experiment: str, slot_dir: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the run's slot directory, the manifest's `secfn` record if a security function runs)."""
    from testbed import secfn
    if experiment in SECFN_EXPERIMENTS:
        sf = secfn.resolve(params["secfn"], params["ids"], queue_maxlen=params["queue_maxlen"],
                           fail_open=params["fail_open"] == "1", queues=params["queues"])
        return f"{slot_dir}.{secfn.unit(sf)}", {"secfn": {**sf.to_dict(), "unit": secfn.unit(sf),
                                                           "form": "namespaces" if experiment == "secfn-lab" else "stack"}}
    if experiment not in NO_STACK and environment.get("SECFN"):
        # the stack renders $SECFN for every experiment (testbed/cli/render.py): never silently
        sf = secfn.resolve(environment.get("SECFN"), environment.get("IDS") or None)
        return slot_dir, {"secfn": {**sf.to_dict(), "unit": secfn.unit(sf), "form": "stack"}}
    return slot_dir, {}


def _spec_record(experiment: str, profile_id: str, raw_params: dict[str, str], params: dict[str, Any],
                 given: dict[str, Any] | None) -> dict[str, Any]:
    """The run's spec as the manifest stores it: the driver's, verbatim, once it validates and
    names this run's experiment, profile and parameters; else built from them and the environment."""
    from testbed import runspec
    try:
        if given is None:
            return runspec.build(experiment, raw_params, profile_id, environment.mapping()).to_dict()
        checked = runspec.from_dict(given)
    except runspec.SpecError as exc:
        raise runparams.ParamError(f"run spec: {exc}") from None
    own = {k: v for k, v in params.items() if k != "profile"}
    if (checked.experiment, checked.profile, checked.parameters) != (experiment, profiles.get(profile_id).id, own):
        raise ManifestError(f"the run spec ({checked.experiment}, {checked.profile}) is not the spec of this "
                            f"run's parameters ({experiment}, {profile_id}): a driver bug")
    return given


def _new_run_dir(parent: Path) -> Path:
    """A fresh run directory under parent: an unused run id, made exclusively (never reused)."""
    parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        run_dir = parent / new_run_id()
        try:
            run_dir.mkdir()          # fails if it exists: a run id is never reused
        except FileExistsError:
            continue
        return run_dir
    raise ManifestError(f"{parent}: could not find an unused run id")


def _select_lab_programs(prof: profiles.Profile) -> None:
    """A namespace-lab run: the programs its overlay plug-in selects for the profile on this host
    (e.g. IPSEC_ROOT, the Debian root of `make pq-roots`) are set for this process and its children
    before the versions are read, so the manifest names what the lab (testbed/netns.py, which asks
    the same) runs."""
    from testbed import registry
    chosen = registry.overlay(prof.protocol).lab_environment([prof])
    for name, value in chosen.items():
        environment.export(name, value)
    if chosen:
        tool_versions.cache_clear()


def create(results: Path, experiment: str, profile_id: str, raw_params: dict[str, str],
           images: list[str] | None = None, datapath_facts: dict[str, Any] | None = None,
           driver_pid: int | None = None, spec: dict[str, Any] | None = None,
           rerun_of: str | None = None) -> Path:
    """A new run directory with its manifest in state "running"; returns the directory.

    Parameters are validated again (runparams) so a manifest never holds an unchecked value.
    `spec` is the run specification the driver ran from (testbed/runspec.py; None: built here
    from the parameters and the environment), stored verbatim once it validates and agrees with
    the parameters; `rerun_of` the run directory this run repeats (make rerun).
    """
    params = runparams.validate(experiment, raw_params, profile_id)
    run_spec = _spec_record(experiment, profile_id, raw_params, params, spec)
    plane = runparams.plane_of(experiment, params)
    prof = profiles.get(profile_id, plane)
    campaign = params["campaign"] or "adhoc"
    slot_dir, extra = _secfn_record(experiment, runparams.result_name(experiment, prof.id, plane), params)
    run_dir = _new_run_dir(Path(results) / campaign / experiment / slot_dir)
    run = run_dir.name
    if experiment in NO_STACK:
        _select_lab_programs(prof)
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "experiment": experiment,
        "profile": prof.id,
        "plane": plane,
        "protocol": prof.protocol,
        "campaign": campaign,
        "run": run,
        "slot": params["slot"] or None,
        "state": "running",
        "reason": None,
        "valid": None,
        "validity": None,
        "datapath": datapath_for(prof.protocol, datapath_facts),
        "parameters": {k: v for k, v in params.items() if k not in ("profile", "campaign", "slot")},
        "profile_params": dict(prof.params),
        "spec": run_spec,
        "rerun_of": rerun_of or None,
        "host": host_facts(),
        "versions": versions(images, stack_run=experiment not in NO_STACK, ran=params.get("ran")),
        "instance": _instance(),
        "started": utcnow(),
        "finished": None,
        "driver": {"pid": driver_pid or os.getppid(), "hostname": socket.gethostname()},
        "commands": [],
        "files": [],
        "ues": [],
        "attach_failures": [],
        "events": [],
        **extra,
    }
    errors = validate(manifest)
    if errors:
        raise ManifestError("new manifest does not match the schema (a bug): " + "; ".join(errors))
    write(run_dir, manifest)
    log.info("run directory %s", run_dir)
    return run_dir


def _running(run_dir: Path) -> dict[str, Any]:
    m = load(run_dir)
    if m.get("state") != "running":
        raise ManifestError(f"{path_of(run_dir)}: run is {m.get('state')!r}, not running: "
                            "a finished run is never modified; start a new run")
    return m


# a file entry's own keys; attributes of the same name go into its nested "attrs" object
RESERVED_FILE_KEYS = ("path", "kind", "bytes", "attrs")


def add_file(run_dir: Path, rel: str, kind: str, attrs: dict[str, Any]) -> None:
    run_dir = Path(run_dir)
    if kind not in KINDS:
        raise ManifestError(f"unknown file kind {kind!r}; valid: {', '.join(KINDS)}")
    target = (run_dir / rel).resolve()
    if run_dir.resolve() not in target.parents:
        raise ManifestError(f"{rel}: a run's files must lie inside {run_dir}")
    if not target.is_file():
        raise ManifestError(f"{target}: no such file to record")
    m = _running(run_dir)
    if any(f["path"] == rel for f in m["files"]):
        raise ManifestError(f"{rel}: already recorded in {path_of(run_dir)}")
    entry: dict[str, Any] = {"path": rel, "kind": kind}
    for k, v in attrs.items():
        if k in RESERVED_FILE_KEYS:      # an attribute named like the entry's own keys (run-f1u: path)
            entry.setdefault("attrs", {})[k] = v
        else:
            entry[k] = v
    entry["bytes"] = target.stat().st_size
    m["files"].append(entry)
    write(run_dir, m)


def add_unlisted_logs(run_dir: Path) -> list[str]:
    """Record every file of the run directory not yet listed as kind "log" (driver and tool logs)."""
    run_dir = Path(run_dir)
    m = _running(run_dir)
    listed = {f["path"] for f in m["files"]}
    added = []
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir).as_posix()
        if p.is_file() and rel != MANIFEST and not p.name.startswith(".") and rel not in listed:
            m["files"].append({"path": rel, "kind": "log", "bytes": p.stat().st_size})
            added.append(rel)
    if added:
        write(run_dir, m)
    return added


def add_command(run_dir: Path, command: str) -> None:
    m = _running(run_dir)
    m["commands"].append(command)
    write(run_dir, m)


def add_ue(run_dir: Path, entry: dict[str, Any]) -> None:
    m = _running(run_dir)
    m["ues"].append(entry)
    write(run_dir, m)


def add_attach_failure(run_dir: Path, entry: dict[str, Any]) -> None:
    m = _running(run_dir)
    m["attach_failures"].append(entry)
    write(run_dir, m)


def add_event(run_dir: Path, level: str, message: str) -> None:
    m = load(run_dir)
    m["events"].append({"time": utcnow(), "level": level, "message": message})
    write(run_dir, m)


DATAPATH_LINE = re.compile(r"datapath: ([a-z0-9-]+)=(\S+)")


def datapaths_in_logs(files: list[Path]) -> dict[str, str]:
    """{overlay: datapath} from the `datapath: <overlay>=<datapath>` lines the overlay entrypoints
    print, of overlays and values the plug-ins know (anything else is not a datapath line)."""
    from testbed import registry
    known = {ov.name: ov.datapaths for ov in registry.overlays()}
    found: dict[str, str] = {}
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace") if f.is_file() else ""
        for name, value in DATAPATH_LINE.findall(text):
            if value in known.get(name, ()):
                found[name] = value
    return found


def set_datapath(run_dir: Path, reported: dict[str, str]) -> dict[str, Any]:
    """Record the datapaths the overlay entrypoints reported ({overlay: datapath}); returns the
    new datapath object (`userspace` true when any of them is a userspace datapath)."""
    from testbed import registry
    m = _running(run_dir)
    dp = {**m["datapath"], **reported}
    problems = datapath_problems(dp)
    if problems:
        raise ManifestError("; ".join(problems))
    dp["userspace"] = any(registry.overlay(k).userspace_datapaths & {v} for k, v in dp.items()
                          if k != "userspace" and v is not None)
    m["datapath"] = dp
    write(run_dir, m)
    return dp


def set_path_waits(run_dir: Path, waits: dict[str, Any]) -> None:
    """The patched NFs' trap-path waits (testbed/validity.py path_waits)."""
    set_field(run_dir, "path_waits", waits)


SET_FIELDS = ("path_waits", "wireguard_sessions", "nas", "secfn", "engine", "nfqueue", "proof", "flows", "placement")


def set_field(run_dir: Path, key: str, value: Any) -> None:
    """One of the validity step's records (SET_FIELDS) into the manifest."""
    if key not in SET_FIELDS:
        raise ManifestError(f"{key!r} is not a manifest record; valid: {', '.join(SET_FIELDS)}")
    m = load(run_dir)
    m[key] = value
    write(run_dir, m)


def set_validity(run_dir: Path, valid: bool, protected: int, plaintext: int, details: str) -> None:
    from testbed import tshark
    m = load(run_dir)
    m["valid"] = valid
    m["validity"] = {"protected_packets": protected, "plaintext_packets": plaintext,
                     "details": details, "checked": utcnow(), "tshark": tshark.version()}
    write(run_dir, m)


def finish(run_dir: Path, state: str, reason: str | None = None) -> dict[str, Any]:
    if state not in END_STATES:
        raise ManifestError(f"end state {state!r}; valid: {', '.join(END_STATES)}")
    m = _running(run_dir)
    m["state"] = state
    m["reason"] = reason
    m["finished"] = utcnow()
    if m.get("valid") is None:
        # never null: a run whose capture was not judged is not valid, and says why
        m["valid"] = False
        m["validity"] = {"protected_packets": 0, "plaintext_packets": 0, "checked": utcnow(),
                         "details": f"not checked: the run ended {state}"
                                    + (f" ({reason})" if reason else "") + " before its capture was judged"}
    write(run_dir, m)
    return m


def mark_stale(run_dir: Path) -> bool:
    """A manifest still "running" whose driver process is gone becomes "incomplete".

    Returns True when it was marked. Used by campaign resume; the directory is kept.
    """
    m = load(run_dir)
    if m.get("state") != "running":
        return False
    drv = m.get("driver") or {}
    if drv.get("hostname") == socket.gethostname() and _pid_alive(int(drv.get("pid") or 0)):
        return False
    m["state"] = "incomplete"
    m["reason"] = "driver ended without finishing the run (found by campaign resume)"
    m["finished"] = m.get("finished") or utcnow()
    write(run_dir, m)
    return True


def _pid_alive(pid: int) -> bool:
    if pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def runs(results: Path, campaign: str | None = None, experiment: str | None = None,
         profile: str | None = None) -> list[Path]:
    """Run directories (those holding a manifest.json) under a results root, sorted."""
    base = Path(results)
    pattern = "/".join([campaign or "*", experiment or "*", profile or "*", "*", MANIFEST])
    return sorted(p.parent for p in base.glob(pattern))
