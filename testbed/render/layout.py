"""Where the renderer writes, relative to a render dir (.state/render/<planes>/<profile>/).

The compose files, the scripts and the checker all find files through these names.
"""
from __future__ import annotations

from pathlib import Path

from testbed import planes

COMPOSE_ENV = "compose.env"          # Compose --env-file: addresses, paths, labels
COMPOSE_FILES = "compose.files"      # the -f files, one absolute path a line, in order
OPEN5GS_DIR = "open5gs"              # <nf>.yaml, mounted at /etc/open5gs/testbed/<nf>.yaml
UERANSIM_DIR = "ueransim"            # gnb.yaml, ue1.yaml, ue2.yaml, ue-scale.yaml (0600: SIM secrets)
ENV_DIR = "env"                      # <node>.env: extra environment of a program container
PROVISION_FILE = "provision/subscribers.json"   # input of testbed/provision.py (0600)
OVERLAY_DIR = "overlay"              # the overlay module's per-node config dirs
OAI_DIR = "oai"                      # RAN=oai|split: <node>.conf (libconfig), ue1.conf, ue2.conf (0600)
RAN_COMPOSE_FILE = "compose/ran.yaml"   # the RAN variant's Compose services (testbed/ran/)
PLAN_FILE = "plan.txt"               # what `make render` printed


def render_dir(state_dir: Path, plane: str, profile: str, ran: str | None = None) -> Path:
    """`plane` is a PLANE expression; several planes share one dir (`n2+n4`); `+<ran>` for a RAN
    other than UERANSIM (the default)."""
    leaf = profile if ran in (None, "", "ueransim") else f"{profile}+{ran}"
    return Path(state_dir) / "render" / planes.key(plane) / leaf
