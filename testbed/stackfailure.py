"""What failed first in a stack that did not come up or broke mid-run, from the engine's own record.

scripts/lib/compose.sh stack_save_evidence pipes `docker inspect <every container>` into
`record`, which keeps each container's name, service, image, state and health (never its
environment: rendered secrets may be there) as DIR/states.json; `summary` reads it back (and the
logs saved beside it, DIR/logs/<service>.log) and says which container failed first in time, with
its last log line, the later failures as consequences, and the containers that never started.
A failure is an exit with a non-zero code, a dead or OOM-killed container, or an unhealthy one;
its time is when it exited, or for an unhealthy one its first failing health probe still on
record. The order is the engine's clock, one host: the first is the cause the run names
(up.sh's `first failure:` line, the driver's reason), not the container a wait happened to be on.

Standard library only (up.sh runs it with the project's Python before anything else is known).
"""
from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path
from typing import Any

STATES = "states.json"
_NEVER = "0001-01-01T00:00:00Z"          # the engine's time for "not yet"
_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def record(inspect: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The part of `docker inspect` output that says how each container fared."""
    out = []
    for c in inspect:
        state = c.get("State") or {}
        labels = (c.get("Config") or {}).get("Labels") or {}
        health = state.get("Health") or None
        out.append({
            "name": str(c.get("Name", "")).lstrip("/"),
            "service": labels.get("com.docker.compose.service", ""),
            "image": (c.get("Config") or {}).get("Image", ""),
            "status": state.get("Status", ""),
            "exit_code": state.get("ExitCode", 0),
            "oom_killed": bool(state.get("OOMKilled")),
            "error": state.get("Error", ""),
            "started": state.get("StartedAt", _NEVER),
            "finished": state.get("FinishedAt", _NEVER),
            "health": None if health is None else {
                "status": health.get("Status", ""), "failing_streak": health.get("FailingStreak", 0),
                "log": [{"start": p.get("Start", ""), "exit_code": p.get("ExitCode", 0),
                         "output": str(p.get("Output", ""))[-300:]} for p in health.get("Log") or []]},
        })
    return out


def _time(stamp: str) -> dt.datetime | None:
    """The engine's RFC 3339 time (nanoseconds, Z or an offset) as an aware datetime; None for never."""
    if not stamp or stamp.startswith("0001-"):
        return None
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", stamp.strip())
    if not m:
        return None
    frac = (m.group(2) or "0")[:6].ljust(6, "0")
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return dt.datetime.fromisoformat(f"{m.group(1)}.{frac}{zone}")


def failure(c: dict[str, Any]) -> tuple[dt.datetime | None, str] | None:
    """(when, what) if the container failed, else None."""
    health = c.get("health") or {}
    code = c.get("exit_code") or 0
    if c.get("oom_killed"):
        return _time(c.get("finished", "")), f"was killed for lack of memory (exit code {code})"
    if c.get("status") == "dead":
        return _time(c.get("finished", "")), f"is dead ({c.get('error') or 'no error recorded'})"
    if c.get("status") == "exited" and code != 0:
        return _time(c.get("finished", "")), f"exited (code {code})"
    if health.get("status") == "unhealthy":
        failing = [_time(p["start"]) for p in health.get("log", []) if p.get("exit_code")]
        first = min((t for t in failing if t is not None), default=None)
        return first or _time(c.get("started", "")), "is unhealthy"
    return None


def _last_line(logs: Path | None, service: str) -> str:
    if logs is None:
        return ""
    try:
        lines = (logs / f"{service}.log").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        text = _ESCAPES.sub("", line).strip()
        if text:
            # `logs --timestamps` puts the engine's time first: the line itself follows
            return re.sub(r"^\d{4}-\d\d-\d\dT\S+\s+", "", text)[:300]
    return ""


def _clock(t: dt.datetime | None) -> str:
    return "an unknown time" if t is None else t.astimezone(dt.timezone.utc).strftime("%H:%M:%S.%fZ")[:-4] + "Z"


def summary(containers: list[dict[str, Any]], logs: Path | None = None) -> list[str]:
    """Lines, most important first: `first failure: ...`, `then: ...`, and without a failure `still
    starting ...` (the deadline came first), then `never started: ...`."""
    failed = []
    for c in containers:
        f = failure(c)
        if f is not None:
            failed.append((f[0], c, f[1]))
    far = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    failed.sort(key=lambda x: (x[0] or far, x[1].get("service") or x[1]["name"]))
    never = sorted(c.get("service") or c["name"] for c in containers if c.get("status") == "created")
    # running but not healthy yet when the deadline came: what a slow host leaves (nothing failed)
    starting = sorted(c.get("service") or c["name"] for c in containers
                      if c.get("status") == "running" and (c.get("health") or {}).get("status") == "starting")
    lines = []
    if failed:
        t0, c, what = failed[0]
        who = c.get("service") or c["name"]
        last = _last_line(logs, who)
        lines.append(f"first failure: {who} ({c['name']}) {what} at {_clock(t0)}"
                     + (f"; its last log line: {last}" if last else ""))
        later = []
        for t, c2, what2 in failed[1:]:
            delta = f"+{(t - t0).total_seconds():.1f} s" if t and t0 else "time unknown"
            later.append(f"{c2.get('service') or c2['name']} {what2} ({delta})")
        if later:
            lines.append("then (consequences): " + "; ".join(later))
    if starting and not failed:
        lines.append("still starting (not healthy yet): " + ", ".join(starting))
    if never:
        lines.append("never started" + (" (waiting on the above)" if failed else "") + ": " + ", ".join(never))
    return lines


def main(argv: list[str]) -> int:
    """`record DIR` (docker inspect JSON on stdin -> DIR/states.json) | `summary DIR`."""
    if len(argv) == 2 and argv[0] == "record":
        try:
            data = json.load(sys.stdin)
        except ValueError as exc:
            print(f"stackfailure: no docker inspect JSON on stdin ({exc})", file=sys.stderr)
            return 1
        Path(argv[1]).mkdir(parents=True, exist_ok=True)
        (Path(argv[1]) / STATES).write_text(json.dumps(record(data if isinstance(data, list) else []), indent=1) + "\n",
                                            encoding="utf-8")
        return 0
    if len(argv) == 2 and argv[0] == "summary":
        try:
            containers = json.loads((Path(argv[1]) / STATES).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0                  # nothing recorded: nothing to say
        for line in summary(containers, Path(argv[1]) / "logs"):
            print(line)
        return 0
    print("usage: python -m testbed.stackfailure record DIR < inspect.json | summary DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    from testbed.cli.pipes import exit_with
    exit_with(lambda: main(sys.argv[1:]))
