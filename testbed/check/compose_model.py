"""Compose files as the checker sees them: interpolated with the render's env, merged in
order (like `docker compose -f a -f b config`), each key remembering the file that set it.

Only what the checks need is modelled; `docker compose config` (where Compose exists) stays
the authority on syntax, and the tests run it too.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import yaml

_VAR = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])((?:[^{}]|\{[^{}]*\})*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
# libyaml's safe loader where PyYAML has it (the same documents, several times faster: the
# Kubernetes render reads every profile's Compose files), else PyYAML's own
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Lists that Compose merges by appending (unique) rather than replacing.
_APPEND_KEYS = {"cap_add", "cap_drop", "devices", "tmpfs", "env_file", "dns", "security_opt"}


@dataclasses.dataclass
class Problem:
    file: Path
    key: str
    message: str


@dataclasses.dataclass
class ComposeModel:
    services: dict[str, dict[str, Any]]
    networks: dict[str, dict[str, Any]]
    origin: dict[tuple[str, ...], Path]          # (services|networks, name[, key]) -> file
    files: list[Path]
    problems: list[Problem]

    def file_of(self, *path: str) -> Path:
        """The file that last set services.<name>.<key> (or the service / network itself)."""
        for n in range(len(path), 0, -1):
            if path[:n] in self.origin:
                return self.origin[path[:n]]
        return self.files[0]


def interpolate(value: str, env: dict[str, str], on_error: Any, keep: frozenset[str] = frozenset()) -> str:
    """Compose variable interpolation: $$, $VAR, ${VAR}, ${VAR:-d}, ${VAR-d}, ${VAR:?e}, ${VAR?e}.
    A variable in KEEP is left as written, for whoever interpolates it later (a Kubernetes pod's
    probe timing at `up`: testbed/runtime/k8s/probetiming.py)."""
    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return "$"
        name = m.group(2) or m.group(5)
        if name in keep:
            return m.group(0)
        op, arg = m.group(3), m.group(4) or ""
        val = env.get(name)
        if op in (":-", "-"):
            if val is None or (op == ":-" and val == ""):
                return interpolate(arg, env, on_error, keep)
            return val
        if op in (":?", "?"):
            if val is None or (op == ":?" and val == ""):
                on_error(f"required variable {name} is not set ({arg or 'no message'})")
                return ""
            return val
        if val is None:
            on_error(f"variable {name} is not set (it would be empty)")
            return ""
        return val
    return _VAR.sub(repl, value)


def _interp_tree(node: Any, env: dict[str, str], report: Any, path: str, keep: frozenset[str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env, lambda msg: report(path, msg), keep)
    if isinstance(node, list):
        return [_interp_tree(x, env, report, f"{path}[{i}]", keep) for i, x in enumerate(node)]
    if isinstance(node, dict):
        return {k: _interp_tree(v, env, report, f"{path}.{k}" if path else str(k), keep) for k, v in node.items()}
    return node


def volume_target(vol: Any) -> str:
    if isinstance(vol, dict):
        return str(vol.get("target", ""))
    parts = str(vol).split(":")
    return parts[1] if len(parts) >= 2 else parts[0]


def volume_source(vol: Any) -> str | None:
    if isinstance(vol, dict):
        return str(vol["source"]) if vol.get("type", "bind") == "bind" and vol.get("source") else None
    parts = str(vol).split(":")
    return parts[0] if len(parts) >= 2 else None


def _merge_service(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if k == "volumes" and isinstance(out.get(k), list) and isinstance(v, list):
            by_target = {volume_target(x): x for x in out[k]}
            for x in v:
                by_target[volume_target(x)] = x
            out[k] = list(by_target.values())
        elif k in _APPEND_KEYS and isinstance(out.get(k), list) and isinstance(v, list):
            out[k] = out[k] + [x for x in v if x not in out[k]]
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge_map(out[k], v)
        else:
            out[k] = v
    return out


def _merge_map(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge_map(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load(files: list[Path], env: dict[str, str], keep: frozenset[str] = frozenset()) -> ComposeModel:
    """The merged model; variables in KEEP stay as written (interpolate)."""
    services: dict[str, dict[str, Any]] = {}
    networks: dict[str, dict[str, Any]] = {}
    origin: dict[tuple[str, ...], Path] = {}
    problems: list[Problem] = []
    for f in files:
        f = Path(f)
        if not f.exists():
            problems.append(Problem(f, "(file)", "compose file does not exist"))
            continue
        try:
            raw = yaml.load(f.read_text(encoding="utf-8"), Loader=_LOADER) or {}
        except yaml.YAMLError as exc:
            problems.append(Problem(f, "(yaml)", f"not valid YAML: {exc}"))
            continue

        def report(path: str, msg: str, _f: Path = f) -> None:
            problems.append(Problem(_f, path, msg))

        data = _interp_tree({k: v for k, v in raw.items() if not str(k).startswith("x-")}, env, report, "", keep)
        for name, svc in (data.get("services") or {}).items():
            svc = svc or {}
            services[name] = _merge_service(services.get(name, {}), svc)
            origin.setdefault(("services", name), f)
            for key in svc:
                origin[("services", name, key)] = f
        for name, net in (data.get("networks") or {}).items():
            networks[name] = _merge_map(networks.get(name, {}), net or {})
            origin[("networks", name)] = f
    return ComposeModel(services, networks, origin, [Path(f) for f in files], problems)


def service_networks(svc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{network: {ipv4_address, aliases}} of a service (list or map syntax)."""
    nets = svc.get("networks") or {}
    if isinstance(nets, list):
        return {n: {} for n in nets}
    return {n: (spec or {}) for n, spec in nets.items()}


def netns_owner(services: dict[str, dict[str, Any]], name: str) -> str:
    """The service whose network namespace `name` runs in (follows network_mode: service:X)."""
    seen = {name}
    cur = name
    while True:
        mode = str(services.get(cur, {}).get("network_mode", ""))
        if not mode.startswith("service:"):
            return cur
        cur = mode.split(":", 1)[1]
        if cur in seen or cur not in services:
            return cur
        seen.add(cur)


def depends_on(svc: dict[str, Any]) -> list[str]:
    dep = svc.get("depends_on") or {}
    return list(dep) if isinstance(dep, (dict, list)) else []
