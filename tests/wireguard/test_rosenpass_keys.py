"""`make keys`'s Rosenpass key pairs (wireguard/rosenpass.py ensure): the program on PATH first,
else the built tools image's through `docker run`, else nothing (the profile stops at render).
The real gen-keys runs in tests/integration/test_wireguard_rosenpass_netns.py; here the choice
of program and the `docker run` it builds (a stand-in `docker` records its arguments)."""
from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from testbed import images
from wireguard import rosenpass

# Answers `image inspect` for the tools image and, for `run`, writes the two files gen-keys names
# under the mounted directory, as rosenpass does; every call is logged.
FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "{log}"
case "$1" in
  image) [ "$3" = "{ref}" ] && echo '[{{"Config": {{"Labels": {{}}}}}}]' && exit 0; exit 1;;
  run) mount=""; prev=""; sk=""; pk=""
       for a in "$@"; do
         [ "$prev" = "-v" ] && mount="${{a%%:/keys}}"
         [ "$prev" = "--secret-key" ] && sk="$a"
         [ "$prev" = "--public-key" ] && pk="$a"
         prev="$a"
       done
       echo secret > "$mount/${{sk#/keys/}}"; echo public > "$mount/${{pk#/keys/}}";;
esac
"""


def _path_without_rosenpass(tmp_path: Path) -> str:
    """A PATH holding only a `docker` stand-in directory (rosenpass may be on the real PATH)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    return str(bin_dir)


def test_without_the_program_or_the_image_nothing_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_without_rosenpass(tmp_path))
    monkeypatch.setenv("DOCKER", "docker")
    assert rosenpass.generator(tmp_path / "keys" / "rosenpass") is None
    assert rosenpass.ensure(tmp_path / "keys", ["amf", "smf"]) == []
    # no empty rosenpass/ dir either: render's check (and the tests' skip) look for it
    assert not (tmp_path / "keys" / "rosenpass").exists()


def test_without_the_program_the_tools_image_makes_the_keys_as_the_callers_user(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _path_without_rosenpass(tmp_path)
    log = tmp_path / "docker.log"
    ref = images.resolve()["TOOLS_IMAGE"]
    docker = Path(bin_dir) / "docker"
    docker.write_text(FAKE_DOCKER.format(log=log, ref=ref), encoding="utf-8")
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", bin_dir)
    monkeypatch.delenv("DOCKER", raising=False)

    root = tmp_path / "keys"
    assert rosenpass.ensure(root, ["amf", "smf"]) == ["amf", "smf"]
    for node in ("amf", "smf"):
        sk, pk = rosenpass.key_paths(root, node)
        assert sk.read_text() == "secret\n" and pk.read_text() == "public\n"
        assert sk.stat().st_mode & 0o777 == 0o600
    assert not list((root / "rosenpass").glob("*.tmp"))
    runs = [shlex.split(line) for line in log.read_text().splitlines() if line.startswith("run ")]
    assert len(runs) == 2
    argv = runs[0]
    assert argv[argv.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    assert argv[argv.index("--network") + 1] == "none"
    assert argv[argv.index("-v") + 1] == f"{(root / 'rosenpass').resolve()}:/keys"
    assert argv[argv.index(ref) + 1:argv.index(ref) + 3] == ["rosenpass", "gen-keys"]
    assert argv[argv.index("--secret-key") + 1] == "/keys/amf.sk.tmp"

    # a second `make keys` replaces nothing and runs nothing
    assert rosenpass.ensure(root, ["amf", "smf"]) == ["amf", "smf"]
    assert len([line for line in log.read_text().splitlines() if line.startswith("run ")]) == 2


def test_an_absent_tools_image_is_not_pulled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _path_without_rosenpass(tmp_path)
    log = tmp_path / "docker.log"
    docker = Path(bin_dir) / "docker"
    docker.write_text(FAKE_DOCKER.format(log=log, ref="some/other:image"), encoding="utf-8")
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", bin_dir)
    monkeypatch.delenv("DOCKER", raising=False)
    assert rosenpass.ensure(tmp_path / "keys", ["amf"]) == []
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["image"]
