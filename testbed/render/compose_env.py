"""Variables for Compose interpolation (compose.env): addresses, subnets, FQDNs, paths.

compose/*.yaml never spell an address: they read `${AMF_SBI_IP}`, `${NET_SBI_SUBNET}`, ... from
this file, which is rendered from nf-configs/stack.yaml (one home for every address).
"""
from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from testbed import stack


def var_name(*parts: str) -> str:
    """`var_name("ue-scale", "ran", "ip")` -> "UE_SCALE_RAN_IP"."""
    return "_".join(p.upper().replace("-", "_") for p in parts)


def address_vars(values: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for net, spec in values["networks"].items():
        out[var_name("net", net, "subnet")] = str(spec["subnet"])
        out[var_name("net", net, "gateway")] = str(spec["gateway"])
    for node, spec in values["nodes"].items():
        for net, addr in spec.get("networks", {}).items():
            out[var_name(node, net, "ip")] = str(addr)
        out[var_name(node, "fqdn")] = stack.fqdn(node, values)
    return out


def ue_vars(values: dict[str, Any]) -> dict[str, str]:
    subnet = ipaddress.ip_network(values["ue_subnet"]["subnet"])
    return {
        "UE_SUBNET": str(subnet),
        "UE_GATEWAY_CIDR": f"{values['ue_subnet']['gateway']}/{subnet.prefixlen}",
        "OGSTUN": str(values["open5gs"]["ogstun"]),
        "PING_TARGET": str(values["networks"]["n6"]["gateway"]),
        "SCALE_IMSI_FIRST": str(values["subscribers"]["scale"]["imsi_first"]),
        "SCALE_MAX": str(values["subscribers"]["scale"]["count"]),
    }


def compose_env(*, profile: str, plane: str, protocol: str, render_dir: Path, keys_dir: Path,
                repo_dir: Path, commit: str, mongo_uri: str, values: dict[str, Any]) -> dict[str, str]:
    """Every variable compose/*.yaml interpolates (the overlay's compose_env hook adds its own)."""
    env = {
        "PROFILE": profile,
        "PLANE": plane,
        "PROTOCOL": protocol,
        "RUN_ID": "manual",                 # drivers export RUN_ID, which wins over this file
        "TESTBED_COMMIT": commit,
        "RENDER_DIR": str(render_dir),
        "OVERLAY_DIR": str(render_dir / "overlay"),
        "KEYS_DIR": str(keys_dir),
        "REPO_DIR": str(repo_dir),
        "MONGO_URI": mongo_uri,
        "SBI_PORT": str(values["sbi_port"]),
        "UES": "1",
    }
    env.update(address_vars(values))
    env.update(ue_vars(values))
    return env


def format_env(env: dict[str, str]) -> str:
    """KEY=value lines (Compose env-file syntax); values must be single-line."""
    lines = []
    for k, v in env.items():
        if "\n" in v:
            raise ValueError(f"compose env value for {k} spans lines: {v!r}")
        lines.append(f"{k}={v}")
    return "\n".join(lines) + "\n"


def parse_env(text: str) -> dict[str, str]:
    """Read an env file written by format_env (KEY=value, # comments, blank lines)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        out[k.strip()] = v
    return out
