"""scripts/lib/: focused files (none over 400 lines, STYLE.md) and no protocol knowledge: the bash
asks the overlay plug-ins (python -m testbed overlay ...) instead of naming a protocol."""
from __future__ import annotations

import re
import subprocess

from testbed import registry
from tests.conftest import ROOT

LIB = ROOT / "scripts" / "lib"


def test_no_library_file_over_400_lines() -> None:
    sizes = {f.name: len(f.read_text().splitlines()) for f in LIB.glob("*.sh")}
    assert len(sizes) >= 8, sizes
    assert {n: s for n, s in sizes.items() if s > 400} == {}


def test_no_protocol_name_in_the_bash_libraries() -> None:
    names = [n for kind, n, _ in registry.ENTRIES if kind == "overlay" and n != "none"]
    assert "ipsec" in names
    found = []
    for f in sorted(LIB.glob("*.sh")):
        for i, line in enumerate(f.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]          # comments may cite a plug-in's folder
            if any(re.search(rf"\b{n}\b", code, re.IGNORECASE) for n in names):
                found.append(f"{f.name}:{i}: {line.strip()}")
    assert found == []


def test_common_sh_still_gives_every_function() -> None:
    # the drivers and tests source common.sh alone: its parts come with it
    res = subprocess.run(["bash", "-c", f'source "{LIB}/common.sh"; declare -F | wc -l; '
                          "type run_begin capture_start ping_series docker_watch_start stack_up attach_ue "
                          "parse_params log >/dev/null"], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout.split()[0]) >= 85
