"""Dimensions orthogonal to the profile (the UPF security function, the AMF's algorithms, ...):
each a plug-in (testbed/contract.py DimensionPlugin, one line in testbed/registry.py) chosen by
variables of its own. This module asks every dimension plug-in at once: which variables exist,
which choices a run makes, and checks the choices render will get.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from testbed import registry
from testbed.contract import DimensionChoice, Values
from testbed.profiles import Profile


class SelectionError(ValueError):
    """A dimension's variables name something that does not exist or does not fit the profile."""


def variables() -> dict[str, str]:
    """Every dimension's variables (UPPER_CASE) -> help, in registry order."""
    return {var: text for d in registry.dimensions() for var, text in d.variables.items()}


def select(options: Mapping[str, str], profile: Profile, plane: str, ran: str) -> tuple[DimensionChoice, ...]:
    """Every dimension in use for this run ({VARIABLE: value}; missing or "" = not set), in
    registry order; SelectionError for a bad choice."""
    chosen = (d.select({k: options.get(k, "") or "" for k in d.variables}, profile, plane, ran)
              for d in registry.dimensions())
    return tuple(c for c in chosen if c is not None)


def apply(dims: Sequence[DimensionChoice], values: Values) -> Values:
    """The stack values as the chosen dimensions run them (each choice's `apply`, in order)."""
    for d in dims:
        values = d.apply(values)
    return values


def check_names(dims: Sequence[DimensionChoice]) -> None:
    """ValueError unless every name is a dimension's and given once: names are render subdirs
    and fragment names."""
    known = [d.name for d in registry.dimensions()]
    names = [d.name for d in dims]
    unknown = [n for n in names if n not in known]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"dimensions {', '.join(names)}: each of {', '.join(known)} at most once")
