"""The Open5GS host build the namespace tests run (patches/build-host.sh, docs/patches.md "A host
build for the tests"): $OPEN5GS_BUILD when set, else a build beside the repository
(../ext/open5gs-tls-build), else the one `make open5gs-host-build` cached in G5TB_CACHE
(/var/cache/g5tb/open5gs-host-<version>-<patches>/build), used only when its build-info.txt names
the pinned commits (images/open5gs/sources.env, patches/open5gs-host.env) and the patches' digest:
a cache made from other sources or older patches is never taken for this tree's.

Standard library only: `make host-tools` runs it with the system Python before the venv exists
(`python3 -m testbed.open5gs_host packages`: the runtime libraries of a usable cached build).
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from testbed import ROOT, environment

PATCHES = ROOT / "patches" / "open5gs"
PINS = (ROOT / "images" / "open5gs" / "sources.env", ROOT / "patches" / "open5gs-host.env")
BESIDE = ROOT.parent / "ext" / "open5gs-tls-build"
DEFAULT_CACHE = Path("/var/cache/g5tb")


def _env_file(path: Path) -> dict[str, str]:
    """KEY=value lines of a shell env file (quotes stripped; comments and blanks skipped)."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            out[key] = value.strip().strip('"')
    return out


def pins() -> dict[str, str]:
    """The pinned release and subprojects, the NFs and the runtime packages, as one mapping."""
    out: dict[str, str] = {}
    for path in PINS:
        out.update(_env_file(path))
    return out


def patches_sha256() -> str:
    """The digest build-host.sh records: SHA-256 of `sha256sum` lines of patches/open5gs/*.patch
    (C-sorted, paths relative to patches/)."""
    lines = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  open5gs/{p.name}\n"
                    for p in sorted(PATCHES.glob("*.patch"), key=lambda p: p.name.encode()))
    return hashlib.sha256(lines.encode()).hexdigest()


def cache_dir() -> Path:
    """Where `make open5gs-host-build` puts the build by default (G5TB_CACHE)."""
    base = Path(environment.get("G5TB_CACHE") or DEFAULT_CACHE)
    return base / f"open5gs-host-{pins()['OPEN5GS_VERSION']}-{patches_sha256()[:12]}" / "build"


def expected_info() -> dict[str, str]:
    """What build-info.txt must say for the cached build to be this tree's."""
    p = pins()
    return {"open5gs_version": p["OPEN5GS_VERSION"], "open5gs_commit": p["OPEN5GS_COMMIT"],
            "subproject_freeDiameter": p["FREEDIAMETER_COMMIT"],
            "subproject_prometheus-client-c": p["PROMETHEUS_CLIENT_C_COMMIT"],
            "patches_sha256": patches_sha256(), "nfs": p["NFS"]}


def cache_problem(build: Path) -> str | None:
    """Why the cached build at `build` is not usable; None when it is."""
    info = build / "build-info.txt"
    if not info.is_file():
        return f"no finished build at {build} (no build-info.txt)"
    have = _env_file(info)
    wrong = [f"{k}={have.get(k, '(none)')}, not {v}" for k, v in expected_info().items() if have.get(k) != v]
    if wrong:
        return f"the build at {build} is not of the pinned sources: {'; '.join(wrong)}"
    missing = [nf for nf in pins()["NFS"].split() if not (build / "src" / nf / f"open5gs-{nf}d").is_file()]
    return f"the build at {build} lacks open5gs-{{{','.join(missing)}}}d" if missing else None


def library_path(build: Path) -> str:
    """The NFs' LD_LIBRARY_PATH: $OPEN5GS_LIBRARY_PATH, else the libcurl 8 a build's build-info
    names (patches/build-host.sh curl8: unpacked beside it where the host's libcurl is older); ""."""
    given = environment.get("OPEN5GS_LIBRARY_PATH")
    if given:
        return given
    info = build / "build-info.txt"
    return _env_file(info).get("library_path", "") if info.is_file() else ""


def how_to_build() -> str:
    return (f"`sudo make open5gs-host-build OPEN5GS_SRC=/path/to/open5gs-{pins()['OPEN5GS_VERSION']}` "
            "(a git clone at the pinned tag with subprojects/freeDiameter and prometheus-client-c; docs/patches.md)")


def find(variable: str = "OPEN5GS_BUILD") -> tuple[Path | None, str]:
    """(the build to use, how it was found) or (None, why there is none and how to make one)."""
    given = environment.get(variable)
    if given:
        return Path(given), f"${variable}"
    if (BESIDE / "build.ninja").is_file() or (BESIDE / "src").is_dir():
        return BESIDE, "beside the repository"
    cached = cache_dir()
    problem = cache_problem(cached)
    if problem is None:
        return cached, "the cached build (G5TB_CACHE)"
    return None, f"no Open5GS build: ${variable} not set, none at {BESIDE}, and {problem}: {how_to_build()}"


def runtime_packages() -> list[str]:
    """The Debian packages a cached build's NFs load (entries "a|b": this release's name of one)."""
    return pins().get("RUNTIME_PACKAGES", "").split()


def main(argv: list[str]) -> int:
    if argv == ["find"]:
        build, how = find()
        if build is None:
            print(how, file=sys.stderr)
            return 1
        print(build)
        return 0
    if argv == ["status"]:
        # one line for `make host-tools`: which build the host NF tests will use, or how to make one
        build, how = find()
        print(f"setup: Open5GS host build for the namespace tests: {build} ({how})" if build else f"setup: {how}")
        return 0
    if argv == ["packages"]:
        # the runtime libraries, only where a usable build is cached (else nothing to run)
        if find()[0] is not None:
            print(" ".join(runtime_packages()))
        return 0
    print("usage: python3 -m testbed.open5gs_host find|status|packages", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
