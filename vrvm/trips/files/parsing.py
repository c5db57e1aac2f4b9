"""Typed values from the raw columns of a trip file: places, start times and durations.

Unreadable values become NaN (numbers) or NaT (times) rather than errors, so that
cleaning can count them per reason and row (:mod:`vrvm.trips.files.cleaning`). A column
whose *format* cannot be told (dates that read day-first and month-first alike,
numbered weekdays without their numbering) is an error instead
(:class:`~vrvm.trips.files.formats.TimeFormatError`): guessing would shift every row.

The start of a trip
-------------------
From ``start_time`` (one column), or ``start_date`` with ``start_clock`` or
``start_hour`` [+ ``start_minute``], or, in files with no calendar date, the clock
with a ``weekday``: such trips are placed in the reference week
(:data:`vrvm.trips.table.REFERENCE_MONDAY`). Dates, clocks and weekdays are read by
:mod:`vrvm.trips.files.formats`.

Text is read by pandas (``format="ISO8601"``, a stated strftime pattern, or the explicit
patterns of :mod:`vrvm.trips.files.formats`). Unix numbers stay own arithmetic
(:func:`_unix_to_utc`, whole and fractional seconds apart): ``pandas.to_datetime(...,
unit="s")`` was 6 times slower on 3 million numbers (2.5 s against 0.42 s) and 1 ns
short on 1.3 % of them (those with a fraction, Unix milliseconds among them), where
this rounds to the nearest nanosecond of the number.

Time zones
----------
Times without an offset ("naive" text or datetimes) are read as wall-clock times in
``tz`` if given, else in the schema's city zone, else in UTC. Numbers are unix
seconds (or milliseconds, see :func:`~vrvm.trips.files.formats.unix_unit`), which are UTC
by definition (except for the ``chicago`` layout, see :mod:`vrvm.trips.files.layouts`),
and text with an offset (``...+01:00``, ``Z``) is exact. Either way ``start_time``
is then converted to that same zone, stored in ``attrs["tz"]``. A canonical Parquet
file whose ``start_time`` is already timezone-aware keeps its own zone unless ``tz``
is given. Wall-clock times in the hour repeated when daylight saving ends are read as
the first (daylight-time) occurrence, and times inside the spring-forward gap are
moved forward to the first valid instant: local exports carry no information to do
better.

Files read in batches
---------------------
The formats above are decided over whole columns. A file read in batches (see
:mod:`vrvm.trips.files.reader`) gathers what those decisions look at, batch by batch
(:class:`vrvm.trips.files._survey.TimeSurvey`), and parses each batch with the decisions
taken over the whole file (:class:`ColumnPlan`, ``parse_columns(..., plans=...)``):
every value is then read exactly as a read of the whole file reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from vrvm.trips.files.formats import (
    _WEEKDAY_LABEL,
    CLOCK_FORMATS,
    CLOCK_WORDS,
    UNREADABLE_SHARE,
    WEEKDAY_FORMATS,
    FormatMismatchError,
    TimeFormats,
    detect_clock_format,
    parse_clock_s,
    parse_date_text,
    parse_weekday,
    unix_unit,
)
from vrvm.trips.files.layouts import COORDINATE_ROLES, Layout
from vrvm.trips.files.time_range import in_departure_range
from vrvm.trips.places.timezones import zone_at
from vrvm.trips.table import REFERENCE_MONDAY

__all__ = ["ColumnCheck", "ColumnPlan", "Parsed", "ReadChecks", "check_formats", "parse_columns"]

# An explicit offset after the time of day: Z, UTC, +01, +0100, +01:00.
_OFFSET = re.compile(r":\d\d(?:\.\d*)?\s*(?:Z|UTC|GMT|[+-]\d\d(?::?\d\d)?)$", re.IGNORECASE)
_NAT = np.datetime64("NaT", "ns")
# |unix seconds| beyond this (year 2286) is not a time but a bad value or milliseconds.
_MAX_UNIX_S = 1e10
# What datetime64[ns] holds (1677-09-21 to 2262-04-11), a day inside each end so that a
# clock or a zone offset added later cannot overflow: numpy would wrap silently.
_NS_FIRST = np.datetime64("1677-09-23", "ns")
_NS_LAST = np.datetime64("2262-04-10", "ns")
_NS_LIMIT_S = float((_NS_LAST - np.datetime64(0, "ns")) // np.timedelta64(1, "s"))


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
    # Beyond what nanoseconds hold (|s| > 9.2e9, years 1677 and 2262) the int64 below
    # would wrap into another century: such numbers are unreadable, not moved.
    ok = np.isfinite(seconds) & (np.abs(seconds) < min(_MAX_UNIX_S, _NS_LIMIT_S))
    # Whole and fractional seconds apart: seconds * 1e9 in float64 is off by ~100 ns.
    whole = np.floor(seconds[ok])
    fraction_ns = np.round((seconds[ok] - whole) * 1e9).astype(np.int64)
    ns = whole.astype(np.int64) * 1_000_000_000 + fraction_ns
    out[ok] = ns.view("datetime64[ns]")
    return out


def _naive_series_to_utc(values: pd.Series, zone: str) -> np.ndarray:
    values = values.astype("datetime64[ns]")
    # Within a day of either end of what nanoseconds hold, a zone offset overflows.
    values = values.where((values >= _NS_FIRST) & (values <= _NS_LAST))
    local = values.dt.tz_localize(
        zone,
        # First occurrence of repeated wall-clock times; shift times in the DST gap.
        ambiguous=np.ones(len(values), dtype=bool),
        nonexistent="shift_forward",
    )
    return local.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")


@dataclass(frozen=True)
class ColumnPlan:
    """How one time column is read: the decisions :mod:`vrvm.trips.files.formats` would take
    from its values. ``None`` leaves a decision to the values at hand.

    A file read in batches takes these decisions once, over whole columns
    (:class:`vrvm.trips.files._survey.TimeSurvey`), and parses every batch with them: each
    value is then read as a read of the whole file reads it.

    Attributes
    ----------
    numbers_first : bool or None
        Text columns of times: numbers (Unix times) are tried before text.
    unit : {"s", "ms"} or None
        Unit of Unix numbers.
    order : {"iso", "dayfirst", "monthfirst"} or None
        Order of the parts of text dates.
    clock_format : {"hh:mm", "hours", "seconds"} or None
    weekday_format : {"names", "iso", "sunday1", "monday0"} or None
    """

    numbers_first: bool | None = None
    unit: str | None = None
    order: str | None = None
    clock_format: str | None = None
    weekday_format: str | None = None


_NO_PLAN = ColumnPlan()


@dataclass
class _TimeReading:
    """How one time column is read: its name, the formats, the layout's date order,
    the plan given for it and the decisions taken while reading it."""

    column: str
    formats: TimeFormats
    unix_is_local: bool = False
    order_hint: str | None = None
    notes: dict[str, str] = field(default_factory=dict)  # role -> how it was read
    plan: ColumnPlan = _NO_PLAN
    made: dict[str, object] = field(default_factory=dict)  # decision -> value
    trace: dict[str, np.ndarray] | None = None  # what the parsers found, for a TimeSurvey
    evidence: dict[str, bool] | None = None  # values only one date order reads

    def __post_init__(self):
        if self.formats.date_format in ("dayfirst", "monthfirst"):  # a stated order: check it
            self.evidence = {}


def _parse_offsets(aware: pd.Series) -> np.ndarray:
    """Text times with an offset -> naive UTC datetime64[ns] (NaT where unreadable)."""
    parsed = pd.to_datetime(aware, format="ISO8601", utc=True, errors="coerce")
    failed = parsed.isna().to_numpy()
    if failed.any():  # ISO8601 has no "UTC"/"GMT" suffix; retry only those rows
        named = aware[failed].str.replace(r"\s*(?:UTC|GMT)$", "+00:00", regex=True, case=False)
        parsed[failed] = pd.to_datetime(named, format="ISO8601", utc=True, errors="coerce")
    return parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")


def _date_format_for_text(how: _TimeReading) -> str:
    """What :func:`parse_date_text` is told: a stated order, the plan's, else auto."""
    date_format = how.formats.date_format
    if date_format in ("dayfirst", "monthfirst", "iso"):
        return date_format
    return how.plan.order or "auto"


def _offsets_and_iso(
    text: pd.Series, pattern: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first readings of text times: those with an offset (-> naive UTC), then the
    rest as ISO or the strftime ``pattern`` (-> naive local); and which had an offset."""
    out = np.full(len(text), _NAT)
    # Offsets are split off first: pandas cannot parse naive and offset text together.
    has_offset = text.str.contains(_OFFSET, na=False).to_numpy()
    if has_offset.any():
        out[has_offset] = _parse_offsets(text[has_offset])
    naive = np.full(len(text), _NAT)
    todo = ~has_offset
    if todo.any():
        parsed = pd.to_datetime(text[todo], format=pattern or "ISO8601", errors="coerce")
        ok = parsed.notna().to_numpy()
        naive[np.flatnonzero(todo)[ok]] = parsed[ok].to_numpy(dtype="datetime64[ns]")
    return out, naive, has_offset


def _parse_text_times(
    text: pd.Series, zone: str, how: _TimeReading, found: dict[str, np.ndarray] | None = None
) -> np.ndarray:
    pattern = how.formats.strftime
    out, naive, has_offset = _offsets_and_iso(text, pattern)
    todo = ~has_offset & np.isnat(naive)
    if found is not None:  # per value: offset? read by it? read as ISO (the pattern)?
        found.update(offset=has_offset, offset_ok=~np.isnat(out), as_text=~np.isnat(naive))
    if todo.any() and pattern is None:
        # Day-first or month-first text: detected over the whole column, never guessed.
        days, clock_s, order = parse_date_text(
            text[todo].reset_index(drop=True),
            _date_format_for_text(how),
            column=how.column,
            order_hint=how.order_hint,
            evidence=how.evidence,
        )
        how.made["order"] = order
        naive[todo] = _add_seconds(days, clock_s)
        if order != "iso" and not np.isnat(naive[todo]).all():
            how.notes["start_time"] = f"{how.column!r}: {_ORDER_WORDS[order]} dates"
    got = ~np.isnat(naive)
    if got.any():
        out[got] = _naive_series_to_utc(pd.Series(naive[got]), zone)
    return out


_ORDER_WORDS = {"dayfirst": "day-first", "monthfirst": "month-first", "iso": "ISO"}


def _add_seconds(days: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Midnights plus seconds of the day (NaT where either is missing)."""
    out = np.full(len(days), _NAT)
    ok = ~np.isnat(days) & np.isfinite(seconds)
    ok[ok] = (days[ok] >= _NS_FIRST) & (days[ok] <= _NS_LAST)  # no wrap past 2262
    ns = np.round(seconds[ok] * 1e9).astype(np.int64).astype("timedelta64[ns]")
    out[ok] = days[ok].astype("datetime64[ns]") + ns
    return out


def _unix_local_to_utc(seconds: np.ndarray, zone: str) -> np.ndarray:
    """Unix-style seconds that encode *wall-clock* time in ``zone`` -> naive UTC."""
    wall = _unix_to_utc(seconds)
    ok = ~np.isnat(wall)
    if ok.any():
        wall[ok] = _naive_series_to_utc(pd.Series(wall[ok]), zone)
    return wall


def _numbers_first(sample: pd.Series, formats: TimeFormats) -> bool:
    """Whether a text column of times is mostly numbers, from its first 100 values."""
    numbers = pd.to_numeric(sample, errors="coerce")
    return bool(numbers.notna().mean() > 0.5) and formats.strftime is None


def _parse_times(values: pd.Series, zone: str, how: _TimeReading) -> np.ndarray:
    """Any time column -> naive UTC datetime64[ns] (NaT where unreadable)."""

    def from_unix(numbers: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
        # The unit is decided over rows: ``counts`` says how many rows hold each number.
        unit = how.plan.unit or unix_unit(
            numbers if counts is None else np.repeat(numbers, counts), how.formats.date_format
        )
        how.made["unit"] = unit
        if unit == "ms":
            numbers = numbers / 1000.0
            how.notes["start_time"] = f"{how.column!r}: Unix milliseconds"
        if how.unix_is_local:
            how.notes["start_time"] = (
                f"{how.column!r}: Unix numbers holding the city's wall-clock time"
            )
            return _unix_local_to_utc(numbers, zone)
        return _unix_to_utc(numbers)

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
    # Text (or mixed objects): numbers are unix times, the rest is parsed as text.
    # Each parser only sees the values the previous one left, and a sample decides which
    # goes first, so a column of dates never pays for number parsing and vice versa.
    # Each distinct value is read once (times repeat: exports round them), and every
    # reading is of one value alone, so this is the row-by-row reading, only faster.
    codes, uniques = pd.factorize(values.reset_index(drop=True), use_na_sentinel=True)
    text = pd.Series(uniques, dtype=object).astype("string").str.strip()
    counts = np.bincount(codes[codes >= 0], minlength=len(text))
    out = np.full(len(text), _NAT)
    todo = text.notna().to_numpy() & (text != "").fillna(False).to_numpy()
    numbers_first = how.plan.numbers_first
    if numbers_first is None:
        rows = codes[codes >= 0]
        first_rows = rows[todo[rows]][:100]  # the first 100 rows that hold a value
        numbers_first = _numbers_first(text[first_rows].reset_index(drop=True), how.formats)
    how.made["numbers_first"] = numbers_first
    found: dict[str, np.ndarray] = {
        "numbers": np.full(len(text), np.nan),
        "counted": np.zeros(len(text), dtype=bool),
        "seen": np.zeros(len(text), dtype=bool),
        "offset": np.zeros(len(text), dtype=bool),
        "offset_ok": np.zeros(len(text), dtype=bool),
        "as_text": np.zeros(len(text), dtype=bool),
    }

    def parse_numbers(which: np.ndarray) -> None:
        numbers = pd.to_numeric(text[which], errors="coerce").to_numpy(np.float64, na_value=np.nan)
        out[which] = from_unix(numbers, counts[which])
        found["numbers"][which], found["counted"][which] = numbers, True

    def parse_text(which: np.ndarray) -> None:
        stage: dict[str, np.ndarray] = {}
        out[which] = _parse_text_times(text[which].reset_index(drop=True), zone, how, stage)
        found["seen"][which] = True
        for key in ("offset", "offset_ok", "as_text"):
            found[key][which] = stage[key]

    for parse in (parse_numbers, parse_text) if numbers_first else (parse_text, parse_numbers):
        if todo.any():
            parse(todo)
            todo &= np.isnat(out)
    if how.trace is not None:  # what each row's value turned out to be, for a TimeSurvey
        how.trace.clear()
        for key, per_value in found.items():
            fill = np.nan if key == "numbers" else False
            how.trace[key] = np.append(per_value, fill)[codes]  # code -1: the fill
    return np.append(out, _NAT)[codes]


def _local_days(values: pd.Series, how: _TimeReading) -> np.ndarray:
    """A ``start_date`` column -> local midnights (datetime64[ns], NaT if unreadable)."""
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        values = values.dt.tz_localize(None)
    if pd.api.types.is_datetime64_dtype(values.dtype):
        return values.dt.normalize().to_numpy(dtype="datetime64[ns]")
    pattern = how.formats.strftime
    if pattern is not None:
        parsed = pd.to_datetime(
            values.astype("string").str.strip(), format=pattern, errors="coerce"
        )
        return parsed.dt.normalize().to_numpy(dtype="datetime64[ns]")
    date_format = how.formats.date_format
    if date_format in ("unix_s", "unix_ms") or _is_number_dtype(values.dtype):
        numbers = _to_float(values)
        unit = how.plan.unit or unix_unit(numbers, date_format)
        how.made["unit"] = unit
        scale = 1000.0 if unit == "ms" else 1.0
        days = _unix_to_utc(numbers / scale).astype("datetime64[D]").astype("datetime64[ns]")
        how.notes["start_date"] = (
            f"{how.column!r}: Unix {'milliseconds' if scale > 1 else 'seconds'}"
        )
        return days
    days, _, order = parse_date_text(
        values,
        _date_format_for_text(how),
        column=how.column,
        order_hint=how.order_hint,
        evidence=how.evidence,
    )
    how.made["order"] = order
    if order != "iso":
        how.notes["start_date"] = f"{how.column!r}: {_ORDER_WORDS[order]} dates"
    return days


class _Plans:
    """The plans given per role, the decisions taken per role while parsing and, when
    traced, what the parsers found in each text column of times (role -> trace)."""

    def __init__(self, given: Mapping[str, ColumnPlan] | None, trace: bool = False):
        self.given = dict(given or {})
        self.made: dict[str, dict[str, object]] = {}
        self.traces: dict[str, dict[str, np.ndarray]] | None = {} if trace else None
        self.checks: dict[str, ColumnCheck] = {}

    def reading(self, role: str, column: str, formats: TimeFormats, **kwargs) -> _TimeReading:
        made = self.made.setdefault(role, {})
        trace = None if self.traces is None else self.traces.setdefault(role, {})
        plan = self.given.get(role, _NO_PLAN)
        return _TimeReading(column, formats, plan=plan, made=made, trace=trace, **kwargs)

    def taken(self) -> dict[str, ColumnPlan]:
        return {role: ColumnPlan(**made) for role, made in self.made.items() if made}


def _clock_s(
    raw: pd.DataFrame,
    mapping: Mapping[str, str],
    formats: TimeFormats,
    notes: dict[str, str],
    plans: _Plans,
) -> np.ndarray:
    """Seconds after local midnight from ``start_clock`` or ``start_hour`` [+ minute]."""
    if "start_clock" in mapping:
        column = mapping["start_clock"]
        fmt = formats.clock_format
        if fmt == "auto":
            fmt = plans.given.get("start_clock", _NO_PLAN).clock_format
            fmt = fmt or detect_clock_format(raw[column], column=column)
        plans.made.setdefault("start_clock", {})["clock_format"] = fmt
        if fmt != "hh:mm":
            notes["start_clock"] = f"{column!r}: {CLOCK_WORDS[fmt]}"
        seconds = parse_clock_s(raw[column], fmt, column=column)
        plans.checks["start_clock"] = ColumnCheck.of(
            "start_clock",
            column,
            "clock_format",
            fmt,
            formats.clock_format != "auto",
            raw[column],
            np.isfinite(seconds),
        )
        return seconds
    hour = _to_float(raw[mapping["start_hour"]])
    minute = _to_float(raw[mapping["start_minute"]]) if "start_minute" in mapping else 0.0
    with np.errstate(invalid="ignore"):
        ok = (hour >= 0) & (hour < 24) & (minute >= 0) & (minute < 60)
    return np.where(ok, hour * 3600.0 + minute * 60.0, np.nan)


def _start_utc(
    raw: pd.DataFrame,
    layout: Layout,
    zone: str,
    formats: TimeFormats,
    notes: dict[str, str],
    plans: _Plans,
) -> np.ndarray:
    """The start of every trip as naive UTC datetime64[ns] (NaT where unreadable)."""
    mapping = layout.mapping
    if "start_time" in mapping:
        how = plans.reading(
            "start_time",
            mapping["start_time"],
            formats,
            unix_is_local=layout.unix_is_local,
            order_hint=layout.date_order,
            notes=notes,
        )
        start = _parse_times(raw[mapping["start_time"]], zone, how)
        plans.checks["start_time"] = _date_check("start_time", how, raw, ~np.isnat(start))
        return start
    if "start_date" in mapping:
        how = plans.reading(
            "start_date", mapping["start_date"], formats, order_hint=layout.date_order, notes=notes
        )
        days = _local_days(raw[mapping["start_date"]], how)
        plans.checks["start_date"] = _date_check("start_date", how, raw, ~np.isnat(days))
    else:
        column = mapping["weekday"]
        weekday_format = formats.weekday_format or layout.weekday_format
        weekday_format = weekday_format or plans.given.get("weekday", _NO_PLAN).weekday_format
        index, label = parse_weekday(raw[column], weekday_format, column=column)
        plans.made.setdefault("weekday", {})["weekday_format"] = weekday_format or "names"
        notes["weekday"] = f"{column!r}: {label}"
        plans.checks["weekday"] = ColumnCheck.of(
            "weekday",
            column,
            "weekday_format",
            weekday_format or "names",
            formats.weekday_format is not None,
            raw[column],
            index >= 0,
        )
        days = np.full(len(raw), _NAT)
        ok = index >= 0
        days[ok] = (REFERENCE_MONDAY + index[ok].astype("timedelta64[D]")).astype("datetime64[ns]")
    local = _add_seconds(days, _clock_s(raw, mapping, formats, notes, plans))
    out = np.full(len(raw), _NAT)
    ok = ~np.isnat(local)
    if ok.any():
        out[ok] = _naive_series_to_utc(pd.Series(local[ok]), zone)
    return out


@dataclass
class Parsed:
    """Typed columns before cleaning; times are naive UTC datetime64[ns].

    ``zone_failed`` marks rows whose zone id the zone file does not know; ``notes``
    says how time columns were read (role -> words); ``dateless`` that the file gives
    no calendar date (trips placed in the reference week); ``plans`` the decisions
    taken (or given) per time role (:class:`ColumnPlan`).
    """

    coords: dict[str, np.ndarray]
    start_utc: np.ndarray
    duration: np.ndarray
    time_failed: np.ndarray
    zone: str
    zone_inferred: bool = False
    zone_failed: np.ndarray | None = None
    notes: dict[str, str] = field(default_factory=dict)
    dateless: bool = False
    plans: dict[str, ColumnPlan] = field(default_factory=dict)
    traces: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)
    checks: ReadChecks = field(default_factory=lambda: ReadChecks({}), repr=False)


ZonePoints = Callable[[pd.Series], tuple[np.ndarray, np.ndarray]]
"""Zone ids -> latitudes and longitudes of the zones' points (NaN for unknown ids)."""


def _places(
    raw: pd.DataFrame, mapping: Mapping[str, str], zone_points: ZonePoints | None
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    coords: dict[str, np.ndarray] = {}
    unknown = None
    for end in ("origin", "dest"):
        if f"{end}_zone" in mapping:
            if zone_points is None:
                raise ValueError(
                    f"the {end} is given as a zone id (column {mapping[end + '_zone']!r}); "
                    "give the zone file whose polygons those ids name: zones=... in "
                    "Python, --zones FILE.geojson:ID_PROPERTY in the CLI"
                )
            ids = raw[mapping[f"{end}_zone"]]
            lat, lon = zone_points(ids)
            given = (
                ids.notna().to_numpy()
                & (ids.astype("string").str.strip() != "").fillna(False).to_numpy()
            )
            missing = given & np.isnan(lat)
            unknown = missing if unknown is None else unknown | missing
        else:
            lat = _to_float(raw[mapping[f"{end}_lat"]])
            lon = _to_float(raw[mapping[f"{end}_lon"]])
        coords[f"{end}_lat"], coords[f"{end}_lon"] = lat, lon
    return {role: coords[role] for role in COORDINATE_ROLES}, unknown


def parse_columns(
    raw: pd.DataFrame,
    layout: Layout,
    zone: str | None,
    formats: TimeFormats | None = None,
    zone_points: ZonePoints | None = None,
    *,
    plans: Mapping[str, ColumnPlan] | None = None,
    trace: bool = False,
) -> Parsed:
    """Typed columns of ``raw`` read with ``layout``.

    ``zone=None`` reads local times in the zone where the trips start
    (:func:`~vrvm.trips.places.timezones.zone_at`, UTC if none is found); ``zone_points``
    resolves zone ids (layouts with ``origin_zone`` / ``dest_zone``). ``plans`` (role
    -> :class:`ColumnPlan`) are decisions taken over whole columns, for a batch of a
    file read in batches; without them the formats are detected on ``raw``. With
    ``trace``, ``Parsed.traces`` says what the parsers found in each text column of
    times, for :meth:`vrvm.trips.files._survey.TimeSurvey.add`.
    """
    formats = formats or TimeFormats()
    mapping = layout.mapping
    coords, zone_failed = _places(raw, mapping, zone_points)
    inferred = zone is None
    if zone is None:
        zone = zone_at(coords["origin_lat"], coords["origin_lon"]) or "UTC"
    notes: dict[str, str] = {}
    taken = _Plans(plans, trace)
    start = _start_utc(raw, layout, zone, formats, notes, taken)
    time_failed = np.isnat(start)
    if "end_time" in mapping:
        end_raw = raw[mapping["end_time"]]
        end_how = taken.reading(
            "end_time",
            mapping["end_time"],
            formats,
            unix_is_local=layout.unix_is_local,
            order_hint=layout.date_order,
        )
        end = _parse_times(end_raw, zone, end_how)
        taken.checks["end_time"] = _date_check("end_time", end_how, raw, ~np.isnat(end))
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
    elif "travel_time_min" in mapping:
        duration = _to_float(raw[mapping["travel_time_min"]]) * 60.0
        notes["travel_time_min"] = f"{mapping['travel_time_min']!r}: minutes"
    else:  # no travel time in the source (allowed with require_travel_time=False)
        duration = np.full(len(raw), np.nan)
    duration = np.asarray(duration, dtype=np.float64)
    unit_role = next((r for r in ("travel_time_s", "travel_time_min") if r in mapping), None)
    checks = ReadChecks(
        taken.checks, duration=None if unit_role is None else (unit_role, mapping[unit_role])
    )
    return Parsed(
        coords,
        start,
        duration,
        time_failed,
        zone,
        zone_inferred=inferred,
        zone_failed=zone_failed,
        notes=notes,
        dateless=layout.dateless,
        plans=taken.taken(),
        traces={role: found for role, found in (taken.traces or {}).items() if found},
        checks=checks,
    )


# ------------------------------------------------------------------ formats that fail
_N_SHOWN = 5  # failing rows named in a refusal
_N_SAMPLE = 200  # distinct failing values the other formats are tried on
_DATE_CHOICES = ("iso", "dayfirst", "monthfirst", "unix_s", "unix_ms")


@dataclass
class ColumnCheck:
    """What a time column's format left unreadable, for :func:`check_formats`.

    Attributes
    ----------
    role, column : str
        The role and the file's column.
    option : {"date_format", "clock_format", "weekday_format"}
        The argument that states the column's format.
    used : str
        The format used (stated, or detected: ``"dayfirst"``, ``"hours"``,
        ``"unix_s"``...; ``"auto"`` for text read as ISO or by offsets).
    stated : bool
        Whether ``used`` was stated rather than detected.
    n_given : int
        Values present (neither missing nor blank).
    n_rows : int
        Rows of the column.
    unreadable : numpy.ndarray of int64
        Positions (0-based, increasing) of the rows whose value is present and not read
        by the format: a file that reads holds none, so nothing per row is kept.
    shown : list of str
        The values of the first :data:`_N_SHOWN` unreadable rows, in row order.
    sample : list of str
        Up to :data:`_N_SAMPLE` distinct unreadable values, to try other formats on.
    evidence : dict or None
        For a stated day-first or month-first order: whether some value reads only
        day-first (``"dayfirst"``) or only month-first (``"monthfirst"``).
    """

    role: str
    column: str
    option: str
    used: str
    stated: bool
    n_given: int
    n_rows: int
    unreadable: np.ndarray
    shown: list[str] = field(default_factory=list)
    sample: list[str] = field(default_factory=list)
    evidence: dict[str, bool] | None = None

    @classmethod
    def of(
        cls,
        role: str,
        column: str,
        option: str,
        used: str,
        stated: bool,
        values: pd.Series,
        read: np.ndarray,
        evidence: dict[str, bool] | None = None,
    ) -> ColumnCheck:
        """The check of ``values`` (a raw column) of which ``read`` says which were read."""
        given = values.notna().to_numpy()
        at = np.flatnonzero(given & ~np.asarray(read, dtype=bool))
        n_blank = 0
        if len(at) and not (
            _is_number_dtype(values.dtype) or pd.api.types.is_datetime64_any_dtype(values.dtype)
        ):
            # Blank text is a missing value, never a value a format fails on; blanks
            # are always unread, so only the unread rows are looked at.
            blank = (values.iloc[at].astype("string").str.strip() == "").fillna(True).to_numpy()
            at, n_blank = at[~blank], int(blank.sum())
        shown: list[str] = []
        sample: list[str] = []
        if len(at):
            failed = values.iloc[at].astype("string").str.strip()
            shown = failed.iloc[:_N_SHOWN].tolist()
            sample = pd.unique(failed.to_numpy(dtype=object))[:_N_SAMPLE].tolist()
        return cls(
            role,
            column,
            option,
            used,
            stated,
            int(given.sum()) - n_blank,
            len(values),
            at.astype(np.int64),
            shown,
            sample,
            None if evidence is None else dict(evidence),
        )

    @property
    def n_unreadable(self) -> int:
        return len(self.unreadable)


@dataclass
class ReadChecks:
    """The :class:`ColumnCheck` of each time role and the travel-time column
    (``(role, column)``, for the check of its unit), of a file or of a batch."""

    columns: dict[str, ColumnCheck]
    duration: tuple[str, str] | None = None

    @classmethod
    def concat(cls, parts: list[ReadChecks]) -> ReadChecks:
        """The checks of a file from those of its batches, in file order."""
        if not parts:
            return cls({})
        columns = {}
        for role, first in parts[0].columns.items():
            each = [p.columns[role] for p in parts if role in p.columns]
            evidence = None
            if first.evidence is not None:
                evidence = {
                    order: any((c.evidence or {}).get(order, False) for c in each)
                    for order in ("dayfirst", "monthfirst")
                }
            columns[role] = ColumnCheck(
                role,
                first.column,
                first.option,
                first.used,
                first.stated,
                sum(c.n_given for c in each),
                sum(c.n_rows for c in each),
                np.concatenate(
                    [c.unreadable + offset for c, offset in zip(each, _starts(each), strict=True)]
                ),
                [v for c in each for v in c.shown][:_N_SHOWN],
                list(dict.fromkeys(v for c in each for v in c.sample))[:_N_SAMPLE],
                evidence,
            )
        return cls(columns, parts[0].duration)


def _starts(checks: list[ColumnCheck]) -> list[int]:
    """The position of each batch's first row in the file."""
    return np.concatenate([[0], np.cumsum([c.n_rows for c in checks])[:-1]]).astype(int).tolist()


def _date_check(role: str, how: _TimeReading, raw: pd.DataFrame, read: np.ndarray) -> ColumnCheck:
    """The check of a date or time column read as ``how`` says."""
    stated = how.formats.date_format != "auto"
    order = str(how.made.get("order", "iso"))
    # The order read some values only if the notes say so (else the values were ISO,
    # offsets or numbers, and only the unreadable ones were tried as dates).
    by_order = order != "iso" and any(_ORDER_WORDS[order] in v for v in how.notes.values())
    if stated:
        used = how.formats.date_format
    elif by_order:
        used = order
    elif "unit" in how.made and (how.made.get("numbers_first", True) or "order" not in how.made):
        used = f"unix_{how.made['unit']}"
    else:
        used = "auto"
    values = raw[how.column]
    return ColumnCheck.of(role, how.column, "date_format", used, stated, values, read, how.evidence)


def _times_read(values: pd.Series, date_format: str, role: str) -> np.ndarray:
    """Which ``values`` ``date_format`` reads as a time in the supported range."""
    text = values.astype("string").str.strip().reset_index(drop=True)
    if date_format == "iso":
        out, naive, _ = _offsets_and_iso(text, None)
        times = np.where(np.isnat(out), naive, out)
    elif date_format in ("dayfirst", "monthfirst"):
        days, clock_s, _ = parse_date_text(text, date_format)
        times = days if role == "start_date" else _add_seconds(days, clock_s)
    else:
        scale = 1000.0 if date_format == "unix_ms" else 1.0
        times = _unix_to_utc(_to_float(text) / scale)
    return in_departure_range(times)


def _read_by(check: ColumnCheck, values: pd.Series) -> dict[str, np.ndarray]:
    """Per other format of ``check.option``: which of ``values`` it reads."""
    if check.option == "clock_format":
        return {
            fmt: np.isfinite(parse_clock_s(values, fmt))
            for fmt in CLOCK_FORMATS[1:]
            if fmt != check.used
        }
    if check.option == "weekday_format":
        others = [fmt for fmt in WEEKDAY_FORMATS if fmt != check.used]
        return {fmt: parse_weekday(values, fmt)[0] >= 0 for fmt in others}
    return {fmt: _times_read(values, fmt, check.role) for fmt in _DATE_CHOICES if fmt != check.used}


_DATE_WORDS = {
    "iso": "ISO dates",
    "dayfirst": "day-first dates",
    "monthfirst": "month-first dates",
    "unix_s": "Unix seconds",
    "unix_ms": "Unix milliseconds",
    "auto": "ISO or offset times",
}
# the words for a format depend on its option: "iso" is a date order and a weekday numbering
_FORMAT_WORDS = {
    "date_format": _DATE_WORDS,
    "clock_format": CLOCK_WORDS,
    "weekday_format": _WEEKDAY_LABEL,
}


def _words(option: str, fmt: str) -> str:
    """How the format ``fmt`` of ``option`` reads, in words (``"day-first dates"``)."""
    return _FORMAT_WORDS[option].get(fmt, fmt)


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def _said(option: str, fmt: str) -> str:
    """``date_format='dayfirst' (--date-format dayfirst)``."""
    return f"{option}={fmt!r} ({_flag(option)} {fmt})"


def check_formats(parsed: Parsed, rows: np.ndarray, source: str, *, strict: bool = True) -> None:
    """Refuse a read whose formats do not fit their columns (before any row is kept).

    A time column whose format (stated or detected) leaves more than
    :data:`~vrvm.trips.files.formats.UNREADABLE_SHARE` of its values (and more than one)
    unreadable, or whose
    stated day-first (month-first) order the values contradict (some read only the
    other way, none only this way), raises
    :class:`~vrvm.trips.files.formats.FormatMismatchError` naming the file, the column, the
    first failing rows (``rows``: the row number of each parsed row) and their values,
    the share that failed and the formats that read them.

    With ``strict=False`` (queries, answered row by row with every unusable row
    reported) only a format shown wrong is refused: another format reads the failing
    values, or the values contradict the stated order. Values that no format reads
    then stay unusable rows, as one odd value always does.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from vrvm.trips.files.layouts import resolve_layout
    >>> raw = pd.DataFrame({"day": ["16-3-2016", "8-6-2016", "28-6-2016"], "clock": ["8:00"] * 3,
    ...                     "a": [40.7] * 3, "b": [-74.0] * 3, "c": [40.8] * 3, "d": [-73.9] * 3,
    ...                     "s": [600] * 3})
    >>> roles = dict(zip(["start_date", "start_clock", "origin_lat", "origin_lon",
    ...                   "dest_lat", "dest_lon", "travel_time_s"], raw.columns))
    >>> layout = resolve_layout(list(raw.columns), "auto", roles, "t.csv")
    >>> parsed = parse_columns(raw, layout, "UTC", TimeFormats(date_format="monthfirst"))
    >>> check_formats(parsed, np.arange(3) + 2, "t.csv")
    Traceback (most recent call last):
    ...
    vrvm.trips.files.formats.FormatMismatchError: t.csv: column 'day' read as month-first dates \
(date_format='monthfirst') leaves 2 of 3 values (66.7%) unreadable, e.g. row 2 '16-3-2016', \
row 4 '28-6-2016'; date_format='dayfirst' (--date-format dayfirst) reads them. Nothing was read.
    """
    for check in parsed.checks.columns.values():
        n_bad = check.n_unreadable
        if n_bad == 0:
            continue
        order, other = (
            check.used,
            {"dayfirst": "monthfirst", "monthfirst": "dayfirst"}.get(check.used),
        )
        evidence = check.evidence or {}
        contradicted = (
            check.stated and other is not None and evidence.get(other) and not evidence.get(order)
        )
        share = n_bad / max(check.n_given, 1)
        # One odd value is a typo in a file, not a format that does not fit.
        if (share <= UNREADABLE_SHARE or n_bad < 2) and not contradicted:
            continue
        failing = check.unreadable[:_N_SHOWN]
        examples = ", ".join(
            f"row {int(rows[i])} {value!r}" for i, value in zip(failing, check.shown, strict=False)
        )
        sample = pd.Series(check.sample, dtype=object)
        read = _read_by(check, sample)
        choices = [fmt for fmt, ok in read.items() if len(sample) and ok.all()]
        if contradicted and other not in choices:
            choices.insert(0, other)
        if not (strict or choices):
            continue
        how = "stated" if check.stated else "detected"
        head = (
            f"{source}: column {check.column!r} read as {_words(check.option, order)} "
            f"({f'{check.option}={order!r}' if check.stated else 'detected'}) leaves "
            f"{n_bad:,} of {check.n_given:,} values ({100 * share:.1f}%) unreadable, "
            f"e.g. {examples}"
        )
        if contradicted and (share <= UNREADABLE_SHARE or n_bad < 2):
            head += (
                f"; some values read only as {_words(check.option, other)}, none only as "
                f"{_words(check.option, order)}: the column is {_ORDER_WORDS[other]}, not {how} "
                f"{_ORDER_WORDS[order]}"
            )
        if choices:
            fix = " or ".join(_said(check.option, fmt) for fmt in choices)
            head += f"; {fix} reads them"
        else:
            head += (
                f"; no {check.option.replace('_', ' ')} reads them: correct the file, or map "
                "another column"
            )
        raise FormatMismatchError(
            head + ". Nothing was read.",
            source=source,
            column=check.column,
            option=check.option,
            used=order,
            choices=choices,
            rows=[int(rows[i]) for i in failing],
            values=check.shown[: len(failing)],
            share=share,
        )
