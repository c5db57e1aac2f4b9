"""Argument types of the command line: each parses one value or says what it expected."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from vrvm.services.analyst.retrain import parse_widths
from vrvm.trips.places.timezones import check_zone


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
