"""A format that does not fit its column is refused, never trained on (issue 31).

A stated (or detected) date, clock or weekday format that leaves more than 1 % of a
column unreadable, a stated day-first/month-first order that the values contradict and
a travel-time unit that makes most trips implausibly fast or slow stop the read with a
:class:`FormatMismatchError`; departures outside 1970-2100 are a counted drop reason;
times beyond what nanoseconds hold never wrap into another century.
"""

from __future__ import annotations

import io
from datetime import date

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vrvm.cli import main
from vrvm.services.analyst import uploads
from vrvm.trips.files.formats import FormatMismatchError, TimeFormatError
from vrvm.trips.files.reader import ReadLimits, iter_trips, read_trips
from vrvm.trips.files.recipes import ReadOptions

# Two points 1.6 km apart in Manhattan: 600 s is 9.6 km/h, a taxi's pace.
PLACE = {
    "pickup_latitude": 40.7500,
    "pickup_longitude": -73.9900,
    "dropoff_latitude": 40.7600,
    "dropoff_longitude": -73.9800,
}
ROLES = {
    "start_date": "date",
    "start_clock": "Time",
    "travel_time_s": "trip_duration",
    "origin_lat": "pickup_latitude",
    "origin_lon": "pickup_longitude",
    "dest_lat": "dropoff_latitude",
    "dest_lon": "dropoff_longitude",
}


def _written(day: date, order: str, sep: str = "-") -> str:
    if order == "iso":
        return f"{day.year}{sep}{day.month:02d}{sep}{day.day:02d}"
    first, second = (day.day, day.month) if order == "dayfirst" else (day.month, day.day)
    return f"{first}{sep}{second}{sep}{day.year}"


def _csv(dates: list[str], clocks: list, durations=None, **columns) -> str:
    n = len(dates)
    frame = pd.DataFrame(
        {
            "date": dates,
            "Time": clocks,
            **{name: [value] * n for name, value in PLACE.items()},
            "trip_duration": [600.0] * n if durations is None else durations,
            **columns,
        }
    )
    return frame.to_csv(index=False)


def _days(n: int, seed: int = 0) -> list[date]:
    rng = np.random.default_rng(seed)
    start = np.datetime64("2016-01-01")
    offsets = rng.integers(0, 366, n)
    return [pd.Timestamp(start + np.timedelta64(int(k), "D")).date() for k in offsets]


def _read(text: str, **options):
    options.setdefault("tz", "America/New_York")
    options.setdefault("cleaning", {"drop_duplicates": False})  # dates repeat, clocks too
    return read_trips(io.StringIO(text), source="trips.csv", column_map=ROLES, **options)


# ----------------------------------------------------------------- the case
def test_month_first_on_day_first_dates_is_refused_naming_rows_share_and_fix():
    days = _days(400)
    text = _csv([_written(d, "dayfirst") for d in days], [8.25] * len(days))
    with pytest.raises(FormatMismatchError) as caught:
        _read(text, date_format="monthfirst")
    exc = caught.value
    failing = [i for i, d in enumerate(days) if d.day > 12]
    assert exc.source == "trips.csv" and exc.column == "date" and exc.option == "date_format"
    assert exc.used == "monthfirst" and exc.choices == ["dayfirst"]
    assert exc.rows == [i + 2 for i in failing[:5]]  # the report's row numbers
    assert exc.values == [_written(days[i], "dayfirst") for i in failing[:5]]
    assert exc.share == pytest.approx(len(failing) / len(days))
    message = str(exc)
    assert "--date-format dayfirst" in message and f"{100 * exc.share:.1f}%" in message
    assert f"row {exc.rows[0]} {exc.values[0]!r}" in message
    # The right order reads every row, with the day where the file puts it.
    trips, report = _read(text, date_format="dayfirst")
    assert report.n_kept == len(days)
    assert trips["start_time"].dt.date.tolist() == days


def test_a_stated_order_the_values_contradict_is_refused_below_the_share():
    # One date of 400 (0.25 %) has a day above 12: it reads only day-first, and no
    # date reads only month-first, so "monthfirst" swaps day and month in the rest.
    days = [date(2016, m, d) for m in range(1, 13) for d in range(1, 13)] * 3
    days = [*days[:399], date(2016, 6, 28)]
    text = _csv([_written(d, "dayfirst") for d in days], ["08:15"] * len(days))
    with pytest.raises(FormatMismatchError, match="the column is day-first") as caught:
        _read(text, date_format="monthfirst")
    assert caught.value.rows == [401] and caught.value.values == ["28-6-2016"]
    assert caught.value.choices == ["dayfirst"]


def test_one_odd_value_is_dropped_and_counted_not_refused():
    days = _days(300)
    dates = [_written(d, "dayfirst") for d in days]
    dates[10] = "not a date"
    _, report = _read(_csv(dates, [9.5] * len(days)), date_format="dayfirst")
    assert report.counts["unparseable_time"] == 1 and report.examples["unparseable_time"] == [12]
    assert report.n_kept == len(days) - 1


def test_a_detected_format_that_fails_is_refused_too():
    # The clock is detected as HH:MM; 3 % of the rows hold text no clock format reads.
    days = _days(200)
    clocks = ["08:15"] * 194 + ["soon"] * 6  # ("n/a" is read as missing by pandas)
    with pytest.raises(FormatMismatchError) as caught:
        _read(_csv([_written(d, "iso") for d in days], clocks))
    exc = caught.value
    assert exc.column == "Time" and exc.option == "clock_format" and exc.used == "hh:mm"
    assert exc.choices == [] and "no clock format reads them" in str(exc)
    assert "read as HH:MM clock (detected)" in str(exc)
    assert exc.rows == list(range(196, 201)) and exc.values == ["soon"] * 5


def test_blank_values_are_missing_not_a_failing_format():
    days = _days(100)
    clocks = ["08:15"] * 90 + [""] * 10
    _, report = _read(_csv([_written(d, "iso") for d in days], clocks))
    assert report.counts["unparseable_time"] == 10 and report.n_kept == 90


def test_weekday_numbers_with_a_zero_name_the_numbering_that_reads_them():
    n = 140
    weekdays = [i % 7 for i in range(n)]  # Monday = 0 ... Sunday = 6
    text = _csv(["x"] * n, ["08:15"] * n, weekday=weekdays)
    roles = {**ROLES, "weekday": "weekday"}
    del roles["start_date"]
    with pytest.raises(FormatMismatchError) as caught:
        read_trips(io.StringIO(text), column_map=roles, weekday_format="iso", tz="America/New_York")
    assert caught.value.option == "weekday_format" and caught.value.choices == ["monday0"]
    assert caught.value.rows[:2] == [2, 9]  # the zeros
    # the weekday numbering is named as such, not as the date order of the same name
    assert "read as ISO numbers (Monday = 1)" in str(caught.value)
    assert "ISO dates" not in str(caught.value)
    _, report = read_trips(
        io.StringIO(text),
        column_map=roles,
        weekday_format="monday0",
        tz="America/New_York",
        cleaning={"drop_duplicates": False},
    )
    assert report.n_kept == n and report.dateless


def test_unix_seconds_stated_for_milliseconds_names_milliseconds():
    n = 100
    start = 1_458_130_500_000 + 60_000 * np.arange(n)  # 2016-03-16, in milliseconds
    frame = pd.DataFrame({"start": start, "lat": 40.75, "lon": -73.99, "lat2": 40.76})
    frame = frame.assign(lon2=-73.98, secs=600)
    roles = dict(
        zip(
            ["start_time", "origin_lat", "origin_lon", "dest_lat", "dest_lon", "travel_time_s"],
            frame.columns,
            strict=True,
        )
    )
    text = frame.to_csv(index=False)
    with pytest.raises(FormatMismatchError) as caught:
        read_trips(io.StringIO(text), column_map=roles, date_format="unix_s", tz="UTC")
    assert caught.value.used == "unix_s" and caught.value.choices == ["unix_ms"]
    trips, _ = read_trips(io.StringIO(text), column_map=roles, date_format="unix_ms", tz="UTC")
    assert str(trips["start_time"].iloc[0]) == "2016-03-16 12:15:00+00:00"


def test_every_door_refuses_alike_whole_in_batches_and_iterated():
    days = _days(3000, seed=1)
    text = _csv([_written(d, "dayfirst") for d in days], [8.25] * len(days))
    with pytest.raises(FormatMismatchError) as whole:
        _read(text, date_format="monthfirst")
    small = ReadLimits(batch_bytes=20_000)  # about 200 rows a batch
    with pytest.raises(FormatMismatchError) as batched:
        _read(text, date_format="monthfirst", limits=small)
    assert str(batched.value) == str(whole.value)
    no_whole_file_checks = {"max_radius_km": None, "drop_duplicates": False}
    with pytest.raises(FormatMismatchError) as iterated:
        list(
            iter_trips(
                io.StringIO(text),
                source="trips.csv",
                column_map=ROLES,
                date_format="monthfirst",
                tz="America/New_York",
                limits=small,
                cleaning=no_whole_file_checks,
            )
        )
    # Batch by batch, the share is the batch's; the file, column and fix are the same.
    assert iterated.value.rows == whole.value.rows[: len(iterated.value.rows)]
    assert iterated.value.choices == ["dayfirst"] and iterated.value.column == "date"


def test_queries_are_refused_only_for_a_format_shown_wrong():
    # Queries are answered row by row, every unusable row reported: text no format
    # reads stays an unusable row; a format another one beats is refused as in training.
    days = _days(100)
    dates = [_written(d, "dayfirst") for d in days]
    dates[:10] = ["soon"] * 10
    text = _csv(dates, ["08:15"] * len(days))
    queries = {"require_travel_time": False, "date_format": "dayfirst"}
    _, report = _read(text, **queries)
    assert report.counts["unparseable_time"] == 10
    with pytest.raises(FormatMismatchError):
        _read(text, require_travel_time=False, date_format="monthfirst")
    with pytest.raises(FormatMismatchError):  # training: refused either way
        _read(text, date_format="dayfirst")


# ----------------------------------------------------------------------- the units
@pytest.mark.parametrize(
    ("role", "factor", "other"),
    [("travel_time_s", 1 / 60, "travel_time_min"), ("travel_time_min", 1, "travel_time_s")],
)
def test_a_duration_unit_with_implausible_speeds_is_refused(role, factor, other):
    days = _days(120)
    rng = np.random.default_rng(2)
    # Travel times of 400-1200 s written in the other unit than ``role`` says.
    durations = np.round(rng.uniform(400, 1200, len(days)) * factor, 2)
    roles = {**ROLES, role: "trip_duration"}
    roles.pop("travel_time_s" if role != "travel_time_s" else "travel_time_min", None)
    text = _csv([_written(d, "iso") for d in days], ["08:15"] * len(days), durations)
    with pytest.raises(FormatMismatchError) as caught:
        read_trips(io.StringIO(text), column_map=roles, tz="America/New_York")
    assert caught.value.option == "unit" and caught.value.column == "trip_duration"
    assert f"--map {other}=trip_duration" in str(caught.value)
    right = {**{k: v for k, v in roles.items() if k != role}, other: "trip_duration"}
    _, report = read_trips(
        io.StringIO(text),
        column_map=right,
        tz="America/New_York",
        cleaning={"drop_duplicates": False},
    )
    assert report.n_kept == len(days)


def test_a_few_odd_trips_do_not_judge_the_unit():
    days = _days(30)  # fewer than the 50 trips a unit is judged on
    text = _csv([_written(d, "iso") for d in days], ["08:15"] * 30, [10.0] * 30)
    _, report = _read(text)
    assert report.counts["too_short"] == 30


# -------------------------------------------------------------------- dates in range
def test_departures_outside_1970_to_2100_are_a_counted_drop_reason():
    dates = ["2016-03-16", "1969-12-31", "2250-04-11", "2101-01-01", "2099-12-31", "1970-01-02"]
    clocks = ["08:15", "08:15", "23:47", "08:15", "08:15", "08:15"]
    trips, report = read_trips(
        io.StringIO(_csv(dates, clocks)), column_map=ROLES, tz="UTC", row_numbers=True
    )
    assert report.counts["out_of_range_time"] == 3
    assert report.examples["out_of_range_time"] == [3, 4, 5]
    assert trips["row"].tolist() == [2, 6, 7]
    assert "out_of_range_time: 3" in str(report)


def test_times_beyond_nanoseconds_never_wrap_into_another_century():
    # datetime64[ns] ends at 2262-04-11: these would wrap into the 1670s-1690s.
    odd = [
        "9300000000",  # Unix seconds in 2264
        "2262-04-11T23:30:00",  # in New York: 2262-04-12 in UTC
        "-9300000000",
    ]
    times = [f"2016-03-{1 + i % 28:02d}T08:{i % 60:02d}:00" for i in range(400)]
    times[5:8] = odd
    frame = pd.DataFrame(
        {
            "start_time": times,
            "origin_lat": 40.75,
            "origin_lon": -73.99,
            "dest_lat": 40.76,
            "dest_lon": -73.98,
            "travel_time_s": 600.0,
        }
    )
    trips, report = read_trips(
        io.StringIO(frame.to_csv(index=False)), tz="America/New_York", row_numbers=True
    )
    # Unreadable (3 of 400 is within the 1 % a format may leave), never moved.
    assert report.dropped_rows["unparseable_time"].tolist() == [7, 8, 9]
    assert 7 not in trips["row"].tolist() and (trips["start_time"].dt.year == 2016).all()


# ---------------------------------------------------------------------- the doors
def test_cli_train_exits_non_zero_with_the_refusal_and_writes_nothing(tmp_path):
    days = _days(300)
    path = tmp_path / "dayfirst.csv"
    path.write_text(_csv([_written(d, "dayfirst") for d in days], [8.25] * len(days)))
    maps = [arg for role, column in ROLES.items() for arg in ("--map", f"{role}={column}")]
    out, err = io.StringIO(), io.StringIO()
    model = tmp_path / "model"
    argv = ["train", str(path), *maps, "--date-format", "monthfirst", "--out", str(model)]
    status = main(argv, stdout=out, stderr=err)
    assert status == 1 and not model.exists()
    assert "Traceback" not in err.getvalue()
    assert "month-first dates" in err.getvalue() and "--date-format dayfirst" in err.getvalue()


def test_the_upload_form_shows_the_refusal_and_keeps_no_trips():
    days = _days(300)
    data = _csv([_written(d, "dayfirst") for d in days], [8.25] * len(days)).encode()
    options = ReadOptions(column_map=ROLES, date_format="monthfirst", tz="America/New_York")
    outcome = uploads.read_upload("dayfirst.csv", data, options=options)
    assert not outcome.ok and outcome.trips is None and outcome.report is None
    assert "--date-format dayfirst" in outcome.error and "row " in outcome.error


# ------------------------------------------------------ property: wrong formats refused
_ORDERS = ("iso", "dayfirst", "monthfirst")
_STATED = ("iso", "dayfirst", "monthfirst", "unix_s", "unix_ms")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    days=st.lists(
        st.dates(min_value=date(1990, 1, 1), max_value=date(2060, 12, 31)),
        min_size=20,
        max_size=60,
    ),
    written=st.sampled_from(_ORDERS),
    stated=st.sampled_from(_STATED),
    sep=st.sampled_from(["-", "/", "."]),
)
def test_a_wrong_date_format_is_refused_or_reads_every_row(days, written, stated, sep):
    """Stated the right order, every date reads as written; stated another, the read
    is refused unless every value reads that way too (all days and months at most 12,
    where nothing can tell) - never a read that silently keeps only some rows."""
    text = _csv([_written(d, written, sep) for d in days], ["08:15"] * len(days))
    try:
        trips, report = read_trips(
            io.StringIO(text),
            column_map=ROLES,
            date_format=stated,
            tz="UTC",
            cleaning={"drop_duplicates": False},
        )
    except FormatMismatchError as exc:
        assert stated != written
        assert exc.column == "date" and exc.rows and exc.values
        assert written in exc.choices
        return
    except TimeFormatError:  # e.g. nothing stated can be told: never a silent read
        raise
    assert report.counts["unparseable_time"] == 0 and report.n_kept == len(days)
    if stated == written:
        assert trips["start_time"].dt.date.tolist() == days
    else:  # a wrong order read every row: no value could tell the orders apart
        assert stated in ("dayfirst", "monthfirst") and written != "iso"
        assert all(d.day <= 12 for d in days)


_CLOCKS = {
    "hh:mm": lambda s: f"{s // 3600:02d}:{s % 3600 // 60:02d}",
    "hours": lambda s: round(s / 3600, 4),
    "seconds": lambda s: s,
}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seconds=st.lists(st.integers(0, 86_399).map(lambda s: s - s % 60), min_size=20, max_size=60),
    written=st.sampled_from(sorted(_CLOCKS)),
    stated=st.sampled_from(sorted(_CLOCKS)),
)
def test_a_wrong_clock_format_never_keeps_a_part_silently(seconds, written, stated):
    """A stated clock format either reads every value or is refused, bar one odd value."""
    days = _days(len(seconds))
    clocks = [_CLOCKS[written](s) for s in seconds]
    text = _csv([_written(d, "iso") for d in days], clocks)
    try:
        _, report = _read(text, clock_format=stated, cleaning={"drop_duplicates": False})
    except FormatMismatchError as exc:
        assert stated != written and exc.option == "clock_format" and exc.used == stated
        return
    assert report.counts["unparseable_time"] <= 1
