"""The NFQUEUE pass-through (nfq_accept.c, compiled): accepts every queued packet, the queue's own
cost without inspection (engine.py)."""
from __future__ import annotations

from pathlib import Path

from testbed.contract import EnginePlugin
from testbed.secfn.engines.passthrough import engine


class Passthrough(EnginePlugin):
    program = engine.PROGRAM

    def host_program(self, work_dir: Path) -> tuple[str, str]:
        return str(engine.build(work_dir)), ""
