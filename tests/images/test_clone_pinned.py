"""images/lib/clone-pinned.sh, the clone step of every `*-git` stage, run for real with git on a
local upstream repository (file://): a pinned tag clones and keeps the tag, a pinned commit is
fetched by its hash, a moved tag fails naming the ARG to update, and a wrong call is a usage error."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_tools

SCRIPT = ROOT / "images" / "lib" / "clone-pinned.sh"
PIN = "X_COMMIT in images/x/Dockerfile"


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[str, str]:
    """A repository with an annotated tag v1 on its first commit: (file:// URL, that commit)."""
    require_tools("git", "bash")
    repo = tmp_path / "upstream"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / "README").write_text("one\n")
    _git("add", "README", cwd=repo)
    _git("commit", "-q", "-m", "one", cwd=repo)
    _git("tag", "-a", "v1", "-m", "v1", cwd=repo)
    return f"file://{repo}", _git("rev-parse", "HEAD", cwd=repo)


def _clone(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, check=False)


def test_a_pinned_tag_clones_at_its_commit_and_keeps_the_tag(upstream: tuple[str, str], tmp_path: Path) -> None:
    url, commit = upstream
    res = _clone(url, "v1", commit, str(tmp_path / "src"), PIN)
    assert res.returncode == 0, res.stderr
    assert _git("rev-parse", "HEAD", cwd=tmp_path / "src") == commit
    assert _git("describe", "--tags", cwd=tmp_path / "src") == "v1"     # build-info's version


def test_a_pinned_commit_is_fetched_by_its_hash(upstream: tuple[str, str], tmp_path: Path) -> None:
    url, commit = upstream
    res = _clone(url, commit, commit, str(tmp_path / "src"), PIN)
    assert res.returncode == 0, res.stderr
    assert _git("rev-parse", "HEAD", cwd=tmp_path / "src") == commit
    assert (tmp_path / "src" / "README").read_text() == "one\n"


def test_a_moved_tag_fails_naming_the_arg_to_update(upstream: tuple[str, str], tmp_path: Path) -> None:
    url, commit = upstream
    res = _clone(url, "v1", "0" * 40, str(tmp_path / "src"), PIN)
    assert res.returncode == 1
    assert f"v1 resolved to {commit}, expected {'0' * 40}: the tag moved" in res.stderr
    assert res.stderr.rstrip().endswith(f"update {PIN}")


def test_a_wrong_call_is_a_usage_error() -> None:
    require_tools("bash")
    res = _clone("only", "three", "args")
    assert res.returncode == 2 and res.stderr.startswith("usage: clone-pinned.sh REPO REF COMMIT DEST PIN")
