"""testbed/stackfailure.py summary: the order of what a failed bring-up shows."""
from __future__ import annotations

from testbed import stackfailure


def _c(service: str, status: str, health: str | None = None, **kw: object) -> dict:
    return {"name": f"g5tb-{service}-1", "service": service, "status": status, "exit_code": kw.get("exit_code", 0),
            "oom_killed": False, "error": "", "started": "2026-11-28T09:10:00Z",
            "finished": kw.get("finished", "0001-01-01T00:00:00Z"),
            "health": {"status": health, "failing_streak": 0, "log": []} if health else None}


def test_a_deadline_without_a_failure_names_what_was_still_starting() -> None:
    """The guest's TLS run-sbi: nothing failed, the 1,500 s deadline came while the NFs were still
    starting; the summary said only `never started: gnb`."""
    lines = stackfailure.summary([_c("nrf", "running", "healthy"), _c("amf", "running", "starting"),
                                  _c("ausf", "running", "starting"), _c("gnb", "created")])
    assert lines == ["still starting (not healthy yet): amf, ausf", "never started: gnb"]


def test_a_failure_comes_first_and_starting_containers_are_not_blamed() -> None:
    lines = stackfailure.summary([_c("nssf-net", "exited", exit_code=1, finished="2026-11-28T09:11:00Z"),
                                  _c("amf", "running", "starting"), _c("gnb", "created")])
    assert lines[0].startswith("first failure: nssf-net (g5tb-nssf-net-1) exited (code 1)")
    assert not any(line.startswith("still starting") for line in lines)
    assert lines[-1] == "never started (waiting on the above): gnb"
