"""Declarative parameter checking shared by the estimators.

Each estimator keeps a table ``{name: (predicate, description of allowed values)}``;
:func:`check_params` applies it in ``fit`` and names the parameter and the allowed
values in the error, as scikit-learn does.
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
