"""How the command line reads trip files: the shared options, ``vrvm inspect`` and the
queries of ``vrvm predict``.

Every command that reads trips (``train``, ``update``, ``evaluate``, ``predict``,
``inspect``) takes the same options, with the roles and formats of
:func:`vrvm.read_trips`: ``--map ROLE=COLUMN`` (repeatable), ``--date-format``,
``--clock-format``, ``--weekday-format``, ``--tz``, ``--schema`` and
``--zones FILE.geojson[:ID_PROPERTY]``.

Every door reads a file the same way (:func:`vrvm.trips.files.layouts.resolve_layout`): a
layout is recognised by its header only; any ``--map`` options that leave roles open
are completed by the guess the upload form pre-fills; a file that names no city is
read in the zone where its trips are, unless ``--tz`` says otherwise. ``vrvm inspect``
prints the options that read a file as it read it, as a command line to copy, and
errors about columns name them as ``--map`` options (:func:`cli_hints`).

``vrvm inspect`` reads the header and the first :data:`INSPECT_ROWS` rows, never the
whole file; ``vrvm predict`` reads, predicts and writes its queries in batches
(:func:`predict_in_batches`), so its memory does not grow with the file, and shows its
progress on large files (:func:`predict_progress`).
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import gzip
import lzma
import os
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from vrvm.cli._args import time_zone
from vrvm.cli._output import ProgressBar
from vrvm.engine import in_threads
from vrvm.services.answers.predictions import (
    PREDICT_THREADS,
    PREDICTION_COLUMNS,
    QUERY_CLEANING,
    SCORE_COLUMNS,
    prediction_table,
)
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.map.support import thin_day_queries
from vrvm.trips.files.cleaning import CleaningReport, combine_reports
from vrvm.trips.files.formats import CLOCK_FORMATS, WEEKDAY_FORMATS, check_date_format
from vrvm.trips.files.layouts import (
    DURATION_ROLES,
    ROLE_LABELS,
    ROLES,
    SCHEMAS,
    UnknownLayoutError,
    missing_roles,
)
from vrvm.trips.files.reader import ReadLimits, iter_trips, propose_options, read_layout
from vrvm.trips.files.recipes import ReadOptions
from vrvm.trips.store.durable import atomic_write

if TYPE_CHECKING:
    from vrvm.trips.model.travel_time import ProgressCallback, TravelTimeModel

__all__ = [
    "INSPECT_ROWS",
    "MIN_TRAINING_TRIPS",
    "PREDICT_BATCH_BYTES",
    "PREDICT_PROGRESS_BYTES",
    "cli_hint",
    "cli_hints",
    "cmd_inspect",
    "predict_in_batches",
    "predict_progress",
    "reading_options",
    "reading_parser",
]

MIN_TRAINING_TRIPS = 24
"""Fewest kept trips ``vrvm inspect`` calls trainable: 3 for each of the 8 default members."""
INSPECT_ROWS = 10_000
"""Data rows ``vrvm inspect`` reads (after the header): what it shows and judges."""
PREDICT_BATCH_BYTES = 2 * 2**20
"""Bytes of query text ``vrvm predict`` reads, predicts and writes at once (2 MiB: some
30,000 queries; the model's features for them take a few tens of MB)."""

PREDICT_PROGRESS_BYTES = 32 * 2**20
"""Files of queries from this size on (32 MiB: about a million Parquet rows) show the
progress of ``vrvm predict`` when stderr is not a terminal (a log file, a pipe)."""
PREDICT_PROGRESS_EVERY_S = 10.0
"""Seconds between two progress lines when stderr is not a terminal."""
PREDICT_PROGRESS_DELAY_S = 2.0
"""A terminal shows the progress bar of ``vrvm predict`` once it has taken this long."""

_N_SHOWN = 10


def _role_column(text: str) -> tuple[str, str]:
    role, sep, column = text.partition("=")
    role, column = role.strip(), column.strip()
    if not sep or not column:
        raise argparse.ArgumentTypeError(
            f"expected ROLE=COLUMN such as start_date=day, got {text!r}"
        )
    if role not in ROLES:
        raise argparse.ArgumentTypeError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    return role, column


def _date_format(text: str) -> str:
    try:
        return check_date_format(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _zones_arg(zones: tuple[str, str | None]) -> str:
    path, prop = zones
    return path if prop is None else f"{path}:{prop}"


def _zones(text: str) -> tuple[str, str | None]:
    """``FILE`` or ``FILE:ID_PROPERTY`` (a colon that is part of an existing path stays)."""
    if os.path.exists(text) or ":" not in text:
        return text, None
    path, _, prop = text.rpartition(":")
    return path, prop or None


def zone_file(spec: tuple[str, str | None] | None):
    """The zone file a ``--zones FILE[:ID]`` option names (:func:`_zones`), read and
    checked; None without the option. Shapely loads only when a file is given."""
    if spec is None:
        return None
    from vrvm.trips.places.zone_files import ZoneFile

    path, id_property = spec
    return ZoneFile.read(path, id_property=id_property)


def reading_parser() -> argparse.ArgumentParser:
    """The parent parser of the reading options."""
    reading = argparse.ArgumentParser(add_help=False)
    group = reading.add_argument_group("reading trip files (see docs/data.md)")
    group.add_argument(
        "--schema",
        choices=("auto", *SCHEMAS),
        default="auto",
        help="column layout of the input (default: detected from the header)",
    )
    group.add_argument(
        "--map",
        type=_role_column,
        action="append",
        default=[],
        metavar="ROLE=COLUMN",
        help="say which column holds a role (repeatable): " + ", ".join(ROLES),
    )
    group.add_argument(
        "--date-format",
        type=_date_format,
        default=None,
        metavar="FMT",
        help="auto, iso, dayfirst, monthfirst, unix_s, unix_ms or a strftime pattern "
        "such as %%d-%%m-%%Y (default: detected; ambiguous day/month order is an error)",
    )
    group.add_argument(
        "--clock-format",
        choices=CLOCK_FORMATS,
        default=None,
        help="how start_clock is written (default: detected)",
    )
    group.add_argument(
        "--weekday-format",
        choices=WEEKDAY_FORMATS,
        default=None,
        help="how weekday is written: names, iso (Monday=1), sunday1, monday0",
    )
    group.add_argument(
        "--tz", type=time_zone, default=None, help="IANA zone of times without an offset"
    )
    group.add_argument(
        "--zones",
        type=_zones,
        default=None,
        metavar="FILE[:ID]",
        help="GeoJSON zone polygons for trips given by zone ids, with the id property",
    )
    return reading


def reading_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`vrvm.read_trips` from the parsed options."""
    column_map = dict(args.map)
    if len(column_map) < len(args.map):
        roles = [role for role, _ in args.map]
        twice = sorted({r for r in roles if roles.count(r) > 1})
        raise ValueError(f"--map names {', '.join(twice)} more than once")
    zones = zone_file(args.zones)
    return {
        "schema": args.schema,
        "tz": args.tz,
        "column_map": column_map or None,
        "date_format": args.date_format,
        "clock_format": args.clock_format,
        "weekday_format": args.weekday_format,
        "zones": zones,
    }


def zone_origin(report: CleaningReport, tz_given: bool) -> str:
    """Where the zone of a read's local times came from, in words."""
    if tz_given:
        return "given with --tz"
    if report.tz_inferred:
        return "the zone where the trips are"
    return "the layout's city" if report.tz != "UTC" else "vrvm's canonical layout: UTC"


def cli_hint(error: UnknownLayoutError, command: str = "train") -> str:
    """How to name a file's columns on the command line: the proposed ``--map``
    options (what the upload form pre-fills), or an example of them."""
    proposal = error.proposal
    if proposal and not missing_roles(proposal, require_duration=False):
        options = ReadOptions(column_map=proposal)
        if command in ("train", "inspect", "update"):
            line = options.command_line(error.source, command)
        else:  # commands whose file is not their first argument
            line = "add " + shlex.join(options.cli_args())
        return (
            f"Proposed (the roles the upload form guesses; check them, and `vrvm inspect "
            f"{error.source}` shows the trips read with them): {line}"
        )
    example = " ".join(
        f"--map {role}={column}"
        for role, column in (
            ("start_time", "pickup_time"),
            ("travel_time_s", "duration_s"),
            ("origin_lat", "pickup_lat"),
            ("origin_lon", "pickup_lon"),
            ("dest_lat", "dropoff_lat"),
            ("dest_lon", "dropoff_lon"),
        )
    )
    lines = [
        "Or name the columns yourself with --map ROLE=COLUMN (repeatable; roles: "
        f"{', '.join(ROLES)}), for example: {example}"
    ]
    if proposal:
        guessed = " ".join(f"--map {role}={column}" for role, column in proposal.items())
        lines.append(f"Guessed from the column names, incomplete: {guessed}")
    return "\n".join(lines)


@contextlib.contextmanager
def cli_hints(command: str = "train") -> Iterator[None]:
    """Errors about a file's columns, with their hint in ``--map`` options, not Python."""
    try:
        yield
    except UnknownLayoutError as exc:
        raise exc.with_hint(cli_hint(exc, command)) from None


def _given_options(args: argparse.Namespace) -> ReadOptions:
    options = reading_options(args)
    return ReadOptions(
        schema=options["schema"],
        tz=options["tz"],
        column_map=options["column_map"] or {},
        date_format=options["date_format"],
        clock_format=options["clock_format"],
        weekday_format=options["weekday_format"],
    )


def cmd_inspect(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm inspect FILE``: layout, roles, ten parsed rows, the report; 0 if trainable.

    Reads the header and the first :data:`INSPECT_ROWS` data rows only: a large file
    inspects as fast as a small one, and says that the report is of those rows. A
    header no known layout explains is read with the roles the upload form would
    pre-fill (:func:`vrvm.trips.files.reader.propose_options`), and the options that read it
    so are printed as a command line to copy (status 1: the file needs them).
    """
    given = _given_options(args)
    options = reading_options(args)
    proposal = propose_options(args.trips, given, zones=options["zones"], max_rows=INSPECT_ROWS)
    layout, trips, report = proposal.layout, proposal.trips, proposal.report
    columns = proposal.columns
    guessed_all = not given.column_map and not proposal.recognised
    # A report of INSPECT_ROWS rows may be of the first rows of a longer file.
    first_rows = report.n_input + report.n_empty_rows >= INSPECT_ROWS
    within = f" in its first {INSPECT_ROWS:,} rows" if first_rows else ""
    used = {column: role for role, column in layout.mapping.items()}
    width = max(len(str(c)) for c in columns)
    lines = [f"file: {args.trips}"]
    if guessed_all:
        lines.append(
            "layout: not recognised from the header; the roles below are guessed from "
            "the column names, as the upload form pre-fills them: check them"
        )
    else:
        lines.append(f"layout: {layout.schema}" + (f" ({layout.label})" if layout.label else ""))
    lines.append("columns and their roles:")
    guessed = set(layout.guessed) | (set(layout.mapping) if guessed_all else set())
    for column in columns:
        role = used.get(column)
        label = re.sub(r"^\.\.\. (or |and )?", "", ROLE_LABELS[role]) if role else ""
        meaning = f"{role}: {label}" if role else "(not used)"
        meaning += " (guessed)" if role in guessed else ""
        lines.append(f"  {column:<{width}}  {meaning}")
    lines.append(f"time zone: {report.tz} ({zone_origin(report, bool(given.tz))})")
    if proposal.options != given:
        lines.append(
            "read it this way with: "
            + proposal.options.command_line(str(args.trips))
            + (f" --zones {shlex.quote(_zones_arg(args.zones))}" if args.zones else "")
        )
    lines.append("")
    if first_rows:
        lines.append(
            f"cleaning (the first {INSPECT_ROWS:,} rows; inspect reads no further): "
            + report.summary()
        )
    else:
        lines.append("cleaning: " + report.summary())
    lines.append("")
    shown = trips.head(_N_SHOWN)
    if report.dateless:  # the reference week's dates mean nothing: say weekday and clock
        shown = shown.assign(start_time=shown["start_time"].dt.strftime("%a %H:%M"))
    if len(shown):
        lines.append(f"first {len(shown)} trips as read (start in local time, travel time in s):")
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            lines.append(shown.to_string(index=False))
        lines.append("")
    if guessed_all:
        lines.append(
            f"needs the options above: `vrvm train {args.trips}` alone does not know the "
            f"columns ({report.n_kept:,} trips kept with them{within})"
        )
        status = 1
    elif report.n_kept >= MIN_TRAINING_TRIPS:
        lines.append(f"can be trained on: {report.n_kept:,} trips kept{within}")
        status = 0
    else:
        lines.append(
            f"cannot be trained on: {report.n_kept:,} trips kept after cleaning{within}, "
            f"at least {MIN_TRAINING_TRIPS} needed"
        )
        status = 1
    stdout.write("\n".join(lines) + "\n")
    return status


# ------------------------------------------------------------------------- predict
_SCORED = ("travel_time_s", *SCORE_COLUMNS)
_COLUMNS = ("row", *PREDICTION_COLUMNS, *_SCORED)
_CSV_OPENERS: dict[str, Callable[..., IO[str]]] = {
    ".gz": gzip.open,
    ".bz2": bz2.open,
    ".xz": lzma.open,
}


class _Predictions:
    """The prediction tables of a file of queries, batch by batch, and what they held.

    Iterating reads a batch, predicts it and yields its table (``columns``: every
    column, the scores too, unless the file has no travel time at all); ``reports``,
    ``rows_read``, ``scored`` (some query carried a travel time) and ``thin_days``
    (:func:`~vrvm.services.map.support.thin_day_queries`) grow with it, and
    ``progress`` hears of every batch (rows read of ``total_rows``, phase "queries").
    """

    def __init__(
        self,
        model: TravelTimeModel,
        batches: Iterable[tuple[pd.DataFrame, Any]],
        columns: tuple[str, ...] = _COLUMNS,
        progress: ProgressCallback | None = None,
        total_rows: int = 0,
        started: float | None = None,
    ):
        self.model = model
        self.batches = batches
        self.columns = list(columns)
        self.reports: list[CleaningReport] = []
        self.thin_days: dict[str, int] = {}  # queries by kind of day the model hardly saw
        self.scored = False
        self.rows_read = 0
        self.progress = progress
        self.total_rows = total_rows
        self.started = time.perf_counter() if started is None else started

    @property
    def may_be_scored(self) -> bool:
        """Whether the tables have the score columns (some row may have a travel time)."""
        return self.columns[-1] == _COLUMNS[-1]

    def _report(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total, time.perf_counter() - self.started, "queries")

    def _table(self, queries: pd.DataFrame, report: CleaningReport) -> pd.DataFrame:
        return prediction_table(self.model, queries, report).reindex(columns=self.columns)

    def _read(self) -> Iterator[tuple[pd.DataFrame, CleaningReport]]:
        for queries, report in self.batches:
            self.reports.append(report)
            for kind, n in thin_day_queries(self.model, queries).items():
                self.thin_days[kind] = self.thin_days.get(kind, 0) + n
            truth = queries["travel_time_s"].to_numpy(dtype=np.float64)
            self.scored = self.scored or bool(np.isfinite(truth).any())
            yield queries, report

    def _predicted(self, batch: tuple[pd.DataFrame, CleaningReport]):
        return self._table(*batch), batch[1]

    def __iter__(self) -> Iterator[pd.DataFrame]:
        """The tables in file order, predicted by :data:`PREDICT_THREADS` threads.

        This thread reads batch i + 1 and writes batch i - 1 (between the yields) while
        the threads predict (:func:`vrvm.engine.in_threads`, BLAS on one
        thread); at most ``PREDICT_THREADS + 1`` batches are held.
        """
        self._report(0, self.total_rows)
        predicted = in_threads(self._predicted, self._read(), threads=PREDICT_THREADS)
        with contextlib.closing(predicted):
            for table, report in predicted:
                yield self._finished(table, report)
        self._report(self.rows_read, self.rows_read)

    def _finished(self, table: pd.DataFrame, report: CleaningReport) -> pd.DataFrame:
        self.rows_read += report.n_input + report.n_empty_rows
        if self.total_rows:  # a count of lines may exceed the rows (quoted line breaks)
            self._report(min(self.rows_read, self.total_rows - 1), self.total_rows)
        else:
            self._report(self.rows_read, 0)
        return table


def predict_progress(path: str, stream: IO[str]) -> ProgressBar | None:
    """The progress bar of ``vrvm predict`` on ``stream``, or None where it is not shown.

    On a terminal a bar is redrawn once the prediction has taken
    :data:`PREDICT_PROGRESS_DELAY_S`; elsewhere (a log file, a pipe, a test's captured
    stderr) only files of :data:`PREDICT_PROGRESS_BYTES` or more show progress, one line
    at most every :data:`PREDICT_PROGRESS_EVERY_S`.
    """
    if bool(getattr(stream, "isatty", lambda: False)()):
        return ProgressBar(stream, delay_s=PREDICT_PROGRESS_DELAY_S)
    try:
        large = os.path.getsize(path) >= PREDICT_PROGRESS_BYTES
    except OSError:
        return None
    return ProgressBar(stream, every_s=PREDICT_PROGRESS_EVERY_S) if large else None


_COMPRESSED_MAGIC: dict[bytes, Callable[..., IO[bytes]]] = {
    b"\x1f\x8b": gzip.open,
    b"BZh": bz2.open,
    b"\xfd7zXZ\x00": lzma.open,
}


def count_query_rows(path: str) -> int:
    """Data rows of a file of queries, for the progress of ``vrvm predict``; 0 if unknown.

    Parquet: the row count in the file's footer. CSV: its lines after the header
    (decompressed for gzip, bz2 and xz; 0 for other compressions), counted in 8 MiB
    reads; a quoted line break counts as a row, so this may exceed the rows.
    """
    import pyarrow.parquet as pq

    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
        if head.startswith(b"PAR1"):
            with pq.ParquetFile(path) as parquet:
                return int(parquet.metadata.num_rows)
        if head.startswith(b"PK\x03\x04"):  # a zip archive: not counted
            return 0
        opener = next((o for m, o in _COMPRESSED_MAGIC.items() if head.startswith(m)), open)
        lines, last = 0, b"\n"
        with opener(path, "rb") as text:
            while chunk := text.read(8 * 2**20):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
        return max(lines + (last != b"\n") - 1, 0)
    except (OSError, EOFError, ValueError, lzma.LZMAError):
        return 0


def predict_in_batches(
    model: TravelTimeModel,
    path: str,
    options: dict[str, Any],
    out: str,
    stdout: IO[str],
    *,
    progress: ProgressCallback | None = None,
) -> tuple[int, CleaningReport, dict[str, int]]:
    """Predict a file of queries batch by batch, writing each batch as it comes.

    The queries are read as :func:`vrvm.services.answers.predictions.read_queries` reads them
    (travel times optional, every row's line number, naive times in the model's zone,
    the reading ``options``), but in batches (:func:`vrvm.trips.files.reader.iter_trips`, of
    :data:`PREDICT_BATCH_BYTES` of CSV text or 65,536 Parquet rows); each batch's
    predictions (:func:`~vrvm.services.answers.predictions.prediction_table`) are written
    before the next is read (Parquet row group by row group through one
    ``ParquetWriter``), so memory does not grow with the file. The output is the one a
    whole-file prediction writes: CSV (compressed for ``.gz``, ``.bz2``, ``.xz``),
    Parquet for ``.parquet``/``.pq``, written atomically, or CSV on ``stdout`` for
    ``out="-"``; the travel time and the scores are columns only when some query
    carries a travel time (a file without a travel-time column is written without
    them; one whose travel times are all empty is known once all are read, and then
    written again without them).

    ``progress``, if given, is called as ``progress(rows_read, total_rows, elapsed_s,
    "queries")`` before the first batch and after each (:func:`count_query_rows`; the
    total is 0 when unknown), and once more at the end with both equal.

    Returns
    -------
    n_predicted : int
        Queries predicted (the rows kept by the reader).
    report : CleaningReport
        The report of the whole file.
    thin_days : dict of str to int
        Queries departing on a kind of day the model hardly learned, by kind
        (:func:`~vrvm.services.map.support.thin_day_queries`; empty for a model saved
        before it recorded its trips' kinds of day).
    """
    started = time.perf_counter()
    layout, _ = read_layout(
        path,
        schema=options.get("schema", "auto"),
        column_map=options.get("column_map"),
        require_travel_time=False,
    )
    timed = any(role in layout.mapping for role in DURATION_ROLES)
    batches = iter_trips(
        path,
        **{**options, "tz": options.get("tz") or model.tz_},
        cleaning=QUERY_CLEANING,
        require_travel_time=False,
        row_numbers=True,
        limits=ReadLimits(batch_bytes=PREDICT_BATCH_BYTES),
    )
    columns = _COLUMNS if timed else _COLUMNS[: -len(_SCORED)]
    total_rows = count_query_rows(path) if progress is not None else 0
    tables = _Predictions(model, batches, columns, progress, total_rows, started)
    if out == "-":
        with tempfile.TemporaryFile("w+", newline="", encoding="utf-8") as spool:
            _write_csv(spool, tables)
            spool.seek(0)
            _copy_csv(spool, stdout, tables.scored or not tables.may_be_scored)
    else:
        suffix = Path(out).suffix.lower()

        def write(tmp: Path) -> None:
            if suffix in (".parquet", ".pq"):
                _write_parquet(tmp, tables)
                return
            opener = _CSV_OPENERS.get(suffix, open)
            with opener(tmp, "wt", newline="", encoding="utf-8") as handle:
                _write_csv(handle, tables)
            if tables.may_be_scored and not tables.scored:
                _drop_scores_csv(tmp, opener)

        atomic_write(Path(out), write)
    n_predicted = sum(r.n_kept for r in tables.reports)
    return n_predicted, combine_reports(tables.reports), tables.thin_days


def _write_csv(handle: IO[str], tables: Iterable[pd.DataFrame]) -> None:
    for i, table in enumerate(tables):
        safe_cells(table).to_csv(handle, index=False, header=i == 0)


def _copy_csv(source: IO[str], target: IO[str], scored: bool) -> None:
    """Copy predictions written as CSV, without the score columns unless ``scored``.

    The table is all numbers (no quotes), so a column is dropped by its commas.
    """
    if scored:
        shutil.copyfileobj(source, target)
        return
    for line in source:
        target.write(line.rstrip("\n").rsplit(",", len(_SCORED))[0] + "\n")


def _drop_scores_csv(path: Path, opener: Callable[..., IO[str]]) -> None:
    """Write ``path`` again without the score columns, streaming, through a file beside it."""
    part = path.with_name(path.name + ".part")
    try:
        with (
            opener(path, "rt", newline="", encoding="utf-8") as old,
            opener(part, "wt", newline="", encoding="utf-8") as new,
        ):
            _copy_csv(old, new, scored=False)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def _write_parquet(path: Path, tables: _Predictions) -> None:
    """Write the tables as one Parquet file, row group by row group; without the score
    columns (the file written again) when no query carried a travel time."""
    import pyarrow.parquet as pq

    _write_arrow(path, (_arrow(table) for table in tables))
    if tables.scored or not tables.may_be_scored:
        return
    part = path.with_name(path.name + ".part")
    keep = list(_COLUMNS[: -len(_SCORED)])
    try:
        with pq.ParquetFile(path) as written:
            batches = written.iter_batches(columns=keep)
            _write_arrow(part, (_arrow(batch.to_pandas()) for batch in batches))
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def _write_arrow(path: Path, tables: Iterable) -> None:
    import pyarrow.parquet as pq

    writer = None
    try:
        for table in tables:
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def _arrow(table: pd.DataFrame):
    """A table of predictions as pandas' ``to_parquet`` would store it."""
    import pyarrow as pa

    table = table.astype({c: np.int64 if c == "row" else np.float64 for c in table.columns})
    return pa.Table.from_pandas(table, preserve_index=False)
