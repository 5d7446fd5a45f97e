"""images/oai/Dockerfile (RAN=oai|split): pinned upstream sources, the same stage pattern as the
other compiled images (a local tree or a prebuilt install tree replaces a stage), the OAI patches
applied like Open5GS's, and a runtime that holds every program and module the stack runs."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from testbed.ran.oai import services as ran_oai
from tests.conftest import ROOT, require_tools
from testbed import images
from tests.images.test_dockerfiles import clone_calls, parse

DOCKERFILE = ROOT / "images" / "oai" / "Dockerfile"
PATCHES = ROOT / "patches" / "oai"


@pytest.fixture(scope="module")
def df():  # type: ignore[no-untyped-def]
    return parse(DOCKERFILE)


def test_stages(df) -> None:  # type: ignore[no-untyped-def]
    """(tests/images/test_dockerfiles.py checks the base, the apt rules and the named stages of every
    Dockerfile, this one included.)"""
    for stage in ("oai-src", "asn1c-src", "simde-src", "oai-install"):
        assert df.stages[stage].base == "scratch", f"{stage}: a named context replaces it 1:1 only FROM scratch"
    assert {c[0]: c[1] for c in df.stages["runtime"].copies_from()}["oai-install"] == "/"
    build = {c[0]: (c[1], c[2]) for c in df.stages["oai-build"].copies_from()}
    assert build["oai-src"] == ("/", "/src") and build["simde-src"] == ("/", "/usr/include/simde")
    assert build["asn1c-src"] == ("/", "/asn1c-src")


def test_versions_are_pinned_and_match_stack_yaml(df) -> None:  # type: ignore[no-untyped-def]
    want = yaml.safe_load((ROOT / "nf-configs" / "stack.yaml").read_text())["oai_version"]
    pins = images.sources("oai")
    assert pins["oai"]["version"] == want
    for src in ("oai", "asn1c", "simde"):
        assert re.fullmatch(r"[0-9a-f]{40}", pins[src]["commit"]), src
    # the tag and both build_oai commits go through images/lib/clone-pinned.sh; the two commits have
    # no tag, so they are fetched by hash
    assert set(clone_calls("oai")) == {"oai", "asn1c", "simde"}
    assert pins["asn1c"]["version"] == pins["asn1c"]["commit"] and pins["simde"]["version"] == pins["simde"]["commit"]


def test_build_is_portable_by_default_and_builds_what_the_stack_runs(df) -> None:  # type: ignore[no-untyped-def]
    args = df.stages["oai-build"].args()
    assert args["OAI_MARCH"] == "x86-64-v3"          # not the build host's CPU (patches/oai/0001)
    targets = args["OAI_TARGETS"].strip('"').split()
    assert {"nr-softmodem", "nr-cuup", "nr-uesoftmodem", "rfsimulator", "params_libconfig"} <= set(targets)
    run = " ".join(df.stages["oai-build"].runs())
    assert '-DOAI_MARCH="${OAI_MARCH}"' in run and "-DAVX512=OFF" in run and "-DOAI_SIMU=ON" in run
    runtime = " ".join(df.stages["runtime"].runs())
    for program in set(ran_oai.PROGRAM.values()) | {"nr-uesoftmodem"}:
        assert f"/opt/oai/bin/{program}" in runtime, program
    assert "record-image.sh oai" in " ".join(runtime.split())      # the tree and its libraries checked


def test_patch_step_is_the_open5gs_one_for_patches_oai(df) -> None:  # type: ignore[no-untyped-def]
    run = " ".join(next(r for r in df.stages["oai-build"].runs() if "patches/oai" in r).split())
    assert "bash images/lib/apply-patches.sh patches/oai /src /out/opt/oai/share/testbed/patches.txt " \
        '"${APPLY_PATCHES}"' in run
    rules = [r for r in (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().split("\n")
             if r and not r.startswith("#")]
    assert rules[:3] == ["*", "!patches/oai/*.patch", "!images/lib/apply-patches.sh"]
    assert sorted(p.name for p in PATCHES.glob("*.patch")) == ["0001-cmake-march-option.patch"]


def test_march_patch_applies_to_an_oai_tree(tmp_path: Path) -> None:
    """On a real OpenAirInterface v2.3.0 tree ($OAI_SRC, e.g. the host build's): applies without
    fuzz, or is already applied there (reverses cleanly)."""
    import os
    if not os.environ.get("OAI_SRC"):
        pytest.skip("OAI_SRC not set (an OpenAirInterface v2.3.0 source tree)")
    src = Path(os.environ["OAI_SRC"])
    if not (src / "CMakeLists.txt").is_file():
        pytest.skip(f"OAI_SRC={src} holds no CMakeLists.txt")
    require_tools("patch")
    shutil.copy(src / "CMakeLists.txt", tmp_path / "CMakeLists.txt")
    patch = PATCHES / "0001-cmake-march-option.patch"
    fwd = subprocess.run(["patch", "-p1", "--dry-run", "--batch", "--forward", "--fuzz=0", "-i", str(patch)],
                         cwd=tmp_path, capture_output=True, text=True)
    rev = subprocess.run(["patch", "-p1", "--dry-run", "--batch", "-R", "--fuzz=0", "-i", str(patch)],
                         cwd=tmp_path, capture_output=True, text=True)
    assert fwd.returncode == 0 or rev.returncode == 0, fwd.stdout + rev.stdout
    text = (tmp_path / "CMakeLists.txt").read_text()
    assert "-march=native" in text or "OAI_MARCH" in text


def test_build_script_knows_the_oai_image() -> None:
    require_tools("bash")
    res = subprocess.run(["bash", "scripts/build.sh", "--dry-run", "oai"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "OAI_MARCH": "native"})
    assert res.returncode == 0, res.stderr
    assert "-f images/oai/Dockerfile" in res.stdout and "OAI_MARCH=native" in res.stdout
    res = subprocess.run(["bash", "scripts/build.sh", "--dry-run", "oai"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "OAI_INSTALL": "/nonexistent"})
    assert res.returncode == 2 and "OAI_INSTALL=/nonexistent is not a directory" in res.stderr
