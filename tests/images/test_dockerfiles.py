"""Static checks of images/*/Dockerfile, plus the patch step run for real with `patch`.

What a broken Dockerfile would cost is a failed or silently wrong image far from here (a
bookworm libcurl that breaks the SBI, a named context that no longer replaces a stage, patches
applied out of order), so these tests read the Dockerfiles the way BuildKit does.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from testbed import images
from tests.conftest import ROOT, require_tools

IMAGES = ROOT / "images"
DOCKERFILES = {name: IMAGES / name / "Dockerfile" for name in ("open5gs", "ueransim", "tools", "ferretdb", "snort", "oai")}
DEBIAN_TAGS = {"debian:bookworm-slim", "debian:trixie-slim"}
# stages that a BuildKit named build context of the same name replaces (docs/images.md)
NAMED_STAGES = {
    "open5gs": ["open5gs-src", "open5gs-build", "open5gs-install", "runtime"],
    "ueransim": ["ueransim-src", "ueransim-build", "ueransim-install", "runtime"],
    "ferretdb": ["ferretdb-build", "ferretdb-install", "runtime"],
    "tools": ["runtime"],
    "snort": ["libdaq-src", "snort-src", "snort-build", "snort-install", "runtime"],
    "oai": ["oai-src", "asn1c-src", "simde-src", "oai-build", "oai-install", "runtime"],
}


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)   # (KEYWORD, rest)

    def args(self) -> dict[str, str]:
        out = {}
        for kw, rest in self.instructions:
            if kw == "ARG" and "=" in rest:
                k, v = rest.split("=", 1)
                out[k.strip()] = v.strip()
        return out

    def runs(self) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == "RUN"]

    def copies_from(self) -> list[tuple[str, str, str]]:
        """(from, src, dst) of every COPY --from=..."""
        out = []
        for kw, rest in self.instructions:
            m = re.match(r"--from=(\S+)\s+(\S+)\s+(\S+)$", rest) if kw == "COPY" else None
            if m:
                out.append((m.group(1), m.group(2), m.group(3)))
        return out


@dataclass
class Dockerfile:
    path: Path
    text: str
    global_args: dict[str, str]
    stages: dict[str, Stage]


def parse(path: Path) -> Dockerfile:
    text = path.read_text(encoding="utf-8")
    logical: list[str] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        logical.append(buf + line)
        buf = ""
    global_args: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    current: Stage | None = None
    for i, line in enumerate(logical):
        kw, _, rest = line.strip().partition(" ")
        kw = kw.upper()
        if kw == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest.strip(), re.I)
            assert m, f"{path}: cannot parse FROM {rest!r}"
            current = Stage(name=m.group(2) or f"#{i}", base=m.group(1))
            stages[current.name] = current
        elif current is None:
            assert kw == "ARG", f"{path}: only ARG may precede the first FROM, found {kw}"
            k, _, v = rest.partition("=")
            global_args[k.strip()] = v.strip()
        else:
            current.instructions.append((kw, rest.strip()))
    return Dockerfile(path, text, global_args, stages)


@pytest.fixture(scope="module", params=sorted(DOCKERFILES))
def dockerfile(request: pytest.FixtureRequest) -> tuple[str, Dockerfile]:
    return request.param, parse(DOCKERFILES[request.param])


@pytest.fixture(scope="module")
def stack_values() -> dict:
    return yaml.safe_load((ROOT / "nf-configs" / "stack.yaml").read_text(encoding="utf-8"))


def test_every_stage_is_debian_slim_or_scratch(dockerfile: tuple[str, Dockerfile]) -> None:
    name, df = dockerfile
    base = df.global_args.get("DEBIAN_IMAGE", "")
    tag, _, digest = base.partition("@")
    assert tag in DEBIAN_TAGS and re.fullmatch(r"sha256:[0-9a-f]{64}", digest), \
        f"{df.path}: ARG DEBIAN_IMAGE must be one of {sorted(DEBIAN_TAGS)} pinned by digest (tag@sha256:...)"
    stage_names = set(df.stages)
    for stage in df.stages.values():
        assert stage.base in {"${DEBIAN_IMAGE}", "scratch"} or stage.base in stage_names, \
            f"{df.path}: stage {stage.name} starts FROM {stage.base}, not the pinned Debian slim base"


# The images that need Debian 13 (OpenSSL >= 3.5: the post-quantum TLS groups at the NFs' server
# and libcurl client); every other image stays on bookworm (testbed/images.py base_variable).
DEBIAN13_IMAGES = {"open5gs"}


def test_one_base_image_per_suite() -> None:
    bases = {name: parse(path).global_args["DEBIAN_IMAGE"] for name, path in DOCKERFILES.items()}
    for suite, names in (("trixie", DEBIAN13_IMAGES), ("bookworm", set(bases) - DEBIAN13_IMAGES)):
        mine = {n: bases[n] for n in names if n in bases}
        assert len(set(mine.values())) <= 1, f"the {suite} Dockerfiles pin different bases: {mine}"
        assert all(b.startswith(f"debian:{suite}-slim@") for b in mine.values()), mine


def test_apt_never_pins_an_exact_point_release(dockerfile: tuple[str, Dockerfile]) -> None:
    """`pkg=1.2.3-4` stops building the day the suite publishes the next revision: packages come
    by suite (`-t bookworm-backports`) and are held to a minimum version after the install."""
    name, df = dockerfile
    for stage in df.stages.values():
        for run in stage.runs():
            assert "apt-get install" not in run, f"{df.path} ({stage.name}): install through {APT_SCRIPT}"
            for cmd in re.findall(r"apt-install\.sh[^;&|]*", run):
                pinned = [w for w in cmd.split() if re.match(r"^\"?[a-z0-9][a-z0-9.+-]*=\S", w)]
                assert not pinned, f"{df.path} ({stage.name}): exact version pin {pinned}"


APT_SCRIPT = "images/lib/apt-install.sh"


def test_no_syntax_directive_so_offline_builds_work(dockerfile: tuple[str, Dockerfile]) -> None:
    # `# syntax=docker/dockerfile:1` makes BuildKit pull a frontend image from a registry
    name, df = dockerfile
    assert not re.search(r"^#\s*syntax\s*=", df.text, re.M | re.I), f"{df.path}: drop the # syntax= line"


def test_named_context_stages_exist(dockerfile: tuple[str, Dockerfile]) -> None:
    name, df = dockerfile
    missing = [s for s in NAMED_STAGES[name] if s not in df.stages]
    assert not missing, f"{df.path}: stages {missing} are documented in docs/images.md but missing"
    assert list(df.stages)[-1] == "runtime", f"{df.path}: the last stage (the image) must be `runtime`"


@pytest.mark.parametrize("image,prefix", [("open5gs", "open5gs"), ("ueransim", "ueransim"),
                                          ("ferretdb", "ferretdb")])
def test_install_stage_is_a_bare_tree_the_runtime_copies_whole(image: str, prefix: str) -> None:
    """A named context (a plain directory) can only replace the install stage 1:1 if that stage
    is FROM scratch holding the tree at its root, and the runtime copies `/` of it."""
    df = parse(DOCKERFILES[image])
    install = df.stages[f"{prefix}-install"]
    assert install.base == "scratch"
    assert [c[0] for c in install.copies_from()] == [f"{prefix}-build"]
    runtime_sources = {c[0]: c[1] for c in df.stages["runtime"].copies_from()}
    assert f"{prefix}-install" in runtime_sources, f"{df.path}: runtime must COPY --from={prefix}-install"
    if image != "ferretdb":
        assert runtime_sources[f"{prefix}-install"] == "/"
        # the source stage is empty (the build then clones the pin) unless a named context replaces it
        src = df.stages[f"{prefix}-src"]
        assert src.base == "scratch" and src.instructions == []
        build_sources = {c[0]: c[1] for c in df.stages[f"{prefix}-build"].copies_from()}
        assert build_sources.get(f"{prefix}-src") == "/", f"{df.path}: the build must COPY --from={prefix}-src /"


@pytest.mark.parametrize("image,key", [("open5gs", "open5gs_version"), ("ueransim", "ueransim_version"),
                                       ("oai", "oai_version")])
def test_pinned_versions_match_stack_yaml(image: str, key: str, stack_values: dict) -> None:
    pin = images.sources(image)[image]
    assert pin["version"] == stack_values[key], \
        f"images/{image}/sources.env: {image.upper()}_VERSION {pin['version']}, but nf-configs/stack.yaml {key} " \
        f"= {stack_values[key]}"


def test_every_pin_is_a_repository_and_a_full_commit() -> None:
    pinned = {image: images.sources(image) for image in DOCKERFILES}
    assert {image: sorted(p) for image, p in pinned.items() if p} == {
        "oai": ["asn1c", "oai", "simde"], "open5gs": ["open5gs"], "snort": ["libdaq", "snort"],
        "tools": ["strongswan"], "ueransim": ["ueransim"]}
    for image, pins in pinned.items():
        for src, pin in pins.items():
            assert re.fullmatch(r"[0-9a-f]{40}", pin["commit"]), (image, src)
            assert re.fullmatch(r"https://\S+\.git", pin["repo"]), (image, src)
            # no Dockerfile carries a second copy of a pin
            text = DOCKERFILES[image].read_text(encoding="utf-8")
            assert pin["commit"] not in text and f"{src.upper()}_COMMIT" not in text, (image, src)


def test_open5gs_version_meets_the_floor(stack_values: dict) -> None:
    m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", stack_values["open5gs_version"])
    assert m and (2, 7, 5) <= tuple(map(int, m.groups())) < (2, 8, 0), "Open5GS must be 2.7.x, >= 2.7.5"
    m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", stack_values["ueransim_version"])
    assert m and (3, 2, 7) <= tuple(map(int, m.groups())) < (3, 3, 0), "UERANSIM must be 3.2.x, >= 3.2.7"


def test_open5gs_runtime_takes_libcurl_from_backports_on_bookworm() -> None:
    df = parse(DOCKERFILES["open5gs"])
    if df.global_args["DEBIAN_IMAGE"].split("@")[0] != "debian:bookworm-slim":
        pytest.skip("base is not bookworm: its own libcurl is new enough")
    runtime = df.stages["runtime"]
    run = " ".join(runtime.runs())
    assert re.search(r"apt-install\.sh -t bookworm-backports libcurl3-gnutls(\s|$)", run), \
        "libcurl3-gnutls must come from the bookworm-backports suite"
    minimum = runtime.args()["CURL_MIN_VERSION"]
    assert int(minimum.split(".")[0]) >= 8, f"CURL_MIN_VERSION {minimum}: 7.x breaks the SBI"
    # and the image build itself refuses anything older
    assert 'dpkg --compare-versions "${got}" ge "${CURL_MIN_VERSION}"' in run


PATCH_SCRIPT = "images/lib/apply-patches.sh"


def test_patches_are_applied_in_c_locale_sorted_order() -> None:
    df = parse(DOCKERFILES["open5gs"])
    run = " ".join(next(r for r in df.stages["open5gs-build"].runs() if "patches/open5gs" in r).split())
    assert f"cd /ctx && bash {PATCH_SCRIPT} patches/open5gs /src " in run and '"${APPLY_PATCHES}"' in run
    script = (ROOT / PATCH_SCRIPT).read_text(encoding="utf-8")
    assert "LC_ALL=C sort" in script and "'*.patch'" in script and "--fuzz=0" in script
    # the patch step runs after the source copy and before meson
    kinds = [(kw, rest) for kw, rest in df.stages["open5gs-build"].instructions if kw in ("COPY", "RUN")]
    idx_copy = next(i for i, (kw, rest) in enumerate(kinds) if kw == "COPY" and "open5gs-src" in rest)
    idx_patch = next(i for i, (kw, rest) in enumerate(kinds) if kw == "RUN" and "patches/open5gs" in rest)
    idx_meson = next(i for i, (kw, rest) in enumerate(kinds) if kw == "RUN" and "meson setup" in rest)
    assert idx_copy < idx_patch < idx_meson


def _patch_step(tmp: Path) -> str:
    """The open5gs-build stage's patch command, on a build context at tmp/ctx that holds the
    patch script as the bind mount of the build would."""
    df = parse(DOCKERFILES["open5gs"])
    run = next(r for r in df.stages["open5gs-build"].runs() if "patches/open5gs" in r)
    run = re.sub(r"^--mount=\S+\s+", "", run)
    (tmp / "ctx" / PATCH_SCRIPT).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / PATCH_SCRIPT, tmp / "ctx" / PATCH_SCRIPT)
    for container, host in (("/ctx", tmp / "ctx"), ("/src", tmp / "src"), ("/out", tmp / "out")):
        run = run.replace(container, str(host))
    return run


def _make_patch(tmp: Path, name: str, before: str, after: str) -> str:
    a, b = tmp / "pa" / name, tmp / "pb" / name
    a.parent.mkdir(parents=True, exist_ok=True)
    b.parent.mkdir(parents=True, exist_ok=True)
    a.write_text(before)
    b.write_text(after)
    res = subprocess.run(["diff", "-u", "--label", f"a/{name}", "--label", f"b/{name}", str(a), str(b)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 1, res.stderr
    return res.stdout


def test_patch_step_runs_for_real_in_sorted_order(tmp_path: Path) -> None:
    """The Dockerfile's own patch command, run by sh with the real `patch`: 0002 before 0010
    (C-locale byte order), each patch building on the previous one."""
    require_tools("patch", "diff", "sh", "sha256sum")
    src = tmp_path / "src"
    src.mkdir()
    (src / "nf.c").write_text("one\n")
    patches = tmp_path / "ctx" / "patches" / "open5gs"
    patches.mkdir(parents=True)
    # written in reverse order so that directory order cannot pass by luck
    (patches / "0010-third.patch").write_text(_make_patch(tmp_path, "nf.c", "one\ntwo\n", "one\ntwo\nthree\n"))
    (patches / "0002-second.patch").write_text(_make_patch(tmp_path, "nf.c", "one\n", "one\ntwo\n"))
    (patches / "README.md").write_text("not a patch\n")
    res = subprocess.run(["sh", "-c", _patch_step(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "APPLY_PATCHES": "1"}, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (src / "nf.c").read_text() == "one\ntwo\nthree\n"
    order = [line.split()[1] for line in
             (tmp_path / "out/opt/open5gs/share/testbed/patches.txt").read_text().splitlines()]
    assert order == ["patches/open5gs/0002-second.patch", "patches/open5gs/0010-third.patch"]
    assert "patches applied: 2" in res.stdout


def test_patch_step_fails_loudly_on_a_patch_that_does_not_apply(tmp_path: Path) -> None:
    require_tools("patch", "diff", "sh", "sha256sum")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "nf.c").write_text("something else\n")
    patches = tmp_path / "ctx" / "patches" / "open5gs"
    patches.mkdir(parents=True)
    (patches / "0001-x.patch").write_text(_make_patch(tmp_path, "nf.c", "one\n", "one\ntwo\n"))
    res = subprocess.run(["sh", "-c", _patch_step(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "APPLY_PATCHES": "1"}, check=False)
    assert res.returncode != 0
    assert "patch patches/open5gs/0001-x.patch does not apply" in res.stderr


def test_patch_step_accepts_no_patch_folder_and_apply_patches_0(tmp_path: Path) -> None:
    require_tools("patch", "sh")
    (tmp_path / "src").mkdir()
    (tmp_path / "ctx").mkdir()
    res = subprocess.run(["sh", "-c", _patch_step(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "APPLY_PATCHES": "1"}, check=False)
    assert res.returncode == 0 and "patches applied: 0" in res.stdout, res.stderr
    (tmp_path / "ctx" / "patches" / "open5gs").mkdir(parents=True)
    (tmp_path / "ctx" / "patches" / "open5gs" / "0001-bad.patch").write_text("garbage\n")
    res = subprocess.run(["sh", "-c", _patch_step(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "APPLY_PATCHES": "0"}, check=False)
    assert res.returncode == 0 and "patches applied: 0" in res.stdout, res.stderr


STEP_SCRIPTS = ["!images/lib/clone-pinned.sh", "!images/lib/apt-install.sh", "!images/lib/record-image.sh"]


def _ignore_rules(image: str) -> list[str]:
    return [line.strip() for line in (IMAGES / image / "Dockerfile.dockerignore").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_only_patches_pins_and_step_scripts_reach_the_build_contexts() -> None:
    for image in ("open5gs", "oai"):
        assert _ignore_rules(image) == ["*", f"!patches/{image}/*.patch", "!images/lib/apply-patches.sh",
                                        f"!images/{image}/sources.env", *STEP_SCRIPTS], image
    for image in ("ueransim", "snort"):
        assert _ignore_rules(image) == ["*", f"!images/{image}/sources.env", *STEP_SCRIPTS], image
    assert _ignore_rules("ferretdb") == ["*", "!images/lib/apt-install.sh"]
    # the pass-through's source, and the overlay plug-ins' holder programs (never the core's scripts)
    assert _ignore_rules("tools") == ["*", "!testbed/secfn/engines/passthrough/nfq_accept.c", "!images/lib/apt-install.sh",
                                      "!images/lib/clone-pinned.sh", "!images/tools/sources.env",
                                      "!*/*.sh", "scripts/*", "tls-certs/*", "patches/*"]


def test_nothing_privileged() -> None:
    for path in sorted(IMAGES.rglob("*")) + [ROOT / "scripts" / "build.sh", ROOT / "mk" / "20-build.mk"]:
        if path.is_file():
            assert "privileged" not in path.read_text(encoding="utf-8").lower(), f"{path} mentions privileged"


CLONE_SCRIPT = "images/lib/clone-pinned.sh"
# every pinned upstream source: (image, source, the build stage's destination of its tree)
PINNED_CLONES = (("open5gs", "open5gs", "/src"), ("ueransim", "ueransim", "/src"),
                 ("snort", "libdaq", "/src/libdaq"), ("snort", "snort", "/src/snort3"),
                 ("oai", "oai", "/src"), ("oai", "asn1c", "/asn1c-src"), ("oai", "simde", "/usr/include/simde"),
                 ("tools", "strongswan", "/src/strongswan"))


def clone_calls(image: str) -> dict[str, list[str]]:
    """source -> the arguments images/<image>/Dockerfile's build stage gives images/lib/clone-pinned.sh."""
    df = parse(DOCKERFILES[image])
    build = next(s for s in df.stages.values() if s.name.endswith("-build") and s.base == "${DEBIAN_IMAGE}")
    runs = [" ".join(r.split()) for r in build.runs() if CLONE_SCRIPT in r]
    assert len(runs) == 1 and runs[0].startswith("--mount=type=bind,source=images,target=/ctx/images cd /ctx && ")
    calls = [shlex.split(c.split(CLONE_SCRIPT, 1)[1]) for c in runs[0].split("&&")[1:]]
    return {args[1].lower(): args for args in calls}


def test_every_pinned_source_goes_through_the_shared_script() -> None:
    """One clone-and-verify (images/lib/clone-pinned.sh) for every upstream source, in the build
    stage, right after the COPY of its `<source>-src` stage to the same place (a named context's
    tree there is used as it is); the pins come from the image's sources.env, and no Dockerfile
    clones by itself."""
    for image, src, dest in PINNED_CLONES:
        assert clone_calls(image)[src] == [f"images/{image}/sources.env", src.upper(), dest], (image, src)
        build = next(s for s in parse(DOCKERFILES[image]).stages.values() if s.name.endswith("-build")
                     and s.base == "${DEBIAN_IMAGE}")
        assert (f"{src}-src", "/", dest) in build.copies_from(), (image, src)
        assert src in images.sources(image), (image, src)
    for path in DOCKERFILES.values():
        assert not re.search(r"git (clone|fetch)", path.read_text(encoding="utf-8")), path


RECORD_SCRIPT = "images/lib/record-image.sh"


def record_call(image: str) -> list[str]:
    """The arguments the image's runtime stage gives images/lib/record-image.sh."""
    runs = [r for r in parse(DOCKERFILES[image]).stages["runtime"].runs() if "record-image.sh" in r]
    assert len(runs) == 1 and runs[0].startswith("--mount=type=bind,source=images/lib,target=/ctx bash "
                                                 "/ctx/record-image.sh ")
    return shlex.split(runs[0].split("record-image.sh", 1)[1])


@pytest.mark.parametrize("image,programs", [
    ("open5gs", ["/opt/open5gs/bin/open5gs-*"]),
    ("ueransim", ["/opt/ueransim/bin/nr-gnb", "/opt/ueransim/bin/nr-ue", "/opt/ueransim/bin/nr-cli"]),
    ("snort", ["/opt/snort/bin/snort"]),
    ("oai", ["/opt/oai/bin/nr-softmodem", "/opt/oai/bin/nr-cuup", "/opt/oai/bin/nr-uesoftmodem",
             "/opt/oai/lib/librfsimulator.so", "/opt/oai/lib/libparams_libconfig.so"])])
def test_every_compiled_image_records_its_contents_and_checks_its_programs(image: str, programs: list[str]) -> None:
    """The contents file the manifests read (its source, its packages, the build's own record) and the
    refusal of a tree without its programs or their libraries: one step, images/lib/record-image.sh."""
    args = record_call(image)
    assert args[:4] == [image, "${IMAGE_VERSION}", f"${{{image.upper()}_SOURCE}}", f"/opt/{image}"]
    assert set(programs) <= set(args[5:])
    assert f"!{RECORD_SCRIPT}" in _ignore_rules(image)


def test_open5gs_meson_uses_nodownload_when_subprojects_are_present() -> None:
    df = parse(DOCKERFILES["open5gs"])
    run = next(r for r in df.stages["open5gs-build"].runs() if "meson setup" in r)
    assert "subprojects/freeDiameter/meson.build" in run and "subprojects/prometheus-client-c/meson.build" in run
    assert "wrap=nodownload" in run and '--wrap-mode="${wrap}"' in run
    assert "--prefix=/opt/open5gs" in run and "meson install" in run


def test_labels_record_versions() -> None:
    """The Dockerfiles label what they require (minimum versions); what a build was made from (the
    pins, the source tree) is labelled by scripts/build.sh from testbed/images.py (tests/testbed/test_images.py)."""
    for image, keys in (("open5gs", ["testbed.libcurl.min"]), ("ueransim", []), ("oai", []), ("snort", []),
                        ("tools", ["testbed.wireguard_go.min", "testbed.tshark.min",
                                   "testbed.suricata.min", "testbed.ditg.min"]),
                        ("ferretdb", ["testbed.ferretdb.version"])):
        runtime = parse(DOCKERFILES[image]).stages["runtime"]
        labels = " ".join(rest for kw, rest in runtime.instructions if kw == "LABEL")
        for key in ["org.opencontainers.image.version", *keys]:
            assert f"{key}=" in labels, f"images/{image}/Dockerfile: label {key} missing"


TOOLS_PACKAGES = ["libssl3", "libsodium23", "wireguard-tools", "wireguard-go", "tshark", "iperf3", "iputils-ping", "iproute2", "nftables", "python3",
                  "python3-pymongo", "python3-yaml", "curl", "d-itg", "socat", "suricata", "iptables",
                  "libnetfilter-queue1"]


def test_tools_image_has_every_program_the_issue_lists() -> None:
    run = " ".join(parse(DOCKERFILES["tools"]).stages["runtime"].runs())
    missing = [p for p in TOOLS_PACKAGES if not re.search(rf"(^|\s){re.escape(p)}(\s|;|$)", run)]
    assert not missing, f"images/tools/Dockerfile does not install {missing}"
    # strongSwan and rosenpass are compiled (no Debian suite builds strongSwan's ml plugin): the
    # runtime checks that the plugins the holders load are there and records what it got
    for needed in ('*" ml "*', '*" kernel-libipsec "*', "strongswan=", "strongswan_plugins=", "rosenpass="):
        assert needed in run, f"images/tools/Dockerfile: the runtime check lacks {needed}"


def test_tools_image_compiles_strongswan_with_ml_kem_and_rosenpass_locked() -> None:
    """IKEv2 with ML-KEM needs strongSwan >= 6.0.2 with its ml plugin (docs/post-quantum.md); the
    holders need kernel-libipsec, swanctl/vici and the openssl plugin; rosenpass comes --locked."""
    df = parse(DOCKERFILES["tools"])
    build = " ".join(" ".join(r.split()) for r in df.stages["strongswan-build"].runs())
    for flag in ("--enable-ml", "--enable-openssl", "--enable-kernel-libipsec", "--enable-swanctl",
                 "--libexecdir=/usr/lib", "test -f /install/usr/lib/ipsec/plugins/libstrongswan-ml.so"):
        assert flag in build, f"strongswan-build lacks {flag}"
    version = images.sources("tools")["strongswan"]["version"]
    assert tuple(int(x) for x in version.split(".")[:3]) >= (6, 0, 2), version
    rosenpass = " ".join(df.stages["rosenpass-build"].runs())
    assert "cargo install --locked rosenpass --version" in rosenpass
    assert re.fullmatch(r"\d+\.\d+\.\d+", df.stages["rosenpass-build"].args()["ROSENPASS_VERSION"])
    assert df.stages["strongswan-install"].base == "scratch" and df.stages["rosenpass-install"].base == "scratch"


TOOLS_MINIMUMS = (("wireguard-tools", "WIREGUARD_TOOLS_MIN"),
                  ("wireguard-go", "WIREGUARD_GO_MIN"), ("tshark", "TSHARK_MIN"), ("iperf3", "IPERF3_MIN"),
                  ("d-itg", "DITG_MIN"), ("suricata", "SURICATA_MIN"))


def _tools_check_functions() -> str:
    """The Dockerfile's own `upstream`/`check` shell functions, cut out of its RUN step."""
    run = next(r for r in parse(DOCKERFILES["tools"]).stages["runtime"].runs() if "check()" in r)
    start = run.index("upstream()")
    end = run.index("{ echo \"image=tools\"")
    return run[start:end]


def test_tools_minimum_versions_hold_on_this_bookworm_host() -> None:
    """The Dockerfile's own check, run by sh with dpkg on this host (the development machines run
    bookworm, the image's suite): every installed package passes its minimum, and a minimum above
    the installed version fails the way the build would."""
    require_tools("dpkg-query", "dpkg", "sh")
    args = parse(DOCKERFILES["tools"]).stages["runtime"].args()
    funcs = _tools_check_functions()
    checked = 0
    for pkg, arg in TOOLS_MINIMUMS:
        if subprocess.run(["dpkg-query", "-W", pkg], capture_output=True, check=False).returncode != 0:
            continue
        res = subprocess.run(["sh", "-c", f"set -eu; {funcs} check {pkg} {args[arg]}"], capture_output=True,
                             text=True, check=False)
        assert res.returncode == 0 and res.stdout.startswith(f"{pkg}="), res.stderr
        too_new = subprocess.run(["sh", "-c", f"set -eu; {funcs} check {pkg} 999"], capture_output=True,
                                 text=True, check=False)
        assert too_new.returncode != 0 and "older than the minimum 999" in too_new.stderr
        checked += 1
    if checked == 0:
        pytest.skip("none of the checked packages is installed here: run `make setup`")


def test_default_image_names_have_one_home() -> None:
    defaults = dict(line.split("=", 1) for line in (IMAGES / "defaults.env").read_text().splitlines()
                    if re.match(r"^[A-Z0-9_]+=", line))
    assert defaults == {"OPEN5GS_IMAGE": "g5tb/open5gs:2.7.7", "UERANSIM_IMAGE": "g5tb/ueransim:3.2.7",
                        "TOOLS_IMAGE": "g5tb/tools:1", "MONGO_IMAGE": "mongo:6.0",
                        "FERRETDB_IMAGE": "g5tb/ferretdb:1.24.0", "SNORT_IMAGE": "g5tb/snort:3.11.1.0",
                        "OAI_IMAGE": "g5tb/oai:2.3.0"}
    # the image version label follows the tag, the Dockerfiles' defaults agree with it
    for image, var in (("open5gs", "OPEN5GS_IMAGE"), ("ueransim", "UERANSIM_IMAGE"), ("tools", "TOOLS_IMAGE"),
                       ("ferretdb", "FERRETDB_IMAGE"), ("snort", "SNORT_IMAGE"), ("oai", "OAI_IMAGE")):
        args = parse(DOCKERFILES[image]).stages["runtime"].args()
        assert args["IMAGE_VERSION"] == defaults[var].rsplit(":", 1)[1]
    # scripts that carry their own fallback must agree (the stack's compose wrapper)
    compose_sh = ROOT / "scripts" / "lib" / "compose.sh"
    if compose_sh.exists():
        for var, value in defaults.items():
            m = re.search(rf"\$\{{{var}:=([^}}]+)\}}", compose_sh.read_text())
            if m:
                assert m.group(1) == value, f"scripts/lib/compose.sh defaults {var} to {m.group(1)}, " \
                                            f"images/defaults.env says {value}"


def test_open5gs_runtime_registers_both_library_dirs() -> None:
    """meson puts Open5GS's libraries in lib/ (--libdir=lib) but the prometheus-client-c
    subproject installs libprom.so in lib/x86_64-linux-gnu/ (seen in the VM build)."""
    run = " ".join(parse(DOCKERFILES["open5gs"]).stages["runtime"].runs())
    assert "/opt/open5gs/lib\\n/opt/open5gs/lib/x86_64-linux-gnu" in run and "ldconfig" in run
    # and then the build fails on any unresolved library
    assert run.index("ldconfig") < run.index("record-image.sh")


def test_snort_install_stage_is_a_bare_tree_and_the_runtime_checks_nfq() -> None:
    """images/snort: a prebuilt install tree (named context snort-install) replaces the compile;
    the image refuses a snort without the NFQ DAQ module (inline IPS) or a missing library."""
    df = parse(DOCKERFILES["snort"])
    assert df.stages["snort-install"].base == "scratch"
    assert df.stages["snort-install"].copies_from() == [("snort-build", "/opt/snort/", "/")]
    assert ("snort-install", "/", "/opt/snort/") in df.stages["runtime"].copies_from()
    build = " ".join(df.stages["snort-build"].runs())
    assert "--prefix=/opt/snort" in build and "PKG_CONFIG_PATH=/opt/snort/lib/pkgconfig" in build
    assert "libdaq_static_nfq.pc" in build                    # the NFQ module really built
    runtime = " ".join(df.stages["runtime"].runs())
    assert "--daq-list | grep -q '^nfq('" in runtime and "/opt/snort/bin/snort" in record_call("snort")
    assert " iptables " in runtime                              # the entrypoint's NFQUEUE rules
    # the pair that builds together (docs/secfn.md): snort3 3.11.1.0 with libdaq v3.0.25
    pins = images.sources("snort")
    assert pins["libdaq"]["version"] == "v3.0.25" and pins["snort"]["version"] == "3.11.1.0"


def test_tools_image_carries_every_overlay_plugins_holder_programs() -> None:
    """The holders run the plug-ins' entrypoints from the image (no mount of the repository): every
    overlay plug-in with an entrypoint has it, and its helpers, in the tools build's context; nothing
    of the core's own scripts is."""
    from testbed import registry
    ctx = {p.as_posix() for p in images.context_files("tools")}
    for ov in registry.overlays():
        if ov.entrypoint:
            folder = ov.folder.relative_to(ROOT).as_posix()
            assert f"{folder}/{ov.entrypoint}" in ctx, ov.name
            assert {f"{folder}/{p.name}" for p in ov.folder.glob("*.sh")} <= ctx, ov.name
    assert not any(p.startswith(("scripts/", "tls-certs/", "patches/")) for p in ctx), ctx
    df = parse(DOCKERFILES["tools"])
    assert ("holders", "/opt/testbed", "/opt/testbed") in df.stages["runtime"].copies_from()


def test_tools_image_builds_the_passthrough_from_the_repository_source() -> None:
    df = parse(DOCKERFILES["tools"])
    stage = df.stages["nfq-accept-build"]
    assert ("COPY", "testbed/secfn/engines/passthrough/nfq_accept.c /src/nfq_accept.c") in stage.instructions
    assert ("nfq-accept-build", "/nfq-accept", "/usr/local/bin/nfq-accept") in df.stages["runtime"].copies_from()
    assert (ROOT / "testbed" / "secfn" / "engines" / "passthrough" / "nfq_accept.c").is_file()
    run = " ".join(df.stages["runtime"].runs())
    assert "-t bookworm-backports suricata" in run and 'check suricata "${SURICATA_MIN}"' in run


def test_the_strongswan_configure_line_gives_only_options_the_pinned_release_knows() -> None:
    """The tools image passed `--disable-scepclient` to strongSwan 6.0.6's configure, which has had
    no scepclient since 5.9.8 (`unrecognized options`, issue 30 item 6). Every --enable/--disable
    and --with/--without of the configure line must be one the pinned release's configure.ac
    declares (tests/images/strongswan-<version>-configure.txt, read from that tag)."""
    pins = dict(line.split("=", 1) for line in (IMAGES / "tools" / "sources.env").read_text().splitlines()
                if line and not line.startswith("#"))
    known_file = ROOT / "tests" / "images" / f"strongswan-{pins['STRONGSWAN_VERSION']}-configure.txt"
    assert known_file.exists(), f"the pin moved: list the new release's configure options in {known_file}"
    known = {tuple(line.split()) for line in known_file.read_text().splitlines() if line and not line.startswith("#")}
    text = DOCKERFILES["tools"].read_text().replace("\\\n", " ")
    lines = re.findall(r"\./configure ([^;&|]*)", text)
    assert len(lines) == 1, lines
    options = re.findall(r"--(enable|disable|with|without)-([a-z0-9_-]+)", lines[0])
    assert len(options) >= 5, options               # the line was found whole
    unknown = [f"--{kind}-{name}" for kind, name in options
               if ("with" if kind in ("with", "without") else "enable", name) not in known]
    assert unknown == [], f"not options of strongSwan {pins['STRONGSWAN_VERSION']}'s configure: {unknown}"
