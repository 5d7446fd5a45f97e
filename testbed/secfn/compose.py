"""The security function in the Docker stack (`make up ... SECFN=... IDS=...`, docs/secfn.md):
the one place that turns a resolved Secfn into Compose services and the engine directory,
called through the dimension hooks (testbed/secfn/dimension.py; render writes the services into
<render dir>/secfn.compose.yaml with testbed/render/compose_overlay.py).

What it adds to base.yaml (and to whatever the profile's N3 overlay adds):
- `secfn`: the engine, in the UPF's network namespace (network_mode: service:upf-ns), started
  once the UPF is healthy (ogstun exists), running testbed/secfn/entrypoint.sh over the engine
  directory rendered here; only NET_ADMIN (queue, iptables, promiscuous) and NET_RAW (AF_PACKET,
  iptables' raw socket). Image: SNORT_IMAGE for Snort 3, TOOLS_IMAGE for Suricata and the
  pass-through (both in the tools image).
- `dn`: the N6 server (testbed/secfn/server.sh) at nf-configs/stack.yaml's dn_server address;
  NET_BIND_SERVICE for ports 80 and 445, NET_ADMIN only without NAT (its route back to the UEs).
- `ue-ditg`: the D-ITG sender and probes in UE 1's network namespace (network_mode: service:ue1),
  NET_RAW for ping.
- Each service of its own takes its role's fields from nf-configs/privileges.yaml (secfn-engine,
  secfn-server[-routed], secfn-sender): cap_drop ALL, only the role's capabilities,
  no-new-privileges, a read-only root with tmpfs where it writes, its `testbed.role` label.
- `ue1` waits for `secfn` and `dn` to be healthy, so the UE's first packet meets the function.
- `upf`: UPF_NAT=0 for SECFN=none (compose/entrypoints/upf.sh then does not masquerade).
Outputs go to $SECFN_OUT (the drivers point it at the run directory; compose.env defaults it to
<render dir>/secfn/out): engine/, server/, ditg/ (testbed/secfn/collect.py reads them).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed import privileges
from testbed.ran.compose import health, in_namespace
from testbed.secfn import Secfn, collect, engines, rules

NAME = "secfn"                                    # the dimension: <render dir>/secfn/, secfn.compose.yaml
ENGINE_AT = Path("/etc/testbed/secfn")            # the rendered engine directory, read-only
LOG_AT = Path("/var/log/testbed/secfn")           # $SECFN_OUT/engine
SCRIPTS_AT = "/opt/testbed/secfn"                 # testbed/secfn/*.sh, read-only
DITG_AT = "/var/lib/testbed/ditg"                 # $SECFN_OUT/ditg, same path in ue-ditg and dn
SERVER_AT = "/var/lib/testbed/server"             # $SECFN_OUT/server
IMAGE_VAR = {"snort": "SNORT_IMAGE"}              # other engines are in the tools image
LABELS = {"testbed.profile": "${PROFILE}", "testbed.plane": "${PLANE}", "testbed.run": "${RUN_ID}",
          "testbed.commit": "${TESTBED_COMMIT}"}


def _base(image_var: str, role: str) -> dict[str, Any]:
    fields = privileges.role(role).compose_fields()
    return {"image": f"${{{image_var}:?set by scripts/lib/compose.sh}}", **fields,
            "labels": {**LABELS, **fields["labels"]}, "restart": "no"}


def services(sf: Secfn, values: dict[str, Any]) -> dict[str, Any]:
    scripts = f"${{REPO_DIR}}/testbed/secfn:{SCRIPTS_AT}:ro"
    out: dict[str, Any] = {}
    dn: dict[str, Any] = {
        # ports 80/445; without NAT also its route back to the UEs
        **_base("TOOLS_IMAGE", "secfn-server" if sf.nat else "secfn-server-routed"),
        "command": [f"{SCRIPTS_AT}/server.sh", SERVER_AT, str(rules.DROP_PORT)],
        "networks": {"n6": {"ipv4_address": "${DN_SERVER_IP}", "aliases": ["dn"]}},
        "volumes": [scripts, f"${{SECFN_OUT}}/{collect.SERVER_DIR}:{SERVER_AT}",
                    f"${{SECFN_OUT}}/{collect.DITG_DIR}:{DITG_AT}"],
        "environment": {"SECFN_SERVER_READY": "/run/testbed/server-ready"},
        "stop_grace_period": "10s",
        "healthcheck": health(["CMD", "test", "-f", "/run/testbed/server-ready"]),
    }
    if not sf.nat:
        dn["environment"].update(ROUTE_TO="${UE_SUBNET}", ROUTE_VIA="${UPF_N6_IP}")
    out["dn"] = dn
    ue_deps: dict[str, Any] = {"dn": {"condition": "service_healthy"}}
    if sf.engine:
        out["secfn"] = {
            **_base(IMAGE_VAR.get(sf.engine, "TOOLS_IMAGE"), "secfn-engine"),
            "command": [f"{SCRIPTS_AT}/entrypoint.sh", str(ENGINE_AT)],
            "network_mode": in_namespace("upf"),
            "volumes": [scripts, f"${{RENDER_DIR}}/{NAME}/engine:{ENGINE_AT}:ro",
                        f"${{SECFN_OUT}}/{collect.ENGINE_DIR}:{LOG_AT}"],
            "environment": {"SECFN_READY": f"/run/testbed/{engines.READY_NAME}"},
            # SIGTERM: the entrypoint saves the queue counters, the engine writes its own
            "stop_grace_period": "45s",
            "depends_on": {"upf": {"condition": "service_healthy"}},
            "healthcheck": health(["CMD", "test", "-f", f"/run/testbed/{engines.READY_NAME}"]),
        }
        ue_deps["secfn"] = {"condition": "service_healthy"}
    out["ue-ditg"] = {
        **_base("TOOLS_IMAGE", "secfn-sender"),
        "command": ["sleep", "infinity"],
        "init": True,                    # sleep as PID 1 would ignore SIGTERM
        "network_mode": "service:ue1",
        "volumes": [scripts, f"${{SECFN_OUT}}/{collect.DITG_DIR}:{DITG_AT}"],
        "stop_grace_period": "5s",
        "depends_on": {"ue1": {"condition": "service_healthy"}},
    }
    out["ue1"] = {"depends_on": ue_deps}
    if not sf.nat:
        out["upf"] = {"environment": {"UPF_NAT": "0"}}
    return out


def render(sf: Secfn, values: dict[str, Any], out_dir: Path) -> dict[str, str]:
    """Write out_dir/engine/ (the engine directory for the container) and out_dir/out/ (default
    outputs); returns the compose variables the services use."""
    out_dir = Path(out_dir)
    if sf.engine:
        engines.render_dir(sf, out_dir / "engine", log_at=LOG_AT, config_at=ENGINE_AT,
                           iface=str(values["open5gs"]["ogstun"]), ue_subnet=str(values["ue_subnet"]["subnet"]),
                           home_net=str(values["networks"]["n6"]["subnet"]), iptables="iptables")
    for sub in (collect.ENGINE_DIR, collect.SERVER_DIR, collect.DITG_DIR):
        (out_dir / "out" / sub).mkdir(parents=True, exist_ok=True)
    return {"SECFN": sf.function, "IDS": sf.engine or "none", "SECFN_OUT": str((out_dir / "out").resolve()),
            "DN_SERVER_IP": str(values["dn_server"]["address"])}
