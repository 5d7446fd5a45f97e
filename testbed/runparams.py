"""Experiment parameters: their defaults, types and limits, checked once before a run starts.

Every driver (scripts/run-*.sh) passes its Make variables / flags here first
(`python -m testbed params <experiment> KEY=VALUE ...`); a wrong value stops the run before
anything is started, with every problem listed at once. Keys are the UPPER_CASE Make
variables; the manifest stores them in snake_case with typed values.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from testbed import environment
from testbed import planes, profiles, ran, stack

# Open5GS's HTTP/2 client (libcurl) drops a connection idle for more than 118 s (curl's default
# CURLOPT_MAXAGE_CONN; Open5GS lib/sbi/client.c sets none):
# the warm UE must attach well within it.
CURL_IDLE_LIMIT_S = 118

EXPERIMENTS = ("n3", "sbi", "cpu", "throughput", "overlay", "secfn", "secfn-lab", "ran-procedures", "f1u")


class ParamError(ValueError):
    """One or more parameters are wrong; the message lists each with the valid values."""


@dataclasses.dataclass(frozen=True)
class Param:
    name: str                       # Make variable / env name, UPPER_CASE
    kind: str                       # int | float | ints | choice | word | words (choices) | cpus | planes
    default: str
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The manifest's name for it."""
        return self.name.lower()


def _ping_max_payload() -> int:
    # the ICMP message (SIZES) + 20 (IPv4) must fit the UE's tunnel MTU
    return int(stack.load()["ue_mtu"]) - 20


def _scale_ues() -> int:
    return int(stack.load()["subscribers"]["scale"]["count"])


def _ping_params(sets: str, pings: str, interval: str, warmup: str, sizes: str = "64 1024") -> tuple[Param, ...]:
    maxp = _ping_max_payload()
    return (
        Param("SIZES", "ints", sizes,
              f"ICMP message sizes in bytes, as the papers' '64 bytes' = ping's default (ping -s SIZE-8; "
              f"24..{maxp}: ping times replies from 16 B of data on, and the packet fits the UE MTU)",
              24, maxp),
        Param("SETS", "int", sets, "sets of pings per payload size", 1, 1000),
        Param("PINGS", "int", pings, "pings per set", 1, 1_000_000),
        Param("INTERVAL", "float", interval, "seconds between pings (ping -i; below 0.2 needs root)",
              0.0, 60.0),
        Param("WARMUP", "int", warmup, "warm-up pings before the measurement (kept, not counted)",
              1, 10_000),
        Param("PING_DEADLINE", "int", "0",
              "seconds a whole set may take before it is stopped (0 = from PINGS x INTERVAL)", 0, 86_400),
    )


_COMMON = (
    Param("CAMPAIGN", "word", "adhoc", "campaign name: results/<campaign>/..."),
    Param("SLOT", "word", "", "campaign slot this run fills (set by campaign.sh)"),
    Param("UP_TIMEOUT", "int", "180", "seconds the stack/lab may take to come up", 5, 3600),
    Param("BOOT", "int", "1", "which of the BOOTS independent boots this run is (set by make/campaign)",
          1, 10_000),
    Param("CPUSET_STACK", "cpus", "", "CPUs the stack's containers are pinned to, e.g. 1-3 (empty: not pinned)"),
    Param("CPUSET_TOOLS", "cpus", "", "CPUs the measuring tools (captures) are pinned to, e.g. 0; disjoint from CPUSET_STACK"),
)


def cpu_list(text: str) -> set[int]:
    """'0,2-3' -> {0, 2, 3}; ValueError for anything else."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        a, b = int(lo), int(hi or lo)
        if a < 0 or b < a:
            raise ValueError(text)
        out.update(range(a, b + 1))
    return out


def _boots(default: str) -> Param:
    # the replication unit: each boot is a run of its own (its own stack/lab start); intervals are
    # computed over boots (analysis/stats.py summarize_boots). Campaigns run boots in randomised
    # blocks (testbed/campaign.py).
    return Param("BOOTS", "int", default, "independent stack boots (runs) per make target / campaign block count",
                 1, 10_000)

def _secfn_params(rates: str, runs: str, duration: str) -> tuple[Param, ...]:
    """The UPF security-function experiment (docs/secfn.md): SECFN x IDS, D-ITG flows."""
    from testbed import secfn
    cat = secfn.catalogue()
    return (
        Param("SECFN", "choice", "nat", "the UPF's security function (docs/secfn.md)",
              choices=tuple(cat["functions"])),
        Param("IDS", "choice", "suricata", "the engine of ids-nat and ips-nat (none and nat run none)",
              choices=tuple(cat["engines"])),
        Param("PROTOCOLS", "words", "udp tcp", "D-ITG transports", choices=("udp", "tcp")),
        Param("RATES", "ints", rates, "mean packet rates in packets/s (Poisson inter-departure, 512 B payloads)",
              1, 1_000_000),
        Param("RUNS", "int", runs, "D-ITG runs per protocol and rate (the seed study: 20)", 1, 10_000),
        Param("DURATION", "float", duration, "seconds per D-ITG run (the seed study: 5)", 0.5, 3600.0),
        Param("QUEUE_MAXLEN", "int", str(cat["nfqueue"]["queue_maxlen"]), "NFQUEUE length in packets (inline)",
              1, 1_000_000),
        Param("QUEUES", "int", str(cat["nfqueue"]["queues"]),
              "NFQUEUE queues (inline; flows spread by hash, one engine thread each)", 1, 16),
        Param("FAIL_OPEN", "choice", "1" if cat["nfqueue"]["fail_open"] else "0",
              "1: the kernel bypasses the queue when it is full or nobody serves it (--queue-bypass, "
              "the engine's fail-open); 0: it drops", choices=("0", "1")),
        Param("ORDER_SEED", "int", "0", "seed of the flows' random order (0: a fresh random seed, recorded)",
              0, 2**32 - 1),
        Param("VALIDATION_PACKETS", "int", "20000",
              "whole packets kept of each validation capture, from the first (NAT and drop proofs)", 100, 10**8),
    )


SPECS: dict[str, tuple[Param, ...]] = {
    # paper 4.1: 10 sets x 2,000 pings = 20,000 per size, 64 and 1,024 bytes; 0.2 s as in the group's
    # follow-up scripts. Here as 5 boots x 2 sets x 2,000: the same total, intervals over boots.
    "n3": _COMMON + (_boots("5"),) + _ping_params("2", "2000", "0.2", "20"),
    # the same measurement through the bare overlay between two namespaces: seconds, not hours
    "overlay": _COMMON + (_boots("5"),) + _ping_params("1", "200", "0.005", "10"),
    # every iteration boots a fresh core: ITERATIONS are the boots (BOOTS = campaign blocks)
    "sbi": _COMMON + (_boots("1"),) + (
        Param("PLANE", "planes", "sbi",
              "plane(s) PROFILE's overlay covers: sbi, n2, n4, n3, several (n2,n4) or all of the "
              "profile's; one validation capture per plane, attach times from N2"),
        Param("MODE", "choice", "both", "cold: UE 1 only; warm and both: UE 1 then UE 2",
              choices=("cold", "warm", "both")),
        Param("ITERATIONS", "int", "20", "fresh cores (one cold + one warm attach each)", 1, 10_000),
        Param("ATTACH_TIMEOUT", "int", "30", "seconds a UE may take to get its PDU session", 1, 600),
        Param("RETRIES", "int", "3", "attempts per UE and iteration before the sample is failed", 1, 100),
        Param("WARM_GAP", "float", "2", "seconds between UE 1's PDU session and starting UE 2", 0.0, 100.0),
        Param("NAS", "word", "", "NAS security algorithms nea<i>-nia<j> (docs/nas.md; empty: the stack's "
              "orders, NEA0/NIA2); proven from every iteration's N2 Security Mode Commands"),
        Param("KEYS", "choice", "0", "1: keep the key material of the run's own traffic (TLS key logs of the NFs, "
              "ESP SAs of the IPsec holders; 0600, never in a report) for the per-operation breakdown "
              "(docs/analysis.md)", choices=("0", "1")),
    ),
    # every repetition boots a fresh core: REPS are the boots (BOOTS = campaign blocks)
    "cpu": _COMMON + (_boots("1"),) + (
        Param("UES", "ints", "1 5 10 20",
              f"numbers of UEs attached after boot (1..{_scale_ues()}: provisioned scaling subscribers)",
              1, _scale_ues()),
        Param("REPS", "int", "5", "repetitions per UE count (paper: 50)", 1, 1000),
        Param("ATTACH_TIMEOUT", "int", "120", "seconds until the last UE's PDU session", 1, 3600),
    ),
    "throughput": _COMMON + (_boots("5"),) + (
        Param("TRANSPORTS", "words", "tcp udp", "iperf3 transports", choices=("tcp", "udp")),
        Param("DURATION", "int", "10", "seconds per iperf3 test (iperf3 -t)", 1, 3600),
        Param("REPS", "int", "3", "iperf3 tests per transport", 1, 1000),
        Param("UDP_BITRATE", "word", "100M", "UDP target bitrate (iperf3 -b)"),
        Param("STREAMS", "int", "1", "parallel streams (iperf3 -P)", 1, 128),
    ),
    # the stack form: UE 1 -> UPF (NAT, engine) -> N6 server containers; the seed's counts
    "secfn": _COMMON + (_boots("1"),) + _secfn_params("100 1000 5000 20000", "20", "5"),
    # the same between namespaces (make run-secfn-lab, make run-overlay SECFN=...)
    "secfn-lab": _COMMON + (_boots("1"),) + _secfn_params("100 1000 5000 20000", "20", "5"),
}


def _ran(default: str, choices: tuple[str, ...]) -> Param:
    return Param("RAN", "choice", default, "RAN variant (docs/ran.md); the F1/E1 interfaces exist only in split",
                 choices=choices)


def _uu() -> Param:
    return Param("UU", "choice", "-", "AS security of the OAI RAN, <nea>-<nia> ('-': OAI's preference lists; "
                 "the paper's end-to-end ping: nea2-nia2)", choices=("-", "nea0-nia2", "nea1-nia1", "nea2-nia2"))


# The split RAN's experiments (docs/ran.md, scripts/run-ran-procedures.sh, scripts/run-f1u.sh).
SPECS["ran-procedures"] = _COMMON + (_boots("5"), _ran("split", ("split",)), _uu()) + (
    Param("PLANE", "planes", "f1c,e1", "plane(s) PROFILE's overlay covers (f1c and e1: the interfaces whose "
          "procedures are timed; their captures validate it)"),
    # paper 5.1: 1,000 UE registrations; here 5 boots x 200 fresh registrations
    Param("REGISTRATIONS", "int", "200", "fresh UE registrations per boot (UE 1 started, attached, removed)",
          1, 100_000),
    Param("ATTACH_TIMEOUT", "int", "60", "seconds a registration may take until the PDU session", 1, 3600),
    Param("RETRIES", "int", "3", "attempts per registration before the sample is failed", 1, 100),
    Param("GAP", "float", "2", "seconds between removing the UE and its next registration (pacing)", 0.0, 600.0),
)
# paper 5.1/6.1: 20,000 pings of 1,024 B (ping -s 1024 as the authors' scripts: ICMP message 1,032 B),
# here 5 boots x 2 sets x 2,000 as run-n3; SCOPE e2e: the end-to-end ping, split or monolithic
SPECS["f1u"] = _COMMON + (_boots("5"), _ran("split", ("split", "oai")), _uu()) + _ping_params(
    "2", "2000", "0.2", "20", sizes="1032") + (
    Param("PLANE", "planes", "-", "plane(s) PROFILE's overlay covers ('-': f1u; SCOPE=e2e: every user-plane "
          "interface of the RAN, n3,f1u split, n3 monolithic)"),
    Param("SCOPE", "choice", "f1u", "f1u: the F1-U measurement (split only); e2e: UE to UPF with PROFILE on every "
          "user-plane interface of the RAN variant", choices=("f1u", "e2e")),
    Param("IPERF", "choice", "1", "1: iperf3 TCP and UDP through the user plane after the pings; 0: pings only",
          choices=("0", "1")),
    Param("TRANSPORTS", "words", "tcp udp", "iperf3 transports", choices=("tcp", "udp")),
    Param("DURATION", "int", "10", "seconds per iperf3 test (iperf3 -t)", 1, 3600),
    Param("REPS", "int", "3", "iperf3 tests per transport", 1, 1000),
    Param("UDP_BITRATE", "word", "100M", "UDP target bitrate (iperf3 -b)"),
    Param("STREAMS", "int", "1", "parallel streams (iperf3 -P)", 1, 128),
)

# the plane a profile must support for each experiment (the default of a PLANE parameter)
PLANE: dict[str, str] = {"n3": "n3", "overlay": "n3", "throughput": "n3", "sbi": "sbi", "cpu": "sbi",
                         "secfn": "n3", "secfn-lab": "n3", "ran-procedures": "f1c,e1", "f1u": "f1u"}


def plane_of(experiment: str, params: dict[str, Any]) -> str:
    """The canonical PLANE expression a run covers: its `plane` parameter, else the experiment's."""
    return str(params.get("plane") or PLANE[experiment])


def result_name(experiment: str, profile: str, plane: str | None = None) -> str:
    """The profile's directory name under results/<campaign>/<experiment>/: the profile id on the
    experiment's own plane (the paths of earlier results), `<profile>@<planes>` otherwise
    (e.g. aes128gcm@n2+n4), so runs on other planes never mix with them."""
    if not plane or planes.split(plane) == planes.split(PLANE[experiment]):
        return profile
    return f"{profile}@{planes.key(plane)}"


def _word_ok(s: str) -> bool:
    return bool(s) and all(c.isalnum() or c in "-_." for c in s) and not s.startswith(".")


def _convert(p: Param, raw: str) -> tuple[Any, str | None]:
    """Typed value, or an error message naming the parameter and its valid values."""
    limits = ""
    if p.minimum is not None or p.maximum is not None:
        limits = f" ({'' if p.minimum is None else p.minimum:g}..{'' if p.maximum is None else p.maximum:g})"
    try:
        if p.kind == "int":
            v: Any = int(raw)
        elif p.kind == "float":
            v = float(raw)
            if v != v or v in (float("inf"), float("-inf")):
                raise ValueError(raw)
        elif p.kind == "ints":
            v = [int(x) for x in raw.replace(",", " ").split()]
            if not v:
                raise ValueError(raw)
        elif p.kind == "planes":
            if raw.strip() in (planes.ALL, "-"):          # '-': the experiment decides (run-f1u)
                return raw.strip(), None
            try:
                return planes.expr(raw), None
            except planes.PlaneError as exc:
                return None, f"{p.name}={raw!r}: {exc}"
        elif p.kind == "cpus":
            if raw.strip():
                cpu_list(raw)
            return raw.strip(), None
        elif p.kind == "choice":
            if raw not in p.choices:
                return None, f"{p.name}={raw!r}: must be one of {', '.join(p.choices)}"
            return raw, None
        elif p.kind == "words":
            v = raw.replace(",", " ").split()
            bad = [w for w in v if w not in p.choices]
            if not v or bad:
                return None, f"{p.name}={raw!r}: must be one or more of {', '.join(p.choices)}"
            return v, None
        else:  # word
            if raw and not _word_ok(raw):
                return None, f"{p.name}={raw!r}: use letters, digits, '-', '_' or '.' only"
            return raw, None
    except ValueError:
        what = {"int": "a whole number", "float": "a number", "ints": "whole numbers separated by spaces",
                "cpus": "a CPU list such as 0 or 1-3 or 0,2"}
        return None, f"{p.name}={raw!r}: must be {what[p.kind]}{limits}"
    values = v if isinstance(v, list) else [v]
    for x in values:
        if (p.minimum is not None and x < p.minimum) or (p.maximum is not None and x > p.maximum):
            return None, f"{p.name}={raw!r}: out of range{limits}"
    if isinstance(v, list) and len(set(v)) != len(v):
        return None, f"{p.name}={raw!r}: repeats a value"
    return v, None


def _fixed_plane(experiment: str, given: str) -> str | None:
    """An experiment without a PLANE parameter measures its own plane: a PLANE given anyway
    (`make run-overlay PLANE=xyz`) must name that plane, never be ignored; None when it does."""
    given = given.strip()
    if not given:
        return None
    own = PLANE[experiment]
    try:
        if planes.split(planes.expr(given)) == planes.split(own):
            return None
    except planes.PlaneError as exc:
        return f"PLANE={given!r}: {exc}"
    return (f"PLANE={given!r}: the {experiment} experiment measures the {own} plane only (it has no PLANE "
            f"parameter); leave PLANE unset or use an experiment with one (run-sbi: PLANE=n2,n4,...)")


def raw_values(experiment: str, assignments: list[str], from_env: bool = False) -> dict[str, str]:
    """Make variables as strings: the experiment's own from the environment (as Make exports
    them) when `from_env`, then KEY=VALUE assignments; ParamError for a word without '='."""
    env = environment.mapping()
    raw = {s.name: env[s.name] for s in SPECS[experiment] if s.name in env} if from_env else {}
    if from_env and env.get("PLANE", "").strip() and experiment in PLANE:
        raw.setdefault("PLANE", env["PLANE"])          # checked by validate, also where it is no parameter
    for a in assignments:
        key, sep, value = a.partition("=")
        if not sep:
            raise ParamError(f"{a!r} is not KEY=VALUE")
        raw[key] = value
    return raw


def validate(experiment: str, raw: dict[str, str], profile: str | None = None) -> dict[str, Any]:
    """Typed parameters (defaults filled in) keyed by manifest name, or ParamError listing all problems.

    `raw` maps Make variable names to strings; an empty string means "use the default".
    With `profile`, the profile must exist and support the experiment's plane.
    """
    if experiment not in SPECS:
        raise ParamError(f"unknown experiment {experiment!r}; valid: {', '.join(EXPERIMENTS)}")
    errors: list[str] = []
    if "PLANE" in raw and "PLANE" not in {p.name for p in SPECS[experiment]}:
        raw = dict(raw)
        err = _fixed_plane(experiment, raw.pop("PLANE"))
        if err:
            errors.append(err)
    out = _typed(experiment, raw, errors)
    _cross_checks(experiment, out, errors)
    if profile is not None:
        _profile_planes(experiment, profile, out, errors)
    elif out.get("plane") == planes.ALL:
        out["plane"] = PLANE[experiment] if experiment in PLANE else planes.names()[0]
    if errors:
        raise ParamError("\n".join(errors))
    return out


def _typed(experiment: str, raw: dict[str, str], errors: list[str]) -> dict[str, Any]:
    """Every parameter of the experiment converted (its default for ""); problems into errors."""
    specs = {p.name: p for p in SPECS[experiment]}
    unknown = sorted(set(raw) - set(specs))
    if unknown:
        errors.append(f"unknown parameter(s) {', '.join(unknown)} for experiment {experiment}; "
                      f"valid: {', '.join(specs)}")
    out: dict[str, Any] = {}
    for name, p in specs.items():
        value = raw.get(name, "")
        value = p.default if value.strip() == "" else value.strip()
        v, err = _convert(p, value)
        if err:
            errors.append(err)
        else:
            out[p.key] = v
    return out


def _cross_checks(experiment: str, out: dict[str, Any], errors: list[str]) -> None:
    """What no single parameter shows: CPU sets that overlap, a NAS choice, the warm UE within
    curl's idle limit, a security function's settings, the F1-U scope and planes."""
    if not errors and out.get("cpuset_stack") and out.get("cpuset_tools"):
        both = cpu_list(out["cpuset_stack"]) & cpu_list(out["cpuset_tools"])
        if both:
            errors.append(f"CPUSET_STACK={out['cpuset_stack']} and CPUSET_TOOLS={out['cpuset_tools']} share "
                          f"CPU(s) {', '.join(map(str, sorted(both)))}: the instrument would load the CPUs it measures")
    if out.get("nas"):
        from testbed import nas
        try:
            nas.get(out["nas"])
        except nas.NasError as exc:
            errors.append(f"NAS={out['nas']!r}: {exc}")
    if experiment == "sbi" and not errors and out["attach_timeout"] + out["warm_gap"] >= CURL_IDLE_LIMIT_S:
        errors.append(f"ATTACH_TIMEOUT + WARM_GAP = {out['attach_timeout'] + out['warm_gap']:g} s: "
                      f"the warm UE must attach well within the {CURL_IDLE_LIMIT_S} s after which "
                      "Open5GS's HTTP/2 client drops idle connections; lower them")
    if experiment in ("secfn", "secfn-lab") and not errors:
        from testbed import secfn
        try:
            secfn.resolve(out["secfn"], out["ids"], queue_maxlen=out["queue_maxlen"],
                          fail_open=out["fail_open"] == "1", queues=out["queues"], check_engine=True)
        except secfn.SecfnError as exc:
            errors.append(str(exc))
    if experiment == "f1u" and not errors:
        if out["scope"] == "f1u" and out["ran"] != "split":
            errors.append(f"SCOPE=f1u needs RAN=split (RAN={out['ran']} has no F1-U); "
                          "SCOPE=e2e measures the monolithic gNB")
        if out.get("plane") in ("-", None):       # the RAN's user-plane interfaces
            out["plane"] = "f1u" if out["scope"] == "f1u" else ("n3,f1u" if out["ran"] == "split" else "n3")
        elif out["ran"] != "split" and "f1u" in planes.split(out["plane"]):
            errors.append(f"PLANE={out['plane']}: RAN={out['ran']} has no F1-U")


def _profile_planes(experiment: str, profile: str, out: dict[str, Any], errors: list[str]) -> None:
    """The profile must exist and support the run's planes; `all` becomes the planes it and the
    run's RAN variant have."""
    try:
        prof = profiles.get(profile, PLANE[experiment] if "plane" not in out else None)
        if "plane" in out:
            covered = profiles.planes_for(prof, out["plane"])
            if out["plane"] == planes.ALL:        # all the planes the run's RAN variant has
                variant = str(out.get("ran") or environment.get("RAN", "ueransim"))
                covered = tuple(p for p in covered if ran.has_plane(variant, p))
            out["plane"] = planes.expr(covered)
    except profiles.ProfileError as exc:
        errors.append(str(exc))
    out["profile"] = profile


def shell_assignments(experiment: str, params: dict[str, Any]) -> str:
    """`NAME='value'` lines (lists space-separated) for a driver to eval."""
    import shlex
    lines = []
    for p in SPECS[experiment]:
        v = params[p.key]
        s = " ".join(str(x) for x in v) if isinstance(v, list) else (f"{v:g}" if isinstance(v, float) else str(v))
        lines.append(f"{p.name}={shlex.quote(s)}")
    if "profile" in params:
        prof = profiles.get(params["profile"])
        lines.append(f"PROFILE={shlex.quote(prof.id)}")
        lines.append(f"PROTOCOL={shlex.quote(prof.protocol)}")
        lines.append(f"PLANE={shlex.quote(plane_of(experiment, params))}")
    return "\n".join(lines)


def describe(experiment: str) -> str:
    """One line per parameter: name, default, help (for --help)."""
    return "\n".join(f"  {p.name:<15} {p.help} [default: {p.default or 'none'}]"
                     for p in SPECS[experiment])
