"""The shared steps of images/*/Dockerfile, run for real on this host: images/lib/record-image.sh
with dpkg-query and ldd (the contents file every run manifest reads, and the refusal of an install
tree that lacks a program or a library), and images/lib/apt-install.sh's retry and suite source,
with `apt-get` replaced by a script on PATH (the host's package database is never touched)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_tools

LIB = ROOT / "images" / "lib"


def _record(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTENTS": str(tmp_path / "testbed-image.txt")}
    return subprocess.run(["bash", str(LIB / "record-image.sh"), *args], capture_output=True, text=True,
                          env=env, check=False)


def test_record_image_writes_what_the_manifest_reads(tmp_path: Path) -> None:
    require_tools("bash", "dpkg-query", "ldd")
    if not Path("/etc/debian_version").is_file():
        pytest.skip("not a Debian host: no /etc/debian_version")
    prefix = tmp_path / "opt" / "x"
    (prefix / "share" / "testbed").mkdir(parents=True)
    (prefix / "share" / "testbed" / "build-info.txt").write_text("x_version=v1\nx_commit=abc\n")
    bash = shutil.which("bash")
    assert bash
    res = _record(tmp_path, "x", "1.0-123", "upstream", str(prefix), "bash", bash)
    assert res.returncode == 0, res.stderr
    contents = (tmp_path / "testbed-image.txt").read_text()
    lines = dict(line.split("=", 1) for line in contents.splitlines())
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "bash"], capture_output=True, text=True,
                             check=True).stdout
    assert lines == {"image": "x", "image_version": "1.0-123", "x_source": "upstream",
                     "debian": Path("/etc/debian_version").read_text().strip(), "bash": version,
                     "x_version": "v1", "x_commit": "abc"}
    assert res.stdout == contents          # the build log shows it


def test_record_image_refuses_a_missing_program_or_library(tmp_path: Path) -> None:
    require_tools("bash", "dpkg-query", "ldd", "cc")
    res = _record(tmp_path, "x", "1", "upstream", str(tmp_path), "bash", str(tmp_path / "nr-gnb"))
    assert res.returncode == 1 and f"{tmp_path / 'nr-gnb'} is missing from the install tree" in res.stderr
    # a program linked against a library that is not there
    (tmp_path / "libgone.c").write_text("int gone(void) { return 1; }\n")
    (tmp_path / "main.c").write_text("int gone(void);\nint main(void) { return gone(); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libgone.so"), str(tmp_path / "libgone.c")],
                   check=True)
    subprocess.run(["cc", "-o", str(tmp_path / "prog"), str(tmp_path / "main.c"), f"-L{tmp_path}", "-lgone"],
                   check=True)
    (tmp_path / "libgone.so").unlink()
    res = _record(tmp_path, "x", "1", "upstream", str(tmp_path), "bash", str(tmp_path / "prog"))
    assert res.returncode == 1 and "runtime libraries missing:" in res.stderr and "libgone.so" in res.stderr


def test_record_image_usage(tmp_path: Path) -> None:
    require_tools("bash")
    res = _record(tmp_path, "x", "1")
    assert res.returncode == 2 and res.stderr.startswith("usage: record-image.sh")


def _fake_apt(tmp_path: Path, fail_times: int) -> dict[str, str]:
    """An `apt-get` on PATH that logs its calls and fails its first `fail_times` updates."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "apt-get"
    script.write_text(f"""#!/usr/bin/env bash
echo "$DEBIAN_FRONTEND $*" >> {tmp_path}/calls
if [[ "$1" == update ]]; then
  n=$(grep -c ' update' {tmp_path}/calls)
  ((n > {fail_times})) || exit 100
fi
""")
    script.chmod(0o755)
    (tmp_path / "sources").mkdir()
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "deb.debian.org_Packages").write_text("x")
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "APT_SOURCES": str(tmp_path / "sources"),
            "APT_LISTS": str(tmp_path / "lists"), "APT_RETRY_PAUSE": "0"}


def _apt(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(LIB / "apt-install.sh"), *args], capture_output=True, text=True, env=env,
                          check=False)


def test_apt_install_retries_once_then_cleans_the_lists(tmp_path: Path) -> None:
    require_tools("bash")
    res = _apt(_fake_apt(tmp_path, fail_times=1), "iproute2", "procps")
    assert res.returncode == 0, res.stderr
    assert "failed; retrying once" in res.stderr
    assert (tmp_path / "calls").read_text().splitlines() == [
        "noninteractive update", "noninteractive update",
        "noninteractive install -y --no-install-recommends iproute2 procps"]
    assert list((tmp_path / "lists").iterdir()) == []


def test_apt_install_gives_up_after_the_second_failure(tmp_path: Path) -> None:
    require_tools("bash")
    res = _apt(_fake_apt(tmp_path, fail_times=2), "iproute2")
    assert res.returncode == 1 and "failed twice; is the Debian mirror reachable" in res.stderr


def test_apt_install_from_another_suite_adds_its_source(tmp_path: Path) -> None:
    require_tools("bash")
    env = {**_fake_apt(tmp_path, fail_times=0), "DEBIAN_MIRROR": "http://mirror.example/debian"}
    res = _apt(env, "-t", "bookworm-backports", "suricata")
    assert res.returncode == 0, res.stderr
    source = (tmp_path / "sources" / "bookworm-backports.sources").read_text()
    assert "URIs: http://mirror.example/debian\nSuites: bookworm-backports\n" in source
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in source
    assert (tmp_path / "calls").read_text().splitlines()[-1] == \
        "noninteractive install -y --no-install-recommends -t bookworm-backports suricata"
    assert _apt(env, "-t").returncode == 2 and _apt(env).returncode == 2
