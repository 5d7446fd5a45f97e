"""Snort 3 with libdaq as the UPF's IDS/IPS engine (built in images/snort): configuration and
counters (engine.py)."""
from __future__ import annotations

from pathlib import Path

from testbed import environment
from testbed.contract import EnginePlugin
from testbed.secfn.engines.snort import engine


class Snort(EnginePlugin):
    program = engine.PROGRAM

    def host_program(self, work_dir: Path) -> tuple[str, str]:
        """Snort from the install tree $SNORT_INSTALL (bin/snort, lib/libdaq.so)."""
        path = environment.get("SNORT_INSTALL")
        if not path or not (Path(path) / "bin" / "snort").is_file():
            raise FileNotFoundError("IDS=snort between namespaces needs SNORT_INSTALL=<install tree with bin/snort> "
                                    "(built from the pinned snort3 + libdaq as images/snort/Dockerfile does; "
                                    "docs/secfn.md)")
        return str(Path(path) / "bin" / "snort"), str(Path(path) / "lib")
