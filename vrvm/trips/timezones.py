"""Time zones: one way to name a trip's zone, and to check a name a user gives.

Trips keep their ``start_time`` in the city's zone; what is stored (model directories,
the trip store, ``attrs["tz"]``) is the zone's *name*, which pandas must accept back.
"""

from __future__ import annotations

import datetime as _dt
import zoneinfo
from typing import Any

import pandas as pd

__all__ = ["check_zone", "tz_name", "zone_name"]


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
