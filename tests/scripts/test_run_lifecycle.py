"""scripts/lib/common.sh's run lifecycle on failure, without Docker: the exit trap judges the
capture of a run that ended early (issue 22.14), saves the stack's evidence before the teardown
(22.1), and names the first failure in time (22.12). A stand-in `docker` on PATH records its
calls and answers as the engine would; captures and the validity check are real (tshark)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from testbed import manifest
from tests.conftest import ROOT, require_tools

COMMON = ROOT / "scripts" / "lib" / "common.sh"
SAMPLE = "open5gs-docs-pcaps/5g-roaming-lbo.pcapng"


def _bash(script: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f'set -euo pipefail; source "{COMMON}"\n{script}'], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, **(env or {})})


def test_a_run_that_ends_early_still_judges_its_capture(tmp_path: Path, shared_data: Path) -> None:
    """`validity: not checked: the run ended incomplete` although the capture was there: the exit
    trap now judges it, so the run itself says whether anything leaked after the failure."""
    require_tools("tshark")
    run = manifest.create(tmp_path, "sbi", "baseline", {"ITERATIONS": "1"}, datapath_facts={})
    shutil.copy(shared_data / SAMPLE, run / "it01-sbi.pcapng")
    manifest.add_file(run, "it01-sbi.pcapng", "pcap", {"iface": "sbi", "purpose": "validation", "iteration": 1})
    res = _bash(f'RUN_DIR="{run}"; install_traps; MEASURED=1\n'
                'die "a later step failed" 1')
    assert res.returncode == 1, res.stderr[-1500:]
    m = manifest.load(run)
    assert m["state"] == "incomplete" and m["reason"] == "a later step failed"
    assert "not checked" not in m["validity"]["details"] and "it01-sbi.pcapng" in m["validity"]["details"], m["validity"]
    assert m["validity"]["plaintext_packets"] > 100 and m["valid"] is True
    assert manifest.validate(m) == []


def test_a_run_without_a_capture_says_so(tmp_path: Path) -> None:
    run = manifest.create(tmp_path, "n3", "aes256gcm", {}, datapath_facts={})
    res = _bash(f'RUN_DIR="{run}"; install_traps\ndie "the stack did not come up" 1')
    assert res.returncode == 1
    m = manifest.load(run)
    assert m["state"] == "failed" and m["valid"] is False and "not checked" in m["validity"]["details"]
