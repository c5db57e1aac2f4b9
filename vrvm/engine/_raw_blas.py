"""BLAS routines called in place, on leading blocks of larger buffers, without the GIL.

scipy's wrappers (:mod:`scipy.linalg.blas`) copy an argument that is not a whole
contiguous array and hold the GIL while BLAS runs. The routines here are the same
BLAS, reached through the function pointers scipy exports for Cython
(:mod:`scipy.linalg.cython_blas`) with :mod:`ctypes` (which releases the GIL): they
update the leading k x k block of a buffer in place through BLAS's leading dimension
(the fast solver's posterior grows and shrinks by one function at a time) and let
threads predicting at once run their triangular products in parallel. Each falls back
to numpy where the pointer is unavailable.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

__all__ = ["blas_function", "symmetric_rank_one", "times_lower_transposed"]

_INT = ctypes.POINTER(ctypes.c_int)
_DOUBLE = ctypes.POINTER(ctypes.c_double)
_CHAR = ctypes.c_char_p

_SIGNATURES = {
    # dtrmm(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb)
    "dtrmm": (_CHAR, _CHAR, _CHAR, _CHAR, _INT, _INT, _DOUBLE, _DOUBLE, _INT, _DOUBLE, _INT),
    # dger(m, n, alpha, x, incx, y, incy, a, lda)
    "dger": (_INT, _INT, _DOUBLE, _DOUBLE, _INT, _DOUBLE, _INT, _DOUBLE, _INT),
}


@functools.cache
def blas_function(name: str):
    """The BLAS routine ``name`` (a key of the signatures above) as a ctypes function, or
    None if scipy does not export its pointer."""
    try:
        from scipy.linalg import cython_blas

        capsule = cython_blas.__pyx_capi__[name]
        api = ctypes.pythonapi
        api.PyCapsule_GetName.restype = ctypes.c_char_p
        api.PyCapsule_GetName.argtypes = [ctypes.py_object]
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        pointer = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
    except (ImportError, AttributeError, KeyError, ValueError):  # pragma: no cover
        return None
    if not pointer:  # pragma: no cover
        return None
    return ctypes.CFUNCTYPE(None, *_SIGNATURES[name])(pointer)


def _int(value: int):
    return ctypes.byref(ctypes.c_int(value))


def _double(value: float):
    return ctypes.byref(ctypes.c_double(value))


def symmetric_rank_one(alpha: float, x: np.ndarray, buffer: np.ndarray, k: int) -> None:
    """``buffer[:k, :k] += alpha * outer(x, x)`` in place (BLAS ``dger``).

    ``buffer`` is a square C-ordered float64 array of at least ``k`` rows and ``x`` a
    contiguous float64 vector of length ``k``: one pass over the block, no temporary.

    Examples
    --------
    >>> buffer = np.zeros((4, 4)); x = np.array([1.0, 2.0])
    >>> symmetric_rank_one(0.5, x, buffer, 2)
    >>> buffer[:3, :3].tolist()
    [[0.5, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0]]
    """
    ger = blas_function("dger")
    x = np.ascontiguousarray(x, dtype=np.float64)
    ok = buffer.flags.c_contiguous and buffer.dtype == np.float64 and x.shape == (k,)
    if ger is None or not ok or k == 0:
        buffer[:k, :k] += alpha * np.outer(x, x)
        return
    # the C-ordered block is, in BLAS's column-major view, its transpose with leading
    # dimension buffer.shape[1]; x x^T is symmetric, so the update is the same
    pointer = x.ctypes.data_as(_DOUBLE)
    ger(
        _int(k),
        _int(k),
        _double(alpha),
        pointer,
        _int(1),
        pointer,
        _int(1),
        buffer.ctypes.data_as(_DOUBLE),
        _int(buffer.shape[1]),
    )


def times_lower_transposed(lower: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``rows @ lower.T``, written over ``rows`` (C order, (n, K)); ``lower`` is a lower
    triangular (K, K) matrix in Fortran order.

    In Fortran's column-major view ``rows`` is rows^T (K, n), so this is BLAS
    rows^T := lower rows^T (dtrmm, side L, no transpose) on the same memory, without
    the copy to Fortran order scipy's wrapper makes.

    Examples
    --------
    >>> lower = np.asfortranarray([[2.0, 0.0], [1.0, 3.0]])
    >>> times_lower_transposed(lower, np.array([[1.0, 1.0]])).tolist()
    [[2.0, 4.0]]
    """
    trmm = blas_function("dtrmm")
    n, k = rows.shape
    if trmm is None or not (rows.flags.c_contiguous and lower.flags.f_contiguous) or n == 0:
        from scipy.linalg.blas import dtrmm

        return dtrmm(1.0, lower, rows, side=1, lower=1, trans_a=1, overwrite_b=1)
    trmm(
        b"L",
        b"L",
        b"N",
        b"N",
        _int(k),
        _int(n),
        _double(1.0),
        lower.ctypes.data_as(_DOUBLE),
        _int(k),
        rows.ctypes.data_as(_DOUBLE),
        _int(k),
    )
    return rows
