"""podstate.failure: which ended container makes k8s.sh up stop waiting for a pod (restartPolicy Never)."""
from __future__ import annotations

from typing import Any

import pytest

from testbed.runtime.k8s.podstate import failure

SPEC = {"initContainers": [{"name": "cap-n3", "restartPolicy": "Always"}, {"name": "upf-net", "restartPolicy": "Always"},
                           {"name": "start-gate"}], "containers": [{"name": "upf"}]}


def _pod(phase: str = "Pending", init: list[dict[str, Any]] | None = None,
         main: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"spec": SPEC, "status": {"phase": phase, "initContainerStatuses": init or [], "containerStatuses": main or []}}


def _ended(name: str, code: int, reason: str = "Error", message: str = "") -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason, "message": message}}}


@pytest.mark.parametrize(("pod", "expected"), [
    (_pod(), ""),
    # a holder or capture sidecar that ended restarts by design: not the pod's end
    (_pod(init=[_ended("upf-net", 1)]), ""),
    # the gate done (it opened): the pod goes on
    (_pod("Running", init=[_ended("start-gate", 0, "Completed")]), ""),
    (_pod(init=[_ended("start-gate", 128, "StartError", "failed to create\n  containerd task")]),
     "start-gate: StartError (exit 128): failed to create containerd task"),
    (_pod("Failed", main=[_ended("upf", 139)]), "upf: Error (exit 139)"),
    (_pod("Failed"), "phase Failed:"),
])
def test_failure(pod: dict[str, Any], expected: str) -> None:
    assert failure(pod) == expected
