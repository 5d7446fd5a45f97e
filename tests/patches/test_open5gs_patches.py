"""patches/open5gs/*.patch: headers, naming, and that the series applies to the pinned release.

The release source is found at $OPEN5GS_SRC, else ../ext/open5gs-src beside the repository
(an unpacked v2.7.7 tree; docs/patches.md). Without it the apply test skips naming that path.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed import ROOT, stack
from tests.conftest import require_tools

PATCH_DIR = ROOT / "patches" / "open5gs"
PATCHES = sorted(PATCH_DIR.glob("*.patch"))
DEFAULT_SRC = ROOT.parent / "ext" / "open5gs-src"
NAME = re.compile(r"^\d{4}-[a-z0-9]+(-[a-z0-9]+)*\.patch$")
# Environment variables each patch introduces (docs/patches.md, tls/overlay.py)
VARIABLES = {
    "0001-sbi-tls-knobs.patch": ["OGS_SBI_TLS_MIN_VERSION", "OGS_SBI_TLS_MAX_VERSION", "OGS_SBI_TLS_CIPHERS",
                                "OGS_SBI_TLS_CIPHERSUITES", "OGS_SBI_TLS_GROUPS"],
    "0002-sbi-trap-path-wait.patch": ["OGS_SBI_WAIT_PEER_MS", "OGS_SBI_WAIT_PEER_TRY_MS"],
    "0003-sbi-tls-keylog.patch": ["OGS_SBI_TLS_KEYLOG", "SSLKEYLOGFILE"],
    "0004-sbi-tls-client-groups.patch": ["OGS_SBI_TLS_CLIENT_GROUPS"],
}


def _touched(patch: Path) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) b/", patch.read_text(encoding="utf-8"), flags=re.M)


def _release_src() -> Path:
    src = Path(os.environ.get("OPEN5GS_SRC") or DEFAULT_SRC)
    if not (src / "lib" / "sbi" / "client.c").is_file():
        pytest.skip(f"no Open5GS {stack.load()['open5gs_version']} source at {src} "
                    "(set OPEN5GS_SRC to an unpacked release tree)")
    return src


def test_the_series_is_the_two_documented_patches() -> None:
    assert [p.name for p in PATCHES] == sorted(VARIABLES)


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_patch_has_a_header_saying_what_why_and_base(patch: Path) -> None:
    assert NAME.match(patch.name), f"{patch.name}: name it NNNN-topic.patch"
    text = patch.read_text(encoding="utf-8")
    header = text.split("\ndiff --git ", 1)[0]
    assert re.search(r"^Subject: \[PATCH \d+/\d+\] sbi: ", header, flags=re.M), header[:300]
    assert re.search(r"^What: ", header, flags=re.M) and re.search(r"^Why: ", header, flags=re.M)
    version = stack.load()["open5gs_version"]
    assert f"Base: open5gs {version} (" in header
    for var in VARIABLES[patch.name]:
        assert var in header, f"{patch.name}: the header does not document {var}"
    # only lib/sbi, no build output, no secrets
    touched = _touched(patch)
    assert touched and all(t.startswith("lib/sbi/") for t in touched), touched
    assert "PRIVATE KEY" not in text


def test_new_code_is_off_unless_its_variable_is_set() -> None:
    """Upstream behaviour with no variable: the knobs fall back, the wait returns at once."""
    tls = (PATCH_DIR / "0001-sbi-tls-knobs.patch").read_text(encoding="utf-8")
    assert '+                knobs->ciphers ? knobs->ciphers : DEFAULT_CIPHER_LIST' in tls
    assert '+                knobs->groups ? knobs->groups : "P-256"' in tls
    wait = (PATCH_DIR / "0002-sbi-trap-path-wait.patch").read_text(encoding="utf-8")
    assert '+        wait_ms = env_ms("OGS_SBI_WAIT_PEER_MS", 0);' in wait
    assert "+    if (wait_ms == 0)\n+        return;" in wait
    keylog = (PATCH_DIR / "0003-sbi-tls-keylog.patch").read_text(encoding="utf-8")
    assert '+    value = getenv("OGS_SBI_TLS_KEYLOG");\n+    if (!value || !value[0])\n+        return false;' in keylog
    # a key log is a secret: created 0600, and an existing file made 0600
    assert "O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600" in keylog and "fchmod(keylog_fd, 0600)" in keylog


def test_the_series_applies_to_the_pinned_release(tmp_path: Path) -> None:
    """patch -p1 --fuzz=0, in order, as images/open5gs/Dockerfile does; then git apply --check
    of each patch on the tree before it (the second patch builds on the first)."""
    require_tools("patch", "git")
    src = _release_src()
    work = tmp_path / "src"
    for rel in sorted({t for p in PATCHES for t in _touched(p)}):
        if (src / rel).is_file():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / rel, work / rel)
    for patch in PATCHES:
        check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=work,
                               capture_output=True, text=True)
        assert check.returncode == 0, f"git apply --check {patch.name}: {check.stderr}"
        res = subprocess.run(["patch", "-p1", "--batch", "--forward", "--fuzz=0", "--no-backup-if-mismatch",
                              "-i", str(patch)], cwd=work, capture_output=True, text=True)
        assert res.returncode == 0, f"{patch.name} does not apply to {src}: {res.stdout}{res.stderr}"
        assert "offset" not in res.stdout and "fuzz" not in res.stdout, res.stdout
    assert (work / "lib/sbi/tls-knobs.c").is_file() and (work / "lib/sbi/path-wait.c").is_file()
    build = (work / "lib/sbi/meson.build").read_text(encoding="utf-8")
    assert "tls-knobs.c" in build and "path-wait.c" in build


def test_the_release_tree_is_the_pinned_one() -> None:
    """The release tree is the commit images/open5gs/Dockerfile pins: read from git when the tree
    is a clone, else from the pin a prepared tree records (.pinned)."""
    src = _release_src()
    commit = "318eeb49a7dcdff733dec60e02d9c60aefca2fb9"
    if (src / ".git").exists():
        require_tools("git")
        head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        assert head == commit, f"{src} is at {head}, not v2.7.7 ({commit})"
        return
    pinned = src / ".pinned"
    if not pinned.is_file():
        pytest.skip(f"{src} is neither a git clone nor records its pin in .pinned")
    text = pinned.read_text(encoding="utf-8")
    assert f"tag={stack.load()['open5gs_version']}\n" in text
    assert f"commit={commit}" in text


BUILD_SCRIPT = ROOT / "patches" / "build-host.sh"


def test_build_script_is_shellcheck_clean_and_has_help() -> None:
    require_tools("shellcheck")
    res = subprocess.run(["shellcheck", "-x", str(BUILD_SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout
    ok = subprocess.run([str(BUILD_SCRIPT), "--help"], capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and "usage:" in ok.stdout and "OPEN5GS_SRC" in ok.stdout
    bad = subprocess.run([str(BUILD_SCRIPT), "--bogus"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "usage:" in bad.stderr


def test_build_script_names_a_missing_source_tree(tmp_path: Path) -> None:
    env = {**os.environ, "OPEN5GS_SRC": str(tmp_path / "none"), "OPEN5GS_WORK": str(tmp_path / "w"),
           "OPEN5GS_BUILD": str(tmp_path / "b")}
    res = subprocess.run([str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=30, env=env)
    assert res.returncode == 1
    assert f"no Open5GS source tree at {tmp_path / 'none'}: set OPEN5GS_SRC" in res.stderr
    assert not (tmp_path / "w").exists()
