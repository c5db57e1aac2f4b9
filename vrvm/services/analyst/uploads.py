"""Uploaded trip files: size guards, one read-and-clean call, and what the report shows.

An upload is untrusted: :func:`check_upload` refuses empty files, files above the
upload limit and compressed files that expand too much (a zip bomb); :func:`read_upload`
reads and cleans it with :func:`vrvm.read_trips` - only ever parsing CSV text or
Parquet - under the upload's limits (:func:`upload_limits`: what it may expand to, and
at most :func:`max_upload_rows` data rows, counted while it is read: a read stops at the
first row beyond), and never raises: the :class:`UploadOutcome` holds the trips, the
cleaning report and a preview of the first trips as read, or the message (for a limit,
which one and how to raise it), or, when the columns (or a date, clock or weekday
format) are not understood, what a form must ask.

The form asks what the reader could not decide, and pre-fills it with what every door
proposes (:func:`vrvm.trips.files.reader.propose_options`: the roles guessed from the column
names, the formats found in the first rows), so that the form, the CLI with any
``--map`` options, a recipe and Python read a file alike; a file whose zone cannot be
told from where its trips are asks for the zone (``zone_question``).

A mapping the user gives can be kept as a named *recipe* in the data home
(:func:`save_recipe`); the next file with the same header is read with it, without
the form (:func:`read_upload` with ``home``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vrvm.services.access.policy import Access, record
from vrvm.trips.files.cleaning import CleaningReport
from vrvm.trips.files.formats import CLOCK_FORMATS, DATE_FORMATS, WEEKDAY_FORMATS, TimeFormatError
from vrvm.trips.files.layouts import (
    ROLE_LABELS,
    UnknownLayoutError,
    complete_column_map,
    guess_column_map,
    missing_roles,
)
from vrvm.trips.files.reader import (
    ReadLimits,
    TripFileError,
    ZonesNeededError,
    check_expansion,
    propose_options,
    read_layout,
    read_rows,
    read_trips,
)
from vrvm.trips.files.recipes import ReadOptions
from vrvm.trips.home import Home
from vrvm.trips.places.timezones import ZoneUnknownError
from vrvm.trips.settings import env_int

__all__ = [
    "CLOCK_FORMATS",
    "DATE_FORMATS",
    "DEFAULT_MAX_UPLOAD_ROWS",
    "MAPPING_ROLES",
    "MAX_DECOMPRESSED_MB",
    "MAX_UPLOAD_MB",
    "MAX_UPLOAD_ROWS_ENV",
    "UPLOAD_TYPES",
    "WEEKDAY_FORMATS",
    "ReadOptions",
    "UploadError",
    "UploadOutcome",
    "check_upload",
    "example_rows",
    "form_defaults",
    "guess_column_map",
    "max_upload_rows",
    "preview_rows",
    "read_upload",
    "report_table",
    "save_recipe",
    "upload_limits",
]

PREVIEW_ROWS = 10
PREVIEW_READ_ROWS = 2000
"""Rows a live preview of a mapping reads (the whole file is read when it is used)."""

MAX_UPLOAD_MB = 200
MAX_DECOMPRESSED_MB = 2000
MAX_UPLOAD_ROWS_ENV = "VRVM_MAX_UPLOAD_ROWS"
DEFAULT_MAX_UPLOAD_ROWS = 2_000_000
"""Data rows an upload may hold unless ``$VRVM_MAX_UPLOAD_ROWS`` says otherwise: far
more than a model needs (the demo trains on 20,000), and a read that stays small (a
1.5 GB upload is refused after 2 million rows in 4 s, with 330 MB of memory beyond the
interpreter's own: ``benchmarks/bench_read_memory.py``)."""
UPLOAD_TYPES = ("csv", "txt", "tsv", "parquet", "pq", "gz", "bz2", "xz", "zip")
MAPPING_ROLES: tuple[tuple[str, str], ...] = tuple(ROLE_LABELS.items())
"""``(role, label)`` pairs of the column-mapping form, in the order it asks for them."""


class UploadError(ValueError):
    """An upload that cannot be used; the message is meant for the user."""


@dataclass
class UploadOutcome:
    """Result of reading one uploaded file.

    Attributes
    ----------
    name : str
        The file's name.
    trips : pandas.DataFrame or None
        The clean trips, when at least one row passed.
    report : CleaningReport or None
        What happened to every row, when the file could be read.
    reasons : pandas.DataFrame
        The report's reasons that fired (:func:`report_table`).
    examples : pandas.DataFrame
        The rejected rows behind the report's examples, as written in the file.
    error : str or None
        Why the file cannot be used.
    needs_mapping : bool
        The columns (or a time format) were not understood: ask the user.
    columns : list of str
        The file's columns (for that form).
    format_question : TimeFormatError or None
        A date, clock or weekday column whose format must be stated; it names the
        column, the option (``date_format``...) and the choices.
    zones_needed : bool
        The trips are given by zone ids: the form must ask for a zone file.
    options : ReadOptions or None
        The options the file was read with (a recipe's, or the form's).
    recipe : str or None
        The name of the saved recipe that was used, if one was.
    preview : pandas.DataFrame
        The first trips as read (:func:`preview_rows`).
    proposal : ReadOptions or None
        What the form pre-fills when it must ask: the roles and formats every door
        proposes for this file (:func:`vrvm.trips.files.reader.propose_options`).
    zone_question : ZoneUnknownError or None
        The zone of the file's local times cannot be told from where its trips are:
        the form must ask for it.
    """

    name: str
    trips: pd.DataFrame | None = None
    report: CleaningReport | None = None
    reasons: pd.DataFrame = field(default_factory=pd.DataFrame)
    examples: pd.DataFrame = field(default_factory=pd.DataFrame)
    error: str | None = None
    needs_mapping: bool = False
    columns: list[str] = field(default_factory=list)
    format_question: TimeFormatError | None = None
    zones_needed: bool = False
    options: ReadOptions | None = None
    recipe: str | None = None
    preview: pd.DataFrame = field(default_factory=pd.DataFrame)
    proposal: ReadOptions | None = None
    zone_question: ZoneUnknownError | None = None

    @property
    def ok(self) -> bool:
        return self.trips is not None and self.error is None


def max_upload_rows(environ: Mapping[str, str] | None = None) -> int:
    """Data rows an upload may hold: ``$VRVM_MAX_UPLOAD_ROWS``, else 2,000,000.

    Read at each upload; a dashboard takes a new value when it is started with it.

    Raises
    ------
    ValueError
        Naming the variable, when it holds no positive integer.

    Examples
    --------
    >>> max_upload_rows({}), max_upload_rows({"VRVM_MAX_UPLOAD_ROWS": "5000000"})
    (2000000, 5000000)
    """
    environ = os.environ if environ is None else environ
    return env_int(environ, MAX_UPLOAD_ROWS_ENV, DEFAULT_MAX_UPLOAD_ROWS)


def upload_limits(environ: Mapping[str, str] | None = None) -> ReadLimits:
    """The read limits of an upload: it may expand to :data:`MAX_DECOMPRESSED_MB` (and
    at most 100-fold) and hold :func:`max_upload_rows` data rows.

    Examples
    --------
    >>> upload_limits({"VRVM_MAX_UPLOAD_ROWS": "1000"}).max_data_rows
    1000
    """
    return ReadLimits(
        max_expanded_bytes=int(MAX_DECOMPRESSED_MB * 2**20),
        max_data_rows=max_upload_rows(environ),
    )


def _check_size(name: str, data: bytes, max_mb: float) -> None:
    size = len(data)
    if size == 0:
        raise UploadError(f"{name} is empty")
    if size > max_mb * 2**20:
        raise UploadError(
            f"{name} is {size / 2**20:.0f} MB, above the {max_mb:g} MB upload limit; split it "
            "into several files"
        )


def check_upload(name: str, data: bytes, *, max_mb: float = MAX_UPLOAD_MB) -> None:
    """Refuse uploads that are empty, too large, or expand too much (raises UploadError).

    A compressed upload may expand to :data:`MAX_DECOMPRESSED_MB` and at most 100-fold
    (:class:`vrvm.trips.files.reader.ReadLimits`); the check stops as soon as either is passed.
    :func:`read_upload` applies the same limits, and the rows limit, while it reads.
    """
    _check_size(name, data, max_mb)
    # The reader's expansion guard (also a ratio cap), with the stricter upload size.
    limits = ReadLimits(max_expanded_bytes=int(MAX_DECOMPRESSED_MB * 2**20))
    try:
        check_expansion(data, limits, name=name)
    except TripFileError as exc:
        raise UploadError(str(exc)) from None


def _limit_message(name: str, exc: TripFileError, limits: ReadLimits) -> str:
    """What a user reads when an upload passes a limit: which, and how to raise it."""
    if exc.limit == "max_data_rows":
        return (
            f"{name} has more than {limits.max_data_rows:,} data rows, the limit for an "
            f"upload; it was not read further. Split the file, or raise the limit with the "
            f"environment variable {MAX_UPLOAD_ROWS_ENV} (now {limits.max_data_rows:,}) "
            "and restart the dashboard"
        )
    return str(exc)


def _recipe_for(
    name: str, data: bytes, home: Path, limits: ReadLimits
) -> tuple[str, ReadOptions] | None:
    """The recipe saved in ``home`` for this file's header, if any."""
    try:
        read_layout(data, source=name, limits=limits)
        return None  # a known layout: no recipe needed
    except UnknownLayoutError as exc:
        recipe = Home(home).recipes.find(exc.columns)
    return None if recipe is None else (recipe.name, recipe.options)


def read_upload(
    name: str,
    data: bytes,
    *,
    options: ReadOptions | None = None,
    column_map: Mapping[str, str] | None = None,
    home: Path | None = None,
    max_mb: float = MAX_UPLOAD_MB,
    max_rows: int | None = None,
) -> UploadOutcome:
    """Read one uploaded file into clean trips and a cleaning report, never raising.

    The file is only parsed as CSV text or Parquet (nothing is executed or
    unpickled). It is read with ``options`` (or just a ``column_map``); without
    either, with the recipe saved in ``home`` for its header, if there is one.
    Columns that no known layout (nor the options) explains yield
    ``needs_mapping=True`` and the file's ``columns``; a time column whose format
    cannot be told yields ``needs_mapping`` and ``format_question``; any other
    problem yields ``error``. Zone files named by the options are those kept in
    ``home``. With ``max_rows`` only the first rows are read (a live preview of a
    mapping, :data:`PREVIEW_READ_ROWS`).

    The file is read under :func:`upload_limits`, checked while it is read: a file that
    expands beyond :data:`MAX_DECOMPRESSED_MB` or holds more than
    :func:`max_upload_rows` data rows stops the read at once, and ``error`` says which
    limit, and how to raise the rows limit (``$VRVM_MAX_UPLOAD_ROWS``).
    """
    outcome = UploadOutcome(name=name)
    if options is None and column_map:
        options = ReadOptions(column_map=dict(column_map))
    try:
        limits = upload_limits()
        _check_size(name, data, max_mb)
        if options is None and home is not None:
            found = _recipe_for(name, data, home, limits)
            if found is not None:
                outcome.recipe, options = found
        options = options or ReadOptions()
        outcome.options = options
        zones = None
        if options.zones:
            if home is None:
                raise UploadError(f"{name}: the zone file {options.zones!r} needs a data home")
            zones = Home(home).zones.load(options.zones)
        trips, report = read_trips(
            data,
            source=name,
            zones=zones,
            max_rows=max_rows,
            limits=limits,
            **options.read_kwargs(),
        )
    except UnknownLayoutError as exc:
        outcome.error, outcome.needs_mapping, outcome.columns = str(exc), True, exc.columns
        outcome.proposal = _proposal(name, data, exc, limits)
        return outcome
    except ZoneUnknownError as exc:
        outcome.error, outcome.needs_mapping, outcome.zone_question = str(exc), True, exc
        outcome.columns = _columns(name, data)
        return outcome
    except ZonesNeededError as exc:
        outcome.error, outcome.needs_mapping, outcome.zones_needed = str(exc), True, True
        outcome.columns = exc.columns
        return outcome
    except TimeFormatError as exc:
        outcome.error, outcome.needs_mapping, outcome.format_question = str(exc), True, exc
        outcome.columns = _columns(name, data)
        return outcome
    except TripFileError as exc:
        outcome.error = _limit_message(name, exc, limits)
        return outcome
    except (UploadError, ValueError) as exc:
        outcome.error = str(exc)
        return outcome
    except Exception as exc:  # any parser failure is the file's fault
        outcome.error = f"{name} could not be read as a trip table ({type(exc).__name__}: {exc})"
        return outcome
    outcome.report = report
    outcome.reasons = report_table(report)
    outcome.examples = example_rows(data, report)
    if len(trips) == 0:
        outcome.error = f"{name}: no row passed the cleaning checks (see the report)"
        return outcome
    outcome.trips = trips
    outcome.preview = preview_rows(trips, report)
    outcome.columns = _columns(name, data)  # the header a recipe is kept for
    return outcome


def _proposal(name: str, data: bytes, error: UnknownLayoutError, limits: ReadLimits) -> ReadOptions:
    """What the form pre-fills for a file whose columns are not understood: the roles
    and formats every door proposes, or the guessed roles alone if they do not read."""
    guess = ReadOptions(column_map=error.proposal)
    if missing_roles(error.proposal):
        return guess
    try:
        return propose_options(
            data, guess, source=name, max_rows=PREVIEW_READ_ROWS, limits=limits
        ).options
    except Exception:  # the form asks, and its preview then says what fails
        return guess


def form_defaults(outcome: UploadOutcome) -> ReadOptions:
    """The answers a mapping form starts from: the options given, else the proposal.

    Examples
    --------
    >>> outcome = UploadOutcome("t.csv", columns=["pickup_date", "pickup_time", "duration_s"])
    >>> form_defaults(outcome).column_map
    {'start_date': 'pickup_date', 'travel_time_s': 'duration_s', 'start_clock': 'pickup_time'}
    """
    given = outcome.options or ReadOptions()
    proposal = outcome.proposal or ReadOptions(
        column_map=complete_column_map({}, outcome.columns)[0]
    )
    merged = given.to_dict()
    for option, value in proposal.to_dict().items():
        if not merged[option] or merged[option] == "auto":
            merged[option] = value
    return ReadOptions.from_dict(merged)


def _columns(name: str, data: bytes) -> list[str]:
    try:
        return read_layout(data, source=name)[1]
    except UnknownLayoutError as exc:
        return exc.columns
    except ValueError:
        return []


def preview_rows(
    trips: pd.DataFrame, report: CleaningReport, n: int = PREVIEW_ROWS
) -> pd.DataFrame:
    """The first ``n`` trips as read, for a person: local start (weekday and clock for
    files without a date), minutes, coordinates rounded to 4 decimals (about 10 m)."""
    head = trips.head(n)
    start = head["start_time"]
    shown = (
        start.dt.strftime("%a %H:%M") if report.dateless else start.dt.strftime("%Y-%m-%d %H:%M")
    )
    return pd.DataFrame(
        {
            "start (local)": shown,
            "travel time (min)": (head["travel_time_s"] / 60).round(1),
            "origin": head["origin_lat"].round(4).astype(str)
            + ", "
            + head["origin_lon"].round(4).astype(str),
            "destination": head["dest_lat"].round(4).astype(str)
            + ", "
            + head["dest_lon"].round(4).astype(str),
        }
    )


def save_recipe(home: Path, name: str, outcome: UploadOutcome, *, by: Access | None = None) -> str:
    """Keep the options ``outcome`` was read with as the recipe ``name``; a message."""
    if by is not None:
        by.require("upload")
    if outcome.options is None or not outcome.ok:
        raise UploadError("only a file that was read can be kept as a recipe")
    recipe = Home(home).recipes.save(name, outcome.columns, outcome.options)
    record(home, by, "recipe", name=recipe.name, columns=len(recipe.columns))
    return (
        f"Saved the recipe {recipe.name!r}: the next file with these {len(recipe.columns)} "
        "columns is read with it."
    )


def example_rows(data: bytes, report: CleaningReport, *, per_reason: int = 3) -> pd.DataFrame:
    """The raw rows behind the report's examples, as text, with their reason and row number.

    Row numbers follow :mod:`vrvm.trips.files.cleaning` (line numbers with the header as
    line 1; position + 2 for Parquet), so a row can be found in the file.
    """
    wanted: dict[int, str] = {}
    for reason, rows in report.examples.items():
        for row in rows[:per_reason]:
            wanted.setdefault(int(row), reason)
    if not wanted:
        return pd.DataFrame(columns=["reason", "row"])
    try:
        picked = read_rows(data, wanted, source=report.source)
    except (TripFileError, ValueError, OSError):  # examples are a courtesy
        return pd.DataFrame(columns=["reason", "row"])
    picked.insert(0, "reason", [wanted[r] for r in picked["row"]])
    return picked


def report_table(report: CleaningReport) -> pd.DataFrame:
    """The cleaning report per reason, only the reasons that fired, share in percent."""
    frame = report.to_frame()
    frame = frame.loc[frame["count"] > 0].copy()
    frame["share"] = (100 * frame["share"]).round(2)
    return frame.rename(columns={"share": "share_pct"}).reset_index(drop=True)
