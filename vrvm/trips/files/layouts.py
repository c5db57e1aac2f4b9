"""Layouts of trip files: which column holds which *role*, for known exports and yours.

A role is what a column means to vrvm: the canonical columns of
:data:`vrvm.trips.table.CANONICAL_COLUMNS` plus ``end_time`` (a drop-off time to
subtract the start time from). :data:`ROLE_LABELS` names them for people.

Known layouts (schemas)
-----------------------
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
``bikeshare``
    Public bike-share trip histories, which many cities publish in the same few
    layouts: Ford GoBike / Bay Wheels 2017-2020 (``start_time``, ``duration_sec``,
    ``start_station_latitude``, ...; times with ten-thousandths of a second), Citi
    Bike and others to 2020 (``starttime``, ``tripduration``, ``start station
    latitude``, ...) and the 2020-on form of Bay Wheels, Citi Bike and Divvy
    (``started_at``, ``ended_at``, ``start_lat``, ``start_lng``, ...). The files
    name no city, so their local times are read in the time zone where the trips
    are (:func:`vrvm.trips.places.timezones.zone_at`) unless ``tz`` is given.

Anything else can be read by naming the columns with ``column_map``, a dict from a
canonical name (or ``"end_time"``, a drop-off time to subtract the start from) to a
column of the file.

One reading, whatever the door
------------------------------
:func:`resolve_layout` is the one place that decides a file's layout and roles, for
the upload form, every CLI command, saved recipes and :func:`~vrvm.trips.files.reader.read_trips`:

1. A schema is *recognised* only by what the header holds: every column of one of its
   variants is present. A ``column_map`` may then replace some of its roles (and
   :func:`guess_column_map` fills what a replaced group still lacks). A schema is
   never chosen because a map supplied the columns it lacks (a file with NYC
   coordinates and its own start column is not "chicago"), unless ``schema`` names it.
2. Otherwise the file is ``custom``: the roles the ``column_map`` names, completed by
   :func:`guess_column_map` (the guess the upload form pre-fills), so that any subset
   of the roles given reads the file as the form does. Without any ``column_map`` an
   unrecognised header is refused (:class:`UnknownLayoutError`, which carries the
   proposed map): nothing is read on a guess nobody was shown.
3. The time zone: a recognised layout that names its city uses that city's zone; any
   other file (``custom``, ``bikeshare``) is read in the zone where its trips are
   (:func:`~vrvm.trips.places.timezones.trips_zone`, which refuses rather than guess); ``tz``
   overrides both. Only ``canonical`` (vrvm's own export) keeps UTC for naive times.

The Chicago notes above are why ``Layout.unix_is_local`` exists: numbers in such a
file's time columns are read as the city's wall clock, not as true unix time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from vrvm.trips.table import CANONICAL_COLUMNS

__all__ = [
    "DURATION_ROLES",
    "ROLES",
    "ROLE_LABELS",
    "SCHEMAS",
    "Layout",
    "UnknownLayoutError",
    "complete_column_map",
    "detect_schema",
    "guess_column_map",
    "missing_roles",
    "normalise_column",
    "python_hint",
    "resolve_layout",
]

COORDINATE_ROLES = ("origin_lat", "origin_lon", "dest_lat", "dest_lon")
ZONE_ROLES = ("origin_zone", "dest_zone")
START_ROLES = ("start_time", "start_date", "start_clock", "start_hour", "start_minute", "weekday")
DURATION_ROLES = ("travel_time_s", "travel_time_min", "end_time")
ROLES: tuple[str, ...] = (*COORDINATE_ROLES, *ZONE_ROLES, *START_ROLES, *DURATION_ROLES)
"""Every role a ``column_map`` can name (see "Roles" in the module docs)."""

ROLE_LABELS: dict[str, str] = {
    "origin_lat": "Origin latitude",
    "origin_lon": "Origin longitude",
    "dest_lat": "Destination latitude",
    "dest_lon": "Destination longitude",
    "origin_zone": "... or origin zone id (with a zone file)",
    "dest_zone": "... or destination zone id (with a zone file)",
    "start_time": "Start time (date and clock in one column)",
    "start_date": "... or start date",
    "start_clock": "... and start clock (HH:MM, decimal hours, seconds)",
    "start_hour": "... or start hour (0-23)",
    "start_minute": "... and start minute (0-59)",
    "weekday": "Weekday (only for files without a date)",
    "travel_time_s": "Travel time in seconds",
    "travel_time_min": "... or travel time in minutes",
    "end_time": "... or end time (drop-off)",
}
"""What each role means, in the order a column-mapping form asks for them."""

# Roles that describe one thing: a user's map that names one of a group replaces the
# detected layout's whole group (naming start_date replaces a detected start_time).
_ROLE_GROUPS: tuple[tuple[str, ...], ...] = (
    ("origin_lat", "origin_lon", "origin_zone"),
    ("dest_lat", "dest_lon", "dest_zone"),
    START_ROLES,
    DURATION_ROLES,
)


class UnknownLayoutError(ValueError):
    """No known layout, nor the given ``column_map``, says which column holds each role.

    The message ends with how to name the columns in Python (``column_map=``);
    :meth:`with_hint` gives the same error with another door's words (the CLI's
    ``--map`` flags).

    Attributes
    ----------
    source : str
        The file's name.
    columns : list of str
        The columns found in the file, for a form that lets the user name them.
    proposal : dict of str to str
        Role -> column as :func:`complete_column_map` proposes them for this header
        (what the upload form pre-fills and ``vrvm inspect`` prints); may be
        incomplete.
    details : str
        The message without its last lines (the hint on how to name columns).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        columns: Sequence[str],
        proposal: Mapping[str, str] | None = None,
        details: str | None = None,
    ):
        super().__init__(message)
        self.source = source
        self.columns = list(columns)
        self.proposal = dict(proposal or {})
        self.details = message if details is None else details

    def with_hint(self, hint: str) -> UnknownLayoutError:
        """The same error, its closing hint replaced by ``hint``."""
        return UnknownLayoutError(
            f"{self.details}\n{hint}",
            source=self.source,
            columns=self.columns,
            proposal=self.proposal,
            details=self.details,
        )


@dataclass(frozen=True)
class Layout:
    """How to read a file: the schema's name, role -> column of the file, its city zone.

    ``unix_is_local``: numbers in the time columns are the city's wall clock written
    as if it were UTC (the ``chicago`` schema). ``infer_zone``: the layout names no
    city, so local times are read in the zone where the trips are (``custom``
    layouts too). ``guessed``: roles filled in by :func:`guess_column_map`. ``label``: which
    variant of the schema matched. ``date_order``: the order the layout's exporter
    writes ambiguous dates in (``"monthfirst"`` for US portals), used only when the
    values cannot tell. ``weekday_format``: how its weekday column is numbered.
    """

    schema: str
    mapping: dict[str, str]
    zone: str | None
    unix_is_local: bool = False
    infer_zone: bool = False
    label: str = ""
    date_order: str | None = None
    weekday_format: str | None = None
    guessed: tuple[str, ...] = ()
    """Roles taken from :func:`guess_column_map`, not from the header's layout nor the
    user's map (said in messages, so that a guess is never silent)."""

    @property
    def needs_zones(self) -> bool:
        """Whether trip ends are zone ids, to be resolved through a zone file."""
        return any(role in self.mapping for role in ZONE_ROLES)

    @property
    def dateless(self) -> bool:
        """Whether the start has no calendar date (clock or hour with a weekday)."""
        return "start_time" not in self.mapping and "start_date" not in self.mapping


@dataclass(frozen=True)
class _Variant:
    """One column layout of a schema: canonical role -> column name as documented."""

    label: str
    columns: Mapping[str, str]
    weekday_format: str | None = None


@dataclass(frozen=True)
class _Schema:
    name: str
    tz: str | None
    variants: tuple[_Variant, ...]
    # Numbers in the start/end columns are the city's wall-clock time written as if it
    # were UTC (see the chicago notes in the module docstring), not true unix time.
    unix_is_local: bool = False
    # The layout is used in many cities: read local times in the trips' own zone.
    infer_zone: bool = False
    # How the exporter writes dates when the values read both ways (US: month first).
    date_order: str | None = None


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
            # Trips whose centroids the portal withholds still carry community areas.
            _Variant(
                "portal export, community areas (with a zone file)",
                {
                    "start_time": "Trip Start Timestamp",
                    "travel_time_s": "Trip Seconds",
                    "origin_zone": "Pickup Community Area",
                    "dest_zone": "Dropoff Community Area",
                },
            ),
            _Variant(
                "API / sample, community areas (with a zone file)",
                {
                    "start_time": "trip_start_timestamp",
                    "travel_time_s": "trip_seconds",
                    "origin_zone": "pickup_community_area",
                    "dest_zone": "dropoff_community_area",
                },
            ),
        ),
        unix_is_local=True,
        date_order="monthfirst",
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
            # The 2016 trips as teaching samples split them: no calendar date, the
            # clock in hour and minute, weekday 1 = Sunday (checked on the trips:
            # days 1 and 7 are the quiet-morning, busy-night ones).
            _Variant(
                "2016 sample with split time fields (hour, minute, weekday 1 = Sunday)",
                {
                    "start_hour": "hour",
                    "start_minute": "minute",
                    "weekday": "weekday",
                    "travel_time_s": "duration",
                    **_NYC_COORDS,
                },
                weekday_format="sunday1",
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
                "yellow 2015-2016",
                {
                    "start_time": "tpep_pickup_datetime",
                    "end_time": "tpep_dropoff_datetime",
                    **_NYC_COORDS,
                },
            ),
            _Variant(
                "green 2013-2016",
                {
                    "start_time": "lpep_pickup_datetime",
                    "end_time": "Lpep_dropoff_datetime",
                    **_coords(
                        "Pickup_latitude",
                        "Pickup_longitude",
                        "Dropoff_latitude",
                        "Dropoff_longitude",
                    ),
                },
            ),
            _Variant(
                "yellow 2016 on, taxi zone ids (with the taxi zone file)",
                {
                    "start_time": "tpep_pickup_datetime",
                    "end_time": "tpep_dropoff_datetime",
                    "origin_zone": "PULocationID",
                    "dest_zone": "DOLocationID",
                },
            ),
            _Variant(
                "green 2016 on, taxi zone ids (with the taxi zone file)",
                {
                    "start_time": "lpep_pickup_datetime",
                    "end_time": "lpep_dropoff_datetime",
                    "origin_zone": "PULocationID",
                    "dest_zone": "DOLocationID",
                },
            ),
        ),
    ),
    _Schema(
        "bikeshare",
        None,
        (
            _Variant(
                "GoBike / Bay Wheels 2017-2020",
                {
                    "start_time": "start_time",
                    "travel_time_s": "duration_sec",
                    **_coords(
                        "start_station_latitude",
                        "start_station_longitude",
                        "end_station_latitude",
                        "end_station_longitude",
                    ),
                },
            ),
            _Variant(
                "Citi Bike and others to 2020",
                {
                    "start_time": "starttime",
                    "travel_time_s": "tripduration",
                    **_coords(
                        "start station latitude",
                        "start station longitude",
                        "end station latitude",
                        "end station longitude",
                    ),
                },
            ),
            _Variant(
                "2020 on (Bay Wheels, Citi Bike, Divvy)",
                {
                    "start_time": "started_at",
                    "end_time": "ended_at",
                    **_coords("start_lat", "start_lng", "end_lat", "end_lng"),
                },
            ),
        ),
        infer_zone=True,
        date_order="monthfirst",
    ),
)

SCHEMAS: tuple[str, ...] = tuple(s.name for s in _SCHEMA_LIST)
"""Names of the recognised schemas, in the order ``schema="auto"`` tries them."""

_SCHEMA_BY_NAME = {s.name: s for s in _SCHEMA_LIST}


def normalise_column(name: object) -> str:
    """Column-name key: case, surrounding space and space/hyphen/underscore don't matter."""
    return re.sub(r"[\s\-_]+", "_", str(name).strip().strip("\ufeff").strip().lower())


def _column_index(columns) -> dict[str, str]:
    """Normalised name -> actual column name (first occurrence wins)."""
    index: dict[str, str] = {}
    for column in columns:
        index.setdefault(normalise_column(column), column)
    return index


def _match_variant(variant: _Variant, index: Mapping[str, str]) -> dict[str, str] | None:
    mapping = {role: index.get(normalise_column(col)) for role, col in variant.columns.items()}
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
    """Overlay the user's column_map: a group the user names replaces the layout's group."""
    merged = dict(mapping)
    for group in _ROLE_GROUPS:
        if any(role in user for role in group):
            for role in group:
                merged.pop(role, None)
    merged.update(user)
    return merged


def missing_roles(mapping: Mapping[str, str], require_duration: bool = True) -> list[str]:
    """What a role -> column map still lacks, in words (empty when it is complete).

    Examples
    --------
    >>> missing_roles({"origin_zone": "PU", "dest_zone": "DO", "start_hour": "h"})
    ['weekday (or start_date)', 'travel_time_s, travel_time_min or end_time']
    """
    missing = []
    for end in ("origin", "dest"):
        if f"{end}_zone" not in mapping and not (
            f"{end}_lat" in mapping and f"{end}_lon" in mapping
        ):
            missing.append(f"{end}_lat and {end}_lon (or {end}_zone)")
    has_clock = "start_clock" in mapping or "start_hour" in mapping
    if "start_time" not in mapping:
        if "start_date" in mapping:
            if not has_clock:
                missing.append("start_clock or start_hour (with start_date)")
        elif has_clock:
            if "weekday" not in mapping:
                missing.append("weekday (or start_date)")
        else:
            missing.append("start_time (or start_date + start_clock, or start_hour + weekday)")
    if require_duration and not any(role in mapping for role in DURATION_ROLES):
        missing.append("travel_time_s, travel_time_min or end_time")
    if "end_time" in mapping and "start_time" not in mapping and "start_date" not in mapping:
        missing.append("a start with a date for end_time (or travel_time_s / travel_time_min)")
    return missing


def _is_complete(mapping: Mapping[str, str], require_duration: bool = True) -> bool:
    return not missing_roles(mapping, require_duration)


def _without_duration(variant: _Variant) -> _Variant:
    """The variant's start-time and place columns only."""
    columns = {r: c for r, c in variant.columns.items() if r not in DURATION_ROLES}
    return _Variant(variant.label, columns, variant.weekday_format)


# Roles that cannot go together, and why.
_CONFLICTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("start_time", "start_date", "start_clock", "start_hour", "start_minute", "weekday"),
        "start_time holds date and clock in one column; give it alone, or split roles "
        "(start_date, start_clock / start_hour, start_minute, weekday) without it",
    ),
    (("start_clock", "start_hour"), "give the clock as start_clock or as start_hour, not both"),
    (("start_clock", "start_minute"), "start_minute goes with start_hour, not start_clock"),
    (("start_date", "weekday"), "weekday is only needed when there is no start_date"),
    (
        ("travel_time_s", "travel_time_min", "end_time"),
        "give one travel time: travel_time_s, travel_time_min or end_time",
    ),
    (("origin_zone", "origin_lat"), "give the origin as coordinates or as a zone, not both"),
    (("origin_zone", "origin_lon"), "give the origin as coordinates or as a zone, not both"),
    (("dest_zone", "dest_lat"), "give the destination as coordinates or as a zone, not both"),
    (("dest_zone", "dest_lon"), "give the destination as coordinates or as a zone, not both"),
)


def _conflict(mapping: Mapping[str, str]) -> str | None:
    """Why the roles of ``mapping`` cannot go together, or None."""
    for roles, why in _CONFLICTS:
        given = [r for r in roles if r in mapping]
        if roles[0] in given and len(given) > 1:
            return why
    if "start_minute" in mapping and "start_hour" not in mapping:
        return "start_minute needs start_hour"
    return None


def complete_column_map(
    column_map: Mapping[str, str], columns: Sequence[object]
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The roles ``column_map`` names, completed by :func:`guess_column_map`.

    A guessed role is added only if its column is not already given a role and it goes
    with the roles named so far (naming ``start_time`` keeps a guessed ``start_date``
    out; naming ``travel_time_min`` keeps a guessed ``travel_time_s`` out). This is
    the guess the upload form pre-fills, so a CLI with any subset of ``--map``
    options reads a file as the form does.

    Returns
    -------
    mapping : dict of str to str
        Role -> column.
    guessed : tuple of str
        The roles that came from the guess.

    Examples
    --------
    >>> columns = ["date", "Time", "pickup_latitude", "pickup_longitude",
    ...            "dropoff_latitude", "dropoff_longitude", "trip_duration"]
    >>> mapping, guessed = complete_column_map({"start_clock": "Time"}, columns)
    >>> mapping["start_date"], mapping["travel_time_s"], guessed[:2]
    ('date', 'trip_duration', ('start_date', 'travel_time_s'))
    >>> complete_column_map({"start_time": "date"}, columns)[0].get("start_clock") is None
    True
    """
    merged = dict(column_map)
    used = set(merged.values())
    guessed = []
    for role, column in guess_column_map([str(c) for c in columns]).items():
        if role in merged or column in used:
            continue
        trial = {**merged, role: column}
        if _conflict(trial) is not None:
            continue
        merged, used = trial, used | {column}
        guessed.append(role)
    # start_minute is guessed before start_hour: drop it if its hour did not come.
    if "start_minute" in guessed and "start_hour" not in merged:
        merged.pop("start_minute")
        guessed.remove("start_minute")
    return merged, tuple(guessed)


def _check_conflicts(mapping: Mapping[str, str], what: str) -> None:
    for roles, why in _CONFLICTS:
        given = [r for r in roles if r in mapping]
        first = roles[0]
        # The first role of a rule conflicts with each of the others.
        if first in given and len(given) > 1:
            raise ValueError(f"{what} names {given}: {why}")
    if "start_minute" in mapping and "start_hour" not in mapping:
        raise ValueError(f"{what} names start_minute without start_hour")


def _validate_user_map(column_map, index: Mapping[str, str], name: str, columns) -> dict[str, str]:
    if column_map is None:
        return {}
    if not isinstance(column_map, Mapping):
        raise TypeError(
            f"column_map must be a dict from canonical name to column name, got "
            f"{type(column_map).__name__}"
        )
    unknown = [key for key in column_map if key not in ROLES]
    if unknown:
        raise ValueError(
            f"column_map keys must be among {list(ROLES)}, got {unknown}; keys are the "
            "canonical names and values the columns of your file"
        )
    _check_conflicts(column_map, "column_map")
    user = {}
    for role, column in column_map.items():
        actual = index.get(normalise_column(column))
        if actual is None:
            raise ValueError(
                f"{name}: column_map maps {role!r} to {column!r}, which is not a column of "
                f"the file. Columns found: {quote_columns(columns)}"
            )
        user[role] = actual
    return user


def quote_columns(columns, limit: int = 40) -> str:
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
        f"Columns found: {quote_columns(columns)}.",
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
            missing = [c for c in cols if normalise_column(c) not in index]
            n_present = len(cols) - len(missing)
            if n_present and (best is None or n_present > best[0]):
                best = (n_present, label, missing)
    if best is not None and best[0] >= 3:
        lines.append(f"Closest match: {best[1]}, which lacks {', '.join(best[2])}.")
    return "\n".join(lines)


_EXAMPLE_MAP = {
    "start_time": "pickup_time",
    "travel_time_s": "duration_s",
    "origin_lat": "pickup_lat",
    "origin_lon": "pickup_lon",
    "dest_lat": "dropoff_lat",
    "dest_lon": "dropoff_lon",
}


def python_hint(proposal: Mapping[str, str], require_duration: bool = True) -> str:
    """How to name a file's columns in Python: the proposed map, or an example.

    Examples
    --------
    >>> print(python_hint({"start_time": "t", "travel_time_s": "s", "origin_lat": "a",
    ...                    "origin_lon": "b", "dest_lat": "c", "dest_lon": "d"}))
    Proposed: the roles guessed from the column names (check them):
      read_trips(path, column_map={'start_time': 't', 'travel_time_s': 's', \
'origin_lat': 'a', 'origin_lon': 'b', 'dest_lat': 'c', 'dest_lon': 'd'})
    """
    if proposal and not missing_roles(proposal, require_duration):
        return (
            "Proposed: the roles guessed from the column names (check them):\n"
            f"  read_trips(path, column_map={dict(proposal)!r})"
        )
    lines = [
        "Or name the columns yourself (replace the right-hand names with yours; use "
        "'end_time' instead of 'travel_time_s' to compute it from a drop-off time):",
        f"  read_trips(path, column_map={_EXAMPLE_MAP!r})",
    ]
    if proposal:
        lines.append(f"  (guessed from the column names, incomplete: {dict(proposal)!r})")
    return "\n".join(lines)


def resolve_layout(
    columns, schema: str, column_map, name: str, require_duration: bool = True
) -> Layout:
    """The layout of a file with these ``columns``, or :class:`UnknownLayoutError`.

    The one decision of layout and roles for every door (see "One reading, whatever
    the door" in the module docs). ``name`` names the file in messages. Without
    ``require_duration`` the returned mapping may lack both duration roles.

    Examples
    --------
    >>> columns = ["date", "Time", "pickup_latitude", "pickup_longitude",
    ...            "dropoff_latitude", "dropoff_longitude", "trip_duration"]
    >>> given = {"start_date": "date", "start_clock": "Time", "travel_time_s": "trip_duration"}
    >>> layout = resolve_layout(columns, "auto", given, "f.csv")
    >>> layout.schema, layout.zone, layout.infer_zone, layout.guessed
    ('custom', None, True, ('origin_lat', 'origin_lon', 'dest_lat', 'dest_lon'))
    """
    if schema != "auto" and schema not in _SCHEMA_BY_NAME:
        raise ValueError(f"schema must be 'auto' or one of {list(SCHEMAS)}, got {schema!r}")
    index = _column_index(columns)
    user = _validate_user_map(column_map, index, name, columns)
    candidates = _SCHEMA_LIST if schema == "auto" else (_SCHEMA_BY_NAME[schema],)

    def completed(mapping: dict[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
        # A map that leaves roles open is completed by the form's guess (never an
        # empty map: a file nobody named anything of is not read on a guess).
        if not user or _is_complete(mapping, require_duration):
            return mapping, ()
        return complete_column_map(mapping, columns)

    # 1. A layout fully present in the file (recognised by its header), optionally
    #    adjusted by the user.
    for sch in candidates:
        for variant in sch.variants:
            mapping = _match_variant(variant, index)
            if mapping is not None:
                merged, guessed = completed(_with_user_map(mapping, user))
                if _is_complete(merged, require_duration):
                    return _layout(sch, variant, merged, user, guessed)
    # 1b. Travel time optional: a layout whose start and place columns are present
    #     (only after every full match failed, so a file's travel times are never missed).
    if not require_duration:
        for sch in candidates:
            for variant in sch.variants:
                mapping = _match_variant(_without_duration(variant), index)
                if mapping is not None:
                    merged, guessed = completed(_with_user_map(mapping, user))
                    if _is_complete(merged, require_duration):
                        return _layout(sch, variant, merged, user, guessed)
    if schema != "auto":
        # 2. A layout the user named (schema=...) and whose map completes it: every
        #    column of the groups the user did not name must be present.
        touched = {
            role for group in _ROLE_GROUPS if any(r in user for r in group) for role in group
        }
        sch = _SCHEMA_BY_NAME[schema]
        for variant in sch.variants:
            kept = {r: c for r, c in variant.columns.items() if r not in touched}
            if not require_duration:  # a duration column the file lacks is not needed
                kept = {
                    r: c
                    for r, c in kept.items()
                    if r not in DURATION_ROLES or normalise_column(c) in index
                }
            if kept and all(normalise_column(c) in index for c in kept.values()):
                mapping = {role: index[normalise_column(c)] for role, c in kept.items()}
                merged = _with_user_map(mapping, user)
                if _is_complete(merged, require_duration):
                    return _layout(sch, variant, merged, user)
        # 3. The user named everything of the schema they named, with other names.
        if _is_complete(user, require_duration):
            return _layout(sch, _Variant("column map", {}), dict(user), user)
    else:
        # 3. Not recognised: the user's roles, completed as the upload form guesses.
        merged, guessed = completed(dict(user))
        if user and _is_complete(merged, require_duration):
            label = "column map" + (f", guessed {', '.join(guessed)}" if guessed else "")
            return Layout("custom", merged, None, infer_zone=True, label=label, guessed=guessed)
    proposal = complete_column_map(user, columns)[0]
    message = _unknown_schema_message(name, columns, index, schema, require_duration)
    if user:
        lacking = "; ".join(missing_roles(completed(dict(user))[0], require_duration))
        message = (
            f"{name}: the column map names {sorted(user)} but no layout completes it; "
            f"still needed: {lacking}.\n" + message
        )
    raise UnknownLayoutError(
        message + "\n" + python_hint(proposal, require_duration),
        source=name,
        columns=[str(c) for c in columns],
        proposal=proposal,
        details=message,
    )


def _layout(
    schema: _Schema,
    variant: _Variant,
    mapping: dict[str, str],
    user: Mapping[str, str],
    guessed: tuple[str, ...] = (),
) -> Layout:
    # The variant's weekday numbering holds only for its own weekday column.
    own_weekday = (
        "weekday" not in user and "weekday" not in guessed and "weekday" in variant.columns
    )
    return Layout(
        schema.name,
        mapping,
        schema.tz,
        schema.unix_is_local,
        schema.infer_zone,
        label=variant.label,
        date_order=schema.date_order,
        weekday_format=variant.weekday_format if own_weekday else None,
        guessed=guessed,
    )


_GUESS_PATTERNS = {
    "start_date": r"((start|pickup|^pu|depart|trip).*date(?!.*time))|^date$",
    "start_time": r"(start|pickup|^pu|depart).*(time|ts)|^start$",
    "start_clock": r"(start|pickup|^pu|depart).*clock|^(time|clock)$",
    "start_hour": r"(^|_)hour$",
    "start_minute": r"(^|_)minute$",
    "weekday": r"week_?day|day_?of_?week|^dow$",
    "end_time": r"(end|drop|arriv).*(time|date|ts)",
    "travel_time_min": r"(duration|travel_?time|trip).*min|^minutes$",
    "travel_time_s": r"(duration|seconds|travel_?time|trip_?sec)",
    "origin_lat": r"(origin|pickup|^pu|start|from).*lat",
    "origin_lon": r"(origin|pickup|^pu|start|from).*(lon|lng)",
    "dest_lat": r"(dest|dropoff|drop|^do|end|to).*lat",
    "dest_lon": r"(dest|dropoff|drop|^do|end|to).*(lon|lng)",
    "origin_zone": r"(origin|pickup|start|^pu).*(zone|location_?id|area)",
    "dest_zone": r"(dest|dropoff|drop|end|^do).*(zone|location_?id|area)",
}


def guess_column_map(columns: Sequence[str]) -> dict[str, str]:
    """A first guess of role -> column from common column names (for a mapping form).

    The guess never names roles that conflict (see :func:`resolve_layout`): a date
    column turns a ``..._time`` column into the clock, coordinates win over zones.

    Examples
    --------
    >>> guess_column_map(["pickup_time", "duration_s", "plat", "plon", "dlat", "dlon"])
    {'start_time': 'pickup_time', 'travel_time_s': 'duration_s'}
    >>> guess_column_map(["pickup_date", "pickup_time", "trip_minutes", "PULocationID"])
    {'start_date': 'pickup_date', 'travel_time_min': 'trip_minutes', \
'origin_zone': 'PULocationID', 'start_clock': 'pickup_time'}
    """
    guess: dict[str, str] = {}
    for role, pattern in _GUESS_PATTERNS.items():
        for column in columns:
            if re.search(pattern, normalise_column(column)) and column not in guess.values():
                guess[role] = str(column)
                break
    if "start_date" in guess:
        if "start_time" in guess and "start_clock" not in guess:
            guess["start_clock"] = guess["start_time"]
        guess.pop("start_time", None)
        guess.pop("weekday", None)
    if "start_time" in guess:
        for role in ("start_clock", "start_hour", "start_minute", "weekday"):
            guess.pop(role, None)
    if "start_clock" in guess:
        guess.pop("start_hour", None)
        guess.pop("start_minute", None)
    if "start_minute" in guess and "start_hour" not in guess:
        guess.pop("start_minute")
    durations = [r for r in DURATION_ROLES if r in guess]
    for role in durations[1:]:
        guess.pop(role)
    for end in ("origin", "dest"):
        if f"{end}_lat" in guess and f"{end}_lon" in guess:
            guess.pop(f"{end}_zone", None)
    return guess
