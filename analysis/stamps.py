"""Whether an output folder is up to date with its inputs, from stamps only (path, size,
modification time in ns), before anything heavy is imported: `make report` over an unchanged
results tree imported pandas, SciPy and matplotlib (2.3 s) to find nothing to do.

The key covers every file of the results tree, the code that turns it into the outputs (the
analysis, testbed and plug-in folders, the profiles and node catalogues, the lock file), the
Python and tshark that run it, and the command's own options. After a build the key is stored
in the output folder with the stamps of every file written there; the outputs are up to date
when the key is the same and every output is still as written. Light imports only.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODE = ("analysis", "testbed", "nf-configs", "profiles.yaml", "requirements.lock")


def _files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for n in sorted(names):
            if not n.endswith(".pyc"):
                yield Path(folder) / n


def _stamp(path: Path, base: Path) -> str:
    st = path.stat()
    return f"{path.relative_to(base)}|{st.st_size}|{st.st_mtime_ns}"


def _tree(root: Path, base: Path, skip: Path | None = None) -> list[str]:
    out = []
    for p in _files(root):
        if skip is not None and p.is_relative_to(skip):
            continue
        try:
            out.append(_stamp(p, base))
        except OSError:                 # gone while walked: the key differs, the build decides
            out.append(f"{p}|gone")
    return out


def code_stamps() -> list[str]:
    """The stamps of the code and catalogues the outputs are made with (plug-in folders: every
    top-level folder with a plugin.py, as testbed/registry.py finds them)."""
    roots = [REPO / c for c in CODE] + sorted(p.parent for p in REPO.glob("*/plugin.py"))
    tshark = shutil.which("tshark")
    extra = [sys.version, f"tshark {tshark and _stamp(Path(os.path.realpath(tshark)), Path('/'))}"]
    return extra + [s for r in roots if r.exists() for s in _tree(r, REPO)]


def key(command: str, results: Path, out: Path, options: dict[str, object]) -> str:
    """The key of one command's outputs in `out` from `results` (the output folder itself is
    left out where it lies inside the results tree)."""
    results = Path(results).resolve()
    out = Path(out).resolve()
    h = hashlib.sha256(json.dumps([command, str(results), options], sort_keys=True, default=str).encode())
    for s in code_stamps() + _tree(results, results, skip=out):
        h.update(s.encode())
        h.update(b"\n")
    return h.hexdigest()


SUFFIX = "-stamp.json"


def _outputs(out: Path) -> list[str]:
    """Stamps of what is in `out`, the commands' own records left out."""
    return sorted(s for s in _tree(out, out) if not s.split("|", 1)[0].endswith(SUFFIX))


def listing(command: str, out: Path, k: str) -> dict[str, list[str]] | None:
    """What `command` wrote in `out` with key `k` (as it recorded it), every output unchanged
    since; None when it must run."""
    try:
        rec = json.loads((out / f".{command}{SUFFIX}").read_text(encoding="utf-8"))
        if rec["outputs"] and rec["key"] == k and rec["outputs"] == _outputs(out):
            return dict(rec.get("listing") or {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def up_to_date(command: str, out: Path, k: str) -> bool:
    """Whether `out` holds what `command` wrote with key `k`, every output unchanged since."""
    return listing(command, out, k) is not None


def record(command: str, out: Path, k: str, listing: dict[str, list[str]] | None = None) -> None:
    """After a build: the key, the stamps of everything now in `out` and what the command
    reports (`listing`, given back by `listing()` while nothing changed)."""
    path = out / f".{command}{SUFFIX}"
    tmp = path.with_name(f"{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"key": k, "outputs": _outputs(out), "listing": listing or {}}), encoding="utf-8")
    os.replace(tmp, path)
