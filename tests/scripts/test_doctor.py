"""scripts/doctor.sh on this very host: what it reports must be what the host really has.

Each expectation is observed independently here (the Docker CLI itself, testbed.datapath's
probes, /proc/cpuinfo, df), then compared with doctor's lines and exit status.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed import datapath
from tests.conftest import ROOT, require_root, require_tools

DOCTOR = ROOT / "scripts" / "doctor.sh"


def run_doctor(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(DOCTOR), *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, **env}, check=False)


def line(out: str, what: str) -> tuple[str, list[str]]:
    """The status tag of the check named `what` and its indented follow-up lines."""
    lines = out.splitlines()
    for i, text in enumerate(lines):
        m = re.match(r"\[(.{4})\] ([^:]+): ", text)
        if m and m.group(2) == what:
            follow = []
            for nxt in lines[i + 1:]:
                if not nxt.startswith("       "):
                    break
                follow.append(nxt.strip())
            return m.group(1).strip(), follow
    raise AssertionError(f"doctor printed no line for {what!r}:\n{out}")


def engine_reachable() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60, check=False).returncode == 0


def compose_v2() -> bool:
    if shutil.which("docker") is None:
        return False
    res = subprocess.run(["docker", "compose", "version", "--short"], capture_output=True, text=True,
                         timeout=60, check=False)
    return res.returncode == 0 and res.stdout.strip().lstrip("v").split(".")[0].isdigit() \
        and int(res.stdout.strip().lstrip("v").split(".")[0]) >= 2


@pytest.fixture(scope="module")
def report() -> subprocess.CompletedProcess:
    require_tools("bash", "ip", "unshare", "df")
    return run_doctor()


@pytest.fixture(scope="module")
def facts() -> dict:
    require_tools("ip", "unshare")
    return datapath.detect()


def test_docker_engine_and_compose_as_this_host_has_them(report: subprocess.CompletedProcess) -> None:
    if shutil.which("docker") is None:
        tag, follow = line(report.stdout, "Docker CLI")
        assert tag == "FAIL" and any(f.startswith("do:") for f in follow)
        return
    tag, follow = line(report.stdout, "Docker engine")
    if engine_reachable():
        assert tag == "ok"
    else:
        assert tag == "FAIL"
        assert follow[0].startswith("breaks: every experiment") and "make build" in follow[0]
        assert follow[1].startswith("do:") and "systemctl start docker" in follow[1]
    tag, follow = line(report.stdout, "Compose v2")
    if compose_v2():
        assert tag == "ok"
    else:
        assert tag == "FAIL" and "docker-compose-plugin" in follow[1]


def test_kernel_sctp_esp_wireguard_tun_as_probed(report: subprocess.CompletedProcess, facts: dict) -> None:
    tag, follow = line(report.stdout, "kernel SCTP")
    if facts["sctp"]:
        assert tag == "ok"
    else:
        assert tag == "FAIL"
        assert "NGAP" in follow[0] and "no UE attaches" in follow[0]
        assert "modprobe sctp" in follow[1]
        assert facts["reasons"]["sctp"] in report.stdout
    tag, follow = line(report.stdout, "TUN")
    assert tag == ("ok" if facts["tun"] else "FAIL")
    tag, follow = line(report.stdout, "xfrm ESP (kernel IPsec)")
    if facts["ipsec_kernel"]:
        assert tag == "ok"
    else:
        assert tag == ("WARN" if facts["tun"] else "FAIL")
        assert facts["reasons"]["ipsec_kernel"] in report.stdout
        assert "modprobe esp4" in follow[-1]
        if facts["tun"]:
            assert "kernel-libipsec" in follow[0] and "userspace" in follow[0]
    tag, follow = line(report.stdout, "WireGuard (kernel)")
    if facts["wireguard_kernel"]:
        assert tag == "ok"
    else:
        assert tag == ("WARN" if facts["tun"] else "FAIL")
        assert "modprobe wireguard" in follow[-1]
        if facts["tun"]:
            assert "wireguard-go" in follow[0]


def test_avx_and_disk_as_this_host_has_them(report: subprocess.CompletedProcess) -> None:
    has_avx = re.search(r"\bavx\b", Path("/proc/cpuinfo").read_text()) is not None
    tag, _ = line(report.stdout, "AVX (MongoDB 5+)")
    assert tag == "ok"   # with AVX any image runs; without it the default mongo:6.0 would be a FAIL
    assert ("the CPU has AVX" in report.stdout) == has_avx
    tag, _ = line(report.stdout, "free disk")
    free_gib = shutil.disk_usage("/var/lib/docker" if Path("/var/lib/docker").is_dir() else "/").free // 2**30
    assert tag == ("ok" if free_gib >= 12 else "WARN" if free_gib >= 3 else "FAIL")
    assert re.search(rf"\b{free_gib} GiB free\b", report.stdout) or \
        re.search(rf"\b{free_gib - 1} GiB free\b", report.stdout)   # df and statvfs may round apart


def test_exit_status_says_whether_the_stack_can_run(report: subprocess.CompletedProcess) -> None:
    fails = len(re.findall(r"^\[FAIL\]", report.stdout, re.M))
    warns = len(re.findall(r"^\[WARN\]", report.stdout, re.M))
    assert report.returncode == (1 if fails else 0), report.stdout + report.stderr
    assert f"summary: {fails} failed, {warns} warnings" in report.stdout


def test_no_avx_with_mongo_5_is_a_failure_that_names_the_ways_out(tmp_path: Path) -> None:
    require_tools("bash", "ip", "unshare")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 aes\n")
    res = run_doctor(CPUINFO=str(cpuinfo), MONGO_IMAGE="mongo:6.0")
    tag, follow = line(res.stdout, "AVX (MongoDB 5+)")
    assert tag == "FAIL" and res.returncode == 1
    assert "Illegal instruction" in follow[0]
    assert "MONGO_IMAGE=mongo:4.4" in follow[1] and "MONGO_IMAGE=ferretdb" in follow[1]
    for image in ("mongo:4.4", "ferretdb", "g5tb/ferretdb:1.24.0-abc"):
        tag, _ = line(run_doctor(CPUINFO=str(cpuinfo), MONGO_IMAGE=image).stdout, "AVX (MongoDB 5+)")
        assert tag == "ok", image
    tag, _ = line(run_doctor(CPUINFO=str(cpuinfo), MONGO_IMAGE="mongo").stdout, "AVX (MongoDB 5+)")
    assert tag == "FAIL"   # untagged = latest


def test_missing_docker_cli_and_full_disk(tmp_path: Path) -> None:
    require_tools("bash", "ip", "unshare")
    res = run_doctor(DOCKER=str(tmp_path / "no-docker-here"), DISK_FAIL_GIB="1000000", DISK_WARN_GIB="2000000")
    tag, follow = line(res.stdout, "Docker CLI")
    assert tag == "FAIL" and "install Docker Engine" in follow[1]
    tag, follow = line(res.stdout, "free disk")
    assert tag == "FAIL" and "docker system prune" in follow[1]
    assert res.returncode == 1


def test_usage() -> None:
    res = run_doctor("--help")
    assert res.returncode == 0 and "usage: scripts/doctor.sh" in res.stdout and "Exit:" in res.stdout
    res = run_doctor("--bogus")
    assert res.returncode == 2 and "unknown argument '--bogus'" in res.stderr


def test_make_doctor_runs_the_script() -> None:
    require_tools("make")
    res = subprocess.run(["make", "-n", "doctor"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert res.returncode == 0 and "scripts/doctor.sh" in res.stdout


def test_nfqueue_without_root_is_info(report: subprocess.CompletedProcess) -> None:
    """Without root doctor cannot try an NFQUEUE rule: it says so as info, not as a failure."""
    if os.geteuid() == 0:
        pytest.skip("as root doctor tries NFQUEUE: test_nfqueue_as_this_kernel_queues checks its verdict")
    tag, _ = line(report.stdout, "NFQUEUE (inline IPS)")
    assert tag == "info"


def test_nfqueue_as_this_kernel_queues(report: subprocess.CompletedProcess) -> None:
    """The inline IPS's NFQUEUE (docs/secfn.md): doctor's verdict against an NFQUEUE rule added
    here, independently, with iptables-legacy in a throw-away namespace. (One test per case, so
    that CI, which runs a test as root only when it skips without, runs both.)"""
    require_root()
    require_tools("iptables-legacy", "unshare")
    res = subprocess.run(["unshare", "--net", "iptables-legacy", "-A", "FORWARD", "-j", "NFQUEUE", "--queue-num", "7"],
                         capture_output=True, text=True, timeout=30, check=False)
    tag, follow = line(report.stdout, "NFQUEUE (inline IPS)")
    text = next(t for t in report.stdout.splitlines() if "NFQUEUE (inline IPS)" in t)
    if res.returncode == 0:
        assert tag == "ok" and "iptables-legacy" in text.split("not with")[0], text
    else:
        assert "iptables-legacy" not in text.split("not with")[0]


def test_without_docker_the_report_names_the_docker_free_route(tmp_path: Path) -> None:
    """`make run-n3` on a host without Docker printed the doctor report but not the route that
    needs no Docker (`make run-overlay`, the namespace measurement)."""
    res = run_doctor(DOCKER=str(tmp_path / "no-docker-here"))
    assert res.returncode == 1
    tail = res.stdout.strip().splitlines()[-2:]
    assert any("without Docker" in line and "make run-overlay PROFILE=" in line for line in tail), tail
    env = {k: v for k, v in os.environ.items() if k not in ("DRY_RUN", "PROFILE", "PLANE")}
    made = subprocess.run(["make", "--no-print-directory", "run-n3", "PROFILE=aes256gcm", f"RESULTS={tmp_path}/r",
                           f"DOCKER={tmp_path / 'no-docker-here'}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env, check=False)
    assert made.returncode != 0 and "make run-overlay PROFILE=aes256gcm" in made.stdout, made.stdout[-600:]
    assert not (tmp_path / "r").exists()
