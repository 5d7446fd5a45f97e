"""RAN=ueransim (the default): UERANSIM's gNB, UE 1, UE 2 and the scaling UEs.

Configs: testbed/ran/ueransim/config.py. Services: the gNB behind its namespace holder gnb-net (the N2
and N3 endpoint overlays take over), the UEs on the simulated radio network `ran`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.contract import RanContext as RenderContext
from testbed.ran import compose as rc
from testbed.render import layout
from testbed.ran.ueransim import config as cfg
from testbed.files import comment, dump_yaml
from testbed.files import write_atomic as write_text
from testbed.render.merge import deep_merge

IMAGE = "${UERANSIM_IMAGE:?set by scripts/lib/compose.sh}"


def _yaml(data: dict[str, Any], header: str) -> str:
    return dump_yaml(data, comment(header))


def nodes(variant: str, values: dict[str, Any]) -> list[str]:
    return ["gnb", *cfg.UES, cfg.SCALE_UE]


def env_nodes(variant: str) -> list[str]:
    return ["gnb"]


def render(variant: str, ctx: RenderContext) -> list[Path]:
    out = ctx.out_dir / layout.UERANSIM_DIR
    gnb = deep_merge(cfg.gnb_config(ctx.values), ctx.override("gnb"))
    written = [write_text(out / "gnb.yaml", _yaml(gnb, ctx.header))]
    for ue, conf in cfg.ue_configs(ctx.subscribers, ctx.values).items():
        written.append(write_text(out / f"{ue}.yaml", _yaml(conf, ctx.header), 0o600))
    return written


def _ue(command: list[str], ue: str, **extra: Any) -> dict[str, Any]:
    svc: dict[str, Any] = {
        **rc.least("ue", image=IMAGE), "stop_grace_period": "5s", "restart": "no",
        # run-sbi sets UE_HEALTH_START_INTERVAL far beyond the attach so that no probe (a docker
        # exec every second) loads the host inside the measured window; it waits on the UE's log
        "healthcheck": rc.health(["CMD-SHELL", "ip -4 -o addr show dev uesimtun0 | grep -q ' inet '"],
                                 start_interval="${UE_HEALTH_START_INTERVAL:-1s}"),
        "command": command,
        "networks": {"ran": {"ipv4_address": "${" + f"{ue.upper().replace('-', '_')}_RAN_IP" + "}"}},
        "volumes": [f"${{RENDER_DIR}}/ueransim/{ue}.yaml:/etc/ueransim/ue.yaml:ro"],
        "depends_on": rc.healthy("gnb"),
    }
    svc.update(extra)
    return svc


def compose(variant: str, values: dict[str, Any]) -> dict[str, Any]:
    ue_cmd = ["nr-ue", "-c", "/etc/ueransim/ue.yaml"]
    services = {
        **rc.namespace("gnb", values),
        # The gNB starts once the whole core is healthy, so UE 1's attach never waits for an NF.
        "gnb": {
            **rc.least("gnb", image=IMAGE),
            "command": ["nr-gnb", "-c", "/etc/ueransim/gnb.yaml"],
            "network_mode": rc.in_namespace("gnb"),
            "volumes": ["${RENDER_DIR}/ueransim/gnb.yaml:/etc/ueransim/gnb.yaml:ro"],
            "env_file": ["${RENDER_DIR}/env/gnb.env"],
            "stop_grace_period": "5s", "restart": "no",
            "depends_on": rc.healthy("gnb-net", *rc.CORE_READY),
            "healthcheck": rc.health(["CMD-SHELL", "n=$$(nr-cli --dump | head -n 1) && [ -n \"$$n\" ] && "
                                      "nr-cli \"$$n\" -e status | grep -q 'is-ngap-up: true'"]),
        },
        # UE 1: the cold UE; `make up` returns once it has its PDU session (uesimtun0).
        "ue1": _ue(ue_cmd, "ue1"),
        # UE 2: the warm UE; started on demand (`--profile ue2 up -d ue2`, the SBI driver does it).
        "ue2": _ue(ue_cmd, "ue2", profiles=["ue2"]),
        # Scaling runs: UES UEs in one nr-ue process, IMSIs counting up from subscribers.scale.
        "ue-scale": _ue(ue_cmd + ["-n", "${UES:-1}"], "ue-scale", profiles=["scale"],
                        environment={"UES": "${UES:-1}"},
                        healthcheck=rc.health(["CMD-SHELL", "[ \"$$(ip -4 -o addr show | grep -cE ' uesimtun[0-9]+ +inet ')\" "
                                               "-ge \"$$UES\" ]"])),
    }
    return rc.document(services)


def compose_env(variant: str, values: dict[str, Any]) -> dict[str, str]:
    return {"RAN": variant, "RAN_READY": "gnb", "RAN_UE_TUN": f"{cfg.TUN_PREFIX}0",
            "RAN_UE_SESSION_LOG": f"TUN interface[{cfg.TUN_PREFIX}", "RAN_SCALE": "1"}


def plan(variant: str, values: dict[str, Any]) -> list[str]:
    return ["ran       UERANSIM: gnb (holder gnb-net), ue1 (started by `make up`), ue2 and ue-scale on demand"]


def images(variant: str) -> list[str]:
    return ["UERANSIM_IMAGE"]
