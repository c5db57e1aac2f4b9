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
import threading

from threadpoolctl import ThreadpoolController

__all__ = ["single_threaded_blas"]


@functools.cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()  # inspecting the loaded libraries takes ~10 ms: once


_lock = threading.Lock()
_users = 0  # callers currently inside single_threaded_blas
_limiter = None  # the active threadpoolctl limit, restored by the last user


@contextlib.contextmanager
def single_threaded_blas():
    """Run BLAS on one thread inside the block.

    The limit is process-wide, so concurrent callers (a dashboard serving several
    sessions, members fitted in threads) share one limit, set by the first to enter
    and lifted by the last to leave; nesting is allowed. Also a decorator:
    ``@single_threaded_blas()``.

    Examples
    --------
    >>> from threadpoolctl import threadpool_info
    >>> with single_threaded_blas():
    ...     all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    True
    """
    global _users, _limiter
    with _lock:
        if _users == 0:
            _limiter = _controller().limit(limits=1, user_api="blas")
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                _limiter.restore_original_limits()
                _limiter = None
