"""NAS security algorithms as a dimension plug-in (NAS=nea2-nia2; docs/nas.md): the choice
reduces the AMF's algorithm orders to exactly that pair before anything is rendered, and every
run's N2 captures prove it (run_check.py)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed import nas
from testbed.contract import DimensionChoice, DimensionPlugin, RunCheck, Values
from testbed.dimensions import SelectionError
from testbed.nas import run_check
from testbed.profiles import Profile


@dataclass(frozen=True)
class NasDimension(DimensionChoice):
    choice: nas.NasChoice
    name: str = "nas"

    def apply(self, values: Values) -> Values:
        return nas.apply(values, self.choice.id)

    def describe(self, env: dict[str, str]) -> str:
        return f"AMF offers exactly {self.choice.ciphering} / {self.choice.integrity} (NAS={self.choice.id})"


class Nas(DimensionPlugin):
    def select(self, options: Mapping[str, str], profile: Profile, plane: str, ran: str) -> NasDimension | None:
        choice = options.get("NAS", "")
        if not choice:
            return None
        try:
            return NasDimension(nas.get(choice))
        except nas.NasError as exc:
            raise SelectionError(str(exc)) from None

    def check_run(self, run_dir: Path, manifest: Mapping[str, Any], values: Values) -> list[RunCheck]:
        return run_check.check_run(run_dir, manifest)
