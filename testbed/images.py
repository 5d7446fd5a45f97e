"""The testbed's images: their build inputs, the content hash in their tags, the rebuild decision,
and what an image says it contains (docs/images.md).

An image built here is tagged `<name>:<version>-<hash>`, where `<name>:<version>` comes from
images/defaults.env and `<hash>` is the first 12 hex digits of a SHA-256 over its build inputs:
the Dockerfile, its .dockerignore, every repository file that .dockerignore lets into the
build context (the Open5GS patches), and the build knobs that change the result (a base image
override DEBIAN_IMAGE, APPLY_PATCHES=0). A changed patch or Dockerfile is therefore a tag that
does not exist yet, and `make up` builds it. A local source or install tree
(OPEN5GS_SRC/..._INSTALL) is not hashed: it is recorded in the image's
`testbed.<image>.source` label and the run manifests instead.

A variable set in the environment (OPEN5GS_IMAGE=me/open5gs:dev) names an image as it is: it
is never retagged; `make up` only warns when its `testbed.inputs` label differs.

Standard library only: scripts/lib/images.sh runs `python3 -m testbed.cli.images env` before any
virtual environment may exist.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Mapping

from testbed import environment
from testbed import ROOT

DEFAULTS_FILE = "images/defaults.env"
BUILT = ("open5gs", "ueransim", "tools", "ferretdb", "snort", "oai")   # images with a Dockerfile here
HASH_LEN = 12
INPUTS_LABEL = "testbed.inputs"
BASE_LABEL = "testbed.base"
CONTENTS_FILE = "/etc/testbed-image.txt"
SOURCES_FILE = "sources.env"                   # images/<name>/sources.env: the upstream pins
# MONGO_IMAGE=ferretdb: the testbed's own FerretDB image, under its hashed tag
FERRETDB_ALIAS = "ferretdb"


class ImageError(RuntimeError):
    """A build input or image is missing or unreadable; the message says which and what to do."""


def var(name: str) -> str:
    """`open5gs` -> OPEN5GS_IMAGE."""
    return f"{name.upper()}_IMAGE"


def defaults(root: Path = ROOT) -> dict[str, str]:
    """VAR -> `<name>:<version>` from images/defaults.env (the one home of the image names)."""
    path = Path(root) / DEFAULTS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ImageError(f"{path} is missing or unreadable ({exc}): it holds the default image names") from None
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _ignore_rules(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.strip().startswith("#")]


def context_files(name: str, root: Path = ROOT) -> list[Path]:
    """Repository files that reach the build context of image `name`, relative to root.

    Every .dockerignore here starts with `*` (nothing) and re-includes with `!pattern`; a
    later plain pattern excludes again (Docker's order: the last matching rule wins).
    """
    root = Path(root)
    ignore = root / "images" / name / "Dockerfile.dockerignore"
    rules = _ignore_rules(ignore)
    if not rules or rules[0] != "*":
        raise ImageError(f"{ignore}: must start with `*` (an explicit list of what enters the build context)")
    candidates: set[Path] = set()
    for rule in rules[1:]:
        if rule.startswith("!"):
            candidates.update(p.relative_to(root) for p in root.glob(rule[1:]) if p.is_file())
    kept = []
    for rel in sorted(candidates):
        included = False
        for rule in rules:
            pattern, negate = (rule[1:], True) if rule.startswith("!") else (rule, False)
            if fnmatch.fnmatchcase(rel.as_posix(), pattern) or (pattern == "*"):
                included = negate
        if included:
            kept.append(rel)
    return kept


def input_files(name: str, root: Path = ROOT) -> list[Path]:
    """Every file whose bytes go into the image's hash, relative to root."""
    if name not in BUILT:
        raise ImageError(f"image {name!r} is not built here; built: {', '.join(BUILT)}")
    base = Path("images") / name
    files = [base / "Dockerfile", base / "Dockerfile.dockerignore", *context_files(name, root)]
    missing = [str(f) for f in files if not (Path(root) / f).is_file()]
    if missing:
        raise ImageError(f"build inputs of {name} missing: {', '.join(missing)}")
    return files


def sources(name: str, root: Path = ROOT) -> dict[str, dict[str, str]]:
    """The pinned upstream sources of a compiled image, from images/<name>/sources.env (the one home
    of its pins; images/lib/clone-pinned.sh reads the same file in the build): source -> {repo,
    version, commit}, version being the release tag or, for a source fetched by hash, the commit.
    {} for an image that compiles nothing."""
    path = Path(root) / "images" / name / SOURCES_FILE
    if not path.is_file():
        return {}
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        prefix, _, field = key.rpartition("_")
        if not sep or not prefix or field not in ("REPO", "VERSION", "COMMIT"):
            raise ImageError(f"{path}: {line!r} is not a <SOURCE>_REPO|_VERSION|_COMMIT=value line")
        out.setdefault(prefix.lower(), {})[field.lower()] = value.strip()
    for src, pin in out.items():
        if not {"repo", "commit"} <= set(pin):
            raise ImageError(f"{path}: {src.upper()}_REPO and {src.upper()}_COMMIT are both needed")
        pin.setdefault("version", pin["commit"])
    return out


def labels(name: str, source: str | None = None, env: Mapping[str, str] | None = None,
           root: Path = ROOT) -> dict[str, str]:
    """The testbed.* labels scripts/build.sh gives an image: its inputs hash and base and, for a
    compiled image, what it was compiled from (`source`: upstream, local:..., prebuilt:...) and,
    when that is the pinned upstream, each source's tag and commit."""
    out = {INPUTS_LABEL: input_hash(name, env, root), BASE_LABEL: base_image(name, env, root)}
    pins = sources(name, root)
    if pins:
        source = source or "upstream"
        out[f"testbed.{name}.source"] = source
        if source == "upstream":
            for src, pin in pins.items():
                out[f"testbed.{src}.version"] = pin["version"]
                out[f"testbed.{src}.commit"] = pin["commit"]
    return out


# The variable that overrides an image's base, by the suite of its Dockerfile's default: the images
# that need Debian 13 (OpenSSL >= 3.5 for the post-quantum TLS groups: open5gs) take DEBIAN13_IMAGE,
# so a host that imports a local debian:bookworm-slim (DEBIAN_IMAGE=...) does not move them back.
BASE_VARIABLES = {"debian:bookworm-slim": "DEBIAN_IMAGE", "debian:trixie-slim": "DEBIAN13_IMAGE"}


def _default_base(name: str, root: Path = ROOT) -> str:
    for line in (Path(root) / "images" / name / "Dockerfile").read_text(encoding="utf-8").splitlines():
        if line.startswith("ARG DEBIAN_IMAGE="):
            return line.split("=", 1)[1].strip()
    raise ImageError(f"images/{name}/Dockerfile has no ARG DEBIAN_IMAGE default")


def base_variable(name: str, root: Path = ROOT) -> str:
    """The environment variable that overrides the image's base (DEBIAN_IMAGE, DEBIAN13_IMAGE)."""
    tag = _default_base(name, root).split("@")[0]
    if tag not in BASE_VARIABLES:
        raise ImageError(f"images/{name}/Dockerfile: base {tag} is none of {', '.join(BASE_VARIABLES)}")
    return BASE_VARIABLES[tag]


def knobs(name: str, env: Mapping[str, str], root: Path = ROOT) -> dict[str, str]:
    """Build settings from the environment that change what the image contains."""
    out = {}
    var = base_variable(name, root)
    if env.get(var):
        out[var] = env[var]
    if name in ("open5gs", "oai") and env.get("APPLY_PATCHES", "1") not in ("", "1"):
        out["APPLY_PATCHES"] = env["APPLY_PATCHES"]
    if name == "oai" and env.get("OAI_MARCH"):     # the CPU the OAI binaries are compiled for
        out["OAI_MARCH"] = env["OAI_MARCH"]
    return out


def base_image(name: str, env: Mapping[str, str] | None = None, root: Path = ROOT) -> str:
    """The base the image builds FROM: its base variable (DEBIAN_IMAGE or DEBIAN13_IMAGE) from the
    environment, else its Dockerfile's digest-pinned default."""
    env = environment.mapping() if env is None else env
    return env.get(base_variable(name, root)) or _default_base(name, root)


def input_hash(name: str, env: Mapping[str, str] | None = None, root: Path = ROOT) -> str:
    """The content hash of the image's build inputs (HASH_LEN hex digits)."""
    env = environment.mapping() if env is None else env
    h = hashlib.sha256()
    for rel in input_files(name, root):
        h.update(rel.as_posix().encode() + b"\0" + hashlib.sha256((Path(root) / rel).read_bytes()).digest())
    for k, v in sorted(knobs(name, env, root).items()):
        h.update(f"\n{k}={v}".encode())
    return h.hexdigest()[:HASH_LEN]


def default_ref(name: str, env: Mapping[str, str] | None = None, root: Path = ROOT) -> str:
    """`<name>:<version>-<hash>` of a built image, `<name>:<tag>` as written for the others."""
    base = defaults(root).get(var(name))
    if not base:
        raise ImageError(f"{DEFAULTS_FILE} has no {var(name)}")
    if name not in BUILT:
        return base
    return f"{base}-{input_hash(name, env, root)}"


def resolve(env: Mapping[str, str] | None = None, root: Path = ROOT) -> dict[str, str]:
    """VAR -> the image reference every script uses: the environment's value when set,
    else the default (with its content hash). MONGO_IMAGE=ferretdb means FERRETDB_IMAGE."""
    env = environment.mapping() if env is None else env
    out: dict[str, str] = {}
    for k in defaults(root):
        if not k.endswith("_IMAGE"):
            continue
        name = k[: -len("_IMAGE")].lower()
        out[k] = env.get(k) or default_ref(name, env, root)
    if out.get("MONGO_IMAGE") == FERRETDB_ALIAS:
        out["MONGO_IMAGE"] = out["FERRETDB_IMAGE"]
    return out


def explicit(var_name: str, env: Mapping[str, str] | None = None) -> bool:
    env = environment.mapping() if env is None else env
    return bool(env.get(var_name)) and env.get(var_name) != FERRETDB_ALIAS


# ---------------------------------------------------------------- the rebuild decision

@dataclasses.dataclass(frozen=True)
class Decision:
    name: str
    ref: str
    action: str          # ok | build | stale (an explicitly named image from other inputs: warn)
    reason: str


Inspect = Callable[[str], "dict | None"]


def docker_inspect(ref: str, docker: str = "docker") -> dict | None:
    """`docker image inspect` of one image (its JSON object), None when it is absent."""
    try:
        res = subprocess.run([docker, "image", "inspect", ref], capture_output=True, text=True,
                             timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode != 0:
        return None
    try:
        data = json.loads(res.stdout)
    except json.JSONDecodeError:
        return None
    return data[0] if isinstance(data, list) and data else None


def labels_of(inspected: dict | None) -> dict[str, str]:
    return dict(((inspected or {}).get("Config") or {}).get("Labels") or {})


def decide(name: str, env: Mapping[str, str] | None = None, inspect: Inspect = docker_inspect,
           root: Path = ROOT) -> Decision:
    """Whether `make up` must build image `name` before it runs."""
    env = environment.mapping() if env is None else env
    ref = resolve(env, root)[var(name)]
    want = input_hash(name, env, root)
    found = inspect(ref)
    if found is None:
        if explicit(var(name), env):
            return Decision(name, ref, "build", f"{var(name)}={ref} is not on this host")
        return Decision(name, ref, "build", f"no image for the current build inputs (hash {want})")
    have = labels_of(found).get(INPUTS_LABEL)
    if have == want:
        return Decision(name, ref, "ok", f"built from the current inputs (hash {want})")
    if explicit(var(name), env):
        return Decision(name, ref, "stale", f"{var(name)}={ref} was built from other inputs "
                        f"({INPUTS_LABEL}={have or 'none'}, now {want}): `make build IMAGES={name}` rebuilds it")
    return Decision(name, ref, "build", f"{ref} carries {INPUTS_LABEL}={have or 'none'}, not {want}")


def plan(names: list[str] | None = None, env: Mapping[str, str] | None = None,
         inspect: Inspect = docker_inspect, root: Path = ROOT) -> list[Decision]:
    return [decide(n, env, inspect, root) for n in (names or ["open5gs", "ueransim", "tools"])]


# ---------------------------------------------------------------- what an image contains

def parse_contents(text: str) -> dict[str, str]:
    """The `key=value` lines of an image's /etc/testbed-image.txt."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        k, sep, v = line.strip().partition("=")
        if sep and k and k not in out:
            out[k.strip()] = v.strip()
    return out


def read_contents(ref: str, docker: str = "docker") -> dict[str, str] | None:
    """The image's /etc/testbed-image.txt, copied out of a created (never started) container."""
    if shutil.which(docker) is None:
        return None
    try:
        made = subprocess.run([docker, "create", "--label", "testbed.role=inspect", ref],
                              capture_output=True, text=True, timeout=60, check=False)
        if made.returncode != 0:
            return None
        cid = made.stdout.strip()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                dest = Path(tmp) / "contents.txt"
                cp = subprocess.run([docker, "cp", f"{cid}:{CONTENTS_FILE}", str(dest)],
                                    capture_output=True, text=True, timeout=60, check=False)
                if cp.returncode != 0 or not dest.is_file():
                    return None
                return parse_contents(dest.read_text(encoding="utf-8", errors="replace"))
        finally:
            subprocess.run([docker, "rm", "-v", cid], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def facts(ref: str, inspect: Inspect = docker_inspect,
          contents: Callable[[str], "dict[str, str] | None"] = read_contents,
          cache_dir: Path | None = None) -> dict | None:
    """What a run manifest records of one image: id, digests, labels' version/inputs/source, and
    the contents file read from inside it (cached per image id: an id names fixed contents)."""
    found = inspect(ref)
    if found is None or not str(found.get("Id", "")).startswith("sha256:"):
        return None
    ident = str(found["Id"])
    labels = labels_of(found)
    cached = Path(cache_dir) / f"{ident.split(':', 1)[1]}.json" if cache_dir else None
    inside: dict[str, str] | None = None
    if cached is not None and cached.is_file():
        try:
            inside = json.loads(cached.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            inside = None
    if inside is None:
        inside = contents(ref)
        if inside is not None and cached is not None:
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_text(json.dumps(inside), encoding="utf-8")
            except OSError:
                pass
    source = next((v for k, v in labels.items() if k.startswith("testbed.") and k.endswith(".source")), None)
    return {"id": ident,
            "version": labels.get("org.opencontainers.image.version") or None,
            "repo_digests": list(found.get("RepoDigests") or []),
            "inputs": labels.get(INPUTS_LABEL),
            "base": labels.get(BASE_LABEL),
            "source": source,
            "contents": inside}
