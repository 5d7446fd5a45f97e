"""The Rosenpass key pairs (wireguard/rosenpass.py ensure), made when a Rosenpass profile is rendered
and not by `make keys`: the program on PATH first, else the built tools image's through `docker
run`, else nothing (the profile stops at render).
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
    argv = next(r for r in runs if "/keys/amf.sk." in " ".join(r))       # made side by side: any order
    assert argv[argv.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    assert argv[argv.index("--network") + 1] == "none"
    assert argv[argv.index("-v") + 1] == f"{(root / 'rosenpass').resolve()}:/keys"
    assert argv[argv.index(ref) + 1:argv.index(ref) + 3] == ["rosenpass", "gen-keys"]
    assert argv[argv.index("--secret-key") + 1] == f"/keys/amf.sk.{os.getpid()}.tmp"

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


FAKE_ROSENPASS = """#!/bin/sh
# gen-keys --force --secret-key SK --public-key PK, as rosenpass writes them; every call logged
echo "$*" >> "{log}"
echo secret > "$4"; echo public > "$6"
"""


def _fake_rosenpass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in `rosenpass` first on PATH (the real tools beside it); returns its call log."""
    bin_dir = tmp_path / "rp-bin"
    bin_dir.mkdir()
    log = tmp_path / "rosenpass.log"
    (bin_dir / "rosenpass").write_text(FAKE_ROSENPASS.format(log=log), encoding="utf-8")
    (bin_dir / "rosenpass").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return log


def test_make_keys_makes_no_rosenpass_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make keys` made a McEliece key pair per endpoint through the tools image (272 s in the
    guest, issue 30 item 6) although no Rosenpass profile was asked for: it now makes none, even
    with the program at hand."""
    from tests.conftest import require_tools
    from testbed import keys
    require_tools("openssl", "wg")
    log = _fake_rosenpass(tmp_path, monkeypatch)
    root = keys.ensure(tmp_path / "state")
    assert (root / "wg").is_dir() and not (root / "rosenpass").exists()
    assert not log.exists()


def test_rendering_a_rosenpass_profile_makes_the_key_pairs_of_its_nodes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import require_tools
    from testbed import profiles, ran, stack
    from wireguard import keys as wg_keys
    from wireguard import overlay
    require_tools("wg")
    log = _fake_rosenpass(tmp_path, monkeypatch)
    root = tmp_path / "keys"
    values = ran.restrict(stack.load(), "ueransim")
    wg_keys.ensure(root, ["gnb", "upf"])
    overlay.render(profiles.get("wireguard", "n3"), "n3", values, root, tmp_path / "plain", nodes=["gnb", "upf"])
    assert not (root / "rosenpass").exists() and not log.exists()
    dirs = overlay.render(profiles.get("wireguard-rosenpass", "n3"), "n3", values, root, tmp_path / "pq",
                          nodes=["gnb", "upf"])
    assert sorted(p.name for p in (root / "rosenpass").iterdir()) == ["gnb.pk", "gnb.sk", "upf.pk", "upf.sk"]
    assert (dirs["gnb"] / "rosenpass" / "upf.pk").read_text() == "public\n"
    assert len(log.read_text().splitlines()) == 2
    overlay.render(profiles.get("wireguard-rosenpass", "n3"), "n3", values, root, tmp_path / "again",
                   nodes=["gnb", "upf"])
    assert len(log.read_text().splitlines()) == 2          # kept, never made twice


def test_without_a_program_the_render_names_how_to_get_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import require_tools
    from testbed import profiles, ran, stack
    from wireguard import keys as wg_keys
    from wireguard import overlay
    require_tools("wg")
    root = tmp_path / "keys"
    wg_keys.ensure(root, ["gnb", "upf"])
    monkeypatch.setenv("PATH", _path_without_rosenpass(tmp_path))      # no rosenpass, no docker
    with pytest.raises(overlay.WireGuardError, match="the render makes them with `rosenpass` on PATH"):
        overlay.render(profiles.get("wireguard-rosenpass", "n3"), "n3", ran.restrict(stack.load(), "ueransim"),
                       root, tmp_path / "r", nodes=["gnb", "upf"])
