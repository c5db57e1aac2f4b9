"""Time zones: one way to name a trip's zone, to check a name a user gives, and to find
the zone where trips are.

Trips keep their ``start_time`` in the city's zone; what is stored (model directories,
the trip store, ``attrs["tz"]``) is the zone's *name*, which pandas must accept back.
Files whose layout does not fix a city (bike-share histories are the same everywhere)
have their local times read in the zone the trips lie in (:func:`zone_at`, from
timezonefinder's offline polygons).
"""

from __future__ import annotations

import datetime as _dt
import functools
import zoneinfo
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["check_zone", "tz_name", "zone_at", "zone_name"]


def check_zone(tz: str | None) -> str | None:
    """``tz`` unchanged if it is an IANA zone name (or None), else a clear ValueError.

    Examples
    --------
    >>> check_zone("America/Chicago")
    'America/Chicago'
    >>> check_zone("Chicago")
    Traceback (most recent call last):
    ...
    ValueError: unknown time zone 'Chicago'; use an IANA name such as 'America/Chicago' or 'UTC'
    """
    if tz is None:
        return None
    try:
        zoneinfo.ZoneInfo(str(tz))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {tz!r}; use an IANA name such as 'America/Chicago' or 'UTC'"
        ) from None
    return str(tz)


def tz_name(tz: Any) -> str:
    """A string naming ``tz`` that pandas accepts back (IANA key, ``UTC`` or ``UTC+hh:mm``).

    Accepts names and the zone objects of zoneinfo, pytz, dateutil and
    :class:`datetime.timezone`.

    Examples
    --------
    >>> import zoneinfo, datetime
    >>> tz_name(zoneinfo.ZoneInfo("Europe/Paris"))
    'Europe/Paris'
    >>> tz_name(datetime.timezone(datetime.timedelta(hours=-5)))
    'UTC-05:00'
    """
    if isinstance(tz, str):
        candidates = [tz]
    else:
        candidates = [getattr(tz, "key", None), getattr(tz, "zone", None)]
        if isinstance(tz, _dt.timezone):
            candidates.append(str(tz))  # "UTC" or "UTC-05:00"
        elif type(tz).__module__.startswith("dateutil"):
            filename = getattr(tz, "_filename", "") or ""
            if "zoneinfo/" in filename:
                candidates.append(filename.split("zoneinfo/", 1)[1])
    for name in candidates:
        if not name:
            continue
        try:
            pd.Timestamp("2000-01-01").tz_localize(name)
        except Exception:  # any failure means "not a usable name"
            continue
        return str(name)
    raise ValueError(
        f"cannot use time zone {tz!r}; pass tz as an IANA name such as 'America/Chicago'"
    )


def zone_name(dtype) -> str | None:
    """IANA name of a timezone-aware dtype, if it has one (None for fixed offsets)."""
    if not isinstance(dtype, pd.DatetimeTZDtype):
        return None
    try:
        return check_zone(tz_name(dtype.tz))
    except ValueError:
        return None


@functools.cache
def _finder():
    from timezonefinder import TimezoneFinder  # offline polygons of the world's zones

    return TimezoneFinder()


def zone_at(lat, lon, *, sample: int = 500, seed: int = 0) -> str | None:
    """The IANA zone most of the points lie in, or None when no point is usable.

    Looks up at most ``sample`` valid points (a seeded random subset), so a file
    whose trips span several clusters gets the zone of most of them, never that of a
    midpoint between them.

    Examples
    --------
    >>> import numpy as np
    >>> zone_at(np.array([37.78, 37.80, 37.33]), np.array([-122.41, -122.27, -121.89]))
    'America/Los_Angeles'
    >>> zone_at(np.array([np.nan]), np.array([0.0])) is None
    True
    """
    lat = np.asarray(lat, dtype=np.float64)
    lon = np.asarray(lon, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(lat) <= 90) & (np.abs(lon) <= 180) & ~((lat == 0) & (lon == 0))
    rows = np.flatnonzero(ok)
    if rows.size == 0:
        return None
    if rows.size > sample:
        rows = np.random.default_rng(seed).choice(rows, size=sample, replace=False)
    finder = _finder()
    names = [finder.timezone_at(lng=float(lon[i]), lat=float(lat[i])) for i in rows]
    counts = pd.Series([n for n in names if n]).value_counts()
    return None if counts.empty else str(counts.index[0])
