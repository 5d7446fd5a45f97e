"""The Docker drivers for real on a Docker host (`make test-e2e`), with small counts:
run-n3 (IPsec aes256gcm on N3), run-sbi (IPsec aes256gcm-psk on the SBI, cold + warm),
run-cpu (1 and 2 UEs) and run-throughput (baseline). Each must leave a complete, valid run
directory whose manifest matches the schema.

Skips, naming what is missing, where there is no Docker engine, Compose v2, kernel SCTP or
root. Images: E2E_SKIP_BUILD=1 uses
images already built (`make build`); otherwise the stack test (test_stack_e2e.py) builds them.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testbed import manifest
from tests.conftest import ROOT

try:                                   # the stack's e2e module knows what a Docker host needs
    from tests.e2e.test_stack_e2e import _missing
except ImportError:                    # pragma: no cover - only if that module changes
    def _missing() -> str | None:
        return "tests/e2e/test_stack_e2e.py's Docker-host check (_missing)"

pytestmark = pytest.mark.docker
RUN_TIMEOUT = int(os.environ.get("E2E_RUN_TIMEOUT", "1800"))


@pytest.fixture(scope="module")
def docker_host() -> None:
    missing = _missing()
    if missing:
        pytest.skip(f"needs {missing}: the Docker drivers only run on a Docker host (see `make doctor`)")
    if os.geteuid() != 0:
        pytest.skip("needs root (captures on the Docker bridges): run `sudo make test-e2e`")


def _make(target: str, results: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    args = [f"{k}={v}" for k, v in variables.items()]
    return subprocess.run(["make", "--no-print-directory", target, f"RESULTS={results}", "DOCTOR=0", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)


def _one_valid_run(results: Path, experiment: str, profile: str) -> dict:
    runs = manifest.runs(results, "adhoc", experiment, profile)
    assert len(runs) == 1, runs
    m = manifest.load(runs[0])
    assert manifest.validate(m) == []
    assert m["state"] == "complete" and m["valid"] is True, m.get("validity")
    return m


def test_run_n3_ipsec(docker_host: None, tmp_path: Path) -> None:
    res = _make("run-n3", tmp_path, PROFILE="aes256gcm", SETS="1", PINGS="50", SIZES="64 1024", INTERVAL="0.05")
    assert res.returncode == 0, res.stderr[-4000:]
    m = _one_valid_run(tmp_path, "n3", "aes256gcm")
    assert m["validity"]["protected_packets"] > 0 and m["validity"]["plaintext_packets"] == 0
    assert len([f for f in m["files"] if f["kind"] == "ping" and not f["warmup"]]) == 2


def test_run_sbi_ipsec_cold_and_warm(docker_host: None, tmp_path: Path) -> None:
    res = _make("run-sbi", tmp_path, PROFILE="aes256gcm-psk", ITERATIONS="2")
    assert res.returncode == 0, res.stderr[-4000:]
    m = _one_valid_run(tmp_path, "sbi", "aes256gcm-psk")
    roles = sorted((u["iteration"], u["role"]) for u in m["ues"] if u["attached"])
    assert roles == [(1, "cold"), (1, "warm"), (2, "cold"), (2, "warm")]
    timing = [f for f in m["files"] if f["kind"] == "pcap" and f["purpose"] == "timing"]
    assert [f["iteration"] for f in timing] == [1, 2]


def test_run_cpu(docker_host: None, tmp_path: Path) -> None:
    res = _make("run-cpu", tmp_path, PROFILE="baseline", UES="1 2", REPS="1")
    assert res.returncode == 0, res.stderr[-4000:]
    m = _one_valid_run(tmp_path, "cpu", "baseline")
    cpu = [f for f in m["files"] if f["kind"] == "cpu"]
    assert [(f["ues"], f["rep"]) for f in cpu] == [(1, 1), (2, 1)]
    rows = (tmp_path / "adhoc" / "cpu" / "baseline" / m["run"] / cpu[0]["path"]).read_text().splitlines()
    assert rows[0] == "service,cpu_usec" and any(r.startswith("amf,") for r in rows[1:])


def test_run_throughput(docker_host: None, tmp_path: Path) -> None:
    res = _make("run-throughput", tmp_path, PROFILE="baseline", DURATION="3", REPS="1")
    assert res.returncode == 0, res.stderr[-4000:]
    m = _one_valid_run(tmp_path, "throughput", "baseline")
    assert sorted(f["transport"] for f in m["files"] if f["kind"] == "iperf3") == ["tcp", "udp"]
