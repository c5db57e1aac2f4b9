"""Waiting in tests: poll a condition until a bounded deadline, never sleep a fixed time.

A test on a shared machine (a load of 6-9 on two cores, ``pytest -n 2``) cannot know
how long a process takes to start or a worker to die; it can say what it waits for.
:func:`wait_until` polls that condition and fails naming it once the deadline has
passed, so a slow machine costs time, never a false failure, and a broken build still
fails in bounded time. Speed targets live in ``benchmarks/``, never in a test.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["START_S", "wait_until"]

T = TypeVar("T")

START_S = 300.0
"""Seconds a started process or server may take to be ready: Python, NumPy, pandas and
scikit-learn imported and a model loaded take 3-10 s at a load of 11 on two cores
(BENCHMARKS.md), 90 s was once too short at 12-14. A deadline, not a wait: a ready
process ends the wait at once."""


def wait_until(
    predicate: Callable[[], T],
    timeout_s: float,
    what: str,
    *,
    poll_s: float = 0.05,
    process: subprocess.Popen | None = None,
    details: Callable[[], str] | None = None,
) -> T:
    """Call ``predicate`` until it returns a true value, and return that value.

    Parameters
    ----------
    predicate : callable
        The condition, without arguments; it may raise to fail at once.
    timeout_s : float
        Seconds after which the wait fails; generous, since only a failure waits them.
    what : str
        What is awaited, in words, for the failure message ("2 loky workers").
    poll_s : float, default=0.05
        Seconds between two calls of ``predicate``.
    process : subprocess.Popen, optional
        A process the condition depends on: the wait fails at once if it exits.
    details : callable, optional
        Returns text appended to a failure message (a server's log, say).

    Raises
    ------
    AssertionError
        Naming ``what`` when ``timeout_s`` has passed or ``process`` has exited first.

    Examples
    --------
    >>> calls = []
    >>> wait_until(lambda: calls.append(1) or len(calls) >= 3, 60, "three calls", poll_s=0)
    True
    >>> wait_until(lambda: False, 0, "the impossible")
    Traceback (most recent call last):
    ...
    AssertionError: not seen within 0 s: the impossible
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if process is not None and process.poll() is not None:
            message = f"the process exited ({process.returncode}) before {what}"
            break
        if time.monotonic() >= deadline:
            message = f"not seen within {timeout_s:g} s: {what}"
            break
        time.sleep(poll_s)
    if details is not None:
        message += "\n" + details()
    raise AssertionError(message)
