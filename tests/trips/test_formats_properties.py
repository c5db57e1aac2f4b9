"""Properties of the date and clock readers (:mod:`vrvm.trips.files.formats`).

Every date and clock written in a supported way reads back exactly; a column of dates
is read in the order its values show or refused, never guessed; and what a file read in
batches gathers about each value (:func:`date_text_flags`) is what the reader reads.
"""

from __future__ import annotations

from datetime import date, time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vrvm.trips.files.formats import (
    TimeFormatError,
    date_text_flags,
    parse_clock_s,
    parse_date_text,
)

_DAYS = st.dates(min_value=date(1970, 1, 1), max_value=date(2099, 12, 31))


def _written(day: date, order: str, sep: str, padded: bool, short_year: bool) -> str:
    """``day`` as a file writes it: ``16-3-2016``, ``03/16/16``, ``2016.03.16``..."""
    number = "{:02d}" if padded else "{}"
    month, mday = number.format(day.month), number.format(day.day)
    if order == "iso":
        return f"{day.year}{sep}{month}{sep}{mday}"
    year = f"{day.year % 100:02d}" if short_year else str(day.year)
    first, second = (mday, month) if order == "dayfirst" else (month, mday)
    return f"{first}{sep}{second}{sep}{year}"


def _clock(moment: time, style: str, padded: bool) -> str:
    hour = moment.hour if style == "24h" else (moment.hour % 12 or 12)
    text = f"{hour:02d}" if padded else str(hour)
    text += f":{moment.minute:02d}:{moment.second:02d}"
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    if style != "24h":
        half = "AM" if moment.hour < 12 else "PM"
        text += {"12h": f" {half}", "12h-tight": half.lower(), "12h-dots": f" {half[0]}.m."}[style]
    return text


def _seconds(moment: time) -> float:
    return moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6


@settings(max_examples=200, deadline=None)
@given(
    day=_DAYS,
    order=st.sampled_from(["iso", "dayfirst", "monthfirst"]),
    sep=st.sampled_from(["-", "/", "."]),
    padded=st.booleans(),
    short_year=st.booleans(),
)
def test_every_written_date_reads_back_in_its_stated_order(day, order, sep, padded, short_year):
    short_year = short_year and order != "iso" and 1969 <= day.year <= 2068  # what %y reads
    text = _written(day, order, sep, padded, short_year)
    days, clock_s, used = parse_date_text(pd.Series([text]), order)
    assert used == order and clock_s.tolist() == [0.0]
    assert pd.Timestamp(days[0]).date() == day, text


@settings(max_examples=200, deadline=None)
@given(
    moment=st.times(),
    style=st.sampled_from(["24h", "12h", "12h-tight", "12h-dots"]),
    padded=st.booleans(),
)
def test_every_written_clock_reads_back_exactly(moment, style, padded):
    text = _clock(moment, style, padded)
    got = parse_clock_s(pd.Series([text]), "hh:mm")
    assert got[0] == pytest.approx(_seconds(moment), abs=1e-6), text


@settings(max_examples=100, deadline=None)
@given(
    days=st.lists(_DAYS, min_size=1, max_size=30),
    order=st.sampled_from(["dayfirst", "monthfirst"]),
    sep=st.sampled_from(["-", "/", "."]),
)
def test_a_column_of_dates_is_read_in_its_order_or_refused_never_guessed(days, order, sep):
    values = pd.Series([_written(d, order, sep, False, False) for d in days])
    if all(d.day <= 12 for d in days):  # every value reads both ways: nothing tells
        with pytest.raises(TimeFormatError, match="read both day-first"):
            parse_date_text(values)
        return
    read, _, used = parse_date_text(values)
    assert used == order
    assert [pd.Timestamp(x).date() for x in read] == days


@settings(max_examples=100, deadline=None)
@given(
    picks=st.lists(
        st.tuples(
            _DAYS,
            st.sampled_from(["iso", "dayfirst", "monthfirst"]),
            st.sampled_from(["-", "/"]),
            st.one_of(st.none(), st.times()),
        ),
        min_size=1,
        max_size=20,
    ),
    junk=st.lists(st.sampled_from(["", "x", "31-2-2016", "13/13/2016", "1-1-2016 25:00"])),
)
def test_what_a_survey_gathers_is_what_the_reader_reads(picks, junk):
    """:func:`date_text_flags` (a file read in batches decides with it) says, per value,
    exactly which orders :func:`parse_date_text` reads it in, and whether its clock reads."""
    values = [
        _written(d, order, sep, True, False) + ("" if t is None else " " + _clock(t, "24h", True))
        for d, order, sep, t in picks
    ] + junk
    text = pd.Series(values, dtype="string")
    flags = dict(
        zip(["iso", "dayfirst", "monthfirst", "clock"], date_text_flags(text), strict=True)
    )
    for order in ("iso", "dayfirst", "monthfirst"):
        days, clock_s, _ = parse_date_text(text, order)
        np.testing.assert_array_equal(flags[order], ~np.isnat(days))
        np.testing.assert_array_equal(flags["clock"], np.isfinite(clock_s))
