"""Read trip records from common taxi-data exports into one canonical table.

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

The frame's ``attrs`` record where it came from: ``attrs["schema"]`` (the source
schema), ``attrs["tz"]`` (the IANA zone ``start_time`` is expressed in) and
``attrs["source"]`` (the file name).

:func:`read_trips` turns a CSV or Parquet export into that table and *always* returns a
:class:`CleaningReport` beside it, because real exports are messy and a silently
dropped row is a bug nobody can find later. :func:`clean_trips` applies the same
cleaning to a frame that is already canonical, and :func:`detect_schema` names the
schema of a list of column names.

Schemas
-------
Column names are matched ignoring case, surrounding whitespace, and the difference
between spaces, hyphens and underscores (so ``"Trip Start Timestamp"`` matches
``trip_start_timestamp``). With ``schema="auto"`` the first schema below whose
columns are all present is used.

``canonical``
    The columns of :data:`CANONICAL_COLUMNS` (what ``DataFrame.to_csv`` writes).
``chicago``
    City of Chicago "Taxi Trips": the portal export (``Trip Start Timestamp`` as text
    such as ``01/01/2016 12:00:00 AM`` in local time, ``Trip Seconds``,
    ``Pickup/Dropoff Centroid Latitude/Longitude``) and the snake_case API / sample
    form (``trip_start_timestamp`` as unix seconds or ISO text, ``trip_seconds``,
    ``pickup_latitude``, ...). Local zone ``America/Chicago``. Numeric
    ``trip_start_timestamp`` values (BigQuery exports such as the TFX sample) are the
    *local wall-clock* time stored as if it were UTC, so they are read as Chicago
    wall-clock times, not as true unix time. Evidence from the TFX sample: read as
    true UTC, Chicago's taxis would be quietest at midnight and busiest at 14:00, with
    four times as many trips at 04:00 as at midnight; read as wall-clock time, demand
    bottoms out at 05:00 and peaks at 19:00, the known shape of urban taxi demand.
``nyc_kaggle``
    Kaggle "NYC Taxi Trip Duration" (``pickup_datetime``, ``pickup_longitude``, ...,
    ``trip_duration`` in seconds). Local zone ``America/New_York``.
``nyc_tlc``
    NYC TLC yellow-taxi records with coordinates, 2009 (``Trip_Pickup_DateTime``,
    ``Start_Lon``, ...), 2010--2014 (``pickup_datetime``, ``dropoff_datetime``, ...;
    2014 has leading spaces in its header) and 2015--2016 (``tpep_pickup_datetime``,
    ...). Travel time is drop-off minus pickup. Local zone ``America/New_York``.

Anything else can be read by naming the columns with ``column_map``, a dict from a
canonical name (or ``"end_time"``, a drop-off time to subtract the start from) to a
column of the file.

Time zones
----------
Times without an offset ("naive" text or datetimes) are read as wall-clock times in
``tz`` if given, else in the schema's city zone, else in UTC. Numbers are unix
seconds, which are UTC by definition (except for the ``chicago`` schema, see above),
and text with an offset (``...+01:00``, ``Z``) is exact. Either way ``start_time`` is
then converted to that same zone, stored in ``attrs["tz"]``. A canonical Parquet file
whose ``start_time`` is already timezone-aware keeps its own zone unless ``tz`` is
given. Wall-clock times in the hour repeated when daylight saving ends are read as the
first (daylight-time) occurrence, and times inside the spring-forward gap are moved
forward to the first valid instant: local exports carry no information to do better.

Cleaning
--------
Each input row is either kept or dropped for exactly one reason: the *first* of the
checks below that it fails, in this order (thresholds from :class:`CleaningConfig`):

1. ``unparseable_time`` -- start time empty or not a recognisable time, or a drop-off
   time that is present but not recognisable;
2. ``missing_coordinates`` -- a coordinate is empty or not a number;
3. ``invalid_coordinates`` -- latitude outside [-90, 90] or longitude outside
   [-180, 180], a point at exactly (0, 0) (a common "no GPS fix" placeholder), a point
   outside ``bbox``, or farther than ``max_radius_km`` from the median point of the
   rows that passed the previous checks;
4. ``missing_duration`` -- travel time (or the drop-off time it is computed from)
   empty or not a number;
5. ``non_positive_duration`` -- travel time <= 0 s;
6. ``too_short`` -- travel time below ``min_duration_s``;
7. ``too_long`` -- travel time above ``max_duration_s``;
8. ``too_fast`` -- straight-line (haversine) distance / travel time above
   ``max_speed_kmh``;
9. ``duplicate`` -- identical in every canonical column to an earlier kept row (the
   first occurrence is kept).

Queries: trips without a travel time
------------------------------------
With ``require_travel_time=False`` (for files of queries to predict, which may or may
not carry the observed travel times) the travel time is optional: a file without a
travel-time (or drop-off time) column is read with ``travel_time_s`` all NaN, and a
row whose travel time is empty or not a number is kept with NaN. The duration checks
4--8 then apply only to the rows that carry a travel time (``missing_duration`` never
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

Safety
------
Input is only ever parsed as CSV text (pandas' C parser) or Parquet (pyarrow); nothing
is unpickled, evaluated or executed.
"""

from __future__ import annotations

import io
import os
import re
import warnings
import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

__all__ = [
    "CANONICAL_COLUMNS",
    "CLEANING_REASONS",
    "SCHEMAS",
    "CleaningConfig",
    "CleaningReport",
    "clean_trips",
    "detect_schema",
    "read_trips",
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

CLEANING_REASONS: tuple[str, ...] = (
    "unparseable_time",
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

# Mean Earth radius (IUGG); the choice matters far less than the noise in taxi data.
EARTH_RADIUS_KM = 6371.0088

_N_EXAMPLES = 5
_COORDINATE_ROLES = ("origin_lat", "origin_lon", "dest_lat", "dest_lon")
_DURATION_ROLES = ("travel_time_s", "end_time")
_ROLES = (*CANONICAL_COLUMNS, "end_time")

# ---------------------------------------------------------------------------------------
# Schemas: a declarative table, so supporting a new export means adding one entry here.
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Variant:
    """One column layout of a schema: canonical role -> column name as documented."""

    label: str
    columns: Mapping[str, str]


@dataclass(frozen=True)
class _Schema:
    name: str
    tz: str | None
    variants: tuple[_Variant, ...]
    # Numbers in the start/end columns are the city's wall-clock time written as if it
    # were UTC (see the chicago notes in the module docstring), not true unix time.
    unix_is_local: bool = False


def _coords(origin_lat: str, origin_lon: str, dest_lat: str, dest_lon: str) -> dict[str, str]:
    return {
        "origin_lat": origin_lat,
        "origin_lon": origin_lon,
        "dest_lat": dest_lat,
        "dest_lon": dest_lon,
    }


_NYC_COORDS = _coords(
    "pickup_latitude", "pickup_longitude", "dropoff_latitude", "dropoff_longitude"
)

_SCHEMA_LIST: tuple[_Schema, ...] = (
    _Schema(
        "canonical",
        None,
        (_Variant("canonical", {c: c for c in CANONICAL_COLUMNS}),),
    ),
    _Schema(
        "chicago",
        "America/Chicago",
        (
            _Variant(
                "portal export",
                {
                    "start_time": "Trip Start Timestamp",
                    "travel_time_s": "Trip Seconds",
                    **_coords(
                        "Pickup Centroid Latitude",
                        "Pickup Centroid Longitude",
                        "Dropoff Centroid Latitude",
                        "Dropoff Centroid Longitude",
                    ),
                },
            ),
            _Variant(
                "API / sample",
                {
                    "start_time": "trip_start_timestamp",
                    "travel_time_s": "trip_seconds",
                    **_NYC_COORDS,
                },
            ),
        ),
        unix_is_local=True,
    ),
    # Checked before nyc_tlc: Kaggle's columns are a superset of TLC 2010-2014's.
    _Schema(
        "nyc_kaggle",
        "America/New_York",
        (
            _Variant(
                "Kaggle trip duration",
                {"start_time": "pickup_datetime", "travel_time_s": "trip_duration", **_NYC_COORDS},
            ),
        ),
    ),
    _Schema(
        "nyc_tlc",
        "America/New_York",
        (
            _Variant(
                "2009",
                {
                    "start_time": "Trip_Pickup_DateTime",
                    "end_time": "Trip_Dropoff_DateTime",
                    **_coords("Start_Lat", "Start_Lon", "End_Lat", "End_Lon"),
                },
            ),
            _Variant(
                "2010-2014",
                {"start_time": "pickup_datetime", "end_time": "dropoff_datetime", **_NYC_COORDS},
            ),
            _Variant(
                "2015-2016",
                {
                    "start_time": "tpep_pickup_datetime",
                    "end_time": "tpep_dropoff_datetime",
                    **_NYC_COORDS,
                },
            ),
        ),
    ),
)

SCHEMAS: tuple[str, ...] = tuple(s.name for s in _SCHEMA_LIST)
"""Names of the recognised schemas, in the order ``schema="auto"`` tries them."""

_SCHEMA_BY_NAME = {s.name: s for s in _SCHEMA_LIST}


def _normalise(name: object) -> str:
    """Column-name key: case, surrounding space and space/hyphen/underscore don't matter."""
    return re.sub(r"[\s\-_]+", "_", str(name).strip().strip("\ufeff").strip().lower())


def _column_index(columns) -> dict[str, str]:
    """Normalised name -> actual column name (first occurrence wins)."""
    index: dict[str, str] = {}
    for column in columns:
        index.setdefault(_normalise(column), column)
    return index


def _match_variant(variant: _Variant, index: Mapping[str, str]) -> dict[str, str] | None:
    mapping = {role: index.get(_normalise(col)) for role, col in variant.columns.items()}
    if any(actual is None for actual in mapping.values()):
        return None
    return mapping  # type: ignore[return-value]


def detect_schema(columns: Iterable[object]) -> str | None:
    """Name the schema a list of column names belongs to.

    Parameters
    ----------
    columns : iterable of str
        Column names, e.g. ``df.columns`` or a CSV header. Matching ignores case,
        surrounding whitespace and spaces vs underscores.

    Returns
    -------
    str or None
        One of :data:`SCHEMAS`, or ``None`` if no schema's columns are all present.

    Examples
    --------
    >>> from vrvm.trips import detect_schema
    >>> detect_schema(["Trip Start Timestamp", "Trip Seconds", "Pickup Centroid Latitude",
    ...                "Pickup Centroid Longitude", "Dropoff Centroid Latitude",
    ...                "Dropoff Centroid Longitude", "Fare"])
    'chicago'
    >>> detect_schema([" pickup_datetime", " dropoff_datetime", " pickup_longitude",
    ...                " pickup_latitude", " dropoff_longitude", " dropoff_latitude"])
    'nyc_tlc'
    >>> detect_schema(["a", "b"]) is None
    True
    """
    found = _detect(_column_index(columns))
    return None if found is None else found[0].name


def _detect(index: Mapping[str, str]) -> tuple[_Schema, dict[str, str]] | None:
    for schema in _SCHEMA_LIST:
        for variant in schema.variants:
            mapping = _match_variant(variant, index)
            if mapping is not None:
                return schema, mapping
    return None


def _with_user_map(mapping: Mapping[str, str], user: Mapping[str, str]) -> dict[str, str]:
    """Overlay the user's column_map; a user-given duration source replaces the schema's."""
    merged = dict(mapping)
    if "end_time" in user:
        merged.pop("travel_time_s", None)
    if "travel_time_s" in user:
        merged.pop("end_time", None)
    merged.update(user)
    return merged


def _is_complete(mapping: Mapping[str, str], require_duration: bool = True) -> bool:
    base = ("start_time", *_COORDINATE_ROLES)
    has_duration = any(role in mapping for role in _DURATION_ROLES)
    return all(role in mapping for role in base) and (has_duration or not require_duration)


def _without_duration(variant: _Variant) -> _Variant:
    """The variant's start-time and coordinate columns only."""
    columns = {r: c for r, c in variant.columns.items() if r not in _DURATION_ROLES}
    return _Variant(variant.label, columns)


def _validate_user_map(column_map, index: Mapping[str, str], name: str, columns) -> dict[str, str]:
    if column_map is None:
        return {}
    if not isinstance(column_map, Mapping):
        raise TypeError(
            f"column_map must be a dict from canonical name to column name, got "
            f"{type(column_map).__name__}"
        )
    unknown = [key for key in column_map if key not in _ROLES]
    if unknown:
        raise ValueError(
            f"column_map keys must be among {list(_ROLES)}, got {unknown}; keys are the "
            "canonical names and values the columns of your file"
        )
    if "travel_time_s" in column_map and "end_time" in column_map:
        raise ValueError(
            "column_map gives both 'travel_time_s' and 'end_time'; give one: the travel "
            "time in seconds, or a drop-off time to subtract the start time from"
        )
    user = {}
    for role, column in column_map.items():
        actual = index.get(_normalise(column))
        if actual is None:
            raise ValueError(
                f"{name}: column_map maps {role!r} to {column!r}, which is not a column of "
                f"the file. Columns found: {_quoted(columns)}"
            )
        user[role] = actual
    return user


def _quoted(columns, limit: int = 40) -> str:
    names = [repr(str(c)) for c in columns]
    if len(names) > limit:
        names = [*names[:limit], f"... ({len(names) - limit} more)"]
    return ", ".join(names)


def _unknown_schema_message(
    name: str, columns, index: Mapping[str, str], schema: str, require_duration: bool = True
) -> str:
    first = f"{name}: could not recognise the trip schema" + (
        "" if schema == "auto" else f" {schema!r}"
    )
    if not require_duration:
        first += (
            " (needed: a start time and origin and destination coordinates; a travel "
            "time is optional)"
        )
    lines = [
        first + ".",
        f"Columns found: {_quoted(columns)}.",
        "Known schemas and the columns each needs (matched ignoring case, surrounding "
        "spaces and spaces vs underscores):",
    ]
    best: tuple[int, str, list[str]] | None = None
    for sch in _SCHEMA_LIST:
        if schema != "auto" and sch.name != schema:
            continue
        for variant in sch.variants:
            needed = variant if require_duration else _without_duration(variant)
            cols = list(needed.columns.values())
            optional = [c for c in variant.columns.values() if c not in cols]
            label = sch.name if len(sch.variants) == 1 else f"{sch.name} ({variant.label})"
            extra = f" (optional: {', '.join(optional)})" if optional else ""
            lines.append(f"  {label}: {', '.join(cols)}{extra}")
            missing = [c for c in cols if _normalise(c) not in index]
            n_present = len(cols) - len(missing)
            if n_present and (best is None or n_present > best[0]):
                best = (n_present, label, missing)
    if best is not None and best[0] >= 3:
        lines.append(f"Closest match: {best[1]}, which lacks {', '.join(best[2])}.")
    lines.append(
        "Or name the columns yourself (replace the right-hand names with yours; use "
        "'end_time' instead of 'travel_time_s' to compute it from a drop-off time):"
    )
    lines.append(
        "  read_trips(path, column_map={'start_time': 'pickup_time', "
        "'travel_time_s': 'duration_s', 'origin_lat': 'pickup_lat', "
        "'origin_lon': 'pickup_lon', 'dest_lat': 'dropoff_lat', 'dest_lon': 'dropoff_lon'})"
    )
    return "\n".join(lines)


def _resolve_mapping(
    columns, schema: str, column_map, name: str, require_duration: bool = True
) -> tuple[str, dict[str, str], str | None]:
    """Return (schema name, role -> actual column, schema zone) or raise a helpful error.

    Without ``require_duration`` the returned mapping may lack both duration roles.
    """
    if schema != "auto" and schema not in _SCHEMA_BY_NAME:
        raise ValueError(f"schema must be 'auto' or one of {list(SCHEMAS)}, got {schema!r}")
    index = _column_index(columns)
    user = _validate_user_map(column_map, index, name, columns)
    candidates = _SCHEMA_LIST if schema == "auto" else (_SCHEMA_BY_NAME[schema],)

    # 1. A layout fully present in the file, optionally adjusted by the user.
    for sch in candidates:
        for variant in sch.variants:
            mapping = _match_variant(variant, index)
            if mapping is not None:
                return sch.name, _with_user_map(mapping, user), sch.tz
    # 1b. Travel time optional: a layout whose start and coordinate columns are present
    #     (only after every full match failed, so a file's travel times are never missed).
    if not require_duration:
        for sch in candidates:
            for variant in sch.variants:
                mapping = _match_variant(_without_duration(variant), index)
                if mapping is not None:
                    return sch.name, _with_user_map(mapping, user), sch.tz
    # 2. A layout the user's map completes: every column the user did not override
    #    must be present (and at least one, otherwise nothing identifies the schema).
    for sch in candidates:
        for variant in sch.variants:
            kept = {r: c for r, c in variant.columns.items() if r not in user}
            if "end_time" in user or "travel_time_s" in user:
                kept = {r: c for r, c in kept.items() if r not in _DURATION_ROLES}
            if not require_duration:  # a duration column the file lacks is not needed
                kept = {
                    r: c
                    for r, c in kept.items()
                    if r not in _DURATION_ROLES or _normalise(c) in index
                }
            if kept and all(_normalise(c) in index for c in kept.values()):
                mapping = {role: index[_normalise(c)] for role, c in kept.items()}
                merged = _with_user_map(mapping, user)
                if _is_complete(merged, require_duration):
                    return sch.name, merged, sch.tz
    # 3. The user named everything: a custom schema, or a named one with other names.
    if _is_complete(user, require_duration):
        if schema == "auto":
            return "custom", dict(user), None
        return schema, dict(user), _SCHEMA_BY_NAME[schema].tz
    raise ValueError(_unknown_schema_message(name, columns, index, schema, require_duration))


# ---------------------------------------------------------------------------------------
# Input: path / bytes / file-like -> raw columns, with clear errors for bad files.
# ---------------------------------------------------------------------------------------

_PARQUET_MAGIC = b"PAR1"
_COMPRESSION_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bz2",
    b"\xfd7zXZ\x00": "xz",
    b"PK\x03\x04": "zip",
}
_EXPECTED = "expected a CSV text file with a header row, or a Parquet file"


@dataclass
class _Input:
    name: str
    kind: str  # "csv" or "parquet"
    path: str | None
    data: bytes | None
    compression: str | None

    def handle(self):
        # A fresh handle per read: the header and the body are read separately.
        return self.path if self.path is not None else io.BytesIO(self.data)


def _open_input(path_or_buffer, source: str | None) -> _Input:
    path: str | None = None
    data: bytes | None = None
    if isinstance(path_or_buffer, str | os.PathLike):
        path = os.fspath(path_or_buffer)
        name = source or path
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{name}: no such file")
        with open(path, "rb") as fh:
            head = fh.read(8192)
    elif isinstance(path_or_buffer, bytes | bytearray | memoryview):
        data = bytes(path_or_buffer)
        name = source or "<bytes>"
        head = data[:8192]
    elif hasattr(path_or_buffer, "read"):
        name = source or str(getattr(path_or_buffer, "name", None) or "<buffer>")
        # Read from the start even if the object was read before (Streamlit keeps the
        # same upload object across reruns).
        if getattr(path_or_buffer, "seekable", lambda: False)():
            path_or_buffer.seek(0)
        content = path_or_buffer.read()
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        head = data[:8192]
    else:
        raise TypeError(
            "path_or_buffer must be a path, bytes or a file-like object, got "
            f"{type(path_or_buffer).__name__}"
        )

    if not head.strip():
        raise ValueError(f"{name} is empty: {_EXPECTED}")
    suffix = Path(path or name).suffix.lower()
    if head.startswith(_PARQUET_MAGIC):
        return _Input(name, "parquet", path, data, None)
    if suffix in (".parquet", ".pq"):
        raise ValueError(
            f"{name} has a Parquet file extension but is not a Parquet file (it does not "
            f"start with the 'PAR1' marker): {_EXPECTED}"
        )
    for magic, compression in _COMPRESSION_MAGIC.items():
        if head.startswith(magic):
            return _Input(name, "csv", path, data, compression)
    if b"\x00" in head:
        raise ValueError(
            f"{name} looks like binary data, not text: {_EXPECTED} (export an Excel "
            "workbook as CSV first; save UTF-16 text as UTF-8)"
        )
    return _Input(name, "csv", path, data, None)


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


_READ_ERRORS = (
    pd.errors.ParserError,
    pd.errors.EmptyDataError,
    UnicodeError,
    ValueError,
    OSError,
    EOFError,
)


def _read_csv_header(src: _Input) -> tuple[list[str], str]:
    """Return the header and the delimiter (',' unless the header says otherwise)."""
    # Same options as the body read, so the header names match its columns exactly.
    options = {
        "compression": src.compression,
        "encoding_errors": "replace",
        "skipinitialspace": True,
    }
    try:
        header = pd.read_csv(src.handle(), nrows=0, **options).columns
        sep = ","
        if len(header) == 1:
            # A single column usually means another delimiter (European exports use ';').
            for candidate in (";", "\t", "|"):
                if candidate in str(header[0]):
                    sep = candidate
                    header = pd.read_csv(src.handle(), nrows=0, sep=sep, **options).columns
                    break
    except pd.errors.EmptyDataError:
        raise ValueError(f"{src.name} is empty: {_EXPECTED}") from None
    except _READ_ERRORS as err:
        raise ValueError(
            f"{src.name} could not be read as CSV ({_short(err)}): {_EXPECTED}"
        ) from None
    if len(header) < 2:
        raise ValueError(
            f"{src.name} does not look like a table: its first line has a single field "
            f"{str(header[0])[:60]!r}; {_EXPECTED}"
        )
    return [str(c) for c in header], sep


@dataclass
class _RawTable:
    """The source columns a schema needs, before any parsing."""

    frame: pd.DataFrame
    schema: str
    mapping: dict[str, str]  # role -> column of frame
    zone: str | None  # the schema's city zone
    rows: np.ndarray  # row number of each row of frame
    n_empty: int = 0


def _read_raw(src: _Input, schema: str, column_map, require_duration: bool = True) -> _RawTable:
    """Read the file and keep the columns of the resolved schema."""
    if src.kind == "parquet":
        import pyarrow.parquet as pq  # pyarrow is a dependency; imported lazily for speed

        try:
            parquet = pq.ParquetFile(src.handle())
            columns = [str(c) for c in parquet.schema_arrow.names]
        except Exception as err:  # pyarrow raises several unrelated types
            raise ValueError(
                f"{src.name} could not be read as Parquet ({_short(err)}): {_EXPECTED}"
            ) from None
        schema_name, mapping, zone = _resolve_mapping(
            columns, schema, column_map, src.name, require_duration
        )
        needed = list(dict.fromkeys(mapping.values()))
        try:
            raw = parquet.read(columns=needed).to_pandas()
        except Exception as err:
            raise ValueError(
                f"{src.name} could not be read as Parquet ({_short(err)}): {_EXPECTED}"
            ) from None
        if len(raw) == 0:
            raise ValueError(f"{src.name} has no data rows: {_EXPECTED}")
        return _RawTable(raw, schema_name, mapping, zone, np.arange(len(raw)) + 2)

    columns, sep = _read_csv_header(src)
    schema_name, mapping, zone = _resolve_mapping(
        columns, schema, column_map, src.name, require_duration
    )
    needed = list(dict.fromkeys(mapping.values()))
    try:
        with warnings.catch_warnings():
            # pandas only *warns* when every row has more fields than the header and
            # drops the extra ones; that misaligns values with names, so it is an error.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            raw = pd.read_csv(
                src.handle(),
                sep=sep,
                # All columns, not usecols: with usecols pandas silently ignores rows
                # with too many fields, which hides shifted values.
                index_col=False,  # a trailing delimiter is not an index column
                compression=src.compression,
                encoding_errors="replace",
                skipinitialspace=True,
                # Keep blank lines as rows so that position + 2 is the line number.
                skip_blank_lines=False,
                low_memory=False,
            )
    except pd.errors.ParserWarning:
        raise ValueError(
            f"{src.name} could not be read as CSV: its rows have more fields than the "
            f"header has names; {_EXPECTED}"
        ) from None
    except _READ_ERRORS as err:
        raise ValueError(
            f"{src.name} could not be read as CSV ({_short(err)}): {_EXPECTED}"
        ) from None
    rows = np.arange(len(raw)) + 2
    empty = raw.isna().all(axis=1).to_numpy()
    n_empty = int(empty.sum())
    raw = raw[needed]
    if n_empty:
        raw = raw.loc[~empty].reset_index(drop=True)
        rows = rows[~empty]
    if len(raw) == 0:
        raise ValueError(f"{src.name} has a header but no data rows: {_EXPECTED}")
    return _RawTable(raw, schema_name, mapping, zone, rows, n_empty)


# ---------------------------------------------------------------------------------------
# Parsing: raw columns -> typed arrays (NaN / NaT where a value cannot be read).
# ---------------------------------------------------------------------------------------

_NAIVE_FORMATS = (
    "ISO8601",
    "%m/%d/%Y %I:%M:%S %p",  # Chicago portal: 01/01/2016 12:00:00 AM
    "%m/%d/%Y %I:%M %p",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M",
)
# An explicit offset after the time of day: Z, UTC, +01, +0100, +01:00.
_OFFSET = re.compile(r":\d\d(?:\.\d*)?\s*(?:Z|UTC|GMT|[+-]\d\d(?::?\d\d)?)$", re.IGNORECASE)
_NAT = np.datetime64("NaT", "ns")
# |unix seconds| beyond this (year 2286) is not a time but a bad value or milliseconds.
_MAX_UNIX_S = 1e10


def _check_zone(tz: str | None) -> str | None:
    if tz is None:
        return None
    try:
        zoneinfo.ZoneInfo(str(tz))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {tz!r}; use an IANA name such as 'America/Chicago' or 'UTC'"
        ) from None
    return str(tz)


def _zone_name(dtype) -> str | None:
    """IANA name of a timezone-aware dtype, if it has one."""
    if not isinstance(dtype, pd.DatetimeTZDtype):
        return None
    tz = dtype.tz
    name = getattr(tz, "key", None) or getattr(tz, "zone", None) or str(tz)
    try:
        return _check_zone(name)
    except ValueError:
        return None


def _is_number_dtype(dtype) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _to_float(values: pd.Series) -> np.ndarray:
    if _is_number_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    text = values.astype("string").str.strip().str.replace(",", "", regex=False)
    return pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _unix_to_utc(seconds: np.ndarray) -> np.ndarray:
    """Unix seconds -> naive UTC datetime64[ns]; exact for whole seconds."""
    out = np.full(seconds.shape, _NAT)
    ok = np.isfinite(seconds) & (np.abs(seconds) < _MAX_UNIX_S)
    # Whole and fractional seconds apart: seconds * 1e9 in float64 is off by ~100 ns.
    whole = np.floor(seconds[ok])
    fraction_ns = np.round((seconds[ok] - whole) * 1e9).astype(np.int64)
    ns = whole.astype(np.int64) * 1_000_000_000 + fraction_ns
    out[ok] = ns.view("datetime64[ns]")
    return out


def _naive_series_to_utc(values: pd.Series, zone: str) -> np.ndarray:
    values = values.astype("datetime64[ns]")
    local = values.dt.tz_localize(
        zone,
        # First occurrence of repeated wall-clock times; shift times in the DST gap.
        ambiguous=np.ones(len(values), dtype=bool),
        nonexistent="shift_forward",
    )
    return local.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")


def _parse_text_times(text: pd.Series, zone: str) -> np.ndarray:
    out = np.full(len(text), _NAT)
    # Offsets are split off first: pandas cannot parse naive and offset text together.
    has_offset = text.str.contains(_OFFSET, na=False).to_numpy()
    if has_offset.any():
        aware = text[has_offset]
        parsed = pd.to_datetime(aware, format="ISO8601", utc=True, errors="coerce")
        failed = parsed.isna().to_numpy()
        if failed.any():  # ISO8601 has no "UTC"/"GMT" suffix; retry only those rows
            named = aware[failed].str.replace(r"\s*(?:UTC|GMT)$", "+00:00", regex=True, case=False)
            parsed[failed] = pd.to_datetime(named, format="ISO8601", utc=True, errors="coerce")
        out[has_offset] = parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
    todo = ~has_offset
    naive = np.full(len(text), _NAT)
    for fmt in _NAIVE_FORMATS:
        if not todo.any():
            break
        parsed = pd.to_datetime(text[todo], format=fmt, errors="coerce")
        parsed_ok = parsed.notna().to_numpy()
        idx = np.flatnonzero(todo)[parsed_ok]
        naive[idx] = parsed[parsed_ok].to_numpy(dtype="datetime64[ns]")
        todo[idx] = False
    got = ~np.isnat(naive)
    if got.any():
        out[got] = _naive_series_to_utc(pd.Series(naive[got]), zone)
    return out


def _unix_local_to_utc(seconds: np.ndarray, zone: str) -> np.ndarray:
    """Unix-style seconds that encode *wall-clock* time in ``zone`` -> naive UTC."""
    wall = _unix_to_utc(seconds)
    ok = ~np.isnat(wall)
    if ok.any():
        wall[ok] = _naive_series_to_utc(pd.Series(wall[ok]), zone)
    return wall


def _parse_times(values: pd.Series, zone: str, unix_is_local: bool = False) -> np.ndarray:
    """Any time column -> naive UTC datetime64[ns] (NaT where unreadable)."""

    def from_unix(seconds: np.ndarray) -> np.ndarray:
        return _unix_local_to_utc(seconds, zone) if unix_is_local else _unix_to_utc(seconds)

    dtype = values.dtype
    if isinstance(dtype, pd.DatetimeTZDtype):
        return values.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
    if pd.api.types.is_datetime64_dtype(dtype):
        out = np.full(len(values), _NAT)
        ok = values.notna().to_numpy()
        if ok.any():
            out[ok] = _naive_series_to_utc(values[ok].reset_index(drop=True), zone)
        return out
    if _is_number_dtype(dtype):
        return from_unix(values.to_numpy(dtype=np.float64, na_value=np.nan))
    # Text (or mixed objects): numbers are unix seconds, the rest is parsed as text.
    # Each parser only sees the rows the previous one left, and a sample decides which
    # goes first, so a column of dates never pays for number parsing and vice versa.
    text = values.astype("string").str.strip().reset_index(drop=True)
    out = np.full(len(text), _NAT)
    todo = text.notna().to_numpy() & (text != "").fillna(False).to_numpy()
    sample = pd.to_numeric(text[todo].head(100), errors="coerce")
    numbers_first = sample.notna().mean() > 0.5

    def parse_numbers(rows: np.ndarray) -> None:
        numbers = pd.to_numeric(text[rows], errors="coerce").to_numpy(np.float64, na_value=np.nan)
        out[rows] = from_unix(numbers)

    def parse_text(rows: np.ndarray) -> None:
        out[rows] = _parse_text_times(text[rows].reset_index(drop=True), zone)

    for parse in (parse_numbers, parse_text) if numbers_first else (parse_text, parse_numbers):
        if todo.any():
            parse(todo)
            todo &= np.isnat(out)
    return out


@dataclass
class _Parsed:
    """Typed columns before cleaning; times are naive UTC datetime64[ns]."""

    coords: dict[str, np.ndarray]
    start_utc: np.ndarray
    duration: np.ndarray
    time_failed: np.ndarray
    zone: str


def _parse(
    raw: pd.DataFrame, mapping: Mapping[str, str], zone: str, unix_is_local: bool = False
) -> _Parsed:
    coords = {role: _to_float(raw[mapping[role]]) for role in _COORDINATE_ROLES}
    start = _parse_times(raw[mapping["start_time"]], zone, unix_is_local)
    time_failed = np.isnat(start)
    if "end_time" in mapping:
        end_raw = raw[mapping["end_time"]]
        end = _parse_times(end_raw, zone, unix_is_local)
        end_given = end_raw.notna().to_numpy()
        if end_raw.dtype == object:
            end_given &= (end_raw.astype("string").str.strip() != "").fillna(False).to_numpy()
        # A drop-off time that is there but unreadable is a time problem; an absent
        # one is a missing duration.
        time_failed |= end_given & np.isnat(end)
        duration = (end - start) / np.timedelta64(1, "s")
        duration[np.isnat(end) | np.isnat(start)] = np.nan
    elif "travel_time_s" in mapping:
        duration = _to_float(raw[mapping["travel_time_s"]])
    else:  # no travel time in the source (allowed with require_travel_time=False)
        duration = np.full(len(raw), np.nan)
    return _Parsed(coords, start, np.asarray(duration, dtype=np.float64), time_failed, zone)


# ---------------------------------------------------------------------------------------
# Cleaning
# ---------------------------------------------------------------------------------------


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

    def to_dict(self) -> dict:
        """The settings as a JSON-serialisable dict."""
        return {
            "min_duration_s": self.min_duration_s,
            "max_duration_s": self.max_duration_s,
            "max_speed_kmh": self.max_speed_kmh,
            "bbox": None if self.bbox is None else list(self.bbox),
            "max_radius_km": self.max_radius_km,
            "drop_duplicates": bool(self.drop_duplicates),
        }


def _as_config(cleaning) -> CleaningConfig:
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
    center : tuple of float or None
        ``(lat, lon)`` median point used for the ``max_radius_km`` check.
    n_empty_rows : int
        Rows (typically blank lines) whose used fields were all empty; they are not
        trips, are skipped, and are not part of ``n_input``.
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
    center: tuple[float, float] | None = None
    n_empty_rows: int = 0
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
        }

    def summary(self) -> str:
        """A short human-readable account: totals, then one line per reason that fired."""
        lines = [
            f"{self.source}: kept {self.n_kept:,} of {self.n_input:,} rows "
            f"({100 * self._share(self.n_kept):.1f}%), dropped {self.dropped:,}"
        ]
        if self.n_empty_rows:
            lines[0] += f" ({self.n_empty_rows:,} empty rows skipped)"
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


def _haversine_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    lat1, lon1, lat2, lon2 = (np.radians(v) for v in (lat1, lon1, lat2, lon2))
    a = (
        np.sin((lat2 - lat1) / 2) ** 2
        + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


def _clean(
    parsed: _Parsed,
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
    code = {reason: i + 1 for i, reason in enumerate(CLEANING_REASONS)}
    reason = np.zeros(n, dtype=np.int8)  # 0 = kept, k = k-th reason

    def fail(mask: np.ndarray, name: str) -> None:
        # Only rows still undecided: a row keeps the first reason it fails.
        reason[(reason == 0) & mask] = code[name]

    c = parsed.coords
    olat, olon, dlat, dlon = c["origin_lat"], c["origin_lon"], c["dest_lat"], c["dest_lon"]
    duration = parsed.duration

    fail(parsed.time_failed, "unparseable_time")
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
            center = (
                float(np.median(np.concatenate([olat[ok], dlat[ok]]))),
                float(np.median(np.concatenate([olon[ok], dlon[ok]]))),
            )
            far = (_haversine_km(olat, olon, *center) > config.max_radius_km) | (
                _haversine_km(dlat, dlon, *center) > config.max_radius_km
            )
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
            speed = _haversine_km(olat, olon, dlat, dlon) / (duration / 3600.0)
            fail(speed > config.max_speed_kmh, "too_fast")

    start = pd.Series(parsed.start_utc).dt.tz_localize("UTC").dt.tz_convert(parsed.zone)
    frame = pd.DataFrame(
        {
            "origin_lat": olat,
            "origin_lon": olon,
            "dest_lat": dlat,
            "dest_lon": dlon,
            "start_time": start,
            "travel_time_s": duration,
        }
    )
    if config.drop_duplicates:
        ok = np.flatnonzero(reason == 0)
        dup = frame.iloc[ok].duplicated(keep="first").to_numpy()
        reason[ok[dup]] = code["duplicate"]

    counts_all = np.bincount(reason, minlength=len(CLEANING_REASONS) + 1)
    counts = {r: int(counts_all[code[r]]) for r in CLEANING_REASONS}
    dropped_rows = {r: rows[reason == code[r]] for r in CLEANING_REASONS}
    examples = {r: dropped_rows[r][:_N_EXAMPLES].tolist() for r in CLEANING_REASONS}
    kept = frame.loc[reason == 0].reset_index(drop=True)
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
        center=center,
        n_empty_rows=n_empty,
        dropped_rows=dropped_rows,
    )
    return kept, report


# ---------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------


def read_trips(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes] | IO[str],
    schema: str = "auto",
    tz: str | None = None,
    column_map: Mapping[str, str] | None = None,
    cleaning: CleaningConfig | Mapping | None = None,
    *,
    source: str | None = None,
    require_travel_time: bool = True,
    row_numbers: bool = False,
) -> tuple[pd.DataFrame, CleaningReport]:
    """Read a trip export (CSV or Parquet) into the canonical table, cleaned, with a report.

    Parameters
    ----------
    path_or_buffer : str, path, bytes or file-like
        The file. Parquet is recognised by its ``PAR1`` marker (whatever the
        extension); anything else is read as CSV text (gzip, bz2, xz and zip
        compression recognised by content). The delimiter is ``,`` unless the header
        shows ``;``, tab or ``|``. A seekable file-like is read from its start.
    schema : {"auto", "canonical", "chicago", "nyc_kaggle", "nyc_tlc"}, default="auto"
        Source schema; ``"auto"`` picks it from the header (see the module docs).
    tz : str or None, default=None
        IANA zone for times without an offset, and the zone of the returned
        ``start_time``. Default: the schema's city zone, else UTC.
    column_map : dict or None, default=None
        Canonical name (or ``"end_time"``) -> column of the file. Overrides or
        completes the detected schema's mapping, or defines one (schema
        ``"custom"``) when no schema matches.
    cleaning : CleaningConfig, dict or None, default=None
        Cleaning thresholds; ``None`` means ``CleaningConfig()``.
    source : str or None, default=None
        Name to use in messages and the report; default: the path, or the
        file-like's ``name`` attribute (as Streamlit uploads have).
    require_travel_time : bool, default=True
        If False (for queries), the travel time is optional: a file without one is
        read with ``travel_time_s`` all NaN, rows with an empty travel time are kept
        with NaN, and the duration checks (``missing_duration`` to ``too_fast``)
        apply only to rows that carry a travel time (see "Queries" in the module
        docs).
    row_numbers : bool, default=False
        If True, the table starts with an int64 column ``row``: the row number (line
        in the file, header = line 1) of each kept row.

    Returns
    -------
    trips : pandas.DataFrame
        Kept rows with :data:`CANONICAL_COLUMNS` (after ``row`` if
        ``row_numbers``), a fresh ``RangeIndex``, and ``attrs`` ``"schema"``,
        ``"tz"`` and ``"source"``.
    report : CleaningReport
        Counts and row numbers per reason a row was dropped.

    Raises
    ------
    ValueError
        If the file is empty, binary, not a table, malformed, or of an unknown schema;
        the message names the file and says what was expected.
    FileNotFoundError
        If a path does not exist.

    See Also
    --------
    clean_trips : the same cleaning for a frame that is already canonical.
    detect_schema : which schema a header belongs to.

    Examples
    --------
    >>> import io
    >>> from vrvm.trips import read_trips
    >>> csv = io.StringIO(
    ...     "trip_start_timestamp,trip_seconds,pickup_latitude,pickup_longitude,"
    ...     "dropoff_latitude,dropoff_longitude\\n"
    ...     "1451606400,600,41.88,-87.63,41.90,-87.65\\n"
    ...     "1451607300,0,41.88,-87.63,41.89,-87.62\\n"
    ... )
    >>> trips, report = read_trips(csv, source="sample.csv")
    >>> trips.attrs["schema"], trips.attrs["tz"]
    ('chicago', 'America/Chicago')
    >>> str(trips["start_time"].iloc[0])  # Chicago's numbers are local wall-clock time
    '2016-01-01 00:00:00-06:00'
    >>> print(report)
    sample.csv: kept 1 of 2 rows (50.0%), dropped 1
      non_positive_duration: 1 (50.0%), e.g. rows 3

    Queries, with or without travel times, keeping every row's line number:

    >>> queries = io.StringIO(
    ...     "origin_lat,origin_lon,dest_lat,dest_lon,start_time\\n"
    ...     "41.88,-87.63,41.90,-87.65,2016-01-01 08:00\\n"
    ...     "41.88,-87.63,,-87.65,2016-01-01 09:00\\n"
    ...     "41.88,-87.63,41.95,-87.65,2016-01-01 10:00\\n"
    ... )
    >>> found, report = read_trips(queries, tz="America/Chicago",
    ...                            require_travel_time=False, row_numbers=True)
    >>> found["row"].tolist(), bool(found["travel_time_s"].isna().all())
    ([2, 4], True)
    >>> report.dropped_rows["missing_coordinates"].tolist()
    [3]
    """
    config = _as_config(cleaning)
    tz = _check_zone(tz)
    require_travel_time = _check_flag(require_travel_time, "require_travel_time")
    row_numbers = _check_flag(row_numbers, "row_numbers")
    src = _open_input(path_or_buffer, source)
    raw = _read_raw(src, schema, column_map, require_travel_time)
    native_zone = _zone_name(raw.frame[raw.mapping["start_time"]].dtype)
    zone = tz or raw.zone or native_zone or "UTC"
    known = _SCHEMA_BY_NAME.get(raw.schema)
    parsed = _parse(raw.frame, raw.mapping, zone, known is not None and known.unix_is_local)
    return _clean(
        parsed,
        raw.rows,
        config,
        source=src.name,
        schema=raw.schema,
        n_empty=raw.n_empty,
        require_duration=require_travel_time,
        row_numbers=row_numbers,
    )


def _check_flag(value, name: str) -> bool:
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
    require_travel_time = _check_flag(require_travel_time, "require_travel_time")
    row_numbers = _check_flag(row_numbers, "row_numbers")
    needed = [c for c in CANONICAL_COLUMNS if require_travel_time or c != "travel_time_s"]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(
            f"{source}: missing canonical columns {missing}; columns found: "
            f"{_quoted(df.columns)}. Use read_trips(..., column_map=...) to map other names."
        )
    config = _as_config(cleaning)
    zone = _zone_name(df["start_time"].dtype) or _check_zone(df.attrs.get("tz")) or "UTC"
    present = [c for c in CANONICAL_COLUMNS if c in df.columns]
    mapping = {c: c for c in present}
    parsed = _parse(df[present].reset_index(drop=True), mapping, zone)
    if "row" in df.columns and pd.api.types.is_integer_dtype(df["row"].dtype):
        rows = df["row"].to_numpy(dtype=np.int64)
    else:
        rows = np.arange(len(df), dtype=np.int64) + 2
    return _clean(
        parsed,
        rows,
        config,
        source=source,
        schema=df.attrs.get("schema", "canonical"),
        attrs=df.attrs,
        require_duration=require_travel_time,
        row_numbers=row_numbers,
    )
