"""The baseline (protocol "none"): no overlay on any plane. Not a plug-in but the core's own
answer to the overlay contract, so that the core treats every profile alike: its one profile
runs on every plane, and its capture rule is that no overlay of any plug-in is on the wire."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from testbed.contract import OverlayPlugin
from testbed.profiles import Profile


class Baseline(OverlayPlugin):
    name: ClassVar[str] = "none"
    summary: ClassVar[str] = "no overlay (the reference every overhead is measured against)"
    label: ClassVar[str] = "baseline"
    colour: ClassVar[str] = "#7f7f7f"
    protects: ClassVar[bool] = False

    def expand(self, section: Mapping[str, Any], all_planes: tuple[str, ...]) -> list[Profile]:
        return [Profile("baseline", self.name, all_planes, "no overlay", {})]

    def problems(self) -> list[str]:
        return []                   # lives in the core (testbed/), no folder of its own

    @property
    def folder(self) -> Path:
        return Path(__file__).resolve().parent
