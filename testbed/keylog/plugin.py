"""Key export as a dimension plug-in (KEYS=1; testbed/contract.py DimensionPlugin): the chosen
value gives the program containers the overlay plug-in's key-log environment (`key_environment`)
and the drivers copy the keys out before each teardown (scripts/lib/keylog.sh asks the overlay
plug-in's `key_sources`). Render never names it."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from testbed import registry
from testbed.contract import DimensionChoice, DimensionPlugin, Values
from testbed.profiles import Profile

YES = ("1", "yes", "true")


@dataclass(frozen=True)
class KeylogDimension(DimensionChoice):
    """Key export in use."""

    name: str = "keylog"

    def render(self, profile: Profile, plane: str, values: Values, out_dir: Path) -> dict[str, str]:
        return {"KEYS": "1"}

    def describe(self, env: dict[str, str]) -> str:
        return ("key export: the overlay's session keys (TLS key logs of the SBI NFs, charon's ESP keys) are kept "
                "for the per-operation breakdown (secrets: 0600 in the run dir, never in a report)")

    def nf_environment(self, node: str, profile: Profile, values: Values) -> dict[str, str]:
        return registry.overlay(profile.protocol).key_environment(node, values)


class Keylog(DimensionPlugin):
    def select(self, options: Mapping[str, str], profile: Profile, plane: str, ran: str) -> KeylogDimension | None:
        return KeylogDimension() if options.get("KEYS", "").lower() in YES else None
