"""Dimensions orthogonal to the profile (the UPF security function SECFN/IDS; next the RAN
variant): the typed hook interface through which they plug into testbed/render, beside the
overlays' (testbed/overlays/__init__.py; docs/contracts.md "Dimensions").

An overlay is chosen by the profile's protocol; a dimension is chosen by variables of its own
(SECFN=..., IDS=...), so it has two parts:
- its module (one line in MODULES) offers the CLI/environment choice: `add_arguments(parser)`
  and `select(args, profile, plane)`, which returns the chosen value, or None when the
  dimension is not in use, and raises SelectionError (a usage error) for a bad choice;
- the chosen value (a `Dimension`) is what render calls: `render` (its files under
  <render dir>/<name>/ and the variables it adds to compose.env), `compose_services` (its
  Compose fragment, <render dir>/<name>.compose.yaml, listed after the overlay's), `describe`
  (its line of plan.txt), and optionally the overlays' `nf_config_overrides` and
  `nf_environment` hooks with their signatures (testbed/overlays/__init__.py), merged after the
  overlay's.
Adding a dimension is a module plus its line in MODULES; render and the render CLI stay as
they are.
"""
from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from testbed.overlays import NfConfigOverrides, NfEnvironment, Values

# dimension name -> module that offers its choice (add_arguments, select)
MODULES: dict[str, str] = {
    "secfn": "testbed.secfn.dimension",
    "keylog": "testbed.keylog.dimension",
}

# optional hooks of a Dimension: the overlays' own, with their signatures
OPTIONAL: dict[str, object] = {
    "nf_config_overrides": NfConfigOverrides,
    "nf_environment": NfEnvironment,
}


class SelectionError(ValueError):
    """A dimension's variables name something that does not exist or does not fit the profile."""


class Dimension(Protocol):
    """A chosen value of a dimension, as testbed/render calls it."""

    @property
    def name(self) -> str:
        """The dimension's name: its render subdir, fragment name and plan label."""

    def render(self, profile: Any, plane: str, values: Values, out_dir: Path) -> dict[str, str]:
        """Write the dimension's files under out_dir (<render dir>/<name>/, created empty by
        render); return the variables it adds to compose.env."""

    def compose_services(self, profile: Any, plane: str, values: Values) -> dict[str, dict[str, Any]]:
        """{service: override} for <render dir>/<name>.compose.yaml (Compose merges it over
        base.yaml and the overlay's fragment); empty: no fragment."""

    def describe(self, env: dict[str, str]) -> str:
        """One line of plan.txt (env: the render's compose.env)."""


class DimensionModule(Protocol):
    """What a module of MODULES defines."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Its options of `python -m testbed render` (defaults from its environment variables)."""

    def select(self, args: argparse.Namespace, profile: Any, plane: str) -> Dimension | None:
        """The chosen value, None when not in use; SelectionError for a bad choice."""


def modules() -> list[ModuleType]:
    return [importlib.import_module(m) for m in MODULES.values()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for mod in modules():
        mod.add_arguments(parser)


def select(args: argparse.Namespace, profile: Any, plane: str) -> tuple[Dimension, ...]:
    """Every dimension in use for this render, in MODULES order; SelectionError for a bad choice."""
    chosen = (mod.select(args, profile, plane) for mod in modules())
    return tuple(d for d in chosen if d is not None)


def hook(dimension: Dimension, name: str) -> Callable[..., Any] | None:
    """An optional hook the dimension defines (an overlay hook's signature), else None."""
    if name not in OPTIONAL:
        raise ValueError(f"{name!r} is not an optional dimension hook; hooks: {', '.join(OPTIONAL)}")
    fn = getattr(dimension, name, None)
    return fn if callable(fn) else None


def check_names(dims: Sequence[Dimension]) -> None:
    """ValueError unless every name is known (MODULES) and given once: names are render
    subdirs and fragment names."""
    names = [d.name for d in dims]
    unknown = [n for n in names if n not in MODULES]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"dimensions {', '.join(names)}: each of {', '.join(MODULES)} at most once")
