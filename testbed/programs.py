"""What a host program says of itself: the first line of its output and a version read from it
(the manifests' versions; each overlay plug-in asks for its own programs)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path


def first_line(argv: list[str], timeout: float = 5.0) -> str | None:
    """First non-empty line of a command's output, or None when it is absent or fails."""
    if shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
        return None
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (res.stdout or "") + (res.stderr or "")
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def version(pattern: str, line: str | None) -> str | None:
    """The pattern's first group in the line (the whole line when it does not match; None without one)."""
    if line is None:
        return None
    m = re.search(pattern, line)
    return m.group(1) if m else line


def program_version(argv: list[str], pattern: str) -> str | None:
    return version(pattern, first_line(argv))


def git_revision(repo: Path | None = None) -> tuple[str | None, bool | None]:
    """(full commit, dirty) of the repository's checkout; (None, None) outside a git checkout."""
    from testbed import ROOT
    where = str(repo or ROOT)
    commit = first_line(["git", "-C", where, "rev-parse", "HEAD"])
    if commit is None or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return None, None
    try:
        res = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return commit, None
    return commit, bool(res.stdout.strip())


def git_short(repo: Path | None = None) -> str:
    """The commit as the renders label it: 12 hex digits, `-dirty` with uncommitted changes,
    "unknown" outside a git checkout."""
    commit, dirty = git_revision(repo)
    if commit is None:
        return "unknown"
    return f"{commit[:12]}-dirty" if dirty else commit[:12]
