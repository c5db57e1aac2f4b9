"""Reading trip files (CSV or Parquet, from a path, bytes or an upload) into trips.

:func:`read_trips` turns an export into the canonical table
(:mod:`vrvm.trips.table`) and *always* returns a
:class:`~vrvm.trips.files.cleaning.CleaningReport` beside it, because real exports are messy
and a silently dropped row is a bug nobody can find later. The file's layout is found
by :mod:`vrvm.trips.files.layouts`, its values are parsed by :mod:`vrvm.trips.files.parsing` and
its rows cleaned by :mod:`vrvm.trips.files.cleaning`.

The same reader serves files on disk, the CLI and the dashboard's uploads: what a file
is (Parquet, or CSV text with its compression and delimiter) is sniffed once, here.
Reading is bounded (:mod:`vrvm.trips.files._limits`, :class:`ReadLimits`): a CSV header
wider than 1,000 columns, or not ending within 1 MiB, is refused before any parser
sees it, and compressed data is decompressed through a guard that stops once it
expands more than 100-fold (past its first 100 MiB) or beyond 20 GiB; a read may be
limited to a number of data rows (``ReadLimits.max_data_rows``, which uploads set),
counted as the rows are parsed. :func:`check_expansion` applies the expansion guard to
a whole file up front (the upload check, with a stricter size), :func:`expanded_size`
measures what compressed data expands to, and :func:`read_rows` returns chosen rows as
they are written in the file (to show the rows a report names).

Batches
-------
CSV text is parsed in batches of about ``ReadLimits.batch_bytes`` (8 MiB)
(:mod:`vrvm.trips.files._batches`): the text is cut where records end (line breaks outside
quoted fields) and each batch is parsed by pandas behind the header and the file's
first data row, so every row is checked against the header and every column gets the
type a read of the whole file gives it. Only the parsed columns a layout needs are
kept. Formats are still decided over whole columns, never on a batch
(:class:`~vrvm.trips.files._survey.TimeSurvey`): :func:`read_trips` parses each batch with
the decisions the rows read so far support, takes them again over the whole file at
the end and parses once more the rare batch whose decisions changed (day-first dates
that only a late row tells from month-first ones); :func:`iter_trips` reads the file
once to decide, then yields it batch by batch. Either way the trips and the report are
exactly those of a read of the whole file at once, and memory holds one batch of text
and the parsed rows, not the file as Python strings. (pyarrow's streaming CSV reader was
measured against this cutter and kept out: its numbers are not pandas' doubles, and it
reads some files otherwise; see :mod:`vrvm.trips.files._batches`. Its codecs decompress
gzip and bz2: :mod:`vrvm.trips.files._source`.)

Errors are typed: :class:`TripFileError` when the file cannot be read as a table,
:class:`~vrvm.trips.files.layouts.UnknownLayoutError` when its columns are not understood
(it carries them, for a form that lets the user name them). Both are ``ValueError``.

Safety
------
Input is only ever parsed as CSV text (pandas' C parser) or Parquet (pyarrow); nothing
is unpickled, evaluated or executed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import pandas as pd

from vrvm.trips.files._batches import (
    Reading,
    check_parquet_rows,
    clean_batches,
    joined,
    layout_batches,
    parquet_batches,
    parse_csv,
    parse_whole,
    read_parquet,
    survey_file,
)
from vrvm.trips.files._limits import LimitExceeded, ReadLimits
from vrvm.trips.files._source import (
    DAMAGED,
    Source,
    TripFileError,
    ZonesNeededError,
    as_zone_file,
    damaged,
    decompressing,
    file_columns,
    guarded,
    open_source,
    read_csv_header,
    sniff_compression,
)
from vrvm.trips.files._survey import TimeSurvey
from vrvm.trips.files.cleaning import (
    CleaningConfig,
    CleaningReport,
    as_config,
    check_flag,
    clean_parsed,
)
from vrvm.trips.files.formats import TimeFormats
from vrvm.trips.files.layouts import Layout, UnknownLayoutError, missing_roles, resolve_layout
from vrvm.trips.files.parsing import ColumnPlan
from vrvm.trips.files.recipes import ReadOptions
from vrvm.trips.places.timezones import check_zone

if TYPE_CHECKING:  # read only for zone-id trips; shapely loads on first use
    from vrvm.trips.places.zone_files import ZoneFile

__all__ = [
    "Proposal",
    "ReadLimits",
    "TripFileError",
    "ZonesNeededError",
    "check_expansion",
    "expanded_size",
    "iter_trips",
    "propose_options",
    "read_layout",
    "read_rows",
    "read_trips",
]


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
    date_format: str | None = None,
    clock_format: str | None = None,
    weekday_format: str | None = None,
    zones: ZoneFile | str | os.PathLike[str] | None = None,
    max_rows: int | None = None,
    limits: ReadLimits | None = None,
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
        ``start_time``. Default: the city of a recognised layout; for a file that
        names no city (``custom``, ``bikeshare``) the zone where its trips start
        (:func:`~vrvm.trips.places.timezones.trips_zone`, refused with
        :class:`~vrvm.trips.places.timezones.ZoneUnknownError` when that cannot be told);
        UTC for the ``canonical`` layout.
    column_map : dict or None, default=None
        Role -> column of the file, with the roles of
        :data:`vrvm.trips.files.layouts.ROLES`: ``origin_lat origin_lon dest_lat dest_lon``
        or ``origin_zone dest_zone``; ``start_time``, or ``start_date`` +
        ``start_clock`` (or ``start_hour`` [+ ``start_minute``]), or the clock +
        ``weekday`` for files without a date; ``travel_time_s``,
        ``travel_time_min`` or ``end_time``. Overrides or completes the detected
        schema's mapping (a role replaces the schema's roles for the same thing),
        or defines one (schema ``"custom"``) when the header matches no schema; the
        roles it leaves open are then guessed as the upload form guesses them
        (:func:`~vrvm.trips.files.layouts.complete_column_map`).
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
    date_format : str or None, default=None
        How dates are written: ``"auto"`` (None), ``"iso"``, ``"dayfirst"``,
        ``"monthfirst"``, ``"unix_s"``, ``"unix_ms"`` or a strftime pattern
        (:mod:`vrvm.trips.files.formats`). Day-first and month-first are never guessed:
        a file whose dates read both ways raises
        :class:`~vrvm.trips.files.formats.TimeFormatError` until this says which.
    clock_format : {None, "auto", "hh:mm", "hours", "seconds"}, default=None
        How a ``start_clock`` column is written (detected when None).
    weekday_format : {None, "names", "iso", "sunday1", "monday0"}, default=None
        How a ``weekday`` column is written; numbers need it (unless the layout
        knows), names do not.
    zones : ZoneFile, path or None, default=None
        The zone file whose polygons the ``origin_zone`` / ``dest_zone`` ids name
        (a path is read with its id property detected); each trip end becomes the
        zone's representative point, and unknown ids are dropped as
        ``unknown_zone``.
    max_rows : int or None, default=None
        Read only the first ``max_rows`` data rows (a preview); the report then
        speaks of those rows only. The rest of the file is not read.
    limits : ReadLimits or None, default=None
        Resource limits (:class:`~vrvm.trips.files._limits.ReadLimits`; ``None``: its
        defaults): a CSV header must end within 1 MiB and have at most 1,000
        columns; compressed data may expand at most 100-fold (judged after its
        first 100 MiB) and to at most 20 GiB; no limit on the data rows unless
        ``max_data_rows`` is set (the read stops at the first row beyond it); CSV
        text is parsed ``batch_bytes`` (8 MiB) at a time (see "Batches" in the
        module docs).

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
    TripFileError
        If the file is empty, binary, not a table, malformed or beyond a limit of
        ``limits``; the message names the file and says what was expected (or the
        measure and the limit).
    UnknownLayoutError
        If no known layout (nor ``column_map``) says which column holds each role;
        the message lists the layouts and the closest match, and the error carries
        the file's columns.
    TimeFormatError
        If a date, clock or weekday column's format cannot be told from its values;
        the message names the column and the readings. All three are ``ValueError``.
    FileNotFoundError
        If a path does not exist.

    See Also
    --------
    clean_trips : the same cleaning for a frame that is already canonical.
    detect_schema : which schema a header belongs to.

    Examples
    --------
    >>> import io
    >>> from vrvm.trips.files.reader import read_trips
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
      read 'trip_start_timestamp': Unix numbers holding the city's wall-clock time
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
    trips, report, _, _ = _read(
        path_or_buffer,
        schema,
        tz,
        column_map,
        cleaning,
        source=source,
        require_travel_time=require_travel_time,
        row_numbers=row_numbers,
        formats=(date_format, clock_format, weekday_format),
        zones=zones,
        max_rows=max_rows,
        limits=limits,
    )
    return trips, report


def _read(
    path_or_buffer,
    schema,
    tz,
    column_map,
    cleaning,
    *,
    source,
    require_travel_time,
    row_numbers,
    formats,
    zones,
    max_rows,
    limits,
) -> tuple[pd.DataFrame, CleaningReport, Layout, dict[str, ColumnPlan]]:
    """:func:`read_trips`, with the layout and the format decisions it read with."""
    config = as_config(cleaning)
    tz = check_zone(tz)
    require_travel_time = check_flag(require_travel_time, "require_travel_time")
    row_numbers = check_flag(row_numbers, "row_numbers")
    date_format, clock_format, weekday_format = formats
    formats = TimeFormats(date_format or "auto", clock_format or "auto", weekday_format)
    zone_file = as_zone_file(zones)
    src = open_source(path_or_buffer, source, limits)
    if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
        raise ValueError(f"max_rows must be a positive integer or None, got {max_rows!r}")
    reading = Reading(tz, formats, zone_file)
    if src.kind == "parquet":
        raw = read_parquet(src, schema, column_map, require_travel_time, max_rows)
        layout = raw.layout
        parsed, rows, n_empty = parse_whole(src, raw, reading), raw.rows, raw.n_empty
    else:
        columns, sep = read_csv_header(src)
        layout = resolve_layout(columns, schema, column_map, src.name, require_travel_time)
        parsed, rows, n_empty = parse_csv(src, sep, layout, reading, max_rows)
    trips, report = clean_parsed(
        parsed,
        rows,
        config,
        source=src.name,
        schema=layout.schema,
        n_empty=n_empty,
        require_duration=require_travel_time,
        row_numbers=row_numbers,
    )
    return trips, report, layout, dict(parsed.plans)


def iter_trips(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes] | IO[str],
    schema: str = "auto",
    tz: str | None = None,
    column_map: Mapping[str, str] | None = None,
    cleaning: CleaningConfig | Mapping | None = None,
    *,
    source: str | None = None,
    require_travel_time: bool = True,
    row_numbers: bool = False,
    date_format: str | None = None,
    clock_format: str | None = None,
    weekday_format: str | None = None,
    zones: ZoneFile | str | os.PathLike[str] | None = None,
    limits: ReadLimits | None = None,
) -> Iterator[tuple[pd.DataFrame, CleaningReport]]:
    """Read a trip file in batches, with the memory of one batch: ``(trips, report)``.

    Every row is read, and every batch cleaned, as :func:`read_trips` reads and cleans
    the whole file: the file is read once first to take the format decisions over whole
    columns (day-first or month-first dates, seconds or milliseconds, clock and weekday
    formats, the zone where the trips are; see
    :class:`~vrvm.trips.files._survey.TimeSurvey`), keeping nothing else, then batch by batch
    (about ``limits.batch_bytes`` of text, or 65,536 Parquet rows, at a time). The
    first pass runs when this function is called, so a file that cannot be read fails
    here, before any batch; the batches come when the result is iterated.

    Parameters
    ----------
    path_or_buffer, schema, tz, column_map, source, require_travel_time, row_numbers, \
date_format, clock_format, weekday_format, zones, limits
        As for :func:`read_trips`.
    cleaning : CleaningConfig, dict or None
        Thresholds, as for :func:`read_trips`, but each batch is cleaned on its own:
        checks that need the whole file (``max_radius_km``, ``drop_duplicates``) must
        be off.

    Returns
    -------
    iterator of (pandas.DataFrame, CleaningReport)
        Per batch, in file order: the kept trips and the report of that batch's rows
        (its ``notes`` those of the whole file);
        :func:`~vrvm.trips.files.cleaning.combine_reports` makes the report of the file.

    Raises
    ------
    ValueError
        If ``cleaning`` asks for a check over the whole file; otherwise as
        :func:`read_trips`.

    Examples
    --------
    >>> import io
    >>> from vrvm.trips.files.cleaning import combine_reports
    >>> csv = (b"origin_lat,origin_lon,dest_lat,dest_lon,start_time\\n"
    ...        + b"41.88,-87.63,41.90,-87.65,16/3/2016 08:00\\n" * 300
    ...        + b"41.88,-87.63,41.90,-87.65,3/4/2016 09:00\\n" * 300)
    >>> batches = iter_trips(csv, tz="America/Chicago", require_travel_time=False,
    ...                      cleaning={"max_radius_km": None, "drop_duplicates": False},
    ...                      limits=ReadLimits(batch_bytes=4096))
    >>> parts = list(batches)
    >>> len(parts) > 1, sum(len(trips) for trips, _ in parts)
    (True, 600)
    >>> str(parts[-1][0]["start_time"].iloc[-1])  # day first, as the first rows tell
    '2016-04-03 09:00:00-05:00'
    >>> print(combine_reports([report for _, report in parts]))
    <bytes>: kept 600 of 600 rows (100.0%), dropped 0
      read 'start_time': day-first dates
    """
    config = as_config(cleaning)
    if config.max_radius_km is not None or config.drop_duplicates:
        raise ValueError(
            "iter_trips cleans each batch on its own: give cleaning with "
            "max_radius_km=None and drop_duplicates=False (the median point and the "
            "duplicates need the whole file: read_trips)"
        )
    tz = check_zone(tz)
    require_travel_time = check_flag(require_travel_time, "require_travel_time")
    row_numbers = check_flag(row_numbers, "row_numbers")
    formats = TimeFormats(date_format or "auto", clock_format or "auto", weekday_format)
    reading = Reading(tz, formats, as_zone_file(zones))
    src = open_source(path_or_buffer, source, limits)
    if src.kind == "parquet":
        columns = file_columns(src)
        layout = resolve_layout(columns, schema, column_map, src.name, require_travel_time)
        check_parquet_rows(src)

        def batches(as_text):
            return parquet_batches(src, layout)

    else:
        columns, sep = read_csv_header(src)
        layout = resolve_layout(columns, schema, column_map, src.name, require_travel_time)

        def batches(as_text):
            raw_batches = layout_batches(src, sep, layout, as_text, None)
            if TimeSurvey.can_survey(layout):
                return raw_batches
            return joined(raw_batches)  # read whole: one column, two time roles

    survey = survey_file(src, layout, reading, batches)
    flags = (require_travel_time, row_numbers)
    return clean_batches(src, layout, reading, survey, batches, config, *flags)


def read_layout(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes] | IO[str],
    schema: str = "auto",
    column_map: Mapping[str, str] | None = None,
    *,
    source: str | None = None,
    require_travel_time: bool = True,
    limits: ReadLimits | None = None,
) -> tuple[Layout, list[str]]:
    """The layout :func:`read_trips` would read a file with, from its header alone.

    Returns the :class:`~vrvm.trips.files.layouts.Layout` (schema, variant, role -> column)
    and the file's columns; raises as :func:`read_trips` does (with the same
    ``limits``).

    Examples
    --------
    >>> header = b"hour,minute,weekday,duration,pickup_latitude,pickup_longitude,"
    >>> header += b"dropoff_latitude,dropoff_longitude\\n"
    >>> layout, columns = read_layout(header + b"8,15,2,600,40.7,-74.0,40.8,-73.9\\n")
    >>> layout.schema, layout.weekday_format, layout.mapping["start_hour"]
    ('nyc_kaggle', 'sunday1', 'hour')
    """
    src = open_source(path_or_buffer, source, limits)
    columns = file_columns(src)
    return resolve_layout(columns, schema, column_map, src.name, require_travel_time), columns


@dataclass(frozen=True)
class Proposal:
    """How a file would be read: the options to give, and the first trips read with them.

    Attributes
    ----------
    options : ReadOptions
        The options given, completed: every role of the layout (for a file whose
        header no known layout explains) and the formats found in its first rows.
    layout : Layout
        The layout read with.
    recognised : bool
        The header alone names the layout (the options add nothing that is needed).
    trips, report
        The first rows as :func:`read_trips` reads them with ``options``.
    columns : list of str
        The file's columns.
    """

    options: ReadOptions
    layout: Layout
    recognised: bool
    trips: pd.DataFrame
    report: CleaningReport
    columns: list[str]


def _formats_found(plans: Mapping[str, ColumnPlan], layout: Layout) -> dict[str, str]:
    """The format options that say what the reader detected (not the layout's own)."""
    found: dict[str, str] = {}
    for role in ("start_time", "start_date"):
        order = plans.get(role, ColumnPlan()).order
        if order in ("dayfirst", "monthfirst") and layout.date_order != order:
            found["date_format"] = order
    clock = plans.get("start_clock", ColumnPlan()).clock_format
    if clock is not None:
        found["clock_format"] = clock
    weekday = plans.get("weekday", ColumnPlan()).weekday_format
    if weekday is not None and weekday != layout.weekday_format:
        found["weekday_format"] = weekday
    return found


def propose_options(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes],
    options: ReadOptions | None = None,
    *,
    source: str | None = None,
    zones: ZoneFile | str | os.PathLike[str] | None = None,
    max_rows: int = 2000,
    limits: ReadLimits | None = None,
) -> Proposal:
    """The options that read a file as the upload form and ``vrvm inspect`` propose.

    The roles are those :func:`~vrvm.trips.files.layouts.resolve_layout` decides for
    ``options``; when the header is not recognised and ``options`` name no column,
    the roles the form pre-fills (:func:`~vrvm.trips.files.layouts.complete_column_map`).
    The first ``max_rows`` rows are read with them, and the formats found there are
    added, so that the options, given explicitly, read the file as it was read here.

    Raises
    ------
    UnknownLayoutError
        If even the guess does not name every role needed; otherwise as
        :func:`read_trips`.

    Examples
    --------
    >>> csv = (b"date,Time,pickup_latitude,pickup_longitude,dropoff_latitude,"
    ...        b"dropoff_longitude,trip_duration\\n"
    ...        b"16-5-2016,8.25,40.75,-73.99,40.76,-73.98,600\\n"
    ...        b"3-5-2016,17.5,40.76,-73.97,40.75,-73.99,900\\n")
    >>> proposal = propose_options(csv, source="trips.csv")
    >>> proposal.recognised, proposal.layout.schema, proposal.report.tz
    (False, 'custom', 'America/New_York')
    >>> print(" ".join(proposal.options.cli_args()))
    --map start_date=date --map start_clock=Time --map travel_time_s=trip_duration \
--map origin_lat=pickup_latitude --map origin_lon=pickup_longitude \
--map dest_lat=dropoff_latitude --map dest_lon=dropoff_longitude \
--date-format dayfirst --clock-format hours
    """
    options = options or ReadOptions()
    kwargs = options.read_kwargs()
    recognised = True
    try:
        src = open_source(path_or_buffer, source, limits)
        columns = file_columns(src)
        resolve_layout(columns, kwargs["schema"], kwargs["column_map"], src.name)
    except UnknownLayoutError as exc:
        if kwargs["column_map"] or missing_roles(exc.proposal):
            raise
        recognised = False
        kwargs["column_map"] = exc.proposal
    formats = (kwargs.pop("date_format"), kwargs.pop("clock_format"), kwargs.pop("weekday_format"))
    trips, report, layout, plans = _read(
        path_or_buffer,
        cleaning=None,
        source=source,
        require_travel_time=True,
        row_numbers=True,
        formats=formats,
        zones=zones,
        max_rows=max_rows,
        limits=limits,
        **kwargs,
    )
    completed = options.to_dict()
    if layout.schema == "custom" or not recognised:
        completed["column_map"] = dict(layout.mapping)
    elif layout.guessed:
        completed["column_map"] = {
            **options.column_map,
            **{role: layout.mapping[role] for role in layout.guessed},
        }
    for option, value in _formats_found(plans, layout).items():
        completed[option] = completed[option] or value
    recognised = recognised and layout.schema != "custom"
    options = ReadOptions.from_dict(completed)
    return Proposal(options, layout, recognised, trips, report, [str(c) for c in columns])


def check_expansion(
    path_or_data: str | os.PathLike[str] | bytes,
    limits: ReadLimits | None = None,
    *,
    name: str | None = None,
) -> int:
    """Decompress a whole file through the expansion guard; the bytes it expands to.

    The compression is recognised as :func:`read_trips` recognises it; plain data is
    its own size (and is not read). Decompression runs in 1 MiB steps and stops as
    soon as a limit of ``limits`` is passed, so a zip bomb costs at most
    ``limits.ratio_after_bytes`` (or ``max_expanded_bytes``) of work.

    Raises
    ------
    TripFileError
        If the data expands beyond ``limits`` (the message names the size or the
        ratio and the limit) or is damaged.

    Examples
    --------
    >>> import gzip
    >>> check_expansion(gzip.compress(b"a,b\\n" * 1000))
    4000
    >>> bomb = gzip.compress(b"0" * 3 * 2**20)
    >>> limits = ReadLimits(max_expanded_bytes=2**20)
    >>> check_expansion(bomb, limits, name="b.gz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vrvm.trips.files.reader.TripFileError: b.gz expands to more than 1 MB when decompressed, ...
    """
    is_path = isinstance(path_or_data, str | os.PathLike)
    if is_path:
        path = os.fspath(path_or_data)
        name = name or path
        with open(path, "rb") as fh:
            head = fh.read(8)
        size = os.path.getsize(path)
    else:
        data = bytes(path_or_data)
        name, head, size = name or "<bytes>", data[:8], len(data)
    compression = sniff_compression(head)
    if compression is None:
        return size
    src = Source(name, "csv", None, None, compression, limits or ReadLimits())
    try:
        with guarded(path if is_path else data, src) as stream:
            return stream.drain()
    except LimitExceeded as exc:
        raise TripFileError(str(exc), limit=exc.limit) from None
    except DAMAGED as exc:
        raise damaged(name, exc) from None


def expanded_size(data: bytes, cap: int, *, name: str = "<bytes>") -> int:
    """Bytes that ``data`` expands to when decompressed, counting stops once above ``cap``.

    The compression is recognised as :func:`read_trips` recognises it (gzip, bz2, xz,
    zip holding one file); plain data is its own size. Reading stops after ``cap``
    bytes, so a zip bomb costs at most ``cap`` bytes of work. :func:`check_expansion`
    also stops at a ratio, and says why.

    Examples
    --------
    >>> import gzip
    >>> expanded_size(gzip.compress(b"a,b\\n" * 1000), cap=10**6)
    4000
    >>> expanded_size(gzip.compress(b"0" * 10**6), cap=1000) > 1000
    True
    """
    compression = sniff_compression(data)
    if compression is None:
        return len(data)
    total = 0
    try:
        with decompressing(data, compression, name) as handle:
            while total <= cap and (chunk := handle.read(1 << 20)):
                total += len(chunk)
    except DAMAGED as exc:
        raise damaged(name, exc) from None
    return total


def read_rows(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes],
    rows: Iterable[int],
    *,
    source: str | None = None,
    limits: ReadLimits | None = None,
) -> pd.DataFrame:
    """Chosen rows of a trip file as they are written in it: every column, as text.

    Parameters
    ----------
    path_or_buffer : str, path, bytes or file-like
        The file, as for :func:`read_trips`.
    rows : iterable of int
        Row numbers as a :class:`~vrvm.trips.files.cleaning.CleaningReport` gives them
        (line numbers with the header as line 1; position + 2 for Parquet).
    source : str, optional
        Name of the file in messages.
    limits : ReadLimits or None, default=None
        Resource limits, as for :func:`read_trips`.

    Returns
    -------
    pandas.DataFrame
        A ``row`` column, then the file's columns as strings, one row per wanted row
        that exists, in increasing row order.

    Examples
    --------
    >>> csv = b"a,b\\n1,x\\n2,y\\n3,z\\n"
    >>> read_rows(csv, [4, 2]).to_dict("list")
    {'row': [2, 4], 'a': ['1', '3'], 'b': ['x', 'z']}
    """
    wanted = sorted({int(r) for r in rows if int(r) >= 2})
    src = open_source(path_or_buffer, source, limits)
    if not wanted:
        return pd.DataFrame(columns=["row"])
    if src.kind == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(src.handle())
        kept = [r for r in wanted if r - 2 < table.num_rows]
        picked = table.take([r - 2 for r in kept]).to_pandas().astype(str)
    else:
        _, sep = read_csv_header(src)
        lines = set(wanted)  # 1-based, header = line 1
        with src.text() as handle:
            picked = pd.read_csv(
                handle,
                sep=sep,
                dtype=str,
                keep_default_na=False,
                skip_blank_lines=False,
                index_col=False,
                compression=None,  # decompressed by src.text(), with its guard
                skiprows=lambda i: i != 0 and (i + 1) not in lines,
                nrows=len(lines),  # stop at the last wanted row: read no further
                encoding_errors="replace",
                skipinitialspace=True,
            )
        kept = wanted[: len(picked)]
    picked = picked.reset_index(drop=True)
    picked.insert(0, "row", kept)
    return picked
