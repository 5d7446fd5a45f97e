"""The NFQUEUE pass-through (nfq_accept.c, compiled): accepts every queued packet, the queue's own
cost without inspection (engine.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from testbed.contract import EnginePlugin
from testbed.secfn import Secfn
from testbed.secfn.engines.passthrough import engine


class Passthrough(EnginePlugin):
    name: ClassVar[str] = "passthrough"
    summary: ClassVar[str] = "NFQUEUE accept-all verdict program (the queue's cost only)"
    program: ClassVar[str] = engine.PROGRAM
    engine_module: ClassVar[Any] = engine

    def check(self, sf: Secfn) -> str | None:
        return engine.check(sf)

    def host_program(self, work_dir: Path) -> tuple[str, str]:
        return str(engine.build(work_dir)), ""
