"""images/lib/clone-pinned.sh, the source step of every compiled image's build stage, run for real
with git on a local upstream repository (file://): a pinned tag clones and keeps the tag, a pinned
commit is fetched by its hash, a moved tag fails naming the pin to update, a tree a named build
context put in DEST is used as it is, and a wrong call or pins file is a usage error. Each pins file
is written the way images/<name>/sources.env is."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_tools

SCRIPT = ROOT / "images" / "lib" / "clone-pinned.sh"


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


def _pins(tmp_path: Path, **values: str) -> Path:
    path = tmp_path / "sources.env"
    path.write_text("# pins\n" + "".join(f"X_{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    return path


def _clone(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, check=False)


def test_a_pinned_tag_clones_at_its_commit_and_keeps_the_tag(upstream: tuple[str, str], tmp_path: Path) -> None:
    url, commit = upstream
    res = _clone(str(_pins(tmp_path, REPO=url, VERSION="v1", COMMIT=commit)), "X", str(tmp_path / "src"))
    assert res.returncode == 0, res.stderr
    assert _git("rev-parse", "HEAD", cwd=tmp_path / "src") == commit
    assert _git("describe", "--tags", cwd=tmp_path / "src") == "v1"     # build-info's version


def test_a_pinned_commit_is_fetched_by_its_hash(upstream: tuple[str, str], tmp_path: Path) -> None:
    url, commit = upstream
    (tmp_path / "src").mkdir()            # as the Dockerfile leaves it: the empty <name>-src stage copied in
    res = _clone(str(_pins(tmp_path, REPO=url, COMMIT=commit)), "X", str(tmp_path / "src"))
    assert res.returncode == 0, res.stderr
    assert _git("rev-parse", "HEAD", cwd=tmp_path / "src") == commit
    assert (tmp_path / "src" / "README").read_text() == "one\n"


def test_a_moved_tag_fails_naming_the_pin_to_update(upstream: tuple[str, str], tmp_path: Path) -> None:
    url, commit = upstream
    pins = _pins(tmp_path, REPO=url, VERSION="v1", COMMIT="0" * 40)
    res = _clone(str(pins), "X", str(tmp_path / "src"))
    assert res.returncode == 1
    assert f"v1 resolved to {commit}, expected {'0' * 40}: the tag moved" in res.stderr
    assert res.stderr.rstrip().endswith(f"update X_COMMIT in {pins}")


def test_a_tree_from_a_named_context_is_used_as_it_is(tmp_path: Path) -> None:
    """--build-context x-src=/path: DEST already holds the user's tree; nothing is fetched (the
    pinned repository here does not even exist)."""
    require_tools("bash")
    dest = tmp_path / "src"
    dest.mkdir()
    (dest / "mine.c").write_text("int main(void) { return 0; }\n")
    res = _clone(str(_pins(tmp_path, REPO="file:///nonexistent", COMMIT="0" * 40)), "X", str(dest))
    assert res.returncode == 0, res.stderr
    assert "holds the tree given as a named build context" in res.stdout
    assert sorted(p.name for p in dest.iterdir()) == ["mine.c"]


def test_a_wrong_call_or_pins_file_is_a_usage_error(tmp_path: Path) -> None:
    require_tools("bash")
    res = _clone("only", "two")
    assert res.returncode == 2 and res.stderr.startswith("usage: clone-pinned.sh PINS NAME DEST")
    res = _clone(str(tmp_path / "missing.env"), "X", str(tmp_path / "src"))
    assert res.returncode == 2 and "missing or unreadable" in res.stderr
    res = _clone(str(_pins(tmp_path, REPO="file:///x")), "X", str(tmp_path / "src"))
    assert res.returncode == 2 and "lacks X_REPO or X_COMMIT" in res.stderr


def test_a_stage_without_git_gets_it_through_the_package_step(upstream: tuple[str, str], tmp_path: Path) -> None:
    """Where the stage lacks git, the script installs it with images/lib/apt-install.sh; here
    `apt-get` is a script on PATH that logs its call and "installs" the host's git."""
    import os
    import shutil
    url, commit = upstream
    git, bash = shutil.which("git"), shutil.which("bash")
    assert git and bash
    bin_dir, lists = tmp_path / "bin", tmp_path / "lists"
    bin_dir.mkdir()
    lists.mkdir()
    for tool in ("bash", "dirname", "ls", "rm", "ln"):
        found = shutil.which(tool)
        assert found
        (bin_dir / tool).symlink_to(found)
    (bin_dir / "apt-get").write_text(f"#!{bash}\necho \"$*\" >> {tmp_path}/apt-calls\n"
                                     f"[[ $1 != install ]] || ln -sf {git} {bin_dir}/git\n")
    (bin_dir / "apt-get").chmod(0o755)
    env = {**os.environ, "PATH": str(bin_dir), "APT_LISTS": str(lists), "APT_RETRY_PAUSE": "0"}
    res = subprocess.run([bash, str(SCRIPT), str(_pins(tmp_path, REPO=url, VERSION="v1", COMMIT=commit)), "X",
                          str(tmp_path / "src")], capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "apt-calls").read_text().splitlines()[-1] == \
        "install -y --no-install-recommends ca-certificates git"
    assert _git("rev-parse", "HEAD", cwd=tmp_path / "src") == commit
