"""A run specification: everything that decides what a run does, with every default filled in.

One spec = experiment, profile, plane(s), RAN variant, every dimension's variables (asked of the
plug-ins in testbed/registry.py, never named here) and every experiment parameter
(testbed/runparams.py, typed, manifest names). The drivers build it once from their Make
variables (`python -m testbed spec`, scripts/lib/driver.sh load_params), every manifest stores it
verbatim (`spec`), and `make rerun RUN=<run dir>` / `make run SPEC=<file>` run one again
(scripts/rerun.sh). A spec read from a file or manifest is validated by building it again from
its own values: what is missing gets its default, what is wrong is a SpecError naming it.
Docs: docs/manifest.md ("The run specification").
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed import dimensions, profiles, ran, registry, runparams

SPEC_VERSION = 1
KEYS = ("spec_version", "experiment", "profile", "plane", "ran", "dimensions", "parameters")
# the experiments that run no 5G stack: no RAN, and no dimension they do not take as a parameter
# (testbed/manifest.py NO_STACK names the same for the versions it records)
NO_STACK = ("overlay", "secfn-lab")


class SpecError(ValueError):
    """A spec that is malformed or does not validate; the message says what and where."""


@dataclasses.dataclass(frozen=True)
class RunSpec:
    experiment: str
    profile: str
    plane: str
    ran: str | None                                 # None: the experiment runs no RAN
    dimensions: dict[str, dict[str, str]]           # dimension -> {VARIABLE: value} ("" = not chosen)
    parameters: dict[str, Any]                      # runparams' typed values, manifest names
    spec_version: int = SPEC_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KEYS}


def _param_names(experiment: str) -> set[str]:
    return {p.name for p in runparams.SPECS[experiment]}


def _dimension_values(experiment: str, params: Mapping[str, Any],
                      options: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Every dimension plug-in's variables: the experiment's parameter of that name, else the
    option (environment or spec) for an experiment that runs a stack (its render reads them),
    else "" (nothing reads it)."""
    own = _param_names(experiment)
    out: dict[str, dict[str, str]] = {}
    for d in registry.dimensions():
        values = {}
        for var in d.variables:
            if var in own:
                values[var] = _text(params[var.lower()])
            else:
                values[var] = (options.get(var) or "") if experiment not in NO_STACK else ""
        out[d.name] = values
    return out


def _text(value: Any) -> str:
    """A typed parameter as its Make variable's text (runparams.shell_assignments' form)."""
    if isinstance(value, list):
        return " ".join(str(x) for x in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _ran_of(experiment: str, params: Mapping[str, Any], options: Mapping[str, str]) -> str | None:
    if "ran" in params:
        return str(params["ran"])
    if experiment in NO_STACK:
        return None
    try:
        return ran.check(options.get("RAN") or None)
    except ran.RanError as exc:
        raise SpecError(f"RAN={options.get('RAN')!r}: {exc}") from None


def _check_dimensions(spec: RunSpec) -> None:
    """The dimension choices of a stack run must fit its profile, plane and RAN (the plug-ins say)."""
    if spec.experiment in NO_STACK:
        return
    flat = {k: v for values in spec.dimensions.values() for k, v in values.items()}
    try:
        prof = profiles.get(spec.profile)
        dimensions.select(flat, prof, spec.plane, spec.ran or "")
    except (dimensions.SelectionError, profiles.ProfileError) as exc:
        raise SpecError(str(exc)) from None


def build(experiment: str, raw: Mapping[str, str], profile: str, options: Mapping[str, str]) -> RunSpec:
    """The full spec from Make variables: `raw` the experiment's parameters (runparams names,
    "" = default), `options` the RAN and dimension variables (the environment at the CLI, or a
    spec's own). SpecError listing every problem."""
    if experiment not in runparams.SPECS:
        raise SpecError(f"unknown experiment {experiment!r}; valid: {', '.join(runparams.EXPERIMENTS)}")
    try:
        params = runparams.validate(experiment, dict(raw), profile)
    except (runparams.ParamError, profiles.ProfileError) as exc:
        raise SpecError(str(exc)) from None
    params.pop("profile", None)
    spec = RunSpec(experiment=experiment, profile=profiles.get(profile).id,
                   plane=runparams.plane_of(experiment, params), ran=_ran_of(experiment, params, options),
                   dimensions=_dimension_values(experiment, params, options), parameters=params)
    _check_dimensions(spec)
    return spec


def _raw_parameters(experiment: str, given: Mapping[str, Any]) -> dict[str, str]:
    """A spec's parameters back as Make variables (missing ones: default); SpecError for a name
    the experiment does not have."""
    names = {p.key: p.name for p in runparams.SPECS[experiment]}
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise SpecError(f"parameters: unknown {', '.join(unknown)} for experiment {experiment}; "
                        f"valid: {', '.join(names)}")
    return {names[k]: _text(v) for k, v in given.items() if v is not None}


def _options(data: Mapping[str, Any]) -> dict[str, str]:
    dims = data.get("dimensions") or {}
    if not isinstance(dims, dict) or not all(isinstance(v, dict) for v in dims.values()):
        raise SpecError("dimensions: must map each dimension to {VARIABLE: value}")
    known = {d.name: set(d.variables) for d in registry.dimensions()}
    out: dict[str, str] = {}
    for name, values in dims.items():
        if name not in known:
            raise SpecError(f"dimensions: unknown dimension {name!r}; known: {', '.join(known)}")
        extra = sorted(set(values) - known[name])
        if extra:
            raise SpecError(f"dimensions.{name}: unknown variable(s) {', '.join(extra)}; "
                            f"valid: {', '.join(sorted(known[name]))}")
        out.update({k: "" if v is None else _text(v) for k, v in values.items()})
    if data.get("ran"):
        out["RAN"] = str(data["ran"])
    return out


def from_dict(data: Any) -> RunSpec:
    """A validated spec from its dict form (a file's or a manifest's), defaults filled in."""
    if not isinstance(data, dict):
        raise SpecError("a run spec must be a mapping (experiment:, profile:, parameters: ...)")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise SpecError(f"unknown key(s) {', '.join(unknown)}; valid: {', '.join(KEYS)}")
    if data.get("spec_version", SPEC_VERSION) != SPEC_VERSION:
        raise SpecError(f"spec_version {data.get('spec_version')!r}: this testbed reads {SPEC_VERSION}")
    experiment, profile = data.get("experiment"), data.get("profile") or "baseline"
    if experiment not in runparams.SPECS:
        raise SpecError(f"experiment: {experiment!r} is not one of {', '.join(runparams.EXPERIMENTS)}")
    given = data.get("parameters") or {}
    if not isinstance(given, dict):
        raise SpecError("parameters: must map parameter names to values")
    raw = _raw_parameters(str(experiment), given)
    # a plane or RAN stated beside the parameters is the parameter's value when it is one
    if data.get("plane") and "PLANE" not in raw:
        raw["PLANE"] = str(data["plane"])
    if data.get("ran") and "RAN" in _param_names(str(experiment)) and "RAN" not in raw:
        raw["RAN"] = str(data["ran"])
    spec = build(str(experiment), raw, str(profile), _options(data))
    _agrees(spec, data)
    return spec


def _agrees(spec: RunSpec, data: Mapping[str, Any]) -> None:
    """What a spec states outside its parameters must be what they give."""
    for key in ("plane", "ran"):
        if data.get(key) and data[key] != getattr(spec, key):
            raise SpecError(f"{key}: {data[key]!r}, but the spec's experiment and parameters give "
                            f"{getattr(spec, key)!r}")


def load(path: Path) -> RunSpec:
    """A spec file (YAML or JSON), validated."""
    import yaml
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not YAML/JSON ({str(exc).splitlines()[0]})") from None
    try:
        return from_dict(data)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None


def from_manifest(manifest: Mapping[str, Any], where: str = "manifest") -> RunSpec:
    """The spec a run ran with (its manifest's `spec`), validated."""
    if not isinstance(manifest.get("spec"), dict):
        raise SpecError(f"{where}: the run records no spec (made before specs were stored); repeat it "
                        f"with make run-<experiment> and the parameters its manifest lists")
    try:
        return from_dict(manifest["spec"])
    except SpecError as exc:
        raise SpecError(f"{where}: spec: {exc}") from None


def dump(spec: RunSpec, fmt: str = "yaml") -> str:
    """The spec as YAML (for reading and editing) or JSON (one line, for a manifest or a shell)."""
    if fmt == "json":
        return json.dumps(spec.to_dict(), separators=(",", ":"))
    import yaml
    return str(yaml.safe_dump(spec.to_dict(), sort_keys=False, default_flow_style=None))


def shell_assignments(spec: RunSpec) -> str:
    """`NAME='value'` lines a driver evals (scripts/lib/driver.sh load_params): every parameter,
    PROFILE/PROTOCOL/PLANE, the RAN and dimension variables exported (the stack's render and the
    children read them), and RUN_SPEC, the spec itself as one JSON line for the manifest."""
    import shlex
    lines = [runparams.shell_assignments(spec.experiment, {**spec.parameters, "profile": spec.profile})]
    own = _param_names(spec.experiment)
    if spec.ran is not None and "RAN" not in own:
        lines.append(f"export RAN={shlex.quote(spec.ran)}")
    for values in spec.dimensions.values():
        lines += [f"export {k}={shlex.quote(v)}" for k, v in values.items() if k not in own]
    lines.append(f"RUN_SPEC={shlex.quote(dump(spec, 'json'))}")
    return "\n".join(lines)
