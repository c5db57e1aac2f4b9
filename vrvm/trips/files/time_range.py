"""The supported range of departure and trip times: one definition for every door.

A travel-time model learns from trips of the recent past and answers for the near
future; a time far outside that span is a typo, a number read as a date (``"-1"`` is
1969, ``"99999999999"`` is 1973 when read as seconds) or a value that pandas cannot
even hold (nanosecond timestamps end at 2262-04-11). Every layer refuses the same
span, so a departure the API refuses is also a trip that cleaning drops:

- :data:`EARLIEST_DEPARTURE` and :data:`LATEST_DEPARTURE` bound the range, both
  inclusive, as timezone-aware UTC timestamps;
- :func:`in_departure_range` tests many times at once (cleaning uses it as a drop
  reason);
- :func:`check_departure` checks one time and raises a ``ValueError`` naming the field
  (the API turns it into a 422).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "EARLIEST_DEPARTURE",
    "LATEST_DEPARTURE",
    "check_departure",
    "in_departure_range",
]

EARLIEST_DEPARTURE = pd.Timestamp("1970-01-01T00:00:00", tz="UTC")
"""First supported departure (inclusive): the Unix epoch, before any GPS trip log."""
LATEST_DEPARTURE = pd.Timestamp("2100-01-01T00:00:00", tz="UTC")
"""Last supported departure (inclusive): far beyond any plausible plan, well inside
what pandas' nanosecond timestamps hold (2262-04-11)."""


def _as_utc(times: Any) -> pd.DatetimeIndex:
    """Times as a UTC ``DatetimeIndex``; naive times are read as UTC.

    A naive time is a local wall-clock time in a zone not given here; reading it as
    UTC moves it by at most 14 h, which only matters within hours of the bounds.
    """
    index = pd.DatetimeIndex(times)
    if index.tz is None:
        return index.tz_localize("UTC")
    return index.tz_convert("UTC")


def in_departure_range(times: Any) -> np.ndarray:
    """Which times lie in the supported range.

    Parameters
    ----------
    times : array-like of datetime
        A ``Series``, ``DatetimeIndex`` or array of times, timezone-aware (any zone)
        or naive (read as UTC).

    Returns
    -------
    numpy.ndarray of bool
        True where the time lies between :data:`EARLIEST_DEPARTURE` and
        :data:`LATEST_DEPARTURE` inclusive; False outside and for missing times
        (``NaT``).

    Examples
    --------
    >>> import pandas as pd
    >>> times = pd.Series(pd.to_datetime(["1969-12-31 23:59", "2016-03-16 08:15", None]))
    >>> in_departure_range(times.dt.tz_localize("America/New_York")).tolist()
    [True, True, False]
    >>> in_departure_range(pd.to_datetime(["2100-01-01 00:00:00", "2100-01-01 00:00:01"])).tolist()
    [True, False]
    """
    index = _as_utc(times)
    inside = (index >= EARLIEST_DEPARTURE) & (index <= LATEST_DEPARTURE)
    return np.asarray(inside, dtype=bool)


def check_departure(value: pd.Timestamp | _dt.datetime, *, name: str = "depart") -> pd.Timestamp:
    """Check that one time lies in the supported range.

    Parameters
    ----------
    value : pandas.Timestamp or datetime.datetime
        The time, timezone-aware or naive (judged as UTC). A ``datetime`` beyond what
        pandas holds (year 1 or 9999) is refused, not overflowed.
    name : str, default "depart"
        The field the time came from, named in the error.

    Returns
    -------
    pandas.Timestamp
        ``value`` as a ``Timestamp``, in its own zone (unchanged).

    Raises
    ------
    ValueError
        If the time is missing (``NaT``) or outside :data:`EARLIEST_DEPARTURE` ..
        :data:`LATEST_DEPARTURE`; the message names ``name``, the value and the range.

    Examples
    --------
    >>> check_departure(pd.Timestamp("2016-05-03T08:15:00-04:00"))
    Timestamp('2016-05-03 08:15:00-0400', tz='UTC-04:00')
    >>> import datetime
    >>> check_departure(datetime.datetime(9999, 12, 31), name="when")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: when: 9999-12-31T00:00:00 is outside the supported range of departures, ...
    """
    shown = value.isoformat() if hasattr(value, "isoformat") else repr(value)
    if value is None or pd.isna(value):
        raise ValueError(f"{name}: a departure is required, got {shown}")
    try:
        stamp = pd.Timestamp(value)
        # Compared as a scalar, so a Timestamp in seconds (year 9999) is judged, not cast.
        utc = stamp.tz_localize("UTC") if stamp.tz is None else stamp.tz_convert("UTC")
        inside = EARLIEST_DEPARTURE <= utc <= LATEST_DEPARTURE
    except (ValueError, OverflowError, TypeError):
        # Year 1 or 9999 and the like: beyond what pandas holds, so beyond our range.
        inside = False
    if not inside:
        raise ValueError(
            f"{name}: {shown} is outside the supported range of departures, "
            f"{_iso_z(EARLIEST_DEPARTURE)} to {_iso_z(LATEST_DEPARTURE)}"
        )
    return stamp


def _iso_z(stamp: pd.Timestamp) -> str:
    """A UTC timestamp as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
