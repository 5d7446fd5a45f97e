"""Shared by the stack's render and check tests: one set of real keys per test process."""
from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from tests import render_support
from testbed import keys, profiles
from testbed.render import Rendered
from tests.conftest import require_tools


@lru_cache(maxsize=1)
def _keys_root() -> Path:
    state = Path(tempfile.mkdtemp(prefix="stack-test-keys-"))
    atexit.register(shutil.rmtree, state, True)
    return keys.ensure(state)


def keys_root() -> Path:
    """Real keys (testbed.keys.ensure) in a temporary state dir, made once per test run."""
    require_tools("openssl", "wg")
    return _keys_root()


def render_to(profile_id: str, plane: str, out: Path, *, use_scp: bool = False, ran: str | None = None,
              uu: str | None = None, datapath_choices: dict[str, str] | None = None) -> Rendered:
    root = keys_root()
    if ran is None and plane != "all" and set(plane.replace("+", ",").split(",")) & {"f1c", "f1u", "e1"}:
        ran = "split"                 # the split RAN's interfaces exist only with RAN=split
    return render_support.render(profiles.get(profile_id, plane), plane, out,
                         subscribers=keys.subscribers(root), keys_dir=root, use_scp=use_scp, commit="test",
                         ran_variant=ran, uu=uu, datapath_choices=datapath_choices)


def plane_sets(profile: profiles.Profile) -> list[str]:
    """Every PLANE a profile can be rendered for: each of its planes, and `all` of them; the split
    RAN's planes (RAN=split) together as one set (render_to renders them with the split)."""
    split = [p for p in profile.planes if p in ("f1c", "f1u", "e1")]
    own = [p for p in profile.planes if p not in split]
    return own + (["all"] if len(own) > 1 else []) + ([",".join(split)] if split else [])


def compose_services(ran_variant: str = "ueransim") -> dict:
    """compose/base.yaml's services with a RAN variant's rendered ones (testbed/ran/), as merged."""
    import yaml

    from testbed import ran, stack
    from tests.conftest import ROOT
    services = dict(yaml.safe_load((ROOT / "compose" / "base.yaml").read_text())["services"])
    services.update(ran.get(ran_variant).compose(stack.load())["services"])
    return services
