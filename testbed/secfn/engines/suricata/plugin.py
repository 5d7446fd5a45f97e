"""Suricata as the UPF's IDS/IPS engine (Debian package): configuration and counters (engine.py)."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from testbed.contract import EnginePlugin
from testbed.secfn import Secfn
from testbed.secfn.engines import Counters, Launch
from testbed.secfn.engines.suricata import engine


class Suricata(EnginePlugin):
    name: ClassVar[str] = "suricata"
    summary: ClassVar[str] = "Suricata 7 (Debian), passive AF_PACKET or inline NFQUEUE"
    program: ClassVar[str] = engine.PROGRAM

    def check(self, sf: Secfn) -> str | None:
        return engine.check(sf)

    def render(self, sf: Secfn, cfg_dir: Path, *, config_at: Path, log_at: Path, iface: str,
               home_net: str, program: str) -> Launch:
        return engine.render(sf, cfg_dir, config_at=config_at, log_at=log_at, iface=iface, home_net=home_net,
                             program=program)

    def counters(self, log_dir: Path) -> Counters:
        return engine.counters(log_dir)
