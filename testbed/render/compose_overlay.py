"""The Compose fragments of a render, written by code (no per-NF stanza by hand).

An overlay module's `compose_services(profile, plane, values)` hook returns the service
overrides it needs ({service: {...}}, merged by Compose over compose/base.yaml); render writes
them into `<render dir>/overlay.compose.yaml` and lists that file after base.yaml (and
scp.yaml). A dimension's `compose_services` hook (testbed/dimensions.py) goes the same way into
`<render dir>/<dimension>.compose.yaml`, listed after the overlay's; a service a hook adds of
its own takes its role's fields from nf-configs/privileges.yaml (`privileges.role(name)
.compose_fields()`), as the holders do. For the tunnel overlays every endpoint of the plane(s)
gets the same holder override from `holder_service()`: the overlay entrypoint as the command
of `<node>-net`, least privilege from the role `holder-<protocol>` of nf-configs/privileges.yaml (its
capabilities, `no-new-privileges`, read-only root with tmpfs; /dev/net/tun only where the
datapath may be userspace), the overlay folder and the node's rendered dir read-only.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from testbed import privileges, stack

FRAGMENT = "overlay.compose.yaml"
DIMENSION_FRAGMENT = "{}.compose.yaml"           # per dimension name
_REQUIRED = ":?run through scripts/lib/compose.sh (make up)"


def holder_service(protocol: str, node: str, *, userspace: bool, environment: dict[str, str],
                   sysctls: dict[str, str], waits_for_peers: bool = False) -> dict[str, Any]:
    """The `<node>-net` override that turns the namespace holder into the overlay endpoint:
    `<protocol>/entrypoint.sh` with the node's rendered dir; healthy (base.yaml healthcheck)
    once the entrypoint writes /run/testbed/overlay-ready, so the program container starts
    only with the overlay in force. waits_for_peers: the entrypoint waits for its peers' holders,
    so it gets the stack's bring-up deadline (STACK_UP_TIMEOUT, which scripts/up.sh exports):
    under load the holders start tens of seconds apart, and a fixed wait gave up on late peers."""
    deadline = {"STACK_UP_TIMEOUT": "${STACK_UP_TIMEOUT:-}"} if waits_for_peers else {}
    svc: dict[str, Any] = {
        "command": [f"/opt/testbed/{protocol}/entrypoint.sh", "/etc/testbed/overlay"],
        # the role's label, cap_add, read_only, tmpfs, and the TUN only when kernel-libipsec /
        # wireguard-go may run (cap_drop ALL and no-new-privileges come with base.yaml's holder)
        **privileges.role(f"holder-{protocol}").compose_fields(devices=userspace, over_base=True),
        "environment": {**deadline, **environment},
        "sysctls": dict(sysctls),        # set by the namespace's owner (owners_take_sysctls)
        # the entrypoint is in the tools image (images/tools/Dockerfile copies <plug-in>/*.sh)
        "volumes": [f"${{OVERLAY_DIR{_REQUIRED}}}/{node}:/etc/testbed/overlay:ro"],
    }
    return svc


OVERLAY_SOURCE = "the overlay module's compose_services hook and nf-configs/channels.yaml"


def fragment_text(services: dict[str, dict[str, Any]], title: str, source: str = OVERLAY_SOURCE) -> str:
    header = (f"# Rendered by testbed/render/compose_overlay.py for {title}. Do not edit: it is\n"
              f"# rendered from {source}.\n")
    return header + yaml.safe_dump({"services": services}, sort_keys=False, default_flow_style=False)


def owners_take_sysctls(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The services with each holder's sysctls moved to its namespace's owner (`<node>-net` ->
    `<node>-ns`): a namespace's sysctls are set when it is made, by the container that owns it,
    before the holder starts (the holder joins it: network_mode service:<node>-ns)."""
    out = {k: dict(v) for k, v in services.items()}
    for name, svc in services.items():
        node = name.removesuffix(stack.HOLDER_SUFFIX) if name.endswith(stack.HOLDER_SUFFIX) else None
        sysctls = out[name].pop("sysctls", None) if node is not None else None
        if node is not None and sysctls:
            owner = out.setdefault(stack.netns_service(node), {})
            owner["sysctls"] = {**owner.get("sysctls", {}), **sysctls}
    return out


def write(render_dir: Path, services: dict[str, dict[str, Any]], title: str, name: str = FRAGMENT,
          source: str = OVERLAY_SOURCE) -> Path:
    path = Path(render_dir) / name
    path.write_text(fragment_text(owners_take_sysctls(services), title, source), encoding="utf-8")
    return path
