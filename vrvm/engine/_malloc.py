"""Heap settings for numerical work in processes that hand every freed block back at once.

Dask's nanny starts each worker with ``MALLOC_TRIM_THRESHOLD_=65536`` so that workers
return freed memory to the operating system promptly. Setting that variable also
switches off glibc's dynamic mmap threshold, so every allocation above 128 KiB (the
design blocks, Gram updates and temporaries of a fit: megabytes each) is a fresh
``mmap`` whose pages are faulted in and zeroed, then unmapped when freed. Measured on
a 2-core machine: one member's fit on 20,000 trips took 3.1-3.3 s in a Dask worker and
2.3-2.5 s in the same worker started without the variable or in a local process.

:func:`heap_for_numerics` raises the mmap and trim thresholds (``mallopt``) while
numerical tasks run in such a process and puts the variable's setting back when the
last one leaves, so the worker still trims between tasks. Elsewhere (no variable, not
glibc) it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os

from vrvm.engine._blas import SharedSetting

__all__ = ["TRIM_ENV", "heap_for_numerics"]

TRIM_ENV = "MALLOC_TRIM_THRESHOLD_"

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_DEFAULT_MMAP_THRESHOLD = 128 * 1024  # glibc's initial value, kept once the trim is set
_NUMERIC_THRESHOLD = 32 * 1024 * 1024  # glibc's largest mmap threshold on 64-bit


@functools.cache
def _mallopt():
    """glibc's ``mallopt``, or None where there is none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int)
    function.restype = ctypes.c_int
    return function


def _trim_from_environment() -> int | None:
    text = os.environ.get(TRIM_ENV)
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _raise_thresholds():
    mallopt = _mallopt()
    mallopt(_M_MMAP_THRESHOLD, _NUMERIC_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, 2 * _NUMERIC_THRESHOLD)
    return _trim_from_environment()


def _restore_thresholds(trim: int) -> None:
    mallopt = _mallopt()
    mallopt(_M_TRIM_THRESHOLD, trim)
    mallopt(_M_MMAP_THRESHOLD, _DEFAULT_MMAP_THRESHOLD)


_numeric_heap = SharedSetting(_raise_thresholds, _restore_thresholds)


@contextlib.contextmanager
def heap_for_numerics():
    """Large allocations from the reused heap inside the block (see the module docstring).

    Process-wide like the heap itself: concurrent tasks share one setting, made by the
    first to enter and undone by the last to leave (:class:`~vrvm.engine._blas.SharedSetting`);
    nesting is allowed.

    Examples
    --------
    >>> with heap_for_numerics():
    ...     total = sum(range(10))
    >>> total
    45
    """
    if _trim_from_environment() is None or _mallopt() is None:
        yield
        return
    with _numeric_heap.held():
        yield
