"""testbed/open5gs_host.py: the cached Open5GS host build is used only when its build-info names
the pinned sources and the patches' digest that patches/build-host.sh records; otherwise the
reason names the command that makes one (issue 30 §5)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testbed import open5gs_host
from tests.conftest import ROOT


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("G5TB_CACHE", str(tmp_path))
    monkeypatch.delenv("OPEN5GS_BUILD", raising=False)
    monkeypatch.delenv("OPEN5GS_LIBRARY_PATH", raising=False)
    monkeypatch.setattr(open5gs_host, "BESIDE", tmp_path / "none")
    return tmp_path


def _make(build: Path, **changes: str) -> None:
    for nf in open5gs_host.pins()["NFS"].split():
        (build / "src" / nf).mkdir(parents=True, exist_ok=True)
        (build / "src" / nf / f"open5gs-{nf}d").write_text("")
    info = {**open5gs_host.expected_info(), "library_path": "/x/libcurl8/lib", **changes}
    (build / "build-info.txt").write_text("".join(f"{k}={v}\n" for k, v in info.items()))


def test_the_digest_is_the_one_build_host_records() -> None:
    script = ('find "$1/open5gs" -maxdepth 1 -name "*.patch" -print0 | LC_ALL=C sort -z | xargs -0 sha256sum '
              '| sed "s#$1/##" | sha256sum | cut -d" " -f1')
    got = subprocess.run(["bash", "-c", script, "-", str(ROOT / "patches")], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert got == open5gs_host.patches_sha256()
    assert open5gs_host.cache_dir().parent.name == f"open5gs-host-v2.7.7-{got[:12]}"


def test_no_build_names_the_command_that_makes_one(cache: Path) -> None:
    build, why = open5gs_host.find()
    assert build is None
    assert "no build-info.txt" in why and "make open5gs-host-build OPEN5GS_SRC=" in why
    assert open5gs_host.main(["find"]) == 1


def test_a_pinned_build_is_found_with_its_libraries(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _make(open5gs_host.cache_dir())
    build, how = open5gs_host.find()
    assert build == open5gs_host.cache_dir() and "cached" in how
    assert open5gs_host.library_path(build) == "/x/libcurl8/lib"
    assert open5gs_host.main(["packages"]) == 0
    assert "libmongoc-1.0-0|libmongoc-1.0-0t64" in capsys.readouterr().out


@pytest.mark.parametrize("key", ["open5gs_commit", "subproject_freeDiameter", "patches_sha256"])
def test_a_build_of_other_sources_is_not_taken(cache: Path, key: str, capsys: pytest.CaptureFixture[str]) -> None:
    _make(open5gs_host.cache_dir(), **{key: "unknown"})
    build, why = open5gs_host.find()
    assert build is None and f"{key}=unknown, not " in why
    assert open5gs_host.main(["packages"]) == 0 and capsys.readouterr().out == ""


def test_a_half_built_tree_is_not_taken(cache: Path) -> None:
    _make(open5gs_host.cache_dir())
    (open5gs_host.cache_dir() / "src" / "upf" / "open5gs-upfd").unlink()
    build, why = open5gs_host.find()
    assert build is None and "lacks open5gs-{upf}d" in why


def test_the_variable_wins(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _make(open5gs_host.cache_dir())
    monkeypatch.setenv("OPEN5GS_BUILD", "/elsewhere")
    monkeypatch.setenv("OPEN5GS_LIBRARY_PATH", "/mine")
    assert open5gs_host.find() == (Path("/elsewhere"), "$OPEN5GS_BUILD")
    assert open5gs_host.library_path(open5gs_host.cache_dir()) == "/mine"
