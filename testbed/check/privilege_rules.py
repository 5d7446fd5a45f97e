"""check-config's least-privilege rules, on the merged compose model (whatever file set a key).

Each service names its role with the label `testbed.role`; the role (nf-configs/privileges.yaml,
testbed/privileges.py) is the most it may hold. Refused: `privileged`, the host's namespaces,
the Docker socket, a missing `cap_drop: [ALL]` (Docker's default set would stay) or
`no-new-privileges`, a capability or device the role does not list, a writable root filesystem
where the role says read-only, a role of another overlay protocol than the render's.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from testbed import privileges
from testbed.check import compose_model as cm

KIND = "privilege"
HOST_NAMESPACES = ("network_mode", "pid", "ipc", "uts", "userns_mode", "cgroup")
DOCKER_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")

Add = Callable[[Path, str, str, str], None]


def _labels(svc: dict[str, Any]) -> dict[str, str]:
    labels = svc.get("labels") or {}
    if isinstance(labels, list):                        # ["k=v", ...] form
        return {str(x).partition("=")[0]: str(x).partition("=")[2] for x in labels}
    return {str(k): str(v) for k, v in labels.items()}


def _no_new_privileges(opts: list[Any]) -> bool:
    return any(str(o).replace("=", ":") in ("no-new-privileges", "no-new-privileges:true") for o in opts)


def check(model: cm.ComposeModel, protocol: str, add: Add,
          table: dict[str, privileges.Role] | None = None) -> None:
    """Append a finding (kind "privilege") for every service that holds more than its role."""
    roles = table if table is not None else privileges.load()
    for name, svc in model.services.items():
        def where(key: str, _name: str = name) -> Path:
            return model.file_of("services", _name, key)

        key = f"services.{name}"
        role_name = _labels(svc).get(privileges.ROLE_LABEL)
        if not role_name:
            add(where("labels"), f"{key}.labels", f"no {privileges.ROLE_LABEL} label: name the service's role "
                f"(nf-configs/privileges.yaml: {', '.join(sorted(roles))})", KIND)
            role = None
        elif role_name not in roles:
            add(where("labels"), f"{key}.labels.{privileges.ROLE_LABEL}",
                f"unknown role {role_name!r}; roles: {', '.join(sorted(roles))}", KIND)
            role = None
        else:
            role = roles[role_name]
            if role.protocols and protocol not in role.protocols:
                add(where("labels"), f"{key}.labels.{privileges.ROLE_LABEL}",
                    f"role {role.name} belongs to the {'/'.join(role.protocols)} overlay, "
                    f"but this render's protocol is {protocol}", KIND)
        if svc.get("privileged"):
            add(where("privileged"), f"{key}.privileged", "privileged container: never; give the role the "
                "capabilities it needs (nf-configs/privileges.yaml)", KIND)
        for ns in HOST_NAMESPACES:
            if str(svc.get(ns) or "") == "host":
                add(where(ns), f"{key}.{ns}", f"{ns}: host shares the host's namespace: never", KIND)
        for i, vol in enumerate(svc.get("volumes") or []):
            if cm.volume_source(vol) in DOCKER_SOCKETS:
                add(where("volumes"), f"{key}.volumes[{i}]", "the Docker socket is root on the host: never", KIND)
        drops = {privileges.normalise_capability(c) for c in svc.get("cap_drop") or []}
        if "ALL" not in drops:
            add(where("cap_drop"), f"{key}.cap_drop", "missing cap_drop: [ALL] (Docker's default capabilities "
                "would stay: CHOWN, DAC_OVERRIDE, NET_RAW, SETUID, ...)", KIND)
        if not _no_new_privileges(svc.get("security_opt") or []):
            add(where("security_opt"), f"{key}.security_opt",
                f"missing security_opt {privileges.NO_NEW_PRIVILEGES}", KIND)
        if role is None:
            continue
        allowed = ", ".join(sorted(role.capabilities)) or "none"
        for cap in svc.get("cap_add") or []:
            c = privileges.normalise_capability(cap)
            if c not in role.capabilities:
                add(where("cap_add"), f"{key}.cap_add", f"capability {c} is not needed by role {role.name} "
                    f"(allowed: {allowed}; nf-configs/privileges.yaml)", KIND)
        for dev in svc.get("devices") or []:
            host = str(dev.get("source", "") if isinstance(dev, dict) else str(dev).split(":", 1)[0])
            if host not in role.devices:
                add(where("devices"), f"{key}.devices", f"device {host} is not needed by role {role.name} "
                    f"(allowed: {', '.join(sorted(role.devices)) or 'none'})", KIND)
        if role.read_only and svc.get("read_only") is not True:
            add(where("read_only"), f"{key}.read_only", f"role {role.name} runs with a read-only root filesystem "
                f"(read_only: true; it writes only to tmpfs {', '.join(role.tmpfs) or '(none)'})", KIND)
