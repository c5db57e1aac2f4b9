"""Parameter and array checks shared by the estimators.

Each estimator keeps a table ``{name: (predicate, description of allowed values)}``;
:func:`check_params` applies it in ``fit`` and names the parameter and the allowed
values in the error, as scikit-learn does. :func:`check_value` applies one rule to an
argument of a method. The array checks (:func:`as_rows`, :func:`as_targets`, ...)
convert to float64 and refuse NaN and infinity with the row where they occur.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def integer(low: int | None = None, high: int | None = None, *, allow_none: bool = False):
    """Predicate: an integer (not a bool) in [low, high]."""

    def check(v) -> bool:
        if v is None:
            return allow_none
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            return False
        return (low is None or v >= low) and (high is None or v <= high)

    return check


def real(low: float, *, strict: bool, high: float | None = None, allow_none: bool = False):
    """Predicate: a finite real number above ``low`` (strictly or not) and <= ``high``."""

    def check(v) -> bool:
        if v is None:
            return allow_none
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            return False
        above = v > low if strict else v >= low
        return above and (high is None or v <= high)

    return check


def one_of(*values):
    """Predicate: one of the given values."""
    return lambda v: isinstance(v, str | bool | type(None)) and v in values


def boolean(v) -> bool:
    """Predicate: True or False (numpy booleans included)."""
    return isinstance(v, bool | np.bool_)


def is_seed(v) -> bool:
    """Predicate: None, a non-negative integer or a numpy Generator."""
    return v is None or isinstance(v, np.random.Generator) or integer(0)(v)


SEED = (is_seed, "None, a non-negative integer or a numpy Generator")
FORGETTING = (real(0, strict=True, high=1), "a number in (0, 1]")
"""Rule of exponential forgetting factors: 1 forgets nothing, smaller forgets faster."""


def check_params(estimator, table: dict, values: dict | None = None) -> None:
    """Raise ValueError naming the first parameter of ``estimator`` outside ``table``.

    ``values`` supplies values that are arguments of a method rather than attributes.
    """
    for name, (check, allowed) in table.items():
        value = values[name] if values is not None and name in values else getattr(estimator, name)
        if not check(value):
            raise ValueError(
                f"The {name!r} parameter of {type(estimator).__name__} must be {allowed}; "
                f"got {value!r}."
            )


def check_value(name: str, value, rule: tuple) -> float:
    """Return ``value`` if it satisfies ``rule`` (a table entry), else raise ValueError.

    Examples
    --------
    >>> check_value("forgetting", 0.99, FORGETTING)
    0.99
    >>> check_value("forgetting", 0, FORGETTING)
    Traceback (most recent call last):
    ...
    ValueError: forgetting must be a number in (0, 1], got 0
    """
    check, allowed = rule
    if not check(value):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return value


def positive_number(value, name: str) -> float:
    """``value`` as a float if it is a finite real number > 0, else raise ValueError."""
    if not real(0, strict=True)(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_finite(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` unchanged, or ValueError naming the first row with NaN or infinity."""
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[0]
        at = f" (first at row {int(where[0])})" if arr.ndim else ""
        raise ValueError(f"{name} contains NaN or infinity{at}")
    return arr


def as_float_array(value, name: str) -> np.ndarray:
    """``value`` as a float64 array, or ValueError naming ``name``."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric; could not convert it: {exc}") from None


def as_rows(Phi, n_features: int, name: str = "Phi") -> np.ndarray:
    """2-D float64 ``(n, n_features)``; a 1-D array of length ``n_features`` is one row."""
    arr = as_float_array(Phi, name)
    if arr.ndim == 1 and arr.shape[0] == n_features:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (n_samples, {n_features}), got shape {arr.shape}"
        )
    if arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} columns, expected {n_features}")
    return check_finite(arr, name)


def as_targets(y, n_rows: int, name: str = "y") -> np.ndarray:
    """1-D float64 targets, one per row (a scalar or a column vector is accepted)."""
    arr = as_float_array(y, name)
    if arr.ndim == 0:
        arr = arr[None]
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"{name} has {arr.shape[0]} values but there are {n_rows} rows")
    return check_finite(arr, name)


def as_sample_weight(sample_weight, n_rows: int):
    """``sample_weight`` checked: None, a positive number, or one weight per row
    (finite, non-negative, not all zero)."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        if not (np.isfinite(w) and w > 0):
            raise ValueError(f"sample_weight must be a positive number, got {sample_weight!r}")
        return float(w)
    if w.shape != (n_rows,):
        raise ValueError(
            f"sample_weight must be a number or have one value per row ({n_rows}), "
            f"got shape {w.shape}"
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise ValueError("sample_weight must be finite, non-negative and not all zero")
    return w


def weighted_std(y: np.ndarray, w: np.ndarray) -> float:
    """Standard deviation of ``y`` with row weights ``w``."""
    mean = (w @ y) / w.sum()
    return float(np.sqrt((w @ (y - mean) ** 2) / w.sum()))


def positive_widths(value) -> bool:
    """Whether ``value`` is "auto" or positive finite kernel widths."""
    if isinstance(value, str):
        return value == "auto"
    arr = np.asarray(value, dtype=object).ravel()
    if arr.size == 0:
        return False
    try:
        arr = arr.astype(np.float64)
    except (TypeError, ValueError):
        return False
    return bool(np.all(np.isfinite(arr)) and np.all(arr > 0))
