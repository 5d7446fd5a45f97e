"""RAN=oai (OpenAirInterface's monolithic gNB) and RAN=split (CU-CP, CU-UP, DU), each with nrUEs on
OAI's RF simulator. Experimental until shown working on a full-kernel host (docs/ran.md).

Configs: testbed/ran/oai/config.py (libconfig). Every OAI node sits behind its namespace holder
<node>-net, so the N2/N3 overlays (RAN=oai: on the gnb node as with UERANSIM) and the F1-C, F1-U and
E1 overlays (RAN=split) take over the holders exactly as on the core. The programs run through
compose/entrypoints/oai.sh, which keeps their log on a per-start tmpfs for the healthchecks:

    CU-CP, gNB  "Received NGSetupResponse from AMF"        NG Setup with the AMF done
    CU-UP       "E1 connection established"                its E1 association with the CU-CP is up
    DU          "received F1 Setup Response from CU"       F1 Setup with the CU-CP done
    nrUE        oaitun_ue1 has an IPv4 address             its PDU session is up

(the strings are OAI v2.3.0's: openair3/NGAP/ngap_gNB_handlers.c, openair2/E1AP/e1ap.c,
openair2/LAYER2/NR_MAC_gNB/mac_rrc_dl_handler.c, common/utils/tun_if.c upstream).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from testbed.contract import RanContext as RenderContext
from testbed.ran import compose as rc
from testbed.render import layout
from testbed.ran.oai import libconfig
from testbed.ran.oai import config as cfg
from testbed.ran.ueransim import config as ueransim
from testbed.files import write_atomic as write_text

IMAGE = "${OAI_IMAGE:?set by scripts/lib/compose.sh}"
CONF_DIR = layout.OAI_DIR                 # under the render dir; mounted at /etc/oai/
LOG = "/run/oai/oai.log"
WRAPPER = "/opt/testbed/entrypoints/oai.sh"
ENTRYPOINTS = "./entrypoints:/opt/testbed/entrypoints:ro"
READY_LOG = {
    "gnb": "Received NGSetupResponse from AMF",
    "cucp": "Received NGSetupResponse from AMF",
    "cuup": "E1 connection established",
    "du": "received F1 Setup Response from CU",
}
PROGRAM = {"gnb": "nr-softmodem", "cucp": "nr-softmodem", "du": "nr-softmodem", "cuup": "nr-cuup"}
SPLIT_NETWORKS = ("f1c", "f1u", "e1")


def gnb_nodes(variant: str) -> list[str]:
    """The nodes that run OAI's gNB programs: the monolithic gnb, or CU-CP, CU-UP and DU."""
    return ["gnb"] if variant == "oai" else ["cucp", "cuup", "du"]


RADIO_NODES = ("gnb", "du")           # the nodes with a radio: the RF simulator's server side


def radio_node(variant: str) -> str:
    """The node the nrUEs' RF simulator connects to (TCP on the `ran` network)."""
    return "gnb" if variant == "oai" else "du"


def nodes(variant: str, values: dict[str, Any]) -> list[str]:
    return [*gnb_nodes(variant), *ueransim.UES]


def _conf(data: dict[str, Any], header: str) -> str:
    return libconfig.dumps(data, header)


def env_nodes(variant: str) -> list[str]:
    return gnb_nodes(variant)


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """An overlay's overrides merged into an OAI config: groups merge, and a list of groups merges
    element by element with a list of the same length (OAI's one-element `gNBs`, `MACRLCs`,
    `E1_INTERFACE`, `amf_ip_address`), so `{"MACRLCs": [{"remote_n_address": "127.0.0.1"}]}`
    changes that one key; anything else replaces the value."""
    out = dict(base)
    for k, v in extra.items():
        old = out.get(k)
        if isinstance(v, dict) and isinstance(old, dict):
            out[k] = merge(old, v)
        elif (isinstance(v, list) and isinstance(old, list) and len(v) == len(old)
              and all(isinstance(x, dict) for x in v + old)):
            out[k] = [merge(a, b) for a, b in zip(old, v)]
        else:
            out[k] = copy.deepcopy(v)
    return out


def render(variant: str, ctx: RenderContext) -> list[Path]:
    v, out = ctx.values, ctx.out_dir / CONF_DIR
    builders = {"gnb": lambda: cfg.gnb_config(v, ctx.uu), "cucp": lambda: cfg.cucp_config(v, ctx.uu),
                "cuup": lambda: cfg.cuup_config(v), "du": lambda: cfg.du_config(v)}
    written = [write_text(out / f"{node}.conf", _conf(merge(builders[node](), ctx.override(node)), ctx.header))
               for node in gnb_nodes(variant)]
    for ue in ueransim.UES:
        s = ctx.subscribers[ue]
        written.append(write_text(out / f"{ue}.conf", _conf(cfg.ue_config(s["imsi"], s["k"], s["opc"], v), ctx.header),
                                  0o600))
    return written


def _program(node: str, depends: list[str]) -> dict[str, Any]:
    conf = f"/etc/oai/{node}.conf"
    return {
        **rc.least("oai-ran", image=IMAGE),
        "command": [WRAPPER, PROGRAM[node], "-O", conf, *(cfg.radio_args() if node in RADIO_NODES else [])],
        "network_mode": rc.in_namespace(node),
        "volumes": [ENTRYPOINTS, f"${{RENDER_DIR}}/{CONF_DIR}/{node}.conf:{conf}:ro"],
        "env_file": [f"${{RENDER_DIR}}/env/{node}.env"],
        "stop_grace_period": "5s", "restart": "no",
        "depends_on": rc.healthy(f"{node}-net", *depends),
        "healthcheck": rc.health(["CMD", "grep", "-q", READY_LOG[node], LOG]),
    }


def _ue(ue: str, variant: str, values: dict[str, Any], **extra: Any) -> dict[str, Any]:
    tun = str(values["oai"]["tun"])
    conf = "/etc/oai/ue.conf"
    svc: dict[str, Any] = {
        **rc.least("oai-ue", image=IMAGE),          # NET_ADMIN and the TUN: the UE makes oaitun_ue1
        "command": [WRAPPER, "nr-uesoftmodem", "-O", conf, *cfg.ue_args(radio_node(variant), values)],
        "networks": {"ran": {"ipv4_address": "${" + f"{ue.upper()}_RAN_IP" + "}"}},
        "volumes": [ENTRYPOINTS, f"${{RENDER_DIR}}/{CONF_DIR}/{ue}.conf:{conf}:ro"],
        "stop_grace_period": "5s", "restart": "no",
        "depends_on": rc.healthy(radio_node(variant)),
        # as for UERANSIM: run-sbi moves the probes past the measured attach (UE_HEALTH_START_INTERVAL)
        "healthcheck": rc.health(["CMD-SHELL", f"ip -4 -o addr show dev {tun} | grep -q ' inet '"],
                                 start_interval="${UE_HEALTH_START_INTERVAL:-1s}"),
    }
    svc.update(extra)
    return svc


def compose(variant: str, values: dict[str, Any]) -> dict[str, Any]:
    services: dict[str, Any] = {}
    if variant == "oai":
        services.update(rc.namespace("gnb", values))
        services["gnb"] = _program("gnb", list(rc.CORE_READY))
    else:
        # CU-CP after the core (NG Setup), CU-UP after the CU-CP (E1), the DU after both (F1 Setup
        # with a CU that can already set up bearers)
        order = {"cucp": list(rc.CORE_READY), "cuup": ["cucp"], "du": ["cucp", "cuup"]}
        for node in gnb_nodes(variant):
            services.update(rc.namespace(node, values))
            services[node] = _program(node, order[node])
    services["ue1"] = _ue("ue1", variant, values)
    services["ue2"] = _ue("ue2", variant, values, profiles=["ue2"])
    networks = {n: rc.network(n) for n in SPLIT_NETWORKS} if variant == "split" else None
    return rc.document(services, networks)


def compose_env(variant: str, values: dict[str, Any]) -> dict[str, str]:
    tun = str(values["oai"]["tun"])
    return {"RAN": variant, "RAN_READY": radio_node(variant), "RAN_UE_TUN": tun,
            "RAN_UE_SESSION_LOG": f"Interface {tun} successfully configured", "RAN_SCALE": "0"}


def plan(variant: str, values: dict[str, Any]) -> list[str]:
    nodes_ = ", ".join(f"{n} ({PROGRAM[n]}, holder {n}-net)" for n in gnb_nodes(variant))
    return [f"ran       OpenAirInterface {values.get('oai_version', '')} ({variant}, EXPERIMENTAL: docs/ran.md): "
            f"{nodes_}; ue1 (nr-uesoftmodem, RF simulator to {radio_node(variant)}), ue2 on demand"]


def images(variant: str) -> list[str]:
    return ["OAI_IMAGE"]
