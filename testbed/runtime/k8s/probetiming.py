"""A pod's probe timing, taken when the pod is made, as Compose takes its health checks' timing.

Compose interpolates a health check's interval, start_interval and start_period at `up` from the
caller's environment: HEALTH_INTERVAL (30 s) keeps the probes out of the measured windows,
run-sbi starts a UE with UE_HEALTH_START_INTERVAL=3600s so that no probe runs in the attach it
measures (scripts/lib/attach.sh), and a slow host raises them all (compose/base.yaml, docs/stack.md).
A rendered pod's probes hold the defaults, and the render keeps each container's timing as Compose
wrote it (ANNOTATION); k8s.sh up and stackctl up interpolate it with their own environment
(`apply`), as they set render.UP_VARIABLES. A probe's timing cannot change once its pod exists,
so this is the one moment it can be given.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from testbed.check import compose_model as cm

# the variables of the Compose health checks' timing (compose/base.yaml, compose/scp.yaml, the
# RANs' services): left as written in the render's model (compose_model.load keep=)
VARIABLES = frozenset({"HEALTH_INTERVAL", "HEALTH_START_INTERVAL", "HEALTH_START_PERIOD", "UE_HEALTH_START_INTERVAL"})
ANNOTATION = "testbed/probe-timing"      # container -> its health check's timing fields as Compose wrote them
FIELDS = ("interval", "start_interval", "start_period", "timeout", "retries")


def seconds(value: Any, default: int) -> int:
    """A Compose duration (30s, 1m30s, 500ms) in whole seconds, at least 1."""
    text = str(value or "").strip()
    if not text:
        return default
    total = 0.0
    for num, unit in re.findall(r"([0-9.]+)(ms|us|ns|h|m|s)", text):
        total += float(num) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]
    return max(1, int(total + 0.999))


def kept(healthcheck: Mapping[str, Any]) -> dict[str, str]:
    """The health check's timing fields when one of them still holds a VARIABLES reference (else {})."""
    fields = {k: str(healthcheck[k]) for k in FIELDS if healthcheck.get(k) is not None}
    return fields if any("$" in v for v in fields.values()) else {}


def timing(healthcheck: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """{startupProbe, readinessProbe} timing of a Compose health check, its VARIABLES interpolated
    with ENV (empty: the defaults): while it starts, every start_interval up to start_period
    (Compose's start phase), then every interval."""
    def field(key: str) -> str:
        return cm.interpolate(str(healthcheck.get(key) or ""), dict(env), lambda _msg: None)

    timeout = seconds(field("timeout"), 30)
    retries = int(field("retries") or 3)
    start_every = seconds(field("start_interval"), 5)
    start_period = seconds(field("start_period"), 0)
    return {"startupProbe": {"periodSeconds": start_every, "timeoutSeconds": timeout,
                             "failureThreshold": max(1, -(-start_period // start_every)) + retries},
            "readinessProbe": {"periodSeconds": seconds(field("interval"), 30), "timeoutSeconds": timeout,
                               "failureThreshold": retries}}


def environment(env: Mapping[str, str]) -> dict[str, str]:
    """The VARIABLES the caller set (an empty one counts as unset, as `${VAR:-default}` reads it)."""
    return {v: env[v] for v in VARIABLES if env.get(v)}


def apply(pod_objects: Iterable[dict[str, Any]], env: Mapping[str, str]) -> None:
    """Each container whose timing the render kept takes its probes' timing from ENV's VARIABLES."""
    values = environment(env)
    if not values:
        return
    for obj in pod_objects:
        spec, annotations = obj["spec"], obj["metadata"].get("annotations") or {}
        if ANNOTATION not in annotations:
            continue
        fields = json.loads(annotations[ANNOTATION])
        for c in spec.get("initContainers", []) + spec["containers"]:
            if c["name"] in fields:
                for probe, numbers in timing(fields[c["name"]], values).items():
                    if probe in c:
                        c[probe].update(numbers)
