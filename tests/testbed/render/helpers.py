"""Shared by the stack's render and check tests: one set of real keys per test process."""
from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from testbed import keys, profiles, render
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


def render_to(profile_id: str, plane: str, out: Path, *, use_scp: bool = False) -> Rendered:
    root = keys_root()
    return render.render(profiles.get(profile_id, plane), plane, out, subscribers=keys.subscribers(root),
                         keys_dir=root, use_scp=use_scp, commit="test")


def plane_sets(profile: profiles.Profile) -> list[str]:
    """Every PLANE a profile can be rendered for: each of its planes, and `all` of them."""
    return list(profile.planes) + (["all"] if len(profile.planes) > 1 else [])
