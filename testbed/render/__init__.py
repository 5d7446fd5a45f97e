"""The render library: what one render dir is made of (testbed/render/layout.py), written by the
steps of testbed/render/steps.py from a selection that testbed/orchestrate.py resolves. Nothing
here names a protocol, a plane, a RAN or a dimension, and nothing imports a plug-in: the
overlay, RAN and dimension plug-ins (testbed/contract.py) are handed in.
"""
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from testbed import ROOT
from testbed.contract import DimensionChoice, OverlayPlugin
from testbed.profiles import Profile
from testbed.render import compose_overlay

log = logging.getLogger(__name__)

COMPOSE_DIR = ROOT / "compose"
BASE_FILE = COMPOSE_DIR / "base.yaml"
SCP_FILE = COMPOSE_DIR / "scp.yaml"


UES = ("ue1", "ue2")             # the cold and the warm UE (nf-configs/stack.yaml subscribers)


class RenderError(RuntimeError):
    """Rendering failed; the message names the profile/plane/file and what to do."""


@dataclasses.dataclass
class Rendered:
    dir: Path
    profile: Profile
    plane: str                                         # canonical PLANE expression ("n2,n4")
    compose_files: list[Path]
    env: dict[str, str]
    nodes: list[str]                                   # Open5GS NFs that run
    files: list[Path] = dataclasses.field(default_factory=list)
    overlay_dirs: dict[str, Path] = dataclasses.field(default_factory=dict)
    ran: str = "ueransim"                              # the RAN variant (testbed/ran/)
    ran_nodes: list[str] = dataclasses.field(default_factory=list)
    dimensions: tuple[DimensionChoice, ...] = ()       # the dimension plug-ins' choices, in compose order


def compose_files(use_scp: bool, fragment: Path | None, compose_dir: Path = COMPOSE_DIR,
                  ran_file: Path | None = None, extra: list[Path] | None = None) -> list[Path]:
    """base.yaml, the RAN variant's rendered services, scp.yaml (with the SCP), then the render's
    overlay fragment if any, then the dimensions' fragments (`extra`)."""
    files = [compose_dir / "base.yaml"]
    if ran_file is not None:
        files.append(ran_file)
    if use_scp:
        files.append(compose_dir / "scp.yaml")
    if fragment is not None:
        files.append(fragment)
    return files + list(extra or [])


def provision_input(subscribers: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """What testbed/provision.py needs: every IMSI with K/OPc, slices and DNN."""
    subs = []
    for ue in UES:
        s = subscribers[ue]
        subs.append({"name": ue, "imsi": str(s["imsi"]), "k": s["k"], "opc": s["opc"]})
    sc = subscribers["scale"]
    first, count = int(sc["imsi_first"]), int(sc.get("count", values["subscribers"]["scale"]["count"]))
    width = len(str(sc["imsi_first"]))
    for i in range(count):
        subs.append({"name": f"scale-{i + 1}", "imsi": str(first + i).zfill(width),
                     "k": sc["k"], "opc": sc["opc"]})
    return {
        "dnn": values["dnn"],
        "s_nssai": [dict(s) for s in values["s_nssai"]],
        "amf_field": str(values["ueransim"]["amf_field"]),
        "subscribers": subs,
    }


def plan(r: Rendered, ran_lines: list[str], overlay: OverlayPlugin) -> str:
    """Human-readable summary of what `make up` will run for this render (`ran_lines`: the RAN
    plug-in's own lines; `overlay`: the profile's overlay plug-in)."""
    lines = [
        f"profile   {r.profile.id}: {r.profile.label}",
        f"plane     {r.plane}   protocol {r.profile.protocol}",
        f"render    {r.dir}",
        "compose   " + " ".join(str(f) for f in r.compose_files),
        f"core      {' '.join(r.nodes)} (each behind its <nf>-net namespace holder)",
        *ran_lines,
        f"database  MONGO_URI={r.env['MONGO_URI']} (provisioned by the provision service)",
        f"ping      the UE pings {r.env['PING_TARGET']} (the Docker host on n6) through the UPF",
    ]
    lines += [f"{d.name:<9} {d.describe(r.env)}" for d in r.dimensions]
    if r.overlay_dirs:
        lines.append("overlay   " + ", ".join(f"{n} -> {p}" for n, p in sorted(r.overlay_dirs.items())))
        frag = next((f for f in r.compose_files if f.name == compose_overlay.FRAGMENT), None)
        if frag is not None and "/dev/net/tun" in frag.read_text(encoding="utf-8"):
            lines.append("datapath  userspace possible on this host (holders get /dev/net/tun; "
                         f"{overlay.datapath_variable}={overlay.datapaths[0]} to forbid it)")
    elif overlay.protects:
        lines.append(f"overlay   {r.profile.protocol}: no per-node overlay dirs rendered")
    return "\n".join(lines) + "\n"
