"""One run at a time per state directory: an exclusive flock on $STATE/lock.

Whoever holds it (scripts/lib/state.sh for the stack scripts and drivers, `hold()` for the
Python commands that write renders) writes $STATE/lock.holder: pid, command, since. A second
taker fails at once with one line naming the holder. The holder exports TESTBED_LOCK=<dir>, so
its own children (a driver's up.sh, a campaign's drivers) pass without taking it again.

Standard library only.
"""
from __future__ import annotations

from testbed import environment
import contextlib
import datetime as dt
import fcntl
import os
import sys
from pathlib import Path
from typing import Iterator

LOCK = "lock"
HOLDER = "lock.holder"
HELD_ENV = "TESTBED_LOCK"


class Busy(RuntimeError):
    """The state directory is in use; the message names the holder and what to do."""


def holder(state: Path) -> dict[str, str]:
    try:
        text = (Path(state) / HOLDER).read_text(encoding="utf-8")
    except OSError:
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def describe(state: Path) -> str:
    """One line: who holds the state directory, and what to do."""
    h = holder(state)
    pid = h.get("pid", "?")
    alive = ""
    if pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            alive = ", no longer running: a process it started still holds the lock"
        except PermissionError:
            pass
    who = f"pid {pid} (`{h.get('command', 'unknown command')}`) since {h.get('since', '?')}{alive}"
    return (f"state directory {state} is in use by {who}: one run at a time per STATE; wait for it "
            "to finish, or give this one its own STATE=<dir> (its stack then runs beside the other)")


def write_holder(state: Path, command: str, pid: int | None = None) -> None:
    since = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    tmp = Path(state) / f".{HOLDER}.{os.getpid()}"
    tmp.write_text(f"pid={pid or os.getpid()}\ncommand={' '.join(command.split())}\nsince={since}\n",
                   encoding="utf-8")
    os.replace(tmp, Path(state) / HOLDER)


def inherited(state: Path, env: dict[str, str] | None = None) -> bool:
    env = dict(environment.mapping()) if env is None else env
    return bool(env.get(HELD_ENV)) and Path(env[HELD_ENV]).resolve() == Path(state).resolve()


@contextlib.contextmanager
def hold(state: Path, command: str | None = None) -> Iterator[None]:
    """Hold the state directory's lock for the block (a no-op when a parent holds it)."""
    state = Path(state)
    if inherited(state):
        yield
        return
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(state / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(describe(state)) from None
        write_holder(state, command or " ".join(["python -m testbed", *sys.argv[1:]]))
        environment.export(HELD_ENV, str(state.resolve()))
        try:
            yield
        finally:
            environment.unset(HELD_ENV)
    finally:
        os.close(fd)


if __name__ == "__main__":
    # scripts/lib/state.sh: `python3 -m testbed.statelock describe DIR` and `... holder DIR COMMAND PID`
    if len(sys.argv) >= 3 and sys.argv[1] == "describe":
        print(describe(Path(sys.argv[2])))
    elif len(sys.argv) == 5 and sys.argv[1] == "holder":
        write_holder(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        print("usage: python -m testbed.statelock describe DIR | holder DIR COMMAND PID", file=sys.stderr)
        raise SystemExit(2)
