"""Suricata as the UPF's IDS/IPS engine (Debian package): configuration and counters (engine.py)."""
from __future__ import annotations

from typing import Any, ClassVar

from testbed.contract import EnginePlugin
from testbed.secfn import Secfn
from testbed.secfn.engines.suricata import engine


class Suricata(EnginePlugin):
    name: ClassVar[str] = "suricata"
    summary: ClassVar[str] = "Suricata 7 (Debian), passive AF_PACKET or inline NFQUEUE"
    program: ClassVar[str] = engine.PROGRAM
    engine_module: ClassVar[Any] = engine

    def check(self, sf: Secfn) -> str | None:
        return engine.check(sf)
