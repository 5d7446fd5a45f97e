"""Which published configuration each profile is: like for like, profile by profile.

For every profile and plane of the catalogue (``profiles.yaml``): the papers' values that
measure exactly that configuration (the ``match`` of each entry of ``analysis/reference.py``:
suite, authentication, mode, version, certificate, protocol), or "no counterpart" with the
reason, and the other profiles with the same effective settings (the 2025 and 2024 TLS names
of one suite), so equivalent profiles are named, never silently counted twice.

Derived from the two data sources only: a new profile or a new published value needs no edit
here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import pandas as pd

from analysis import protocols
from analysis.reference import PAPERS, RAN_REFERENCES, REFERENCES, Reference, paper_modes

# which plane a published value was measured on, by the summary table it is compared with; the RAN
# interfaces' values (table "ran") name their plane themselves (match "interface": f1c, f1u, e1)
TABLE_PLANE = {"rtt": "n3", "throughput": "n3", "attach": "sbi", "cpu": "sbi", "cpu_slopes": "sbi"}
RAN_PLANES = ("f1c", "f1u", "e1")
# measurement dimensions of a reference's match (not properties of a profile); the RAN variant is
# how the value was taken. `relay: net` (a DTLS value printed net of the relay's own cost) is
# measured by the DTLS profiles, not by the relay-only profile (`relay: plain`)
MEASUREMENT_KEYS = {"experiment", "role", "size", "transport", "interface", "ran"}
# profile parameters that are names or labels, not settings (equal settings under two names)
LABEL_PARAMS = {"paper", "esp_label", "label"}
COLUMNS = ["profile", "plane", "configuration", "counterpart", "compared", "references", "same_settings_as"]


@dataclass(frozen=True)
class Counterpart:
    profile: str
    plane: str
    configuration: str                 # the profile's settings in words (suite, authentication, mode)
    references: tuple[str, ...]        # keys of analysis.reference entries measuring this configuration
    compared: tuple[str, ...]          # what those entries compare: cold/warm, payload sizes, transports
    same_settings_as: tuple[str, ...]  # other profiles with identical settings
    note: str                          # the papers and sections, or why there is no counterpart

    def row(self) -> dict[str, str]:
        return {"profile": self.profile, "plane": self.plane, "configuration": self.configuration,
                "counterpart": self.note, "compared": ", ".join(self.compared),
                "references": ", ".join(self.references),
                "same_settings_as": ", ".join(self.same_settings_as)}


def attributes(profile: Any) -> dict[str, str]:
    """The profile as the summary tables describe it (columns a reference can match on)."""
    attrs = {"profile": profile.id, "protocol": profile.protocol}
    for key, value in profile.params.items():
        attrs[key] = "" if value is None else str(value)
    return attrs


def _wanted(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (tuple, list)) else [str(value)]


def measures(ref: Reference, attrs: dict[str, str], plane: str) -> bool:
    """True when ``ref`` measured this profile's configuration on this plane."""
    if reference_plane(ref) != plane:
        return False
    for key, value in ref.match.items():
        if key in MEASUREMENT_KEYS:
            continue
        if key == "relay":
            if attrs.get("relay", "") == "plain":
                return False
        elif key == "cipher_contains":
            if str(value).upper() not in attrs.get("cipher", "").upper():
                return False
        elif attrs.get(key, "") not in _wanted(value):
            return False
    return True


def reference_plane(ref: Reference) -> str | None:
    """The plane a published value was measured on."""
    if ref.table == "ran":
        return str(ref.match.get("interface", "")) or None
    return TABLE_PLANE.get(ref.table)


def settings(profile: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What a profile really configures: protocol and parameters without names and labels."""
    return profile.protocol, tuple(sorted((k, str(v)) for k, v in profile.params.items()
                                          if k not in LABEL_PARAMS))


def _compared(refs: list[Reference]) -> tuple[str, ...]:
    """The measurement conditions the matching published values were taken under."""
    seen: list[str] = []
    for r in refs:
        for key in ("role", "size", "transport"):
            if key in r.match:
                for v in _wanted(r.match[key]):
                    word = f"{v} B" if key == "size" else v
                    if word not in seen:
                        seen.append(word)
    return tuple(seen)


def _note(profile: Any, refs: list[Reference], plane: str) -> str:
    params = profile.params
    if profile.protocol == "none":
        return "the papers' no-security baseline (every overhead is against it)"
    if params.get("relay") == "plain":
        return ("the DTLS relay's own cost (no crypto): reported beside the DTLS runs; the WiSec 2026 "
                "paper printed its DTLS overheads net of it")
    if refs:
        return "; ".join(sorted({f"{r.source}, {r.section}" for r in refs}))
    ran = [p for p in PAPERS.values() if p.modes]
    if ran and params.get("mode") not in (None, *paper_modes()):
        return (f"no counterpart: {protocols.label(profile.protocol)} {params.get('mode')} mode was measured by no "
                f"paper ({'; '.join(f'{p.cite} ran ' + ' and '.join(p.modes) for p in ran)})")
    if plane not in {*TABLE_PLANE.values(), *RAN_PLANES}:
        return f"no counterpart: no paper measured the {plane} plane"
    return "no counterpart: no paper measured this configuration on this plane"


def counterparts(profiles: Iterable[Any], catalogue: Iterable[Any] | None = None) -> list[Counterpart]:
    """One Counterpart per (profile, plane) of ``profiles`` (testbed.profiles.Profile objects);
    equivalent settings are looked up in ``catalogue`` (default: ``profiles`` themselves)."""
    plist = list(profiles)
    same: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
    for p in (plist if catalogue is None else catalogue):
        same.setdefault(settings(p), []).append(p.id)
    out = []
    for p in plist:
        attrs = attributes(p)
        twins = tuple(i for i in same.get(settings(p), []) if i != p.id)
        for plane in p.planes:
            refs = [r for r in REFERENCES + RAN_REFERENCES if measures(r, attrs, plane)]
            out.append(Counterpart(p.id, plane, p.label, tuple(r.key for r in refs), _compared(refs),
                                   twins, _note(p, refs, plane)))
    return out


def counterpart_frame(profile_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """The table for the catalogue's profiles (all, or only ``profile_ids``)."""
    from testbed import profiles as catalogue
    every = catalogue.load()
    chosen = every.values() if profile_ids is None else [every[i] for i in profile_ids if i in every]
    rows = [c.row() for c in counterparts(chosen, every.values())]
    return pd.DataFrame(rows, columns=COLUMNS)
