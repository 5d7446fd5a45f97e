"""A command whose reader left (`python -m testbed profiles | head -1`) ends quietly.

Python ignores SIGPIPE, so a write into a pipe nobody reads raises BrokenPipeError, and even a
caught one comes back at exit when the interpreter flushes stdout ("Exception ignored ...").
`exit_with(main)` runs a CLI's main: when stdout's reader is gone it ends with status 141 (128 +
SIGPIPE, what a shell reports for `yes | head -1`), no traceback; a BrokenPipeError from anything
else (a child's pipe, a socket) is a real error and is raised as before. Standard library only
(scripts run `python3 -m testbed.cli.instance` before a venv exists).
"""
from __future__ import annotations

import os
import select
import sys
from typing import Callable, NoReturn

EPIPE_STATUS = 141


def stdout_reader_gone() -> bool:
    """True when stdout is a pipe (or socket) whose reading end is closed (poll says POLLERR)."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (AttributeError, ValueError, OSError):
        return False


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def exit_with(main: Callable[[], int | str | None]) -> NoReturn:
    """Run `main` (argparse's --help and exits included), flush stdout, exit with its status."""
    try:
        try:
            status = main()
        except SystemExit as exc:
            status = exc.code
        sys.stdout.flush()
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
        _quiet_stdout()
        raise SystemExit(EPIPE_STATUS) from None
    raise SystemExit(status)
