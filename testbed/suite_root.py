"""The Debian roots of other suites the namespace lab runs newer programs from (scripts/suite-root.sh,
`make pq-roots`: strongSwan 6 from sid, OpenSSL 3.5 from trixie): where a spec's root is, if it is made."""
from __future__ import annotations

import subprocess
from pathlib import Path

from testbed import ROOT

SCRIPT = ROOT / "scripts" / "suite-root.sh"


def built(spec: Path) -> Path | None:
    """The directory of `spec`'s root when it is made (complete: its package record is there),
    else None. The script names it (its cache: G5TB_ROOTS / G5TB_CACHE, default /var/cache/g5tb)."""
    try:
        res = subprocess.run(["bash", str(SCRIPT), "--path", str(spec)], capture_output=True, text=True,
                             check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = Path(res.stdout.strip())
    return path if res.returncode == 0 and (path / ".g5tb-root").is_file() else None
