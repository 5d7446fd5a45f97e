"""Least privilege per container role: the table nf-configs/privileges.yaml plus each overlay
plug-in's own roles (<plug-in folder>/privileges.yaml: its holder, its NFs), typed.

check-config (testbed/check/privilege_rules.py) compares every compose service with the role
its `testbed.role` label names; the compose fragment renderer writes a role's fields with
`Role.compose_fields()`, so the files and the check cannot drift apart.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT

PRIVILEGES_FILE = ROOT / "nf-configs" / "privileges.yaml"
ROLE_LABEL = "testbed.role"
NO_NEW_PRIVILEGES = "no-new-privileges:true"


class PrivilegeError(ValueError):
    """The table is malformed or a role is unknown; the message lists the valid roles."""


@dataclasses.dataclass(frozen=True)
class Role:
    name: str
    what: str
    capabilities: dict[str, str]          # capability (no CAP_ prefix) -> why it is needed
    devices: dict[str, str]               # host device path -> why
    read_only: bool
    tmpfs: tuple[str, ...]
    protocols: tuple[str, ...] = ()       # overlay protocols the role belongs to; () = any
    writable: str | None = None           # why the root filesystem stays writable

    def compose_fields(self, devices: bool = True, over_base: bool = False) -> dict[str, Any]:
        """The compose keys a service of this role carries (cap_drop ALL first, then its own).
        devices=False leaves the role's devices out (an overlay holder on a kernel datapath
        needs no TUN). over_base=True: for a fragment merged over a compose/base.yaml service,
        which already drops every capability and sets no-new-privileges (Compose refuses the
        same item twice in the merged list); check-config judges the merged service."""
        fields: dict[str, Any] = {"labels": {ROLE_LABEL: self.name}}
        if not over_base:
            fields.update({"cap_drop": ["ALL"], "security_opt": [NO_NEW_PRIVILEGES]})
        if self.capabilities:
            fields["cap_add"] = sorted(self.capabilities)
        if self.devices and devices:
            fields["devices"] = [f"{d}:{d}" for d in sorted(self.devices)]
        if self.read_only:
            fields["read_only"] = True
        if self.tmpfs:
            fields["tmpfs"] = list(self.tmpfs)
        return fields


def normalise_capability(cap: str) -> str:
    """`cap_net_admin`, `CAP_NET_ADMIN` and `NET_ADMIN` are one capability to Docker."""
    c = str(cap).strip().upper()
    return c[4:] if c.startswith("CAP_") else c


def _role(name: str, spec: dict[str, Any], path: Path) -> Role:
    def mapping(key: str) -> dict[str, str]:
        value = spec.get(key) or {}
        if not isinstance(value, dict):
            raise PrivilegeError(f"{path}: roles.{name}.{key} must map each entry to why it is needed")
        missing = [k for k, why in value.items() if not str(why or "").strip()]
        if missing:
            raise PrivilegeError(f"{path}: roles.{name}.{key}: say why {', '.join(missing)} is needed")
        return {str(k): str(v) for k, v in value.items()}

    if not str(spec.get("what") or "").strip():
        raise PrivilegeError(f"{path}: roles.{name}.what: say which containers take this role")
    read_only = spec.get("read_only")
    if not isinstance(read_only, bool):
        raise PrivilegeError(f"{path}: roles.{name}.read_only must be true or false")
    if not read_only and not str(spec.get("writable") or "").strip():
        raise PrivilegeError(f"{path}: roles.{name}: read_only is false, so `writable` must say why")
    caps = {normalise_capability(k): v for k, v in mapping("capabilities").items()}
    if "ALL" in caps or "SYS_ADMIN" in caps:
        raise PrivilegeError(f"{path}: roles.{name}: ALL and SYS_ADMIN are never granted")
    return Role(name=name, what=str(spec["what"]), capabilities=caps, devices=mapping("devices"),
                read_only=read_only, tmpfs=tuple(str(t) for t in spec.get("tmpfs") or ()),
                protocols=tuple(str(p) for p in spec.get("protocols") or ()),
                writable=str(spec["writable"]) if spec.get("writable") else None)


def _table(path: Path, protocol: str | None = None) -> dict[str, Role]:
    """The roles of one table; a plug-in's roles belong to its protocol."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise PrivilegeError(f"{path}: cannot read the privilege table: {exc}") from None
    roles = data.get("roles")
    if not isinstance(roles, dict) or not roles:
        raise PrivilegeError(f"{path}: no roles")
    out = {str(n): _role(str(n), spec or {}, Path(path)) for n, spec in roles.items()}
    if protocol is not None:
        out = {n: dataclasses.replace(r, protocols=(protocol,)) for n, r in out.items()}
    return out


@lru_cache(maxsize=4)
def load(path: Path = PRIVILEGES_FILE) -> dict[str, Role]:
    """Every role, by name: the table at `path`, and with the default table every overlay
    plug-in's own (<folder>/privileges.yaml); a role named twice is an error."""
    roles = _table(path)
    if Path(path) != PRIVILEGES_FILE:
        return roles
    from testbed import registry
    for ov in registry.overlays():
        own = ov.folder / "privileges.yaml"
        if own.is_file():
            extra = _table(own, ov.name)
            twice = sorted(set(extra) & set(roles))
            if twice:
                raise PrivilegeError(f"{own}: role(s) {', '.join(twice)} already defined")
            roles.update(extra)
    return roles


def role(name: str, path: Path = PRIVILEGES_FILE) -> Role:
    roles = load(path)
    if name not in roles:
        raise PrivilegeError(f"unknown role {name!r}; roles in {path.name}: {', '.join(sorted(roles))}")
    return roles[name]
