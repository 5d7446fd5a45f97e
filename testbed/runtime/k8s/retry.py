"""One cluster request tried again within a deadline.

A loaded API server lets requests time out (the guest's emulated cluster at load 40-70: an
exec's "Internal error occurred: Timeout occurred", an apply's "Error from server (Timeout)").
What is retried here is idempotent, so it is tried again until it succeeds, the work turns out
done after all (an answer lost after the request ran), the failure is one a retry cannot mend,
or the deadline has passed: a start gate's exec, a capture's stop (stackctl.py), an apply
(apply.py).
"""
from __future__ import annotations

import time
from collections.abc import Callable


def _never() -> bool:
    return False


def _always(_why: str) -> bool:
    return True


def _quiet(_why: str) -> None:
    return None


def until(attempt: Callable[[], str], within: float, every: float, *,
          done: Callable[[], bool] = _never,
          retryable: Callable[[str], bool] = _always,
          retrying: Callable[[str], None] = _quiet) -> str:
    """Call ATTEMPT (it returns "" on success, else why not) every EVERY s until it succeeds, DONE
    says the work is done after all, the failure is not RETRYABLE, or WITHIN s have passed since
    the call; RETRYING hears each failure that is tried again. Returns "" on success, else the
    last failure."""
    end = time.monotonic() + within
    while True:
        why = attempt()
        if not why or done():
            return ""
        if not retryable(why) or time.monotonic() >= end:
            return why
        retrying(why)
        time.sleep(every)
