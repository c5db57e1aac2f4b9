"""Cleaning trips: every row kept or dropped for one named reason, and the report.

Cleaning
--------
Each input row is either kept or dropped for exactly one reason: the *first* of the
checks below that it fails, in this order (thresholds from :class:`CleaningConfig`):

1. ``unparseable_time`` -- start time empty or not a recognisable time, or a drop-off
   time that is present but not recognisable (with split roles: a date, clock, hour,
   minute or weekday that is empty or unreadable);
2. ``out_of_range_time`` -- a start time before
   :data:`~vrvm.trips.files.time_range.EARLIEST_DEPARTURE` (1970-01-01 UTC) or after
   :data:`~vrvm.trips.files.time_range.LATEST_DEPARTURE` (2100-01-01 UTC): a typo or a number
   read as a date, never a trip to learn from;
3. ``unknown_zone`` -- a zone id (``origin_zone`` / ``dest_zone``) that the zone file
   does not hold;
4. ``missing_coordinates`` -- a coordinate is empty or not a number;
5. ``invalid_coordinates`` -- latitude outside [-90, 90] or longitude outside
   [-180, 180], a point at exactly (0, 0) (a common "no GPS fix" placeholder), a point
   outside ``bbox``, or farther than ``max_radius_km`` from the median point of the
   rows that passed the previous checks;
6. ``missing_duration`` -- travel time (or the drop-off time it is computed from)
   empty or not a number;
7. ``non_positive_duration`` -- travel time <= 0 s;
8. ``too_short`` -- travel time below ``min_duration_s``;
9. ``too_long`` -- travel time above ``max_duration_s``;
10. ``too_fast`` -- straight-line (haversine) distance / travel time above
   ``max_speed_kmh``;
11. ``duplicate`` -- identical in every canonical column to an earlier kept row (the
    first occurrence is kept).

Formats that do not fit
-----------------------
Before any row is kept, the formats are checked (:func:`~vrvm.trips.files.parsing.check_formats`):
a date, clock or weekday format (stated or detected) that leaves more than 1 % of its
column's values unreadable, or a stated day-first (month-first) order that the values
contradict, raises :class:`~vrvm.trips.files.formats.FormatMismatchError` instead of dropping
those rows: the rows that happened to read would be read wrongly too. So does a
travel-time column whose unit gives implausible speeds for most trips (a median
straight-line speed above 150 km/h or below 1 km/h) where the other unit (seconds,
minutes) gives plausible ones. Files of queries (``require_travel_time=False``), which
are answered row by row, are refused only for a format shown wrong (another format
reads the failing values, or the values contradict the stated order).

Queries: trips without a travel time
------------------------------------
With ``require_travel_time=False`` (for files of queries to predict, which may or may
not carry the observed travel times) the travel time is optional: a file without a
travel-time (or drop-off time) column is read with ``travel_time_s`` all NaN, and a
row whose travel time is empty or not a number is kept with NaN. The duration checks
5--9 then apply only to the rows that carry a travel time (``missing_duration`` never
fires); a travel time that is present but zero, negative or implausible still drops
its row. A schema is recognised by its start-time and coordinate columns alone.

Row numbers
-----------
The report identifies rows by *row number*: the 1-based line number in the file, with
the header as line 1, so the first data row is row 2 and you can jump straight to it
in an editor. This holds exactly for CSV files without line breaks inside quoted
fields; blank lines are counted as lines (and skipped, see
:attr:`CleaningReport.n_empty_rows`). A row with more fields than the header is an
error, never silently truncated. For Parquet files and for frames passed to
:func:`clean_trips` the row number is the 0-based position plus 2, which is the line
number the row would have in ``df.to_csv(path, index=False)``, unless the frame has
an integer ``row`` column, whose values are then used.

Row numbers stay available after cleaning: with ``row_numbers=True`` the returned
table starts with an int64 column ``row``, the row number of each kept row, and
:attr:`CleaningReport.dropped_rows` lists the row numbers of every dropped row, so
every input row can be accounted for (as ``vrvm predict`` does, writing one output
row per input row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from vrvm.trips.files.formats import FormatMismatchError
from vrvm.trips.files.layouts import Layout, quote_columns
from vrvm.trips.files.parsing import Parsed, check_formats, parse_columns
from vrvm.trips.files.time_range import EARLIEST_DEPARTURE, LATEST_DEPARTURE, in_departure_range
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.places.timezones import check_zone, zone_name
from vrvm.trips.table import CANONICAL_COLUMNS

__all__ = [
    "CLEANING_REASONS",
    "CleaningConfig",
    "CleaningReport",
    "check_duration_unit",
    "clean_parsed",
    "clean_trips",
    "combine_reports",
]

CLEANING_REASONS: tuple[str, ...] = (
    "unparseable_time",
    "out_of_range_time",
    "unknown_zone",
    "missing_coordinates",
    "invalid_coordinates",
    "missing_duration",
    "non_positive_duration",
    "too_short",
    "too_long",
    "too_fast",
    "duplicate",
)
"""Reasons a row can be dropped, in the order they are checked."""

_N_EXAMPLES = 5


@dataclass(frozen=True)
class CleaningConfig:
    """Thresholds for dropping implausible trips; ``None`` disables a check.

    Parameters
    ----------
    min_duration_s : float or None, default=60
        Shorter trips are dropped as ``too_short`` (mostly meter tests and
        cancellations; also below the rounding of most exports).
    max_duration_s : float or None, default=10800 (3 h)
        Longer trips are dropped as ``too_long`` (meters left running).
    max_speed_kmh : float or None, default=120
        Trips whose straight-line (haversine) distance divided by the travel time
        exceeds this are dropped as ``too_fast``: no taxi averages that in a city, so
        a coordinate or a time is wrong.
    bbox : tuple of 4 floats or None, default=None
        ``(min_lat, min_lon, max_lat, max_lon)``; points outside are
        ``invalid_coordinates``.
    max_radius_km : float or None, default=200
        Points farther than this from the median point of the data (taken over the
        origins and destinations of rows that passed the earlier checks) are
        ``invalid_coordinates``: they are in another city, or a sign was lost.
    drop_duplicates : bool, default=True
        Drop rows identical in every canonical column to an earlier kept row. Turn
        off for exports whose values are coarsened so much (rounded times, area
        centroids) that distinct trips can coincide.
    center : tuple of 2 floats or None, default=None
        ``(lat, lon)`` from which ``max_radius_km`` is measured; None: the median
        point of the data. Reads out of core (:class:`vrvm.trips.files.dataset.TripDataset`)
        set it to the median point of a uniform sample, so that every part of the data
        is cleaned alike.

    Examples
    --------
    >>> from vrvm.trips import CleaningConfig
    >>> CleaningConfig(max_duration_s=2 * 3600).max_duration_s
    7200
    >>> CleaningConfig(min_duration_s=-1)
    Traceback (most recent call last):
    ...
    ValueError: min_duration_s must be a non-negative number or None, got -1
    """

    min_duration_s: float | None = 60
    max_duration_s: float | None = 3 * 3600
    max_speed_kmh: float | None = 120
    bbox: tuple[float, float, float, float] | None = None
    max_radius_km: float | None = 200
    drop_duplicates: bool = True
    center: tuple[float, float] | None = None

    def __post_init__(self):
        for name, positive in (
            ("min_duration_s", False),
            ("max_duration_s", True),
            ("max_speed_kmh", True),
            ("max_radius_km", True),
        ):
            value = getattr(self, name)
            if value is None:
                continue
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            ok = ok and np.isfinite(value) and (value > 0 if positive else value >= 0)
            if not ok:
                kind = "a positive" if positive else "a non-negative"
                raise ValueError(f"{name} must be {kind} number or None, got {value!r}")
        if (
            self.min_duration_s is not None
            and self.max_duration_s is not None
            and self.min_duration_s >= self.max_duration_s
        ):
            raise ValueError(
                f"min_duration_s ({self.min_duration_s}) must be below max_duration_s "
                f"({self.max_duration_s})"
            )
        if self.bbox is not None:
            bbox = tuple(float(v) for v in self.bbox)
            if len(bbox) != 4 or not (bbox[0] < bbox[2] and bbox[1] < bbox[3]):
                raise ValueError(
                    "bbox must be (min_lat, min_lon, max_lat, max_lon) with min < max, got "
                    f"{self.bbox!r}"
                )
            object.__setattr__(self, "bbox", bbox)
        if not isinstance(self.drop_duplicates, bool | np.bool_):
            raise ValueError(f"drop_duplicates must be True or False, got {self.drop_duplicates!r}")
        if self.center is not None:
            center = tuple(float(v) for v in self.center)
            if len(center) != 2 or not (abs(center[0]) <= 90 and abs(center[1]) <= 180):
                raise ValueError(f"center must be (lat, lon) in degrees, got {self.center!r}")
            object.__setattr__(self, "center", center)

    def to_dict(self) -> dict:
        """The settings as a JSON-serialisable dict."""
        return {
            "min_duration_s": self.min_duration_s,
            "max_duration_s": self.max_duration_s,
            "max_speed_kmh": self.max_speed_kmh,
            "bbox": None if self.bbox is None else list(self.bbox),
            "max_radius_km": self.max_radius_km,
            "drop_duplicates": bool(self.drop_duplicates),
            **({} if self.center is None else {"center": list(self.center)}),
        }


def as_config(cleaning) -> CleaningConfig:
    if cleaning is None:
        return CleaningConfig()
    if isinstance(cleaning, CleaningConfig):
        return cleaning
    if isinstance(cleaning, Mapping):
        return CleaningConfig(**cleaning)
    raise TypeError(
        f"cleaning must be a CleaningConfig, a dict of its fields or None, got "
        f"{type(cleaning).__name__}"
    )


def _describe(reason: str, config: CleaningConfig) -> str:
    """One-line description of a reason, with the thresholds actually used."""
    if reason == "invalid_coordinates":
        parts = ["latitude/longitude out of range", "at (0, 0)"]
        if config.bbox is not None:
            parts.append(f"outside bbox {list(config.bbox)}")
        if config.max_radius_km is not None:
            parts.append(f"more than {config.max_radius_km:g} km from the median point")
        return "a point " + ", ".join(parts[:-1]) + " or " + parts[-1]
    texts = {
        "unparseable_time": "start time empty or not readable, or drop-off time not readable",
        "out_of_range_time": f"start time before {EARLIEST_DEPARTURE:%Y-%m-%d} or after "
        f"{LATEST_DEPARTURE:%Y-%m-%d} (UTC)",
        "unknown_zone": "a zone id that the zone file does not hold",
        "missing_coordinates": "a coordinate is empty or not a number",
        "missing_duration": "travel time (or the drop-off time) empty or not a number",
        "non_positive_duration": "travel time zero or negative",
        "too_short": f"travel time below {config.min_duration_s:g} s (min_duration_s)"
        if config.min_duration_s is not None
        else "check disabled (min_duration_s=None)",
        "too_long": f"travel time above {config.max_duration_s:g} s (max_duration_s)"
        if config.max_duration_s is not None
        else "check disabled (max_duration_s=None)",
        "too_fast": f"straight-line speed above {config.max_speed_kmh:g} km/h (max_speed_kmh)"
        if config.max_speed_kmh is not None
        else "check disabled (max_speed_kmh=None)",
        "duplicate": "same values in every column as an earlier kept row"
        if config.drop_duplicates
        else "check disabled (drop_duplicates=False)",
    }
    return texts[reason]


@dataclass(frozen=True)
class CleaningReport:
    """What happened to every input row: kept, or dropped for one named reason.

    Row numbers follow the module's convention: the line number in the source file
    with the header as line 1 (so the first data row is row 2); for Parquet files and
    DataFrames, the 0-based position plus 2.

    Attributes
    ----------
    source : str
        File (or frame) name the rows came from.
    n_input : int
        Rows considered (data rows, not counting empty ones).
    n_kept : int
        Rows in the returned table. ``n_input == n_kept + dropped`` always.
    counts : dict of str to int
        Rows dropped per reason, for every reason in :data:`CLEANING_REASONS` order.
    examples : dict of str to list of int
        Up to five row numbers per reason (the first ones in the file).
    config : CleaningConfig
        The thresholds that were applied.
    schema : str or None
        Schema the source was read with.
    tz : str or None
        Time zone of ``start_time`` in the returned table.
    tz_inferred : bool
        Whether ``tz`` was found from where the trips are (layouts that name no
        city, see :mod:`vrvm.trips.files.layouts`) rather than given or fixed by the layout.
    center : tuple of float or None
        ``(lat, lon)`` median point used for the ``max_radius_km`` check.
    n_empty_rows : int
        Rows (typically blank lines) whose used fields were all empty; they are not
        trips, are skipped, and are not part of ``n_input``.
    notes : dict of str to str
        How time columns were read where the file's format was detected, per role
        (``{"start_date": "'pickup_date': day-first dates"}``).
    dateless : bool
        The file gives no calendar date: trips were placed in the reference week by
        weekday and clock (:data:`vrvm.trips.table.REFERENCE_MONDAY`).
    dropped_rows : dict of str to numpy.ndarray
        Row numbers (int64, increasing) of *every* dropped row, per reason, so that
        with the ``row`` column of the kept rows each input row can be accounted for.
        Left out of :meth:`to_dict` and of comparisons (it can be long); empty for a
        report built by hand without it.

    Examples
    --------
    >>> from vrvm.trips import CleaningReport
    >>> report = CleaningReport(source="demo.csv", n_input=10, n_kept=8,
    ...                         counts={"too_short": 2}, examples={"too_short": [3, 7]})
    >>> report.dropped
    2
    >>> print(report)
    demo.csv: kept 8 of 10 rows (80.0%), dropped 2
      too_short: 2 (20.0%), e.g. rows 3, 7
    """

    source: str
    n_input: int
    n_kept: int
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[int]] = field(default_factory=dict)
    config: CleaningConfig = field(default_factory=CleaningConfig)
    schema: str | None = None
    tz: str | None = None
    tz_inferred: bool = False
    center: tuple[float, float] | None = None
    n_empty_rows: int = 0
    notes: dict[str, str] = field(default_factory=dict)
    dateless: bool = False
    dropped_rows: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        # Every reason present, in check order, so tables always have the same rows.
        counts = {r: int(self.counts.get(r, 0)) for r in CLEANING_REASONS}
        examples = {r: [int(i) for i in self.examples.get(r, [])] for r in CLEANING_REASONS}
        dropped_rows = {}
        for r in CLEANING_REASONS:
            rows = np.array(self.dropped_rows.get(r, ()), dtype=np.int64).reshape(-1)
            rows.flags.writeable = False  # the report is frozen; so are its arrays
            dropped_rows[r] = rows
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "examples", examples)
        object.__setattr__(self, "dropped_rows", dropped_rows)

    @property
    def dropped(self) -> int:
        """Total number of dropped rows."""
        return sum(self.counts.values())

    def _share(self, count: int) -> float:
        return count / self.n_input if self.n_input else 0.0

    def to_frame(self) -> pd.DataFrame:
        """One row per reason: ``reason, count, share, example_rows, description``.

        ``share`` is the fraction of ``n_input``; ``example_rows`` is a comma-separated
        string of row numbers, ready to display.
        """
        return pd.DataFrame(
            {
                "reason": list(CLEANING_REASONS),
                "count": [self.counts[r] for r in CLEANING_REASONS],
                "share": [self._share(self.counts[r]) for r in CLEANING_REASONS],
                "example_rows": [", ".join(map(str, self.examples[r])) for r in CLEANING_REASONS],
                "description": [_describe(r, self.config) for r in CLEANING_REASONS],
            }
        )

    def to_dict(self) -> dict:
        """A JSON-serialisable dict of the whole report."""
        return {
            "source": self.source,
            "schema": self.schema,
            "tz": self.tz,
            "tz_inferred": bool(self.tz_inferred),
            "n_input": int(self.n_input),
            "n_kept": int(self.n_kept),
            "n_dropped": int(self.dropped),
            "n_empty_rows": int(self.n_empty_rows),
            "reasons": [
                {
                    "reason": r,
                    "count": self.counts[r],
                    "share": float(self._share(self.counts[r])),
                    "example_rows": list(self.examples[r]),
                    "description": _describe(r, self.config),
                }
                for r in CLEANING_REASONS
            ],
            "config": self.config.to_dict(),
            "center": None if self.center is None else [float(v) for v in self.center],
            "notes": dict(self.notes),
            "dateless": bool(self.dateless),
        }

    def summary(self) -> str:
        """A short human-readable account: totals, then one line per reason that fired."""
        lines = [
            f"{self.source}: kept {self.n_kept:,} of {self.n_input:,} rows "
            f"({100 * self._share(self.n_kept):.1f}%), dropped {self.dropped:,}"
        ]
        if self.n_empty_rows:
            lines[0] += f" ({self.n_empty_rows:,} empty rows skipped)"
        if self.tz_inferred:
            lines.append(
                f"  local times read in {self.tz}, the time zone where the trips are "
                "(give tz to change it)"
            )
        if self.notes:
            lines.append("  read " + "; ".join(self.notes.values()))
        if self.dateless:
            lines.append(
                "  no calendar date: trips placed in a reference week by weekday and "
                "clock (training and prediction need only those)"
            )
        for reason in CLEANING_REASONS:
            count = self.counts[reason]
            if count:
                rows = ", ".join(map(str, self.examples[reason]))
                lines.append(
                    f"  {reason}: {count:,} ({100 * self._share(count):.1f}%), e.g. rows {rows}"
                )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def median_point(olat, olon, dlat, dlon) -> tuple[float, float]:
    """(lat, lon) median of the trips' origins and destinations together: the centre
    from which ``max_radius_km`` is measured."""
    return (
        float(np.median(np.concatenate([olat, dlat]))),
        float(np.median(np.concatenate([olon, dlon]))),
    )


def far_from(center, radius_km: float, olat, olon, dlat, dlon) -> np.ndarray:
    """True for trips with an end farther than ``radius_km`` from ``center``."""
    return (haversine_km(olat, olon, *center) > radius_km) | (
        haversine_km(dlat, dlon, *center) > radius_km
    )


def clean_parsed(
    parsed: Parsed,
    rows: np.ndarray,
    config: CleaningConfig,
    *,
    source: str,
    schema: str | None,
    n_empty: int = 0,
    attrs: Mapping | None = None,
    require_duration: bool = True,
    row_numbers: bool = False,
) -> tuple[pd.DataFrame, CleaningReport]:
    n = len(rows)
    # A format that does not fit is refused, not dropped; queries only when shown wrong.
    check_formats(parsed, rows, source, strict=require_duration)
    check_duration_unit(parsed, source)
    code = {reason: i + 1 for i, reason in enumerate(CLEANING_REASONS)}
    reason = np.zeros(n, dtype=np.int8)  # 0 = kept, k = k-th reason

    def fail(mask: np.ndarray, name: str) -> None:
        # Only rows still undecided: a row keeps the first reason it fails.
        reason[(reason == 0) & mask] = code[name]

    c = parsed.coords
    olat, olon, dlat, dlon = c["origin_lat"], c["origin_lon"], c["dest_lat"], c["dest_lon"]
    duration = parsed.duration

    fail(parsed.time_failed, "unparseable_time")
    fail(~in_departure_range(parsed.start_utc), "out_of_range_time")
    if parsed.zone_failed is not None:
        fail(parsed.zone_failed, "unknown_zone")
    fail(np.isnan(olat) | np.isnan(olon) | np.isnan(dlat) | np.isnan(dlon), "missing_coordinates")

    with np.errstate(invalid="ignore", divide="ignore"):
        bad = np.zeros(n, dtype=bool)
        for lat, lon in ((olat, olon), (dlat, dlon)):
            bad |= ~((np.abs(lat) <= 90) & (np.abs(lon) <= 180))
            bad |= (lat == 0) & (lon == 0)
            if config.bbox is not None:
                lat_lo, lon_lo, lat_hi, lon_hi = config.bbox
                bad |= ~((lat >= lat_lo) & (lat <= lat_hi) & (lon >= lon_lo) & (lon <= lon_hi))
        fail(bad, "invalid_coordinates")

        center = None
        if config.max_radius_km is not None and np.any(reason == 0):
            ok = reason == 0
            center = config.center or median_point(olat[ok], olon[ok], dlat[ok], dlon[ok])
            far = far_from(center, config.max_radius_km, olat, olon, dlat, dlon)
            fail(far, "invalid_coordinates")

        if require_duration:
            fail(np.isnan(duration), "missing_duration")
        # NaN fails no comparison below, so without require_duration these checks
        # apply only to the rows that carry a travel time.
        fail(duration <= 0, "non_positive_duration")
        if config.min_duration_s is not None:
            fail(duration < config.min_duration_s, "too_short")
        if config.max_duration_s is not None:
            fail(duration > config.max_duration_s, "too_long")
        if config.max_speed_kmh is not None:
            speed = haversine_km(olat, olon, dlat, dlon) / (duration / 3600.0)
            fail(speed > config.max_speed_kmh, "too_fast")

    columns = {
        "origin_lat": olat,
        "origin_lon": olon,
        "dest_lat": dlat,
        "dest_lon": dlon,
        "start_time": parsed.start_utc,  # UTC: equal instants are equal local times
        "travel_time_s": duration,
    }
    if config.drop_duplicates:
        ok = np.flatnonzero(reason == 0)
        dup = _duplicated(list(columns.values()), ok)
        reason[ok[dup]] = code["duplicate"]

    counts_all = np.bincount(reason, minlength=len(CLEANING_REASONS) + 1)
    counts = {r: int(counts_all[code[r]]) for r in CLEANING_REASONS}
    dropped_rows = {r: rows[reason == code[r]] for r in CLEANING_REASONS}
    examples = {r: dropped_rows[r][:_N_EXAMPLES].tolist() for r in CLEANING_REASONS}
    keep = reason == 0
    kept = _kept_frame(columns, keep, parsed.zone)
    if row_numbers:
        kept.insert(0, "row", rows[reason == 0].astype(np.int64))
    kept.attrs.update(attrs or {})
    kept.attrs.update({"schema": schema, "tz": parsed.zone, "source": source})
    report = CleaningReport(
        source=source,
        n_input=n,
        n_kept=len(kept),
        counts=counts,
        examples=examples,
        config=config,
        schema=schema,
        tz=parsed.zone,
        tz_inferred=parsed.zone_inferred,
        center=center,
        n_empty_rows=n_empty,
        notes=dict(parsed.notes),
        dateless=parsed.dateless,
        dropped_rows=dropped_rows,
    )
    return kept, report


_PLAUSIBLE_KMH = (1.0, 150.0)  # median straight-line speeds of trips in a city
_UNIT_SAMPLE = 100_000  # rows, evenly spread, the median speed is taken over
_MIN_UNIT_TRIPS = 50  # trips with a distance the unit is judged on (fewer: a sample too small)
_UNIT_WORDS = {"travel_time_s": ("seconds", "minutes"), "travel_time_min": ("minutes", "seconds")}


def check_duration_unit(parsed: Parsed, source: str) -> None:
    """Refuse a travel-time column whose unit makes most trips implausibly fast or slow
    (median straight-line speed outside 1-150 km/h) when the other unit does not.

    Judged on the trips with readable, distinct points and a positive travel time (at
    least 50, of up to 100,000 rows evenly spread over the file); a factor of 60
    separates the readings, so both can rarely be plausible.
    """
    if parsed.checks.duration is None:
        return
    role, column = parsed.checks.duration
    c = parsed.coords
    n = len(parsed.duration)
    # A median needs no more than an even sample of rows: memory stays small for 1e7.
    at = np.unique(np.linspace(0, max(n - 1, 0), min(n, _UNIT_SAMPLE)).astype(np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        km = haversine_km(*(c[k][at] for k in ("origin_lat", "origin_lon", "dest_lat", "dest_lon")))
        hours = parsed.duration[at] / 3600.0
        ok = np.isfinite(km) & (km > 0) & np.isfinite(hours) & (hours > 0)
    if ok.sum() < _MIN_UNIT_TRIPS:
        return
    speed = float(np.median(km[ok] / hours[ok]))
    low, high = _PLAUSIBLE_KMH
    # Minutes are 60 seconds: read in the other unit, every travel time is 60 times
    # longer (seconds -> minutes) or shorter, and every speed 60 times lower or higher.
    other_speed = speed / 60.0 if role == "travel_time_s" else speed * 60.0
    if low <= speed <= high or not low <= other_speed <= high:
        return
    unit, other = _UNIT_WORDS[role]
    other_role = "travel_time_min" if role == "travel_time_s" else "travel_time_s"
    raise FormatMismatchError(
        f"{source}: column {column!r} read as {unit} ({role}) makes the median trip "
        f"{speed:,.1f} km/h in a straight line, over {int(ok.sum()):,} trips; read as "
        f"{other} it is {other_speed:,.1f} km/h: map it as {other_role} "
        f"(--map {other_role}={column}). Nothing was read.",
        source=source,
        column=column,
        option="unit",
        used=unit,
        choices=[other],
        share=1.0,
    )


def _kept_frame(columns: dict[str, np.ndarray], keep: np.ndarray, zone: str) -> pd.DataFrame:
    """The canonical table of the kept rows, built with one copy of each value."""
    numbers = [name for name in columns if name != "start_time"]
    block = np.empty((len(numbers), int(keep.sum())), dtype=np.float64)
    for i, name in enumerate(numbers):
        np.compress(keep, columns[name], out=block[i])
    kept = pd.DataFrame(block.T, columns=numbers, copy=False)
    start = pd.Series(columns["start_time"][keep]).dt.tz_localize("UTC").dt.tz_convert(zone)
    kept.insert(list(columns).index("start_time"), "start_time", start)
    return kept


def _row_keys(values: np.ndarray) -> np.ndarray:
    """uint64 hashes of one column's values, equal for values pandas counts as equal
    (NaN and NaN, NaT and NaT, -0.0 and 0.0)."""
    if values.dtype.kind == "M":
        return pd.util.hash_array(values.view(np.int64))
    values = values + 0.0  # -0.0 becomes 0.0
    values[np.isnan(values)] = np.nan  # one NaN
    return pd.util.hash_array(values)


def _duplicated(columns: list[np.ndarray], rows: np.ndarray | None = None) -> np.ndarray:
    """``DataFrame(columns).iloc[rows].duplicated(keep="first")``, with far less memory.

    Rows are compared through one 64-bit hash each; a row whose hash an earlier row
    has is compared with that row value by value, and hashes shared by rows that differ
    (a collision, about one in 10^10 for 10^5 rows) are settled by pandas itself.

    Examples
    --------
    >>> a = np.array([1.0, 1.0, np.nan, np.nan, -0.0, 0.0, 2.0])
    >>> _duplicated([a, np.array([5.0, 5.0, 6.0, 6.0, 7.0, 7.0, 5.0])]).tolist()
    [False, True, False, True, False, True, False]
    """
    if rows is None:
        rows = np.arange(len(columns[0]) if columns else 0)
    n = len(rows)
    if n == 0:
        return np.zeros(0, dtype=bool)
    key = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for values in columns:  # one column's values at a time
            key = key * np.uint64(1_000_003) ^ _row_keys(values[rows])
    codes, uniques = pd.factorize(key)
    first = np.full(len(uniques), n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n))
    earlier = first[codes]
    candidate = earlier != np.arange(n)
    same = candidate.copy()
    for values in columns:
        a, b = values[rows[candidate]], values[rows[earlier[candidate]]]
        if values.dtype.kind == "M":
            equal = a == b
            equal |= np.isnat(a) & np.isnat(b)
        else:
            equal = (a == b) | (np.isnan(a) & np.isnan(b))
        same[candidate] &= equal
    clash = candidate & ~same
    if clash.any():  # rows sharing a hash but not their values: ask pandas
        shared = np.flatnonzero(np.isin(codes, codes[clash]))
        frame = pd.DataFrame({i: values[rows[shared]] for i, values in enumerate(columns)})
        same[shared] = frame.duplicated(keep="first").to_numpy()
    return same


def combine_reports(
    reports: Sequence[CleaningReport], *, source: str | None = None
) -> CleaningReport:
    """One report for a file cleaned in batches, from the batches' reports in file order.

    Counts add up, the examples are the first rows of each reason in the file and the
    dropped rows are all of them; the rest (thresholds, schema, zone, notes) is the
    first batch's. Checks over the whole file (the median point, duplicates) cannot be
    combined: the batches must have been cleaned without them
    (:func:`vrvm.trips.files.reader.iter_trips`).

    Examples
    --------
    >>> a = CleaningReport("q.csv", 3, 2, {"too_short": 1}, {"too_short": [3]})
    >>> b = CleaningReport("q.csv", 2, 1, {"too_short": 1}, {"too_short": [6]})
    >>> print(combine_reports([a, b]))
    q.csv: kept 3 of 5 rows (60.0%), dropped 2
      too_short: 2 (40.0%), e.g. rows 3, 6
    """
    if not reports:
        raise ValueError("combine_reports needs at least one report")
    first = reports[0]
    if any(r.center is not None and r.center != r.config.center for r in reports):
        raise ValueError(
            "reports of batches cleaned with max_radius_km cannot be combined: the median "
            "point is the whole file's"
        )
    dropped_rows = {
        reason: np.concatenate([r.dropped_rows[reason] for r in reports])
        for reason in CLEANING_REASONS
    }
    return CleaningReport(
        source=source or first.source,
        n_input=sum(r.n_input for r in reports),
        n_kept=sum(r.n_kept for r in reports),
        counts={reason: sum(r.counts[reason] for r in reports) for reason in CLEANING_REASONS},
        examples={
            reason: [e for r in reports for e in r.examples[reason]][:_N_EXAMPLES]
            for reason in CLEANING_REASONS
        },
        config=first.config,
        schema=first.schema,
        tz=first.tz,
        tz_inferred=first.tz_inferred,
        center=first.center,
        n_empty_rows=sum(r.n_empty_rows for r in reports),
        notes=dict(first.notes),
        dateless=first.dateless,
        dropped_rows=dropped_rows,
    )


def check_flag(value, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def clean_trips(
    df: pd.DataFrame,
    cleaning: CleaningConfig | Mapping | None = None,
    *,
    source: str = "<DataFrame>",
    require_travel_time: bool = True,
    row_numbers: bool = False,
) -> tuple[pd.DataFrame, CleaningReport]:
    """Clean a frame that already has the canonical columns.

    Values are coerced as in :func:`read_trips` (unreadable ones count as dropped
    for the matching reason). A timezone-aware ``start_time`` keeps its zone; naive
    times are read in ``df.attrs["tz"]`` if set, else UTC. Row numbers are the values
    of an integer ``row`` column if ``df`` has one (as :func:`read_trips` returns
    with ``row_numbers=True``, so re-cleaning still names lines of the file), else
    the 0-based position plus 2, the line numbers of ``df.to_csv(index=False)``.

    Parameters
    ----------
    df : pandas.DataFrame
        Must contain :data:`CANONICAL_COLUMNS` (``travel_time_s`` may be absent when
        ``require_travel_time=False``); other columns are ignored.
    cleaning : CleaningConfig, dict or None, default=None
        Cleaning thresholds; ``None`` means ``CleaningConfig()``.
    source : str, default="<DataFrame>"
        Name used in the report.
    require_travel_time : bool, default=True
        If False, a missing ``travel_time_s`` column is filled with NaN, NaN travel
        times are kept, and the duration checks apply only to rows that carry a
        travel time (as in :func:`read_trips`).
    row_numbers : bool, default=False
        If True, the table starts with an int64 column ``row``: each kept row's
        row number.

    Returns
    -------
    trips : pandas.DataFrame
        Kept rows (canonical columns, after ``row`` if ``row_numbers``; fresh
        ``RangeIndex``); ``attrs`` are those of ``df`` updated with ``"schema"``,
        ``"tz"`` and ``"source"``.
    report : CleaningReport

    Examples
    --------
    >>> import pandas as pd
    >>> from vrvm.trips import clean_trips
    >>> df = pd.DataFrame({
    ...     "origin_lat": [41.88, 41.88, 41.88], "origin_lon": [-87.63] * 3,
    ...     "dest_lat": [41.90, 41.90, 41.90], "dest_lon": [-87.65] * 3,
    ...     "start_time": pd.to_datetime(["2016-01-01 08:00"] * 3).tz_localize("UTC"),
    ...     "travel_time_s": [600.0, 600.0, 30.0],
    ... })
    >>> trips, report = clean_trips(df)
    >>> len(trips), report.counts["duplicate"], report.examples["too_short"]
    (1, 1, [4])

    Queries without travel times:

    >>> queries = df.drop(columns="travel_time_s")
    >>> kept, report = clean_trips(queries, require_travel_time=False, row_numbers=True,
    ...                            cleaning={"drop_duplicates": False})
    >>> kept["row"].tolist(), report.dropped
    ([2, 3, 4], 0)
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    require_travel_time = check_flag(require_travel_time, "require_travel_time")
    row_numbers = check_flag(row_numbers, "row_numbers")
    needed = [c for c in CANONICAL_COLUMNS if require_travel_time or c != "travel_time_s"]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(
            f"{source}: missing canonical columns {missing}; columns found: "
            f"{quote_columns(df.columns)}. Use read_trips(..., column_map=...) to map other names."
        )
    config = as_config(cleaning)
    zone = zone_name(df["start_time"].dtype) or check_zone(df.attrs.get("tz")) or "UTC"
    present = [c for c in CANONICAL_COLUMNS if c in df.columns]
    mapping = {c: c for c in present}
    layout = Layout(str(df.attrs.get("schema", "canonical")), mapping, zone)
    parsed = parse_columns(df[present].reset_index(drop=True), layout, zone)
    if "row" in df.columns and pd.api.types.is_integer_dtype(df["row"].dtype):
        rows = df["row"].to_numpy(dtype=np.int64)
    else:
        rows = np.arange(len(df), dtype=np.int64) + 2
    return clean_parsed(
        parsed,
        rows,
        config,
        source=source,
        schema=df.attrs.get("schema", "canonical"),
        attrs=df.attrs,
        require_duration=require_travel_time,
        row_numbers=row_numbers,
    )
