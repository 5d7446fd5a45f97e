"""The Compose overlay fragment of a render, written by code (no per-NF stanza by hand).

An overlay module's `compose_services(profile, plane, values)` hook returns the service
overrides it needs ({service: {...}}, merged by Compose over compose/base.yaml); render writes
them into `<render dir>/overlay.compose.yaml` and lists that file after base.yaml (and
scp.yaml). For the tunnel overlays every endpoint of the plane(s) gets the same holder
override from `holder_service()`: the overlay entrypoint as the command of `<node>-net`,
least privilege from the role `holder-<protocol>` of nf-configs/privileges.yaml (its
capabilities, `no-new-privileges`, read-only root with tmpfs; /dev/net/tun only where the
datapath may be userspace), the overlay folder and the node's rendered dir read-only.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import datapath, privileges

FRAGMENT = "overlay.compose.yaml"
# per protocol: the environment variable that forces a datapath, its kernel value, the host probe
_DATAPATH = {
    "ipsec": ("IPSEC_DATAPATH", "kernel", datapath.probe_xfrm_esp),
    "wireguard": ("WIREGUARD_DATAPATH", "kernel", datapath.probe_wireguard_kernel),
}
_REQUIRED = ":?run through scripts/lib/compose.sh (make up)"


@lru_cache(maxsize=8)
def _kernel_offers(protocol: str) -> bool:
    return _DATAPATH[protocol][2]()[0]


def userspace_possible(protocol: str) -> bool:
    """Whether the overlay's entrypoint may choose its userspace datapath here (it then needs
    /dev/net/tun): the datapath variable (IPSEC_DATAPATH / WIREGUARD_DATAPATH) when set, else
    the same kernel probe the entrypoint makes (the containers share this host's kernel)."""
    var, kernel, _probe = _DATAPATH[protocol]
    choice = os.environ.get(var, "auto") or "auto"
    if choice != "auto":
        return choice != kernel
    return not _kernel_offers(protocol)


def holder_service(protocol: str, node: str, *, userspace: bool, environment: dict[str, str],
                   sysctls: dict[str, str]) -> dict[str, Any]:
    """The `<node>-net` override that turns the namespace holder into the overlay endpoint:
    `<protocol>/entrypoint.sh` with the node's rendered dir; healthy (base.yaml healthcheck)
    once the entrypoint writes /run/testbed/overlay-ready, so the program container starts
    only with the overlay in force."""
    svc: dict[str, Any] = {
        "command": [f"/opt/testbed/{protocol}/entrypoint.sh", "/etc/testbed/overlay"],
        # the role's label, cap_add, read_only, tmpfs, and the TUN only when kernel-libipsec /
        # wireguard-go may run (cap_drop ALL and no-new-privileges come with base.yaml's holder)
        **privileges.role(f"holder-{protocol}").compose_fields(devices=userspace, over_base=True),
        "environment": dict(environment),
        "sysctls": dict(sysctls),
        "volumes": [f"${{REPO_DIR{_REQUIRED}}}/{protocol}:/opt/testbed/{protocol}:ro",
                    f"${{OVERLAY_DIR{_REQUIRED}}}/{node}:/etc/testbed/overlay:ro"],
    }
    return svc


def fragment_text(services: dict[str, dict[str, Any]], title: str) -> str:
    header = (f"# Rendered by testbed/render/compose_overlay.py for {title}. Do not edit: the\n"
              "# overlay module's compose_services hook and nf-configs/channels.yaml are the source.\n")
    return header + yaml.safe_dump({"services": services}, sort_keys=False, default_flow_style=False)


def write(render_dir: Path, services: dict[str, dict[str, Any]], title: str) -> Path:
    path = Path(render_dir) / FRAGMENT
    path.write_text(fragment_text(services, title), encoding="utf-8")
    return path
