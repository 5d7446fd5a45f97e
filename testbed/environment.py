"""The process environment, read here and nowhere else below the command line (testbed/cli/).

The Makefile exports the run's variables (STATE, RAN, SECFN, IDS, SNORT_INSTALL, the image
variables ...) and the drivers pass them on; a module that needs one asks here, so every variable
the testbed reads is one grep away and a default lives in one place. `mapping()` is the whole
environment for modules that take an environment as data (the image references, a child
process's environment); `export`/`unset` set the markers a process leaves for its children (the
state lock held, the address slot chosen).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from testbed import ROOT


def get(name: str, default: str = "") -> str:
    """The variable's value; `default` when it is unset or empty."""
    return os.environ.get(name) or default


def mapping() -> Mapping[str, str]:
    """The whole environment (read-only use)."""
    return os.environ


def state_dir() -> Path:
    """$STATE (as the Makefile exports it) or .state/ in the repository."""
    return Path(get("STATE") or ROOT / ".state")


def export(name: str, value: str) -> None:
    """Set a marker this process's children inherit."""
    os.environ[name] = value


def unset(name: str) -> None:
    os.environ.pop(name, None)
