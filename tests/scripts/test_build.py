"""scripts/build.sh (`make build`): the docker commands it issues, its errors, and a real build
where a Docker engine with buildx exists."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed import images
from tests.conftest import ROOT

BUILD = ROOT / "scripts" / "build.sh"


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.endswith(("_IMAGE", "_SRC", "_INSTALL")) and k not in ("APPLY_PATCHES", "BUILD_JOBS")}


def run_build(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = clean_env()
    return subprocess.run(["bash", str(BUILD), *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={**clean, **env}, check=False)


def commands(res: subprocess.CompletedProcess) -> list[list[str]]:
    return [shlex.split(line[2:]) for line in res.stdout.splitlines() if line.startswith("+ ")]


def test_default_build_plan() -> None:
    res = run_build("--dry-run")
    assert res.returncode == 0, res.stderr
    cmds = commands(res)
    assert [c[:3] for c in cmds[:3]] == [["docker", "buildx", "build"]] * 3
    assert cmds[0][cmds[0].index("-f") + 1] == "images/open5gs/Dockerfile"
    env = clean_env()
    for cmd, name, version in zip(cmds, ("open5gs", "ueransim", "tools"), ("2.7.7", "3.2.7", "1")):
        digest = images.input_hash(name, env)
        assert cmd[cmd.index("-t") + 1] == f"g5tb/{name}:{version}-{digest}" and cmd[-1] == "."
        assert f"testbed.inputs={digest}" in cmd and f"IMAGE_VERSION={version}-{digest}" in cmd
        assert f"testbed.base={images.base_image(name, env)}" in cmd and "@sha256:" in cmd[cmd.index("--label") + 3]
        assert not any(a.startswith("DEBIAN_IMAGE=") for a in cmd), "the Dockerfile's pinned base by default"
    assert cmds[3] == ["docker", "pull", "mongo:6.0"]
    assert not any("--build-context" in c for c in cmds), "no local tree given: upstream sources"


def test_a_base_override_is_a_build_arg_and_another_tag() -> None:
    res = run_build("--dry-run", "tools", DEBIAN_IMAGE="debian:bookworm-slim")
    assert res.returncode == 0, res.stderr
    (cmd,) = commands(res)
    assert "DEBIAN_IMAGE=debian:bookworm-slim" in cmd and "testbed.base=debian:bookworm-slim" in cmd
    other = images.input_hash("tools", {"DEBIAN_IMAGE": "debian:bookworm-slim"})
    assert other != images.input_hash("tools", {}) and cmd[cmd.index("-t") + 1] == f"g5tb/tools:1-{other}"


def test_mongo_image_ferretdb_builds_it_instead_of_pulling() -> None:
    res = run_build("--dry-run", "mongo", MONGO_IMAGE="ferretdb")
    assert res.returncode == 0, res.stderr
    (cmd,) = commands(res)
    assert cmd[cmd.index("-f") + 1] == "images/ferretdb/Dockerfile"
    assert cmd[cmd.index("-t") + 1] == f"g5tb/ferretdb:1.24.0-{images.input_hash('ferretdb', {})}"


def test_local_trees_become_named_build_contexts(tmp_path: Path) -> None:
    o5 = tmp_path / "open5gs"
    (o5 / "subprojects").mkdir(parents=True)
    (o5 / "meson.build").write_text("project('open5gs')\n")
    ue = tmp_path / "ueransim-install"
    (ue / "bin").mkdir(parents=True)
    (ue / "bin" / "nr-gnb").write_text("")
    res = run_build("--dry-run", "open5gs", "ueransim", OPEN5GS_SRC=str(o5), UERANSIM_INSTALL=str(ue),
                    OPEN5GS_IMAGE="me/open5gs:dev", UERANSIM_IMAGE="me/ueransim:dev", APPLY_PATCHES="0")
    assert res.returncode == 0, res.stderr
    o5cmd, uecmd = commands(res)
    assert f"open5gs-src={o5}" in o5cmd and "APPLY_PATCHES=0" in o5cmd
    assert "OPEN5GS_SOURCE=local:open5gs" in o5cmd and "IMAGE_VERSION=dev" in o5cmd
    assert f"testbed.inputs={images.input_hash('open5gs', {'APPLY_PATCHES': '0'})}" in o5cmd
    assert o5cmd[o5cmd.index("-t") + 1] == "me/open5gs:dev"
    assert f"ueransim-install={ue}" in uecmd and uecmd[uecmd.index("-t") + 1] == "me/ueransim:dev"
    # the labels say what each was built from, and claim no pin a local or prebuilt tree may not match
    assert "testbed.open5gs.source=local:open5gs" in o5cmd and "testbed.ueransim.source=prebuilt:ueransim-install" in uecmd
    assert not [a for a in o5cmd + uecmd if a.startswith(("testbed.open5gs.commit", "testbed.ueransim.commit"))]
    # from the pinned upstream: source, tag and commit of images/ueransim/sources.env
    (cmd,) = commands(run_build("--dry-run", "ueransim"))
    pin = images.sources("ueransim")["ueransim"]
    assert {"testbed.ueransim.source=upstream", f"testbed.ueransim.version={pin['version']}",
            f"testbed.ueransim.commit={pin['commit']}", "UERANSIM_SOURCE=upstream"} <= set(cmd)


def test_bad_input_is_a_usage_error_naming_the_fix(tmp_path: Path) -> None:
    res = run_build("--dry-run", "open5gs", OPEN5GS_INSTALL=str(tmp_path))
    assert res.returncode == 2
    assert f"OPEN5GS_INSTALL={tmp_path} does not look right: {tmp_path}/bin/open5gs-nrfd is missing" in res.stderr
    res = run_build("--dry-run", "open5gs", OPEN5GS_SRC=str(tmp_path / "nope"))
    assert res.returncode == 2 and "is not a directory" in res.stderr
    res = run_build("nonsense")
    assert res.returncode == 2 and "valid: open5gs ueransim tools mongo ferretdb" in res.stderr
    assert run_build("--help").returncode == 0


def test_without_an_engine_the_build_says_so() -> None:
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True,
                                                 check=False).returncode == 0:
        pytest.skip("a Docker engine is reachable here: the no-engine message cannot be observed")
    res = run_build("tools", DOCKER=shutil.which("docker") or "docker")
    assert res.returncode == 1
    assert "make doctor" in res.stderr and ("not reachable" in res.stderr or "no Docker CLI" in res.stderr)


@pytest.mark.docker
def test_tools_image_builds_and_runs(tmp_path: Path) -> None:
    """A real `docker buildx build` of the tools image (the quickest: no compile), then its programs."""
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no Docker CLI on this host (docker buildx build needs a Docker engine)")
    info = subprocess.run([docker, "info"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        pytest.skip("no Docker engine reachable (`docker info` failed): the image build needs one")
    if subprocess.run([docker, "buildx", "version"], capture_output=True, check=False).returncode != 0:
        pytest.skip("docker buildx (BuildKit) missing: the Dockerfiles need it")
    tag = "g5tb/tools:pytest"
    res = subprocess.run(["bash", str(BUILD), "tools"], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "TOOLS_IMAGE": tag}, timeout=3600, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    run = subprocess.run([docker, "run", "--rm", tag, "sh", "-c",
                          "/usr/lib/ipsec/charon --version && swanctl --help >/dev/null && rosenpass --version"
                          " && wg --version && wireguard-go --version && tshark --version"
                          " && iperf3 --version && python3 -c 'import pymongo, yaml' && cat /etc/testbed-image.txt"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    pin = images.sources("tools")["strongswan"]["version"]
    assert f"strongswan={pin}" in run.stdout and " ml " in run.stdout and "rosenpass=" in run.stdout


def test_tools_from_a_strongswan_tree_or_install_trees(tmp_path: Path) -> None:
    """The tools image compiles strongSwan and rosenpass: a local strongSwan source tree, or install
    trees (a host that cannot reach GitHub or crates.io, or compiles slowly: the guest)."""
    src = tmp_path / "strongswan"
    src.mkdir()
    (src / "configure.ac").write_text("")
    res = run_build("--dry-run", "tools", STRONGSWAN_SRC=str(src))
    assert res.returncode == 0, res.stderr
    (cmd,) = commands(res)
    assert f"strongswan-src={src}" in cmd and "testbed.tools.source=local:strongswan" in cmd
    inst, rp = tmp_path / "ss-install", tmp_path / "rp"
    (inst / "usr" / "lib" / "ipsec").mkdir(parents=True)
    (inst / "usr" / "lib" / "ipsec" / "charon").write_text("")
    (rp / "bin").mkdir(parents=True)
    (rp / "bin" / "rosenpass").write_text("")
    (cmd,) = commands(run_build("--dry-run", "tools", STRONGSWAN_INSTALL=str(inst), ROSENPASS_INSTALL=str(rp)))
    assert f"strongswan-install={inst}" in cmd and f"rosenpass-install={rp}" in cmd
    assert "testbed.tools.source=prebuilt:ss-install" in cmd
    assert not any(a.startswith("testbed.strongswan.version=") for a in cmd), "no pin label for a prebuilt tree"
    (cmd,) = commands(run_build("--dry-run", "tools"))
    pin = images.sources("tools")["strongswan"]
    assert f"testbed.strongswan.version={pin['version']}" in cmd and f"testbed.strongswan.commit={pin['commit']}" in cmd
    res = run_build("--dry-run", "tools", ROSENPASS_INSTALL=str(tmp_path))
    assert res.returncode == 2 and "bin/rosenpass is missing" in res.stderr


def test_snort_from_local_trees_or_an_install_tree(tmp_path: Path) -> None:
    """IDS=snort (docs/secfn.md): libdaq and snort3 sources, or a prebuilt install tree."""
    daq, snort = tmp_path / "libdaq", tmp_path / "snort3"
    daq.mkdir()
    (daq / "configure.ac").write_text("")
    snort.mkdir()
    (snort / "CMakeLists.txt").write_text("")
    res = run_build("--dry-run", "snort", LIBDAQ_SRC=str(daq), SNORT_SRC=str(snort))
    assert res.returncode == 0, res.stderr
    (cmd,) = commands(res)
    digest = images.input_hash("snort", clean_env())
    assert cmd[cmd.index("-f") + 1] == "images/snort/Dockerfile"
    assert cmd[cmd.index("-t") + 1] == f"g5tb/snort:3.11.1.0-{digest}" and f"testbed.inputs={digest}" in cmd
    assert f"snort-src={snort}" in cmd and f"libdaq-src={daq}" in cmd
    inst = tmp_path / "install"
    (inst / "bin").mkdir(parents=True)
    (inst / "bin" / "snort").write_text("")
    (cmd,) = commands(run_build("--dry-run", "snort", SNORT_INSTALL=str(inst), LIBDAQ_SRC=str(daq)))
    assert f"snort-install={inst}" in cmd and not any(a.startswith("libdaq-src=") for a in cmd)
    assert "SNORT_SOURCE=prebuilt:install" in cmd
    res = run_build("--dry-run", "snort", SNORT_INSTALL=str(tmp_path))
    assert res.returncode == 2 and "bin/snort is missing" in res.stderr
