"""Time zones: one way to name a trip's zone, to check a name a user gives, and to find
the zone where trips are.

Trips keep their ``start_time`` in the city's zone; what is stored (model directories,
the trip store, ``attrs["tz"]``) is the zone's *name*, which pandas must accept back.
Files whose layout does not name a city (bike-share histories are the same
everywhere, and any file read through a column map) have their local times read in
the zone the trips lie in (:func:`trips_zone`, from timezonefinder's offline
polygons); when that zone cannot be told (no usable coordinates, or trips spread over
zones whose clocks differ) the read is refused with :class:`ZoneUnknownError` rather
than guessed.
"""

from __future__ import annotations

import collections
import datetime as _dt
import functools
import zoneinfo
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "ZONE_SPREAD_SHARE",
    "ZoneUnknownError",
    "check_zone",
    "trips_zone",
    "tz_name",
    "zone_at",
    "zone_name",
]

ZONE_SPREAD_SHARE = 0.01
"""Largest share of the looked-up trip starts that may lie in zones whose clocks differ
from the main zone's (stray coordinates) before :func:`trips_zone` refuses."""


class ZoneUnknownError(ValueError):
    """The zone of a file's local times cannot be told from where its trips are.

    Attributes
    ----------
    source : str
        The file's name.
    zones : dict of str to int
        Zones found among the looked-up trip starts, with their counts (empty when no
        trip had usable coordinates).
    """

    def __init__(self, message: str, *, source: str, zones: dict[str, int] | None = None):
        super().__init__(message)
        self.source = source
        self.zones = dict(zones or {})


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


# Instants at which two zones must show the same UTC offset to count as one clock:
# the 1st and 15th of each month of a recent year (standard and summer time both).
_CLOCK_INSTANTS = pd.date_range("2016-01-01", "2016-12-31", freq="SMS", tz="UTC")


@functools.cache
def _clock(zone: str) -> tuple[float, ...]:
    """A zone's UTC offsets (hours) over a year: zones with equal clocks read alike."""
    local = _CLOCK_INSTANTS.tz_convert(zone)
    return tuple(local.map(lambda t: t.utcoffset().total_seconds() / 3600))


def trips_zone(lat, lon, *, source: str = "<trips>", sample: int = 500, seed: int = 0) -> str:
    """The IANA zone of the trips' local times, from where they start; refuses to guess.

    Looks up at most ``sample`` valid points (a seeded random subset, as
    :func:`zone_at`). Zones with the same clock all year (``America/New_York`` and
    ``America/Detroit``) count as one; the zone named is the most frequent of the
    clock most points share. At most :data:`ZONE_SPREAD_SHARE` of the points may lie
    under other clocks (stray coordinates, dropped by the cleaning's radius check).

    Raises
    ------
    ZoneUnknownError
        If no point has usable coordinates, or more than :data:`ZONE_SPREAD_SHARE` of
        them lie in zones whose clocks differ; the message names ``source``, the zones
        found with their counts, and says to give the zone (``tz``, ``--tz``, the
        upload form's time-zone field).

    Examples
    --------
    >>> import numpy as np
    >>> trips_zone(np.array([40.75, 40.76]), np.array([-73.98, -73.97]))
    'America/New_York'
    >>> trips_zone(np.array([40.75, 41.88]), np.array([-73.98, -87.63]), source="f.csv")
    Traceback (most recent call last):
    ...
    vrvm.trips.places.timezones.ZoneUnknownError: f.csv: the trips start in several time zones \
(America/Chicago: 1, America/New_York: 1), so their local times cannot be read in one; \
say which zone they are written in (tz= in Python, --tz in the CLI, the time-zone field \
of the upload form)
    """
    lat = np.asarray(lat, dtype=np.float64)
    lon = np.asarray(lon, dtype=np.float64)
    give = (
        "say which zone they are written in (tz= in Python, --tz in the CLI, the "
        "time-zone field of the upload form)"
    )
    with np.errstate(invalid="ignore"):
        ok = (np.abs(lat) <= 90) & (np.abs(lon) <= 180) & ~((lat == 0) & (lon == 0))
    rows = np.flatnonzero(ok)
    if rows.size > sample:
        rows = np.random.default_rng(seed).choice(rows, size=sample, replace=False)
    finder = _finder() if rows.size else None
    names = [finder.timezone_at(lng=float(lon[i]), lat=float(lat[i])) for i in rows]
    counts = collections.Counter(n for n in names if n)
    if not counts:
        raise ZoneUnknownError(
            f"{source}: no trip has usable start coordinates, so the time zone of its "
            f"local times cannot be found from where the trips are; {give}",
            source=source,
        )
    per_clock: collections.Counter = collections.Counter()
    for zone, n in counts.items():
        per_clock[_clock(zone)] += n
    main, n_main = per_clock.most_common(1)[0]
    total = sum(counts.values())
    if total - n_main > ZONE_SPREAD_SHARE * total:
        found = ", ".join(f"{z}: {n}" for z, n in sorted(counts.items()))
        raise ZoneUnknownError(
            f"{source}: the trips start in several time zones ({found}), so their local "
            f"times cannot be read in one; {give}",
            source=source,
            zones=dict(counts),
        )
    # the most frequent zone of the main clock
    return next(z for z, _ in counts.most_common() if _clock(z) == main)
