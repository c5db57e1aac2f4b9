"""One BLAS thread for code that makes many small BLAS calls.

OpenBLAS threads sleep between calls; waking them costs far more than a small
product (a K x M matrix-vector product with K ~ 100, M ~ 1000, or a 1024-query
prediction block). Measured: the fast solver's steps ran 3 times slower, and
prediction 5-7 times slower, with two BLAS threads than with one. Large products
(Phi^T Phi in :func:`vrvm.engine.kernels.sufficient_statistics`) keep every thread.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from threadpoolctl import ThreadpoolController

__all__ = ["CORE_THREADS", "SharedSetting", "in_threads", "single_threaded_blas"]

CORE_THREADS = max(1, min(len(os.sched_getaffinity(0)), 8))
"""Threads :func:`in_threads` runs by default: one per core (at most 8)."""


@functools.cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()  # inspecting the loaded libraries takes ~10 ms: once


class SharedSetting:
    """A process-wide setting that concurrent users share: the first to enter makes it
    (``make()`` returns what ``undo(made)`` needs), the last to leave undoes it; nesting
    is allowed. The one way vrvm scopes process-wide numerical settings (BLAS threads
    here, the heap in :mod:`vrvm.engine._malloc`).

    Examples
    --------
    >>> log = []
    >>> setting = SharedSetting(lambda: log.append("on"), lambda made: log.append("off"))
    >>> with setting.held():
    ...     with setting.held():
    ...         log.append("work")
    >>> log
    ['on', 'work', 'off']
    """

    def __init__(self, make, undo):
        self._make, self._undo = make, undo
        self._lock = threading.Lock()
        self._users = 0
        self._made = None

    @contextlib.contextmanager
    def held(self):
        with self._lock:
            if self._users == 0:
                self._made = self._make()
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    made, self._made = self._made, None
                    self._undo(made)


_one_blas_thread = SharedSetting(
    lambda: _controller().limit(limits=1, user_api="blas"),
    lambda limiter: limiter.restore_original_limits(),
)


@contextlib.contextmanager
def single_threaded_blas():
    """Run BLAS on one thread inside the block.

    The limit is process-wide, so concurrent callers (a dashboard serving several
    sessions, members fitted in threads) share one limit, set by the first to enter
    and lifted by the last to leave (:class:`SharedSetting`); nesting is allowed. Also
    a decorator: ``@single_threaded_blas()``.

    Examples
    --------
    >>> from threadpoolctl import threadpool_info
    >>> with single_threaded_blas():
    ...     all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    True
    """
    with _one_blas_thread.held():
        yield


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def in_threads(
    function: Callable[[_Item], _Result],
    items: Iterable[_Item],
    *,
    threads: int | None = None,
) -> Iterator[_Result]:
    """``function(item)`` for each item, in order, computed by ``threads`` threads.

    The caller's thread takes the next item (reads the next batch) and handles the
    results (writes them) between the yields while the threads predict: numpy, scipy
    and BLAS release the GIL, so each core predicts its own batch. At most
    ``threads + 1`` items are held. BLAS is limited to one thread for the whole
    pipeline: a limit set and lifted by the threads themselves, batch after batch, left
    OpenBLAS's threads spinning (measured on 1e6 queries: 5 times the CPU time and the
    wall time). An error, or an iteration abandoned, cancels the items not started.

    Examples
    --------
    >>> list(in_threads(lambda x: x * x, range(5), threads=2))
    [0, 1, 4, 9, 16]
    """
    threads = CORE_THREADS if threads is None else int(threads)
    with (
        single_threaded_blas(),
        ThreadPoolExecutor(threads, thread_name_prefix="vrvm-predict") as pool,
    ):
        pending: deque = deque()
        try:
            for item in items:
                pending.append(pool.submit(function, item))
                del item  # held by the task only
                while len(pending) > threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # an error or an abandoned iteration: do not predict the rest
            for future in pending:
                future.cancel()
