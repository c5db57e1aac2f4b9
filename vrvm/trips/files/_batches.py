"""Reading a trip file in batches, with the results of a read of the whole file.

CSV text is parsed in batches of about ``ReadLimits.batch_bytes``: the text is cut
where records end (line breaks outside quoted fields, :func:`record_ends`) and each
batch is parsed by pandas behind the header and the file's first data row
(:func:`csv_blocks`, :func:`parse_block`). pandas' own ``chunksize`` is not used: it
does not check the first rows of a chunk against the header (a row with too many
fields there loses its extra values silently). With the header and the first data row
in front, every row is checked, and every column typed, as in a read of the whole file.
Only the columns a layout needs are kept (:func:`layout_batches`).

Formats are decided over whole columns (:class:`~vrvm.trips.files._survey.TimeSurvey`):
:func:`parse_csv` (for :func:`~vrvm.trips.files.reader.read_trips`) parses each batch with
the decisions the rows read so far support and parses again, at the end, the rare batch
whose decisions the whole file changes; :func:`survey_file` and :func:`clean_batches`
(for :func:`~vrvm.trips.files.reader.iter_trips`) read the file once to decide, then batch by
batch. Parquet is read in row batches (:func:`parquet_batches`).

Why not pyarrow's streaming CSV reader
--------------------------------------
:func:`pyarrow.csv.open_csv` (every column read as text, so that the own parsing keeps
deciding types) was measured against this cutter and kept out: it loses a guarantee,
and it is no faster. CPU seconds and peak memory to cut and parse every batch
(``benchmarks/bench_read_memory.py --cases batches_...``, 3 runs, 2 cores shared):

- 1,000,000 synthetic trips (76 MB, 6 columns): here 1.5-1.7 s, 309-319 MB; pyarrow
  typed by its own casts 1.4-1.8 s, 396-400 MB, but its doubles are not pandas': it
  rounds decimal text correctly and pandas' C parser does not, so 9.4 % of the NYC
  sample's coordinates (``-73.977752685546875``) and 8.1 % of the SF sample's come out
  one unit in the last place apart, and parsing reads a column that is text in some
  batch with :func:`pandas.to_numeric` (pandas' doubles): a batched read would no longer
  equal a whole read. Typed with :func:`pandas.to_numeric` instead: 3.4-4.7 s, 382-403 MB.
- Chicago's 23 columns (its sample 60 times, 900,120 rows): here 1.7-1.8 s, 302 MB;
  pyarrow with pandas' doubles 6.8-7.8 s, 436-453 MB, and still 2.7-3.2 s converting
  only the 6 columns a layout needs (the count of empty rows needs them all).

pyarrow's parser also reads some files otherwise than pandas: a quoted field after a
space (``1, "a,b"``) is split; a row with fewer fields than the header (the SF sample's
cut-off last line) is refused where pandas fills it; its batches carry no row numbers
and its errors no line of the file; invalid UTF-8 is an error, not replaced. Each would
need own code around pyarrow to read as today.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from vrvm.trips.files._limits import LimitExceeded, ReadLimits, check_rows
from vrvm.trips.files._source import (
    EXPECTED,
    READ_ERRORS,
    Source,
    TripFileError,
    no_data_rows,
    short_error,
    zones_needed,
)
from vrvm.trips.files._survey import TimeSurvey
from vrvm.trips.files.cleaning import CleaningReport, clean_parsed
from vrvm.trips.files.formats import TimeFormatError, TimeFormats
from vrvm.trips.files.layouts import COORDINATE_ROLES, Layout, resolve_layout
from vrvm.trips.files.parsing import ColumnPlan, Parsed, ReadChecks, _places, parse_columns
from vrvm.trips.places.timezones import trips_zone, zone_name

if TYPE_CHECKING:
    from vrvm.trips.places.zone_files import ZoneFile

_QUOTE, _LF, _CR, _SPACE, _TAB = 34, 10, 13, 32, 9
FIRST_READ_BYTES = 2**20
"""Bytes read first (then twice as many per read, up to ``batch_bytes``), so that a
preview of the first rows reads little of a large file."""


def record_ends(data: bytes, sep: bytes) -> np.ndarray:
    """Positions of the bytes that end a record in ``data``, which starts a record.

    A record ends at a line break (``\\n``, ``\\r\\n`` or a lone ``\\r``) outside a
    quoted field, as pandas' C tokenizer reads CSV (quote ``"``, doubled inside a
    quoted field; a quote opens a field only as its first character after spaces, and
    is literal elsewhere). Vectorised over the quote characters: a run of quotes of
    odd length at the start of a field toggles quoting, one elsewhere closes it, and
    runs of even length change nothing.

    Examples
    --------
    >>> record_ends(b'a,b\\n1,"x\\ny"\\n2,z"w\\n', b",").tolist()
    [3, 11, 17]
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    lf = arr == _LF
    lone_cr = arr == _CR
    lone_cr[:-1] &= ~lf[1:]
    ends = np.flatnonzero(lf | lone_cr)
    if ends.size == 0 or data.find(b'"') < 0:
        return ends
    quotes = np.flatnonzero(arr == _QUOTE)
    first = np.ones(quotes.size, dtype=bool)
    first[1:] = quotes[1:] != quotes[:-1] + 1
    starts = quotes[first]
    odd = np.diff(np.append(np.flatnonzero(first), quotes.size)) % 2 == 1
    # The character before each run, skipping the spaces skipinitialspace skips.
    before = starts - 1
    blank = (_SPACE,) if sep == b"\t" else (_SPACE, _TAB)
    spaced = (before >= 0) & np.isin(arr[np.maximum(before, 0)], blank)
    if spaced.any():
        solid = np.flatnonzero(~np.isin(arr, blank))
        at = np.searchsorted(solid, starts[spaced]) - 1
        before[spaced] = np.where(at >= 0, solid[np.maximum(at, 0)], -1)
    opening = (before < 0) | np.isin(arr[np.maximum(before, 0)], (ord(sep), _LF, _CR))
    flips = np.cumsum(odd & opening)
    resets = np.where(odd & ~opening, np.arange(starts.size), -1)
    last_reset = np.maximum.accumulate(resets)
    since = flips - np.where(last_reset >= 0, flips[np.maximum(last_reset, 0)], 0)
    quoted_after = since % 2 == 1  # inside a quoted field after each run
    run = np.searchsorted(starts, ends) - 1
    inside = np.where(run >= 0, quoted_after[np.maximum(run, 0)], False)
    return ends[~inside]


@dataclass
class Block:
    """One batch of CSV text, ready for pandas: ``text`` is the header (and, after the
    first batch, the file's first data row, dropped again: ``skip`` rows), then the
    batch. pandas numbers the records of ``text`` in its messages (blank lines count,
    line breaks inside quotes do not); ``record_offset`` turns them into the file's.
    """

    text: bytes
    skip: int
    record_offset: int


def csv_blocks(handle, sep: bytes, limits: ReadLimits, name: str) -> Iterator[Block]:
    """The CSV text of ``handle`` in batches of whole records, each behind the header."""
    size = min(FIRST_READ_BYTES, limits.batch_bytes)
    pending = b""
    header = first_row = None
    records_before = 0  # records of the file before ``pending``
    at_end = False
    while True:
        if not at_end:
            chunk = handle.read(size)
            size = min(2 * size, limits.batch_bytes)
            at_end = not chunk
            pending += chunk
        ends = record_ends(pending, sep)
        if not at_end and ends.size and ends[-1] == len(pending) - 1 and pending[-1:] == b"\r":
            ends = ends[:-1]  # a "\n" may follow in the next read
        if header is None:
            if ends.size == 0 and not at_end:
                continue  # the header check made sure that it ends soon
            cut = int(ends[0]) + 1 if ends.size else len(pending)
            header, pending = pending[:cut], pending[cut:]
            records_before = 1
            ends = ends[1:] - cut
        if at_end:
            cut = len(pending)
        elif ends.size:
            cut = int(ends[-1]) + 1
        elif len(pending) > limits.header_bytes:
            raise LimitExceeded(
                f"{name}: a row does not end within {len(pending) / 2**20:.3g} MB "
                "(an unclosed quote?); expected a CSV text file with one trip a line",
                limit="header_bytes",
            )
        else:
            continue
        block, pending = pending[:cut], pending[cut:]
        if block:
            if first_row is None:
                first_row = block[: int(ends[0]) + 1] if ends.size else block
                yield Block(header + block, 0, 0)
            else:
                yield Block(header + first_row + block, 1, records_before - 2)
            records_before += int(np.searchsorted(ends, cut)) + (not block.endswith((b"\n", b"\r")))
        if at_end:
            return


CSV_OPTIONS = {
    "index_col": False,  # a trailing delimiter is not an index column
    "compression": None,  # decompressed by Source.text(), with its guard
    "encoding_errors": "replace",
    "skipinitialspace": True,
    # Keep blank lines as rows so that position + 2 is the line number.
    "skip_blank_lines": False,
    "low_memory": False,
}
_LINE_NUMBER = re.compile(r"\b(line|row) (\d+)")


def parse_block(block: Block, sep: str, name: str, dtype, nrows: int | None) -> pd.DataFrame:
    """One batch as pandas reads it (all columns), its borrowed first row dropped."""
    try:
        with warnings.catch_warnings():
            # pandas only *warns* when the rows have more fields than the header and
            # drops the extra ones; that misaligns values with names, so it is an error.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.BytesIO(block.text),
                sep=sep,
                dtype=dtype,
                nrows=None if nrows is None else nrows + block.skip,
                **CSV_OPTIONS,
            )
    except pd.errors.ParserWarning:
        raise TripFileError(
            f"{name} could not be read as CSV: its rows have more fields than the "
            f"header has names; {EXPECTED}"
        ) from None
    except READ_ERRORS as err:
        # Line (record) numbers as in the file, not in the batch.
        offset = block.record_offset
        message = _LINE_NUMBER.sub(lambda m: f"{m[1]} {int(m[2]) + offset}", short_error(err))
        raise TripFileError(f"{name} could not be read as CSV ({message}): {EXPECTED}") from None
    if block.skip:
        frame = frame.iloc[block.skip :].reset_index(drop=True)
    return frame


def csv_batches(
    src: Source, sep: str, *, dtype=None, max_rows: int | None = None
) -> Iterator[tuple[pd.DataFrame, int]]:
    """The CSV rows in batches: each batch (all columns) and the row number of its first
    row, stopping after ``max_rows`` rows and refusing more than ``max_data_rows``.

    At most one row beyond ``src.limits.max_data_rows`` is ever parsed.
    """
    limits = src.limits
    cap = None if limits.max_data_rows is None else limits.max_data_rows + 1
    wanted = min((n for n in (max_rows, cap) if n is not None), default=None)
    seen = 0
    with src.text() as handle:
        stream = open(handle, "rb") if isinstance(handle, str) else handle
        try:
            for block in csv_blocks(stream, sep.encode(), limits, src.name):
                frame = parse_block(
                    block, sep, src.name, dtype, None if wanted is None else wanted - seen
                )
                first_row, seen = seen + 2, seen + len(frame)
                check_rows(seen, limits, src.name)  # before the batch is used at all
                if len(frame):
                    yield frame, first_row
                if wanted is not None and seen >= wanted:
                    return
        finally:
            if stream is not handle:
                stream.close()


# Roles read as plain numbers (parsing._to_float): a value reads the same whether its
# batch came out of pandas as numbers or as text (pandas' C parser and pd.to_numeric
# give the same double). Other roles keep pandas' kind of the whole column: a column
# that pandas reads as numbers in one batch and as text in another is text in the whole
# file, and the read starts again with it read as text (KindChanged).
NUMBER_ROLES = frozenset(
    (*COORDINATE_ROLES, "travel_time_s", "travel_time_min", "start_hour", "start_minute")
)


class KindChanged(Exception):
    """A column read as numbers in one batch and as text in another (restart as text)."""

    def __init__(self, column: str):
        super().__init__(column)
        self.column = column


def column_kind(dtype) -> str:
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if dtype.kind in "if":
        return "number"  # int64 batches and float64 batches make a float64 column
    return "object" if dtype.kind == "O" else str(dtype)


@dataclass
class RawTable:
    """The source columns a layout needs (of the whole file, or of one batch)."""

    frame: pd.DataFrame
    layout: Layout  # role -> column of frame
    rows: np.ndarray  # row number of each row of frame
    n_empty: int = 0


def layout_batches(
    src: Source, sep: str, layout: Layout, as_text: set[str], max_rows: int | None
) -> Iterator[RawTable]:
    """The layout's columns of each batch of CSV rows; blank rows removed (and counted)."""
    needed = list(dict.fromkeys(layout.mapping.values()))
    checked = [
        column
        for column in needed
        if any(r not in NUMBER_ROLES for r, c in layout.mapping.items() if c == column)
    ]
    kinds: dict[str, str] = {}
    dtype = {column: str for column in as_text} or None
    for frame, first_row in csv_batches(src, sep, dtype=dtype, max_rows=max_rows):
        empty = frame.isna().all(axis=1).to_numpy()
        for column in checked:
            values = frame[column]
            if values.notna().any():  # a batch without values has no kind of its own
                if kinds.setdefault(column, column_kind(values.dtype)) != column_kind(values.dtype):
                    raise KindChanged(column)
        raw = frame.loc[~empty, needed].reset_index(drop=True)
        yield RawTable(raw, layout, np.flatnonzero(~empty) + first_row, int(empty.sum()))


@dataclass
class Reading:
    """What a read is asked for, beyond the file: the time zone, formats and zones."""

    tz: str | None
    formats: TimeFormats
    zone_file: ZoneFile | None

    @property
    def zone_points(self):
        return None if self.zone_file is None else self.zone_file.representative_points

    def zone(self, layout: Layout, native_zone: str | None = None) -> str | None:
        """The zone of local times; None: where the trips are (found from the rows).

        The one rule of every door (form, CLI, recipe, Python): the zone given
        (``tz``) wins, then the city a recognised layout names, then the zone a
        Parquet column carries; a layout that names no city is read where its trips
        are (:func:`~vrvm.trips.places.timezones.trips_zone`, which refuses rather than
        guess); only vrvm's own ``canonical`` layout falls back to UTC.
        """
        return self.tz or layout.zone or native_zone or (None if layout.infer_zone else "UTC")


def parse_whole(src: Source, raw: RawTable, reading: Reading) -> Parsed:
    """Parse the rows of a whole file at once, detecting formats on whole columns."""
    layout = raw.layout
    if len(raw.frame) == 0:
        raise no_data_rows(src)
    if layout.needs_zones and reading.zone_file is None:
        raise zones_needed(src, layout, list(raw.frame.columns))
    start_column = layout.mapping.get("start_time")
    native_zone = zone_name(raw.frame[start_column].dtype) if start_column else None
    zone = reading.zone(layout, native_zone)
    if zone is None:  # where the trips start; refused (ZoneUnknownError) when unclear
        coords, _ = _places(raw.frame, layout.mapping, reading.zone_points)
        zone = trips_zone(coords["origin_lat"], coords["origin_lon"], source=src.name)
    parsed = parse_columns(raw.frame, layout, zone, reading.formats, reading.zone_points)
    parsed.zone_inferred = reading.zone(layout, native_zone) is None
    return parsed


def concat_parsed(parts: list[Parsed], zone: str, inferred: bool, notes, plans) -> Parsed:
    first = parts[0]
    zone_failed = None
    if first.zone_failed is not None:
        zone_failed = np.concatenate([p.zone_failed for p in parts])
    return Parsed(
        {role: np.concatenate([p.coords[role] for p in parts]) for role in first.coords},
        np.concatenate([p.start_utc for p in parts]),
        np.concatenate([p.duration for p in parts]),
        np.concatenate([p.time_failed for p in parts]),
        zone,
        zone_inferred=inferred,
        zone_failed=zone_failed,
        notes=dict(notes),
        dateless=first.dateless,
        plans=dict(plans),
        checks=ReadChecks.concat([p.checks for p in parts]),
    )


def differs(taken: Mapping[str, ColumnPlan], final: Mapping[str, ColumnPlan]) -> bool:
    """Whether a batch took a decision that the whole file decides otherwise."""
    for role, plan in taken.items():
        target = final.get(role, ColumnPlan())
        for name in ColumnPlan.__dataclass_fields__:
            value = getattr(plan, name)
            if value is not None and getattr(target, name) != value:
                return True
    return False


def parse_batches(
    src: Source,
    layout: Layout,
    batches: Iterable[RawTable],
    reading: Reading,
    again: Callable[[], Iterator[RawTable]],
) -> tuple[Parsed, np.ndarray, int]:
    """Parse a file batch by batch with the decisions a whole-file read takes.

    Each batch is parsed at once, with the decisions that the batches read so far
    support (:meth:`TimeSurvey.plans`, ``lenient``); the parsed columns are kept, the
    raw ones dropped. At the end the decisions are taken over the whole file; the rare
    batch whose decisions turn out different (day-first dates that only a late batch
    tells apart from month-first ones, say) is read again (``again()``) and parsed with
    the final ones. The result is the whole-file read's, column for column.
    """
    zone = reading.zone(layout)
    if layout.needs_zones and reading.zone_file is None:
        # As a whole-file read: every read error, then "no data rows", then this.
        if sum(len(batch.frame) for batch in batches) == 0:
            raise no_data_rows(src)
        raise zones_needed(src, layout, list(dict.fromkeys(layout.mapping.values())))
    survey = TimeSurvey(layout, reading.formats)
    parts: list[Parsed] = []
    rows: list[np.ndarray] = []
    n_empty = 0
    guess = zone  # the zone of local times; found from the first rows if not known
    formats, points = reading.formats, reading.zone_points
    for batch in batches:
        n_empty += batch.n_empty
        try:  # the first batch decides for itself, later ones as the batches before them
            plans = survey.plans(zone_points=points, lenient=True)[0] if parts else None
            parsed = parse_columns(
                batch.frame, layout, guess, formats, points, plans=plans, trace=True
            )
            survey.add(batch.frame, batch.rows, parsed.traces)
        except TimeFormatError:  # a first batch that cannot tell alone: survey it first
            survey.add(batch.frame, batch.rows)
            plans = survey.plans(zone_points=points, lenient=True)[0]
            parsed = parse_columns(batch.frame, layout, guess, formats, points, plans=plans)
        parsed.traces = {}
        if len(batch.frame):
            guess = parsed.zone
        parts.append(parsed)
        rows.append(batch.rows)
    if sum(len(r) for r in rows) == 0:
        raise no_data_rows(src)
    if zone is None:  # the zone where the trips start, as a whole-file read finds it
        lat = np.concatenate([p.coords["origin_lat"] for p in parts])
        lon = np.concatenate([p.coords["origin_lon"] for p in parts])
        zone = trips_zone(lat, lon, source=src.name)
    final, notes = survey.plans(zone_points=reading.zone_points)
    redo = {i for i, p in enumerate(parts) if p.zone != zone or differs(p.plans, final)}
    if redo:
        with contextlib.closing(again()) as batches_again:
            for i, batch in enumerate(batches_again):
                if i in redo:
                    parts[i] = parse_columns(
                        batch.frame, layout, zone, formats, points, plans=final
                    )
                if i >= max(redo):
                    break
    inferred = reading.zone(layout) is None
    return concat_parsed(parts, zone, inferred, notes, final), np.concatenate(rows), n_empty


def joined(batches: Iterable[RawTable]) -> Iterator[RawTable]:
    """All batches as one table (the kinds of their columns agree: layout_batches)."""
    tables = list(batches)
    if tables:
        frame = pd.concat([t.frame for t in tables], ignore_index=True)
        rows = np.concatenate([t.rows for t in tables])
        yield RawTable(frame, tables[0].layout, rows, sum(t.n_empty for t in tables))


def parse_csv(
    src: Source, sep: str, layout: Layout, reading: Reading, max_rows: int | None
) -> tuple[Parsed, np.ndarray, int]:
    """Read and parse CSV rows in batches (a file of one batch is parsed at once)."""
    as_text: set[str] = set()
    for _ in range(len(layout.mapping) + 1):
        batches = layout_batches(src, sep, layout, as_text, max_rows)
        try:
            if not TimeSurvey.can_survey(layout):
                batches = joined(batches)  # read whole: one column, two time roles
            first = next(batches, None)
            second = next(batches, None) if first is not None else None
            if second is None:
                if first is None:
                    raise no_data_rows(src)
                return parse_whole(src, first, reading), first.rows, first.n_empty
            text = set(as_text)
            return parse_batches(
                src,
                layout,
                itertools.chain([first, second], batches),
                reading,
                lambda text=text: layout_batches(src, sep, layout, text, max_rows),
            )
        except KindChanged as changed:
            as_text.add(changed.column)
        finally:
            batches.close()
    raise AssertionError("unreachable: each column is read as text at most once")


def read_parquet(
    src: Source, schema: str, column_map, require_duration: bool, max_rows: int | None
) -> RawTable:
    import pyarrow as pa  # pyarrow is a dependency; imported lazily for speed
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(src.handle())
        columns = [str(c) for c in parquet.schema_arrow.names]
    except Exception as err:  # pyarrow raises several unrelated types
        raise TripFileError(
            f"{src.name} could not be read as Parquet ({short_error(err)}): {EXPECTED}"
        ) from None
    layout = resolve_layout(columns, schema, column_map, src.name, require_duration)
    needed = list(dict.fromkeys(layout.mapping.values()))
    n_rows = parquet.metadata.num_rows
    try:  # the row count is in the file's footer: refused before reading any row
        check_rows(n_rows if max_rows is None else min(n_rows, max_rows), src.limits, src.name)
    except LimitExceeded as exc:
        raise TripFileError(str(exc), limit=exc.limit) from None
    try:
        if max_rows is None:
            raw = parquet.read(columns=needed).to_pandas()
        else:
            batches = parquet.iter_batches(batch_size=max_rows, columns=needed)
            raw = next(batches, pa.table({c: [] for c in needed})).to_pandas()
    except Exception as err:
        raise TripFileError(
            f"{src.name} could not be read as Parquet ({short_error(err)}): {EXPECTED}"
        ) from None
    if len(raw) == 0:
        raise TripFileError(f"{src.name} has no data rows: {EXPECTED}")
    return RawTable(raw, layout, np.arange(len(raw)) + 2)


PARQUET_BATCH_ROWS = 65_536


def parquet_batches(
    src: Source,
    layout: Layout,
    row_groups: Sequence[int] | None = None,
    rows: tuple[int, int] | None = None,
) -> Iterator[RawTable]:
    """The layout's columns of a Parquet file (or of some of its consecutive row
    groups, and of those only rows ``[skip, skip + take)`` when ``rows`` is given),
    :data:`PARQUET_BATCH_ROWS` rows at a time; rows are numbered as in the whole file
    (the first data row is row 2, as in a CSV file under its header)."""
    import pyarrow.parquet as pq

    needed = list(dict.fromkeys(layout.mapping.values()))
    start = 2
    skip, take = rows if rows is not None else (0, None)
    try:
        # no pre-buffering: pyarrow would read column chunks ahead of the batches,
        # and memory would grow with the row groups instead of staying one batch's
        parquet = pq.ParquetFile(src.handle(), pre_buffer=False)
        if row_groups is not None:
            row_groups = sorted(row_groups)
            metadata = parquet.metadata
            start += sum(metadata.row_group(i).num_rows for i in range(row_groups[0]))
            if any(b - a != 1 for a, b in itertools.pairwise(row_groups)):
                raise ValueError(f"row groups {row_groups} are not consecutive")
        batches = parquet.iter_batches(
            batch_size=PARQUET_BATCH_ROWS, columns=needed, row_groups=row_groups
        )
        for batch in batches:
            n = batch.num_rows
            if skip >= n:  # a part that starts inside the row groups
                skip, start = skip - n, start + n
                continue
            if skip or (take is not None and take < n - skip):
                length = n - skip if take is None else min(n - skip, take)
                batch, start = batch.slice(skip, length), start + skip
                skip = 0
            frame = batch.to_pandas()
            yield RawTable(frame, layout, np.arange(len(frame)) + start)
            start += len(frame)
            if take is not None:
                take -= len(frame)
                if take <= 0:
                    break
    except Exception as err:  # pyarrow raises several unrelated types
        raise TripFileError(
            f"{src.name} could not be read as Parquet ({short_error(err)}): {EXPECTED}"
        ) from None


def check_parquet_rows(src: Source) -> None:
    """Refuse a Parquet file with more rows than the limit, from its footer alone."""
    import pyarrow.parquet as pq

    try:
        n_rows = pq.ParquetFile(src.handle()).metadata.num_rows
    except Exception as err:  # pyarrow raises several unrelated types
        raise TripFileError(
            f"{src.name} could not be read as Parquet ({short_error(err)}): {EXPECTED}"
        ) from None
    try:
        check_rows(n_rows, src.limits, src.name)
    except LimitExceeded as exc:
        raise TripFileError(str(exc), limit=exc.limit) from None


@dataclass
class Survey:
    """What the first pass of :func:`iter_trips` decided for the second."""

    plans: dict[str, ColumnPlan]
    notes: dict[str, str]
    zone: str
    inferred: bool
    as_text: set[str]


def survey_file(src: Source, layout: Layout, reading: Reading, batches) -> Survey:
    """Read the whole file once and take its format decisions (nothing else is kept).

    Raises as a whole-file read would, in the same order: read errors, no data rows,
    zone ids without a zone file, then formats that cannot be told.
    """
    as_text: set[str] = set()
    zone = reading.zone(layout)
    with_points = not (layout.needs_zones and reading.zone_file is None)
    for _ in range(len(layout.mapping) + 1):
        survey = TimeSurvey(layout, reading.formats)
        n_rows, lat, lon = 0, [], []
        try:
            with contextlib.closing(batches(as_text)) as raw_batches:
                for batch in raw_batches:
                    survey.add(batch.frame, batch.rows)
                    n_rows += len(batch.frame)
                    if zone is None and with_points:  # the zone is where the trips are
                        coords, _ = _places(batch.frame, layout.mapping, reading.zone_points)
                        lat.append(coords["origin_lat"])
                        lon.append(coords["origin_lon"])
        except KindChanged as changed:
            as_text.add(changed.column)
            continue
        if n_rows == 0:
            raise no_data_rows(src)
        if not with_points:
            raise zones_needed(src, layout, list(dict.fromkeys(layout.mapping.values())))
        inferred = zone is None
        if inferred:
            zone = trips_zone(np.concatenate(lat), np.concatenate(lon), source=src.name)
        plans, notes = survey.plans(zone_points=reading.zone_points)
        return Survey(plans, notes, zone, inferred, as_text)
    raise AssertionError("unreachable: each column is read as text at most once")


def clean_batches(
    src, layout, reading, survey, batches, config, require_travel_time, row_numbers
) -> Iterator[tuple[pd.DataFrame, CleaningReport]]:
    """The second pass of :func:`iter_trips`: each batch parsed with the decisions taken."""
    with contextlib.closing(batches(survey.as_text)) as raw_batches:
        for batch in raw_batches:
            parsed = parse_columns(
                batch.frame,
                layout,
                survey.zone,
                reading.formats,
                reading.zone_points,
                plans=survey.plans,
            )
            parsed.notes, parsed.zone_inferred = dict(survey.notes), survey.inferred
            yield clean_parsed(
                parsed,
                batch.rows,
                config,
                source=src.name,
                schema=layout.schema,
                n_empty=batch.n_empty,
                require_duration=require_travel_time,
                row_numbers=row_numbers,
            )
