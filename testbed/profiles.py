"""The profile catalogue (profiles.yaml) expanded into concrete profiles.

A profile fixes one security configuration: plane(s), protocol and parameters. Ids are
stable because they appear in result paths.
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT

CATALOGUE = ROOT / "profiles.yaml"
# f1c, f1u, e1: the split RAN's interfaces (RAN=split, docs/ran.md); the baseline runs on every plane
PLANES = ("n3", "sbi", "f1c", "f1u", "e1")
PROTOCOLS = ("none", "ipsec", "wireguard", "tls")


class ProfileError(ValueError):
    """An unknown profile, or a profile used on a plane it does not support."""


@dataclasses.dataclass(frozen=True)
class Profile:
    id: str
    protocol: str                      # none | ipsec | wireguard | tls
    planes: tuple[str, ...]
    label: str
    params: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "protocol": self.protocol, "planes": list(self.planes),
                "label": self.label, "params": dict(self.params)}


def _ipsec_profiles(cat: dict[str, Any]) -> list[Profile]:
    out: list[Profile] = []
    ike = cat["ike_proposal"]
    for esp_id, esp in cat["esp"].items():
        for auth_id, auth in cat["auth"].items():
            for mode_id, mode in cat["modes"].items():
                planes = [p for p in mode["planes"]
                          if p != "n3" or auth_id in cat.get("n3_auth", ["cert"])]
                if not planes:
                    continue
                pid = f"{esp_id}{auth['suffix']}{mode['suffix']}"
                params = {
                    "ike_proposal": ike,
                    "esp": esp_id,
                    "esp_proposal": esp["keyword"],
                    "esp_label": esp["label"],
                    "esp_encryption": esp["encryption"],
                    "esp_integrity": esp["integrity"],
                    "auth": auth_id,
                    "mode": mode_id,
                    "start_action": "start" if mode_id == "start" else "trap",
                    "patched_wait": bool(mode.get("patched", False)),
                    "xfrm_larval_drop": int(mode.get("larval_drop", 1)),
                }
                label = f"IPsec {esp['label']}, {auth['label']}, {mode_id}"
                out.append(Profile(pid, "ipsec", tuple(planes), label, params))
    return out


def _expand(raw: dict[str, Any]) -> dict[str, Profile]:
    profiles: list[Profile] = [Profile("baseline", "none", PLANES, "no overlay", {})]
    profiles += _ipsec_profiles(raw["ipsec"])
    for pid, wg in raw["wireguard"].items():
        profiles.append(Profile(pid, "wireguard", tuple(wg["planes"]), wg["label"], {}))
    for pid, tls in raw["tls"]["profiles"].items():
        params = dict(tls)
        label = f"TLS {tls['version']} {tls['cipher']} ({tls['cert'].upper()})"
        profiles.append(Profile(pid, "tls", ("sbi",), label, params))
    by_id: dict[str, Profile] = {}
    for p in profiles:
        if p.id in by_id:
            raise ValueError(f"profiles.yaml: duplicate profile id {p.id!r}")
        by_id[p.id] = p
    return by_id


@lru_cache(maxsize=4)
def load(path: Path = CATALOGUE) -> dict[str, Profile]:
    """All profiles by id, in catalogue order."""
    with open(path, encoding="utf-8") as fh:
        return _expand(yaml.safe_load(fh))


def names(plane: str | None = None) -> list[str]:
    return [p.id for p in load().values() if plane is None or plane in p.planes]


def get(profile_id: str, plane: str | None = None) -> Profile:
    """The profile, or ProfileError naming the valid choices for that plane."""
    if plane is not None and plane not in PLANES:
        raise ProfileError(f"unknown plane {plane!r}; valid planes: {', '.join(PLANES)}")
    profiles = load()
    prof = profiles.get(profile_id)
    valid = names(plane)
    where = f" on the {plane} plane" if plane else ""
    if prof is None:
        raise ProfileError(
            f"unknown PROFILE {profile_id!r}. Valid profiles{where} ({len(valid)}): "
            + " ".join(valid) + "\nRun `make profiles` for details.")
    if plane is not None and plane not in prof.planes:
        raise ProfileError(
            f"PROFILE {profile_id!r} ({prof.protocol}) cannot run on the {plane} plane "
            f"(it supports: {', '.join(prof.planes)}). Valid profiles{where} ({len(valid)}): "
            + " ".join(valid))
    return prof


def format_table(plane: str | None = None) -> str:
    rows = [p for p in load().values() if plane is None or plane in p.planes]
    width = max(len(p.id) for p in rows)
    lines = [f"{'PROFILE'.ljust(width)}  {'PLANES':8}  {'PROTOCOL':9}  PARAMETERS"]
    for p in rows:
        lines.append(f"{p.id.ljust(width)}  {','.join(p.planes):8}  {p.protocol:9}  {p.label}")
    counts: dict[str, int] = {}
    for p in rows:
        counts[p.protocol] = counts.get(p.protocol, 0) + 1
    lines.append("")
    lines.append(f"{len(rows)} profiles: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return "\n".join(lines)


def format_json(plane: str | None = None) -> str:
    return json.dumps([p.to_dict() for p in load().values()
                       if plane is None or plane in p.planes], indent=2)
