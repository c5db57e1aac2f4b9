"""Typed values from the raw columns of a trip file: numbers, times and durations.

Unreadable values become NaN (numbers) or NaT (times) rather than errors, so that
cleaning can count them per reason and row (:mod:`vrvm.trips.cleaning`).

Time zones
----------
Times without an offset ("naive" text or datetimes) are read as wall-clock times in
``tz`` if given, else in the schema's city zone, else in UTC. Numbers are unix
seconds, which are UTC by definition (except for the ``chicago`` layout, see
:mod:`vrvm.trips.layouts`), and text with an offset (``...+01:00``, ``Z``) is exact.
Either way ``start_time`` is then converted to that same zone, stored in
``attrs["tz"]``. A canonical Parquet file
whose ``start_time`` is already timezone-aware keeps its own zone unless ``tz`` is
given. Wall-clock times in the hour repeated when daylight saving ends are read as the
first (daylight-time) occurrence, and times inside the spring-forward gap are moved
forward to the first valid instant: local exports carry no information to do better.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vrvm.trips.layouts import COORDINATE_ROLES
from vrvm.trips.timezones import zone_at

__all__ = ["Parsed", "parse_columns"]

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
class Parsed:
    """Typed columns before cleaning; times are naive UTC datetime64[ns]."""

    coords: dict[str, np.ndarray]
    start_utc: np.ndarray
    duration: np.ndarray
    time_failed: np.ndarray
    zone: str
    zone_inferred: bool = False


def parse_columns(
    raw: pd.DataFrame, mapping: Mapping[str, str], zone: str | None, unix_is_local: bool = False
) -> Parsed:
    """Typed columns of ``raw``; ``zone=None`` reads local times in the zone where the
    trips start (:func:`~vrvm.trips.timezones.zone_at`, UTC if none is found)."""
    coords = {role: _to_float(raw[mapping[role]]) for role in COORDINATE_ROLES}
    inferred = zone is None
    if zone is None:
        zone = zone_at(coords["origin_lat"], coords["origin_lon"]) or "UTC"
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
    duration = np.asarray(duration, dtype=np.float64)
    return Parsed(coords, start, duration, time_failed, zone, zone_inferred=inferred)
