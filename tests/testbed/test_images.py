"""testbed/images.py: the build inputs, their content hash in the tag, and the rebuild decision
(`make up` builds when there is no image for the current inputs), all without Docker: the image
store is a dict standing in for `docker image inspect`, and for the script wiring a stand-in
`docker` CLI that answers `image inspect` from a file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed import ROOT, images


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of what the images are built from: images/ and patches/."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "images", root / "images")
    shutil.copytree(ROOT / "patches", root / "patches")
    return root


def store(*built: tuple[str, str]) -> images.Inspect:
    """An image store holding `ref` with label testbed.inputs=`digest` for each (ref, digest)."""
    held = {ref: {"Id": "sha256:" + "ab" * 32, "Config": {"Labels": {images.INPUTS_LABEL: digest}}}
            for ref, digest in built}
    return held.get


def test_the_inputs_are_the_dockerfile_its_ignore_file_and_what_that_lets_in(repo: Path) -> None:
    files = [f.as_posix() for f in images.input_files("open5gs", repo)]
    patches = sorted(p.relative_to(repo).as_posix() for p in (repo / "patches/open5gs").glob("*.patch"))
    assert files == ["images/open5gs/Dockerfile", "images/open5gs/Dockerfile.dockerignore",
                     "images/lib/apply-patches.sh", "images/lib/apt-install.sh", "images/lib/clone-pinned.sh",
                     "images/lib/record-image.sh", "images/open5gs/sources.env", *patches]
    assert patches, "the Open5GS patches are build inputs"
    (repo / "patches/open5gs/README.md").write_text("not in the build context\n")
    assert [f.as_posix() for f in images.input_files("open5gs", repo)] == files
    assert [f.as_posix() for f in images.input_files("tools", repo)] == \
        ["images/tools/Dockerfile", "images/tools/Dockerfile.dockerignore", "images/lib/apt-install.sh",
         "images/lib/clone-pinned.sh", "images/tools/sources.env"]


@pytest.mark.parametrize("changed_file,rebuilt", [
    # the source step of the build stages of the compiled images, and their contents step
    ("images/lib/clone-pinned.sh", {"open5gs", "ueransim", "snort", "oai", "tools"}),
    ("images/lib/record-image.sh", {"open5gs", "ueransim", "snort", "oai"}),
    # every package install of every image
    ("images/lib/apt-install.sh", set(images.BUILT)),
    # a moved pin: that image only
    ("images/snort/sources.env", {"snort"}),
])
def test_a_shared_step_or_a_pin_is_an_input_of_exactly_the_images_it_serves(
        repo: Path, changed_file: str, rebuilt: set[str]) -> None:
    env: dict[str, str] = {}
    before = {name: images.input_hash(name, env, repo) for name in images.BUILT}
    script = repo / changed_file
    script.write_text(script.read_text() + "\n")
    changed = {name for name in images.BUILT if images.input_hash(name, env, repo) != before[name]}
    assert changed == rebuilt


def test_labels_say_what_a_build_was_made_from(repo: Path) -> None:
    """scripts/build.sh labels a compiled image with its source and, for the pinned upstream, each
    pin of images/<name>/sources.env; a local or prebuilt tree gets no pin labels it may not match."""
    env: dict[str, str] = {}
    upstream = images.labels("oai", None, env, repo)
    assert upstream[images.INPUTS_LABEL] == images.input_hash("oai", env, repo)
    assert upstream["testbed.oai.source"] == "upstream"
    assert upstream["testbed.oai.version"] == "v2.3.0"
    assert upstream["testbed.asn1c.version"] == upstream["testbed.asn1c.commit"]    # fetched by hash
    local = images.labels("oai", "local:openairinterface5g@8bf6d5d7da8c", env, repo)
    assert local["testbed.oai.source"] == "local:openairinterface5g@8bf6d5d7da8c"
    assert not any(k.endswith((".version", ".commit")) for k in local)
    assert set(images.labels("ueransim", None, env, repo)) >= {images.INPUTS_LABEL, images.BASE_LABEL}
    # an image that compiles nothing gets its hash and base only
    assert set(images.labels("ferretdb", None, env, repo)) == {images.INPUTS_LABEL, images.BASE_LABEL}
    # the tools image compiles strongSwan from its pin (images/tools/sources.env)
    assert images.labels("tools", None, env, repo)["testbed.strongswan.version"] == \
        images.sources("tools", repo)["strongswan"]["version"]
    (repo / "images/oai/sources.env").write_text("OAI_REPO=https://example.org/oai.git\n")
    with pytest.raises(images.ImageError, match="OAI_REPO and OAI_COMMIT are both needed"):
        images.sources("oai", repo)
    (repo / "images/oai/sources.env").write_text("OAI_TAG=v1\n")
    with pytest.raises(images.ImageError, match="is not a <SOURCE>_REPO"):
        images.sources("oai", repo)


def test_a_patch_change_triggers_the_rebuild_decision(repo: Path) -> None:
    env: dict[str, str] = {}
    ref = images.resolve(env, repo)["OPEN5GS_IMAGE"]
    digest = images.input_hash("open5gs", env, repo)
    assert ref == f"g5tb/open5gs:2.7.7-{digest}" and len(digest) == images.HASH_LEN
    built = store((ref, digest))
    assert images.decide("open5gs", env, built, repo).action == "ok"
    patch = sorted((repo / "patches/open5gs").glob("*.patch"))[-1]
    patch.write_text(patch.read_text() + "\n")              # one byte more in one patch
    decision = images.decide("open5gs", env, built, repo)
    assert decision.action == "build" and decision.ref != ref
    assert images.input_hash("open5gs", env, repo) in decision.reason
    # the other images do not depend on the patches
    tools = images.resolve(env, repo)["TOOLS_IMAGE"]
    assert images.decide("tools", env, store((tools, images.input_hash("tools", env, repo))), repo).action == "ok"


@pytest.mark.parametrize("change", ["dockerfile", "ignore", "new_patch", "knob"])
def test_every_kind_of_input_moves_the_hash(repo: Path, change: str) -> None:
    env: dict[str, str] = {}
    before = images.input_hash("open5gs", env, repo)
    if change == "dockerfile":
        df = repo / "images/open5gs/Dockerfile"
        df.write_text(df.read_text().replace("ARG CURL_MIN_VERSION=", "ARG CURL_MIN_VERSION=9"))
    elif change == "ignore":
        (repo / "images/open5gs/Dockerfile.dockerignore").write_text("*\n")
    elif change == "new_patch":
        (repo / "patches/open5gs/0099-more.patch").write_text("--- a/x\n+++ b/x\n")
    else:
        env = {"APPLY_PATCHES": "0"}
    assert images.input_hash("open5gs", env, repo) != before


def test_local_trees_and_unrelated_settings_do_not_move_the_hash(repo: Path) -> None:
    h = images.input_hash("open5gs", {}, repo)
    assert images.input_hash("open5gs", {"OPEN5GS_SRC": "/x", "OPEN5GS_INSTALL": "/y", "BUILD_JOBS": "2",
                                         "APPLY_PATCHES": "1"}, repo) == h


def test_an_explicit_name_is_used_as_it_is_and_only_warned_about(repo: Path) -> None:
    env = {"OPEN5GS_IMAGE": "me/open5gs:dev"}
    assert images.resolve(env, repo)["OPEN5GS_IMAGE"] == "me/open5gs:dev"
    d = images.decide("open5gs", env, store(("me/open5gs:dev", "000000000000")), repo)
    assert d.action == "stale" and "make build IMAGES=open5gs" in d.reason
    assert images.decide("open5gs", env, store(), repo).action == "build"
    assert images.decide("open5gs", env, store(("me/open5gs:dev", images.input_hash("open5gs", env, repo))),
                         repo).action == "ok"


def test_mongo_image_ferretdb_names_the_built_ferretdb(repo: Path) -> None:
    refs = images.resolve({"MONGO_IMAGE": "ferretdb"}, repo)
    assert refs["MONGO_IMAGE"] == refs["FERRETDB_IMAGE"] and refs["FERRETDB_IMAGE"].startswith("g5tb/ferretdb:1.24.0-")
    assert images.resolve({}, repo)["MONGO_IMAGE"] == "mongo:6.0"


def test_a_dockerignore_that_does_not_start_with_star_is_refused(repo: Path) -> None:
    (repo / "images/tools/Dockerfile.dockerignore").write_text("!patches\n")
    with pytest.raises(images.ImageError, match="must start with `\\*`"):
        images.input_hash("tools", {}, repo)


def test_contents_and_facts_read_from_the_image(tmp_path: Path) -> None:
    text = "image=tools\ndebian=12.12\nstrongswan-charon=5.9.8-5+deb12u6\nopenssl=3.0.17-1~deb12u3\nbroken\n"
    assert images.parse_contents(text)["strongswan-charon"] == "5.9.8-5+deb12u6"
    inspected = {"Id": "sha256:" + "cd" * 32, "RepoDigests": [],
                 "Config": {"Labels": {"org.opencontainers.image.version": "1-abc", images.INPUTS_LABEL: "abc",
                                       images.BASE_LABEL: "debian:bookworm-slim@sha256:00",
                                       "testbed.open5gs.source": "prebuilt:o5"}}}
    calls: list[str] = []

    def contents(ref: str) -> dict[str, str]:
        calls.append(ref)
        return images.parse_contents(text)

    for _ in range(2):                      # the second time from the cache (same image id)
        f = images.facts("g5tb/tools:1-abc", {"g5tb/tools:1-abc": inspected}.get, contents, tmp_path)
        assert f is not None and f["id"] == inspected["Id"] and f["inputs"] == "abc"
        assert f["source"] == "prebuilt:o5" and f["contents"]["openssl"] == "3.0.17-1~deb12u3"
    assert calls == ["g5tb/tools:1-abc"]
    assert images.facts("absent:1", {}.get, contents, tmp_path) is None


def test_images_to_build_asks_the_docker_cli(tmp_path: Path) -> None:
    """scripts/lib/images.sh's images_to_build through `python -m testbed.cli.images plan` and a
    stand-in docker CLI that holds the tools image (current inputs) and an open5gs image from
    other inputs."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_IMAGE") and k != "DEBIAN_IMAGE"}
    refs = images.resolve(env)
    held = {refs["TOOLS_IMAGE"]: images.input_hash("tools", env), refs["OPEN5GS_IMAGE"]: "000000000000"}
    (tmp_path / "held.json").write_text(json.dumps(held))
    docker = tmp_path / "docker"
    docker.write_text("#!/usr/bin/env python3\nimport json, sys\n"
                      f"held = json.load(open({str(tmp_path / 'held.json')!r}))\n"
                      "ref = sys.argv[-1]\n"
                      "if sys.argv[1:3] != ['image', 'inspect'] or ref not in held: sys.exit(1)\n"
                      "print(json.dumps([{'Id': 'sha256:' + 'ab' * 32, 'Config': {'Labels': "
                      "{'testbed.inputs': held[ref]}}}]))\n")
    docker.chmod(0o755)
    script = 'source scripts/lib/images.sh; images_to_build "$PWD" open5gs ueransim tools'
    res = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**env, "DOCKER": str(docker)}, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["open5gs", "ueransim"]
    env["OPEN5GS_IMAGE"] = refs["OPEN5GS_IMAGE"]            # the same image, named explicitly: a warning
    res = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**env, "DOCKER": str(docker)}, check=False)
    assert res.stdout.split() == ["ueransim"] and "make build IMAGES=open5gs" in res.stderr
