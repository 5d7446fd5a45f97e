"""The tests' way to render a profile as the command line does (testbed/orchestrate.py: select,
then render with the given inputs), with the old keyword names the render tests use."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed import ROOT, orchestrate, stack
from testbed.contract import DimensionChoice
from testbed.profiles import Profile
from testbed.render import Rendered


def render(profile: Profile, plane: str, out: Path, *, subscribers: dict[str, Any], keys_dir: Path,
           values: dict[str, Any] | None = None, use_scp: bool | None = None, commit: str = "test",
           mongo_uri: str | None = None, compose_dir: Path | None = None, repo_dir: Path | None = None,
           ran_variant: str | None = None, uu: str | None = None,
           dimensions: tuple[DimensionChoice, ...] = (),
           datapath_choices: dict[str, str] | None = None) -> Rendered:
    v = values or stack.load()
    sel = orchestrate.select(profile, plane, ran_name=ran_variant, uu=uu, dims=tuple(dimensions), scp=use_scp,
                             values=v)
    inputs = orchestrate.Inputs(subscribers, keys_dir, v, commit, mongo_uri, compose_dir or ROOT / "compose",
                                repo_dir or ROOT, dict(datapath_choices or {}))
    return orchestrate.render(sel, out, inputs)
