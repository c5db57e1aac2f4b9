"""The canonical trip table: its columns, its checks and the identities of trips.

Every model in :mod:`vrvm` learns from the same *canonical trip table*, one row per
trip with the columns of :data:`CANONICAL_COLUMNS`:

==================  ==============================================================
``origin_lat``      pickup latitude, degrees (float64, WGS84)
``origin_lon``      pickup longitude, degrees (float64)
``dest_lat``        drop-off latitude, degrees (float64)
``dest_lon``        drop-off longitude, degrees (float64)
``start_time``      pickup time, timezone-aware ``datetime64[ns, <zone>]``
``travel_time_s``   travel time in seconds (float64)
==================  ==============================================================

Trips without a calendar date (files that give only the clock and the weekday) are
placed in the *reference week*, Monday 1970-01-05 to Sunday 1970-01-11 in local time,
by their weekday and clock: the model needs only the time of day and the day type, so
they train and predict like any other trips, and :func:`dateless_mask` tells them
apart wherever a real date matters (a time span, a split by date). The day type is the
*kind of day* (:data:`DAY_KINDS`: Monday to Friday, or Saturday and Sunday, on the local
calendar, :func:`day_kind`); :func:`summarise_trips` records how many training trips
departed on each, so that a model can tell when it is asked about a kind of day it
hardly saw.

A *query* has the first five columns (:data:`QUERY_COLUMNS`). The frame's ``attrs``
record where it came from: ``attrs["schema"]`` (the source layout), ``attrs["tz"]``
(the IANA zone ``start_time`` is expressed in) and ``attrs["source"]`` (the file name).

Two identities: :func:`trips_sha256` fingerprints a whole table in row order (what a
model was trained on); :func:`trip_ids` gives each trip a 64-bit id that does not depend
on its row or on the zone its time is written in (deduplication, hold-out splits).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "CANONICAL_COLUMNS",
    "DAY_KINDS",
    "QUERY_COLUMNS",
    "REFERENCE_MONDAY",
    "TARGET_COLUMN",
    "check_trips",
    "date_span",
    "dateless_mask",
    "day_kind",
    "day_kind_counts",
    "local_weekday",
    "summarise_trips",
    "travel_times",
    "trip_ids",
    "trip_provenance",
    "trips_sha256",
]

CANONICAL_COLUMNS: tuple[str, ...] = (
    "origin_lat",
    "origin_lon",
    "dest_lat",
    "dest_lon",
    "start_time",
    "travel_time_s",
)
"""Columns of the canonical trip table, in order."""

QUERY_COLUMNS: tuple[str, ...] = CANONICAL_COLUMNS[:5]
"""Columns a query needs: the trip without its travel time."""

TARGET_COLUMN = "travel_time_s"

REFERENCE_MONDAY = np.datetime64("1970-01-05")
"""Local date of the Monday of the reference week that holds trips without a date."""

DAY_KINDS: tuple[str, ...] = ("weekday", "weekend")
"""The kinds of day the model tells apart (its ``is_weekend`` input): Monday to Friday,
and Saturday and Sunday."""


def local_weekday(start_time: pd.Series, tz: str | None = None) -> np.ndarray:
    """Local weekday (Monday = 0) of each departure (read in ``tz`` if aware).

    Examples
    --------
    >>> start = pd.Series(pd.to_datetime(["2024-03-09 05:00"], utc=True))  # a Saturday
    >>> local_weekday(start, "UTC"), local_weekday(start, "America/Chicago")  # still Friday
    (array([5]), array([4]))
    """
    start = pd.Series(start_time)
    if start.dt.tz is not None and tz is not None:
        start = start.dt.tz_convert(tz)
    return start.dt.weekday.to_numpy(np.int64)


def day_kind(weekday):
    """The kind of day (:data:`DAY_KINDS`) of weekdays (Monday = 0), as the model's
    ``is_weekend`` input tells them apart.

    Examples
    --------
    >>> day_kind(5), day_kind(np.array([0, 4, 6])).tolist()
    ('weekend', ['weekday', 'weekday', 'weekend'])
    """
    if np.ndim(weekday) == 0:
        return DAY_KINDS[int(weekday) >= 5]
    return np.where(np.asarray(weekday) >= 5, DAY_KINDS[1], DAY_KINDS[0])


def day_kind_counts(start_time: pd.Series, tz: str | None = None) -> dict[str, int]:
    """How many departures fall on each kind of day (:data:`DAY_KINDS`, read in ``tz``
    if aware), as :func:`summarise_trips` records them under ``"day_kind_trips"``.

    Examples
    --------
    >>> start = pd.Series(pd.to_datetime(["2024-03-08 08:00", "2024-03-09 05:00"], utc=True))
    >>> day_kind_counts(start, "UTC"), day_kind_counts(start, "America/Chicago")
    ({'weekday': 1, 'weekend': 1}, {'weekday': 2, 'weekend': 0})
    """
    weekend = int(np.count_nonzero(local_weekday(start_time, tz) >= 5))
    return {DAY_KINDS[0]: len(start_time) - weekend, DAY_KINDS[1]: weekend}


def dateless_mask(start_time: pd.Series) -> np.ndarray:
    """Which trips carry no calendar date (their local start lies in the reference week).

    Examples
    --------
    >>> import pandas as pd
    >>> times = pd.Series(pd.to_datetime(["1970-01-07 08:15", "2016-03-16 08:15"]))
    >>> dateless_mask(times.dt.tz_localize("America/New_York")).tolist()
    [True, False]
    """
    times = pd.Series(start_time)
    if isinstance(times.dtype, pd.DatetimeTZDtype):
        times = times.dt.tz_localize(None)  # local wall clock
    days = times.to_numpy(dtype="datetime64[ns]").astype("datetime64[D]")
    return (days >= REFERENCE_MONDAY) & (days < REFERENCE_MONDAY + np.timedelta64(7, "D"))


def date_span(start, end) -> str:
    """The dates between two start times, as people read them; trips without a date say so.

    ``start`` and ``end`` are timestamps or ISO text (as a model's training summary
    records them), compared on the local calendar.

    Examples
    --------
    >>> date_span("2016-01-03T08:00:00-06:00", "2016-12-30T23:00:00-06:00")
    '2016-01-03 to 2016-12-30'
    >>> date_span("1970-01-05T07:00:00-05:00", "1970-01-11T23:10:00-05:00")
    'no calendar date (weekday and clock only)'
    """
    times = pd.Series([pd.Timestamp(start), pd.Timestamp(end)])
    local = times.map(lambda t: t.tz_localize(None) if t.tzinfo else t)
    if dateless_mask(local).all():
        return "no calendar date (weekday and clock only)"
    return f"{local[0]:%Y-%m-%d} to {local[1]:%Y-%m-%d}"


def check_trips(trips, *, with_target: bool, name: str = "trips") -> pd.DataFrame:
    """``trips`` if it is a non-empty frame with the canonical (or query) columns.

    Returns a shallow copy without ``attrs`` when it has some: pandas deep-copies
    ``attrs`` into every column it hands out (~0.2 ms per call even for a few
    strings), which would dominate one-trip predictions and updates.
    """
    if not isinstance(trips, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(trips).__name__}")
    columns = CANONICAL_COLUMNS if with_target else QUERY_COLUMNS
    missing = [c for c in columns if c not in trips.columns]
    if missing:
        raise ValueError(
            f"{name} is missing column(s) {missing}; expected {list(columns)} "
            "(read files with vrvm.read_trips to get them)"
        )
    if len(trips) == 0:
        raise ValueError(f"{name} has no rows")
    if trips.attrs:
        trips = trips.copy(deep=False)
        trips.attrs = {}
    return trips


def travel_times(trips: pd.DataFrame, *, positive: bool) -> np.ndarray:
    """The travel times in seconds as float64; ValueError naming rows that are not finite
    (or not positive, with ``positive``)."""
    try:
        y = trips[TARGET_COLUMN].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise ValueError(f"column {TARGET_COLUMN!r} must hold numbers of seconds") from None
    bad = ~np.isfinite(y) | ((y <= 0) if positive else False)
    if bad.any():
        rows = np.flatnonzero(bad)[:10].tolist()
        need = "finite and positive" if positive else "finite"
        raise ValueError(
            f"{TARGET_COLUMN} must be {need}; {int(bad.sum())} row(s) are not (positions "
            f"{rows}); clean the trips first (vrvm.clean_trips)"
        )
    return y


def trips_sha256(trips: pd.DataFrame) -> str:
    """SHA-256 of the canonical columns of a trip table, in row order.

    Hashes, column by column, the name and the little-endian bytes of the values:
    coordinates and ``travel_time_s`` as float64, ``start_time`` as int64 nanoseconds
    since the epoch (UTC for timezone-aware times, wall clock for naive ones). The
    digest identifies the training data exactly and does not depend on the file
    format it was read from, on other columns or on the index.

    Examples
    --------
    >>> from vrvm.trips.synthetic import synthetic_city
    >>> trips = synthetic_city(50, seed=0)
    >>> trips_sha256(trips) == trips_sha256(trips.copy()), len(trips_sha256(trips))
    (True, 64)
    >>> trips_sha256(trips) == trips_sha256(trips.iloc[::-1])
    False
    """
    digest = hashlib.sha256(b"vrvm.trips.v1")
    for column in CANONICAL_COLUMNS:
        if column not in trips.columns:
            continue
        values = trips[column]
        if column == "start_time":
            times = values.dt.tz_convert("UTC").dt.tz_localize(None) if values.dt.tz else values
            raw = times.to_numpy(dtype="datetime64[ns]").view("<i8")
        else:
            raw = values.to_numpy(dtype="<f8", na_value=np.nan)
        digest.update(column.encode() + b"\0")
        digest.update(np.ascontiguousarray(raw).tobytes())
    return digest.hexdigest()


def canonical_utc(trips: pd.DataFrame) -> pd.DataFrame:
    """The canonical columns only, float64 values and ``start_time`` in UTC.

    Raises ValueError for missing columns or a naive ``start_time``.
    """
    missing = [c for c in CANONICAL_COLUMNS if c not in trips.columns]
    if missing:
        raise ValueError(
            f"trips are missing canonical column(s) {missing}; read files with "
            "vrvm.read_trips to get them"
        )
    frame = trips[list(CANONICAL_COLUMNS)].reset_index(drop=True).copy()
    start = frame["start_time"]
    if not isinstance(start.dtype, pd.DatetimeTZDtype):
        raise ValueError("start_time must be timezone-aware (as vrvm.read_trips returns it)")
    frame["start_time"] = start.dt.tz_convert("UTC").astype("datetime64[ns, UTC]")
    for column in CANONICAL_COLUMNS:
        if column != "start_time":
            frame[column] = frame[column].astype(np.float64)
    return frame


def trip_ids(trips: pd.DataFrame) -> np.ndarray:
    """64-bit identity of each trip: a hash of its canonical values.

    The start time enters as an instant (UTC), so the same trip read in two time zones
    has one id; other columns and the index do not matter.

    Examples
    --------
    >>> from vrvm.trips.synthetic import synthetic_city
    >>> trips = synthetic_city(3, seed=0)
    >>> ids = trip_ids(trips)
    >>> ids.dtype, len(set(ids.tolist()))
    (dtype('uint64'), 3)
    >>> local = trips.assign(start_time=trips["start_time"].dt.tz_convert("Asia/Tokyo"))
    >>> bool((trip_ids(local) == ids).all())
    True
    """
    frame = canonical_utc(trips)
    return pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)


def summarise_trips(
    trips: pd.DataFrame,
    travel_time_s: np.ndarray,
    provenance: dict[str, Any],
    tz: str | None = None,
) -> dict[str, Any]:
    """What a model records of its training trips: count, time span, bounding box,
    travel-time range, content hash, the trips on each kind of day (``day_kind_trips``,
    see :func:`day_kind_counts`, read in the model's zone ``tz``) and ``provenance``
    (see :func:`trip_provenance`). A model saved before the kinds of day were counted
    has no ``day_kind_trips``: what it learned of them is unknown."""
    times = trips["start_time"]
    lats = np.concatenate([trips["origin_lat"].to_numpy(float), trips["dest_lat"].to_numpy(float)])
    lons = np.concatenate([trips["origin_lon"].to_numpy(float), trips["dest_lon"].to_numpy(float)])
    summary = {
        "n_trips": len(trips),
        "start_time_min": times.min().isoformat(),
        "start_time_max": times.max().isoformat(),
        "bbox": [float(lats.min()), float(lons.min()), float(lats.max()), float(lons.max())],
        "travel_time_s": {
            "min": float(travel_time_s.min()),
            "median": float(np.median(travel_time_s)),
            "max": float(travel_time_s.max()),
        },
        "sha256": trips_sha256(trips),
        "day_kind_trips": day_kind_counts(times, tz),
    }
    summary.update(provenance)
    return summary


def trip_provenance(trips) -> dict[str, Any]:
    """Where the trips came from, as recorded by read_trips / synthetic_city in ``attrs``."""
    attrs = getattr(trips, "attrs", {}) or {}
    out = {
        key: attrs[key] for key in ("source", "schema", "city") if isinstance(attrs.get(key), str)
    }
    if isinstance(attrs.get("synthetic"), bool | np.bool_):
        out["synthetic"] = bool(attrs["synthetic"])
    return out
