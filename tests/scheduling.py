"""How `make test` shares the test files among its pytest-xdist workers (--dist loadfile).

Each file runs on one worker. The files below also share one thing beyond the file: they run
drivers or `make` targets with the default STATE directory, whose exclusive lock a run holds
(testbed/statelock.py: a second taker fails at once, "state directory ... is in use"). They run
on one worker, one after the other. A new test that runs a driver with the default STATE joins
them here, or gives its run its own STATE=<tmp_path>.
"""
from __future__ import annotations

import pytest

DEFAULT_STATE = "the default STATE directory"
SHARES_DEFAULT_STATE = frozenset({
    "tests/integration/test_run_overlay.py",
    "tests/integration/test_analysis_run_overlay.py",
    "tests/integration/test_macsec_netns.py",
    "tests/scripts/test_drivers.py",
    "tests/scripts/test_rerun.py",
    "tests/scripts/test_ran_drivers.py",
    "tests/testbed/secfn/test_campaign.py",
    "tests/testbed/test_campaign.py",
    "tests/e2e/test_drivers_e2e.py",
    "tests/e2e/test_stack_e2e.py",
})


def scope_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return DEFAULT_STATE if path in SHARES_DEFAULT_STATE else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadFileScheduling

    class SharedStateScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    if config.getoption("dist") != "loadfile":
        return None
    return SharedStateScheduling(config, log)  # type: ignore[arg-type]
