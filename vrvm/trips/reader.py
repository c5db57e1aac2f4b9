"""Reading trip files (CSV or Parquet, from a path, bytes or an upload) into trips.

:func:`read_trips` turns an export into the canonical table
(:mod:`vrvm.trips.table`) and *always* returns a
:class:`~vrvm.trips.cleaning.CleaningReport` beside it, because real exports are messy
and a silently dropped row is a bug nobody can find later. The file's layout is found
by :mod:`vrvm.trips.layouts`, its values are parsed by :mod:`vrvm.trips.parsing` and
its rows cleaned by :mod:`vrvm.trips.cleaning`.

The same reader serves files on disk, the CLI and the dashboard's uploads: what a file
is (Parquet, or CSV text with its compression and delimiter) is sniffed once, here.
Reading is bounded (:mod:`vrvm.trips._limits`, :class:`ReadLimits`): a CSV header
wider than 1,000 columns, or not ending within 1 MiB, is refused before any parser
sees it, and compressed data is decompressed through a guard that stops once it
expands more than 100-fold (past its first 100 MiB) or beyond 20 GiB.
:func:`check_expansion` applies the same guard to a whole file up front (the upload
check, with a stricter size), :func:`expanded_size` measures what compressed data
expands to, and :func:`read_rows` returns chosen rows as they are written in the file
(to show the rows a report names).

Errors are typed: :class:`TripFileError` when the file cannot be read as a table,
:class:`~vrvm.trips.layouts.UnknownLayoutError` when its columns are not understood
(it carries them, for a form that lets the user name them). Both are ``ValueError``.

Safety
------
Input is only ever parsed as CSV text (pandas' C parser) or Parquet (pyarrow); nothing
is unpickled, evaluated or executed.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np
import pandas as pd

from vrvm.trips._limits import GuardedStream, LimitExceeded, ReadLimits, check_header
from vrvm.trips.cleaning import CleaningConfig, CleaningReport, as_config, check_flag, clean_parsed
from vrvm.trips.formats import TimeFormats
from vrvm.trips.layouts import Layout, resolve_layout
from vrvm.trips.parsing import parse_columns
from vrvm.trips.timezones import check_zone, zone_name

if TYPE_CHECKING:  # read only for zone-id trips; shapely loads on first use
    from vrvm.trips.zone_files import ZoneFile

__all__ = [
    "ReadLimits",
    "TripFileError",
    "ZonesNeededError",
    "check_expansion",
    "expanded_size",
    "read_layout",
    "read_rows",
    "read_trips",
]


class TripFileError(ValueError):
    """A file that cannot be read as a trip table; the message names the file and says
    what was expected."""


class ZonesNeededError(ValueError):
    """Trips given by zone ids, read without the zone file that names them.

    Attributes
    ----------
    columns : list of str
        The file's columns (for a form that asks for the zone file).
    """

    def __init__(self, message: str, *, columns: list[str]):
        super().__init__(message)
        self.columns = columns


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
    limits: ReadLimits = field(default_factory=ReadLimits)

    def handle(self):
        # A fresh handle per read: the header and the body are read separately.
        return self.path if self.path is not None else io.BytesIO(self.data)

    @contextmanager
    def text(self) -> Iterator:
        """A fresh handle on the CSV text, decompressed through the expansion guard.

        pandas reads it with ``compression=None``; a limit passed while it reads
        becomes a :class:`TripFileError`.
        """
        if self.compression is None:
            handle = self.handle()
        else:
            handle = _guarded(self.path if self.path is not None else self.data, self)
        try:
            yield handle
        except LimitExceeded as exc:
            raise TripFileError(str(exc)) from None
        finally:
            if not isinstance(handle, str):
                handle.close()


def _open_input(path_or_buffer, source: str | None, limits: ReadLimits | None = None) -> _Input:
    path: str | None = None
    data: bytes | None = None
    if limits is not None and not isinstance(limits, ReadLimits):
        raise TypeError(f"limits must be a ReadLimits or None, got {type(limits).__name__}")
    limits = limits or ReadLimits()
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
        raise TripFileError(f"{name} is empty: {_EXPECTED}")
    suffix = Path(path or name).suffix.lower()
    if head.startswith(_PARQUET_MAGIC):
        return _Input(name, "parquet", path, data, None, limits)
    if suffix in (".parquet", ".pq"):
        raise TripFileError(
            f"{name} has a Parquet file extension but is not a Parquet file (it does not "
            f"start with the 'PAR1' marker): {_EXPECTED}"
        )
    for magic, compression in _COMPRESSION_MAGIC.items():
        if head.startswith(magic):
            return _Input(name, "csv", path, data, compression, limits)
    if b"\x00" in head:
        raise TripFileError(
            f"{name} looks like binary data, not text: {_EXPECTED} (export an Excel "
            "workbook as CSV first; save UTF-16 text as UTF-8)"
        )
    return _Input(name, "csv", path, data, None, limits)


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


def _check_header(src: _Input) -> None:
    """Refuse a header too wide or too long from its raw bytes, before pandas reads it."""
    limit = src.limits.header_bytes
    try:
        with src.text() as handle:
            if isinstance(handle, str):
                with open(handle, "rb") as fh:
                    head = fh.read(limit + 1)
            else:
                head = handle.read(limit + 1)
    except _DAMAGED as err:
        raise TripFileError(
            f"{src.name} could not be read as CSV ({_short(err)}): {_EXPECTED}"
        ) from None
    try:
        check_header(head[:limit], len(head) <= limit, src.limits, src.name)
    except LimitExceeded as exc:
        raise TripFileError(str(exc)) from None


def _read_csv_header(src: _Input) -> tuple[list[str], str]:
    """Return the header and the delimiter (',' unless the header says otherwise)."""
    _check_header(src)
    # Same options as the body read, so the header names match its columns exactly.
    options = {"compression": None, "encoding_errors": "replace", "skipinitialspace": True}
    try:
        with src.text() as handle:
            header = pd.read_csv(handle, nrows=0, **options).columns
        sep = ","
        if len(header) == 1:
            # A single column usually means another delimiter (European exports use ';').
            for candidate in (";", "\t", "|"):
                if candidate in str(header[0]):
                    sep = candidate
                    with src.text() as handle:
                        header = pd.read_csv(handle, nrows=0, sep=sep, **options).columns
                    break
    except pd.errors.EmptyDataError:
        raise TripFileError(f"{src.name} is empty: {_EXPECTED}") from None
    except TripFileError:  # a limit passed while pandas read (src.text())
        raise
    except _READ_ERRORS as err:
        raise TripFileError(
            f"{src.name} could not be read as CSV ({_short(err)}): {_EXPECTED}"
        ) from None
    if len(header) < 2:
        raise TripFileError(
            f"{src.name} does not look like a table: its first line has a single field "
            f"{str(header[0])[:60]!r}; {_EXPECTED}"
        )
    return [str(c) for c in header], sep


@dataclass
class _RawTable:
    """The source columns a layout needs, before any parsing."""

    frame: pd.DataFrame
    layout: Layout  # role -> column of frame
    rows: np.ndarray  # row number of each row of frame
    n_empty: int = 0


def _read_raw(
    src: _Input,
    schema: str,
    column_map,
    require_duration: bool = True,
    max_rows: int | None = None,
) -> _RawTable:
    """Read the file (its first ``max_rows`` data rows) and keep the layout's columns."""
    if src.kind == "parquet":
        import pyarrow as pa  # pyarrow is a dependency; imported lazily for speed
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(src.handle())
            columns = [str(c) for c in parquet.schema_arrow.names]
        except Exception as err:  # pyarrow raises several unrelated types
            raise TripFileError(
                f"{src.name} could not be read as Parquet ({_short(err)}): {_EXPECTED}"
            ) from None
        layout = resolve_layout(columns, schema, column_map, src.name, require_duration)
        needed = list(dict.fromkeys(layout.mapping.values()))
        try:
            if max_rows is None:
                raw = parquet.read(columns=needed).to_pandas()
            else:
                batches = parquet.iter_batches(batch_size=max_rows, columns=needed)
                raw = next(batches, pa.table({c: [] for c in needed})).to_pandas()
        except Exception as err:
            raise TripFileError(
                f"{src.name} could not be read as Parquet ({_short(err)}): {_EXPECTED}"
            ) from None
        if len(raw) == 0:
            raise TripFileError(f"{src.name} has no data rows: {_EXPECTED}")
        return _RawTable(raw, layout, np.arange(len(raw)) + 2)

    columns, sep = _read_csv_header(src)
    layout = resolve_layout(columns, schema, column_map, src.name, require_duration)
    needed = list(dict.fromkeys(layout.mapping.values()))
    try:
        with warnings.catch_warnings():
            # pandas only *warns* when every row has more fields than the header and
            # drops the extra ones; that misaligns values with names, so it is an error.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            with src.text() as handle:
                raw = pd.read_csv(
                    handle,
                    sep=sep,
                    # All columns, not usecols: with usecols pandas silently ignores
                    # rows with too many fields, which hides shifted values.
                    index_col=False,  # a trailing delimiter is not an index column
                    compression=None,  # decompressed by src.text(), with its guard
                    encoding_errors="replace",
                    skipinitialspace=True,
                    # Keep blank lines as rows so that position + 2 is the line number.
                    skip_blank_lines=False,
                    low_memory=False,
                    nrows=max_rows,
                )
    except pd.errors.ParserWarning:
        raise TripFileError(
            f"{src.name} could not be read as CSV: its rows have more fields than the "
            f"header has names; {_EXPECTED}"
        ) from None
    except TripFileError:  # a limit passed while pandas read (src.text())
        raise
    except _READ_ERRORS as err:
        raise TripFileError(
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
        raise TripFileError(f"{src.name} has a header but no data rows: {_EXPECTED}")
    return _RawTable(raw, layout, rows, n_empty)


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
        ``start_time``. Default: the schema's city zone, else UTC.
    column_map : dict or None, default=None
        Role -> column of the file, with the roles of
        :data:`vrvm.trips.layouts.ROLES`: ``origin_lat origin_lon dest_lat dest_lon``
        or ``origin_zone dest_zone``; ``start_time``, or ``start_date`` +
        ``start_clock`` (or ``start_hour`` [+ ``start_minute``]), or the clock +
        ``weekday`` for files without a date; ``travel_time_s``,
        ``travel_time_min`` or ``end_time``. Overrides or completes the detected
        schema's mapping (a role replaces the schema's roles for the same thing),
        or defines one (schema ``"custom"``) when no schema matches.
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
        (:mod:`vrvm.trips.formats`). Day-first and month-first are never guessed:
        a file whose dates read both ways raises
        :class:`~vrvm.trips.formats.TimeFormatError` until this says which.
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
        speaks of those rows only.
    limits : ReadLimits or None, default=None
        Resource limits (:class:`~vrvm.trips._limits.ReadLimits`; ``None``: its
        defaults): a CSV header must end within 1 MiB and have at most 1,000
        columns; compressed data may expand at most 100-fold (judged after its
        first 100 MiB) and to at most 20 GiB.

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
    >>> from vrvm.trips.reader import read_trips
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
    config = as_config(cleaning)
    tz = check_zone(tz)
    require_travel_time = check_flag(require_travel_time, "require_travel_time")
    row_numbers = check_flag(row_numbers, "row_numbers")
    formats = TimeFormats(date_format or "auto", clock_format or "auto", weekday_format)
    zone_file = _zone_file(zones)
    src = _open_input(path_or_buffer, source, limits)
    if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
        raise ValueError(f"max_rows must be a positive integer or None, got {max_rows!r}")
    raw = _read_raw(src, schema, column_map, require_travel_time, max_rows)
    layout = raw.layout
    if layout.needs_zones and zone_file is None:
        columns = [layout.mapping[r] for r in ("origin_zone", "dest_zone") if r in layout.mapping]
        raise ZonesNeededError(
            f"{src.name}: trips are given by zone ids ({', '.join(map(repr, columns))}, "
            f"layout {layout.schema}: {layout.label}); give the zone file whose polygons "
            "those ids name: zones=ZoneFile.read(path, id_property=...) in Python, "
            "--zones FILE.geojson:ID_PROPERTY in the CLI",
            columns=[str(c) for c in raw.frame.columns],
        )
    start_column = layout.mapping.get("start_time")
    native_zone = zone_name(raw.frame[start_column].dtype) if start_column else None
    zone = tz or layout.zone or native_zone or (None if layout.infer_zone else "UTC")
    zone_points = None if zone_file is None else zone_file.representative_points
    parsed = parse_columns(raw.frame, layout, zone, formats, zone_points)
    return clean_parsed(
        parsed,
        raw.rows,
        config,
        source=src.name,
        schema=layout.schema,
        n_empty=raw.n_empty,
        require_duration=require_travel_time,
        row_numbers=row_numbers,
    )


def _file_columns(src: _Input) -> list[str]:
    if src.kind == "parquet":
        import pyarrow.parquet as pq

        try:
            return [str(c) for c in pq.ParquetFile(src.handle()).schema_arrow.names]
        except Exception as err:  # pyarrow raises several unrelated types
            raise TripFileError(
                f"{src.name} could not be read as Parquet ({_short(err)}): {_EXPECTED}"
            ) from None
    return _read_csv_header(src)[0]


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

    Returns the :class:`~vrvm.trips.layouts.Layout` (schema, variant, role -> column)
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
    src = _open_input(path_or_buffer, source, limits)
    columns = _file_columns(src)
    return resolve_layout(columns, schema, column_map, src.name, require_travel_time), columns


def _zone_file(zones) -> ZoneFile | None:
    if zones is None:
        return None
    from vrvm.trips.zone_files import ZoneFile

    if isinstance(zones, ZoneFile):
        return zones
    if isinstance(zones, str | os.PathLike):
        return ZoneFile.read(zones)
    raise TypeError(f"zones must be a ZoneFile, a path or None, got {type(zones).__name__}")


def _decompressing(data, compression: str | None, name: str):
    """A binary stream of the decompressed content of ``data`` (``data`` itself if plain).

    ``data`` is bytes or a seekable binary file (a zip archive is read from it).
    """
    buffer = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    if compression == "zip":
        try:
            archive = zipfile.ZipFile(buffer)
        except zipfile.BadZipFile as exc:
            raise TripFileError(f"{name}: the zip archive is damaged ({exc})") from None
        members = [i for i in archive.infolist() if not i.is_dir()]
        if len(members) != 1:
            archive.close()
            raise TripFileError(
                f"{name}: a zip archive must hold exactly one CSV file, this one holds "
                f"{len(members)}"
            )
        return archive.open(members[0])
    if compression == "gzip":
        return gzip.GzipFile(fileobj=buffer)
    # BZ2File and LZMAFile take a file object as their first argument (no fileobj=).
    opener = {"bz2": bz2.BZ2File, "xz": lzma.LZMAFile}.get(compression)
    return buffer if opener is None else opener(buffer)


_DAMAGED = (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile)


def _guarded(path_or_data, src: _Input) -> GuardedStream:
    """The decompressed text of a compressed file or bytes, read through the guard."""
    compressed = open(path_or_data, "rb") if isinstance(path_or_data, str) else None
    compressed = compressed or io.BytesIO(path_or_data)
    try:
        inner = _decompressing(compressed, src.compression, src.name)
    except BaseException:
        compressed.close()
        raise
    return GuardedStream(inner, compressed, src.limits, src.name, owned=(compressed,))


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
    vrvm.trips.reader.TripFileError: b.gz expands to more than 1 MB when decompressed, ...
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
    compression = _sniff_compression(head)
    if compression is None:
        return size
    src = _Input(name, "csv", None, None, compression, limits or ReadLimits())
    try:
        with _guarded(path if is_path else data, src) as stream:
            return stream.drain()
    except LimitExceeded as exc:
        raise TripFileError(str(exc)) from None
    except _DAMAGED as exc:
        raise TripFileError(f"{name}: the compressed data is damaged ({exc})") from None


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
    compression = _sniff_compression(data)
    if compression is None:
        return len(data)
    total = 0
    try:
        with _decompressing(data, compression, name) as handle:
            while total <= cap and (chunk := handle.read(1 << 20)):
                total += len(chunk)
    except _DAMAGED as exc:
        raise TripFileError(f"{name}: the compressed data is damaged ({exc})") from None
    return total


def _sniff_compression(head: bytes) -> str | None:
    return next(
        (kind for magic, kind in _COMPRESSION_MAGIC.items() if head.startswith(magic)), None
    )


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
        Row numbers as a :class:`~vrvm.trips.cleaning.CleaningReport` gives them
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
    src = _open_input(path_or_buffer, source, limits)
    if not wanted:
        return pd.DataFrame(columns=["row"])
    if src.kind == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(src.handle())
        kept = [r for r in wanted if r - 2 < table.num_rows]
        picked = table.take([r - 2 for r in kept]).to_pandas().astype(str)
    else:
        _, sep = _read_csv_header(src)
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
                encoding_errors="replace",
                skipinitialspace=True,
            )
        kept = wanted[: len(picked)]
    picked = picked.reset_index(drop=True)
    picked.insert(0, "row", kept)
    return picked
