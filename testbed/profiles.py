"""The profile catalogue (profiles.yaml) expanded into concrete profiles.

A profile fixes one security configuration: protocol, parameters and the planes it supports.
Ids are stable because they appear in result paths. Which of its planes a run covers is a
PLANE expression (testbed/planes.py): one plane, several (`n2,n4`), or `all` of them;
`planes_for()` resolves it against the profile.
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT
from testbed import planes as planes_mod

CATALOGUE = ROOT / "profiles.yaml"
PLANES = planes_mod.names()          # every plane of nf-configs/channels.yaml, catalogue order


class ProfileError(ValueError):
    """An unknown profile, or a profile used on a plane it does not support."""


@dataclasses.dataclass(frozen=True)
class Profile:
    id: str
    protocol: str                      # "none" or an overlay plug-in's name (testbed/registry.py)
    planes: tuple[str, ...]
    label: str
    params: dict[str, Any]
    refused: str | None = None         # why this profile cannot run here (listed, never run)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "protocol": self.protocol, "planes": list(self.planes),
                "label": self.label, "params": dict(self.params), "refused": self.refused}


def _expand(raw: dict[str, Any]) -> dict[str, Profile]:
    """The baseline, then each overlay plug-in's profiles from its own section of the catalogue
    (testbed/registry.py order); ids must be unique."""
    from testbed import registry
    profiles: list[Profile] = []
    for plugin in (registry.baseline(), *registry.overlays()):
        profiles += plugin.expand(raw.get(plugin.name) or {}, PLANES)
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


def _plane_words(plane: str | None) -> tuple[str, ...] | None:
    """The planes a PLANE expression names (None: no constraint; `all`: none in particular)."""
    if plane is None or plane.strip() in ("", planes_mod.ALL):
        return None
    try:
        return planes_mod.split(plane)
    except planes_mod.PlaneError as exc:
        raise ProfileError(str(exc)) from None


def names(plane: str | None = None) -> list[str]:
    """Ids of the profiles that can run on every plane of the PLANE expression (all ids without
    one); profiles listed as refused are left out."""
    return [p.id for p in _matching(plane) if not p.refused]


def _matching(plane: str | None) -> list[Profile]:
    """Every catalogue profile (refused ones too) supporting every plane of the expression."""
    want = _plane_words(plane)
    return [p for p in load().values() if want is None or set(want) <= set(p.planes)]


def get(profile_id: str, plane: str | None = None) -> Profile:
    """The profile, or ProfileError naming the valid choices for those planes."""
    want = _plane_words(plane)
    profiles = load()
    prof = profiles.get(profile_id)
    valid = names(plane)
    where = (f" on the {planes_mod.expr(want)} plane{'s' if len(want) > 1 else ''}" if want else "")
    if prof is None:
        raise ProfileError(
            f"unknown PROFILE {profile_id!r}. Valid profiles{where} ({len(valid)}): "
            + " ".join(valid) + " (`make profiles` for details)")
    if prof.refused:
        raise ProfileError(f"PROFILE {profile_id!r} ({prof.protocol}) is refused on this testbed: {prof.refused}")
    missing = [p for p in want or () if p not in prof.planes]
    if missing:
        raise ProfileError(
            f"PROFILE {profile_id!r} ({prof.protocol}) cannot run on the {', '.join(missing)} plane"
            f"{'s' if len(missing) > 1 else ''} (it supports: {', '.join(prof.planes)}). "
            f"Valid profiles{where} ({len(valid)}): " + " ".join(valid))
    return prof


def planes_for(profile: Profile, plane: str | None) -> tuple[str, ...]:
    """The planes a run of `profile` covers: the PLANE expression resolved (`all` = every plane
    the profile supports; nothing = its first plane); ProfileError if one is not supported."""
    if plane is None or plane.strip() == "":
        return profile.planes[:1]
    if plane.strip() == planes_mod.ALL:
        return planes_mod.split(profile.planes)
    get(profile.id, plane)
    return planes_mod.split(plane)


def format_table(plane: str | None = None) -> str:
    rows = _matching(plane)
    width = max(len(p.id) for p in rows)
    pw = max(len(",".join(p.planes)) for p in rows)
    lines = [f"{'PROFILE'.ljust(width)}  {'PLANES'.ljust(pw)}  {'PROTOCOL':9}  PARAMETERS"]
    for p in rows:
        label = f"REFUSED ({p.refused})" if p.refused else p.label
        lines.append(f"{p.id.ljust(width)}  {','.join(p.planes).ljust(pw)}  {p.protocol:9}  {label}")
    counts: dict[str, int] = {}
    for p in rows:
        if not p.refused:
            counts[p.protocol] = counts.get(p.protocol, 0) + 1
    lines.append("")
    refused = sum(1 for p in rows if p.refused)
    lines.append(f"{len(rows) - refused} profiles: " + ", ".join(f"{n} {k}" for k, n in counts.items())
                 + (f" ({refused} more listed as refused)" if refused else ""))
    return "\n".join(lines)


def format_json(plane: str | None = None) -> str:
    return json.dumps([load()[i].to_dict() for i in names(plane)], indent=2)
