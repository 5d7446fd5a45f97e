"""Why a pod of the stack can no longer become what k8s.sh up waits for, from `kubectl get pod
-o json` on standard input: one line naming the container and its end, or nothing.

    kubectl -n NS get pod/POD -o json | python3 testbed/runtime/k8s/podstate.py

The stack's pods run with restartPolicy Never (pods.py: Compose restarts nothing either), so a
container that ended with an error, or one that could not even be started (containerd's
StartError, seen in the emulated guest when a shim did not answer under load), ends the pod's
chances for good: k8s.sh stops at once, naming it, instead of waiting out STACK_UP_TIMEOUT. The
native sidecars (init containers with restartPolicy Always: holders, captures) restart by design and
are not counted. Standard library only: k8s.sh runs it by path.
"""
from __future__ import annotations

import json
import sys
from typing import Any


def failure(pod: dict[str, Any]) -> str:
    """The first container that ended the pod's chances, as 'NAME: REASON (exit N): MESSAGE', or ''."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    sidecars = {c["name"] for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always"}
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in status.get(key) or []:
            end = (c.get("state") or {}).get("terminated")
            if c["name"] in sidecars or not end or end.get("exitCode", 0) == 0:
                continue
            message = " ".join(str(end.get("message", "")).split())[:300]
            return f"{c['name']}: {end.get('reason', 'terminated')} (exit {end['exitCode']})" + (f": {message}" if message else "")
    if status.get("phase") == "Failed":
        return f"phase Failed: {status.get('reason', '')} {status.get('message', '')}".strip()
    return ""


def main() -> int:
    print(failure(json.load(sys.stdin)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
