"""Deterministic measures of work, for tests that would otherwise time code.

A wall-clock bound in a unit test fails on a busy machine and passes a slow loop on a
fast one; how fast is measured in ``benchmarks/``. What a speed claim rests on can be
counted instead: a vectorised function makes the same number of Python calls for a
thousand rows as for a hundred thousand, while a loop over rows makes at least one
call per row.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["python_calls"]


def python_calls(fn: Callable[[], object]) -> int:
    """The number of Python function calls (frames entered) made by ``fn()``.

    Counted with :func:`sys.setprofile` in the calling thread only; calls into C
    (NumPy's kernels, a C extension) are not counted, Python code they call back is.
    Call ``fn`` once before counting: a first call also counts lazy imports and caches.

    Examples
    --------
    >>> def loop(n):
    ...     return sum(abs(i) for i in range(n))  # one generator frame per value
    >>> python_calls(lambda: loop(1000)) - python_calls(lambda: loop(10))
    990
    """
    count = 0

    def profile(frame, event, arg) -> None:
        nonlocal count
        if event == "call":
            count += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(previous)
    return count
