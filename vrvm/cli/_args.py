"""Argument types of the command line: each parses one value or says what it expected."""

from __future__ import annotations

import argparse
import re

import numpy as np
import pandas as pd

from vrvm.services.analyst.retrain import parse_widths
from vrvm.trips.places.timezones import check_zone


class UsageError(Exception):
    """A command line that parses but asks for something impossible (exit status 2)."""


def int_at_least(low: int, what: str):
    """argparse type: an integer >= ``low``, described as ``what`` in the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


positive_int = int_at_least(1, "a positive integer")


seed_int = int_at_least(0, "a non-negative integer")


def jobs_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0:
        raise argparse.ArgumentTypeError(
            f"expected a non-zero integer (-1 for all cores), got {text!r}"
        )
    return value


def evidence(text: str) -> str | float:
    """``--stage-one-evidence``: "all", "sample" or a number >= 1."""
    if text in ("all", "sample"):
        return text
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value >= 1.0 or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"expected 'all', 'sample' or a number >= 1 such as 4; got {text!r}"
        )
    return value


def widths_list(text: str) -> str | list[float]:
    try:
        widths = parse_widths(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'auto' or comma-separated positive numbers such as 0.5,1,2; got {text!r}"
        ) from None
    return widths if isinstance(widths, str) else list(widths)


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = np.nan
    if not (0 <= value < 1):
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1) such as 0.2, got {text!r}")
    return value


def forgetting_factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


def seconds(text: str) -> float:
    """A non-negative, finite number of seconds (``--wait``)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


_DURATION = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|sec|min|h)?\s*", re.I)
_DURATION_UNITS = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}


def travel_time_s(text: str) -> float:
    """A travel time > 0 with its unit, in seconds: ``480s``, ``8min``, ``8 min``, ``0.5h``.

    A bare number is refused: ``--within 8`` could mean minutes or seconds, and the
    answers for the two differ; the message says how to write either.

    Examples
    --------
    >>> travel_time_s("8min"), travel_time_s("480s"), travel_time_s("0.25h")
    (480.0, 480.0, 900.0)
    >>> travel_time_s("8")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a travel time with its unit, ... (minutes or seconds?)
    """
    match = _DURATION.fullmatch(text)
    if match and match.group(2) is None:
        raise argparse.ArgumentTypeError(
            "expected a travel time with its unit, such as 8min, 480s or 0.5h; "
            f"got {text!r} (minutes or seconds?)"
        )
    value = float(match.group(1)) * _DURATION_UNITS[match.group(2).lower()] if match else 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"expected a travel time > 0 with its unit, such as 8min, 480s or 0.5h; got {text!r}"
        )
    return value


def time_zone(text: str) -> str:
    try:
        return check_zone(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def date_time(text: str) -> pd.Timestamp:
    """argparse type: a date and time such as ``"2016-05-03 09:00"`` (an offset is kept;
    a naive time is read in the model's zone by the command)."""
    try:
        stamp = pd.Timestamp(text)
    except (TypeError, ValueError, OverflowError):
        stamp = pd.NaT
    if pd.isna(stamp):
        raise argparse.ArgumentTypeError(
            f"expected a date and time such as '2016-05-03 09:00', got {text!r}"
        )
    return stamp
