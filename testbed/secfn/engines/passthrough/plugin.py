"""The NFQUEUE pass-through (nfq_accept.c, compiled): accepts every queued packet, the queue's own
cost without inspection (engine.py)."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from testbed.contract import EnginePlugin
from testbed.secfn import Secfn
from testbed.secfn.engines import Counters, Launch
from testbed.secfn.engines.passthrough import engine


class Passthrough(EnginePlugin):
    name: ClassVar[str] = "passthrough"
    summary: ClassVar[str] = "NFQUEUE accept-all verdict program (the queue's cost only)"
    program: ClassVar[str] = engine.PROGRAM

    def check(self, sf: Secfn) -> str | None:
        return engine.check(sf)

    def render(self, sf: Secfn, cfg_dir: Path, *, config_at: Path, log_at: Path, iface: str,
               home_net: str, program: str) -> Launch:
        return engine.render(sf, cfg_dir, config_at=config_at, log_at=log_at, iface=iface, home_net=home_net,
                             program=program)

    def counters(self, log_dir: Path) -> Counters:
        return engine.counters(log_dir)

    def host_program(self, work_dir: Path) -> tuple[str, str]:
        return str(engine.build(work_dir)), ""
