"""Roles and formats: every date, clock and weekday format, split start columns, dateless
trips, zone-id trips, and the errors that refuse to guess."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from vrvm.trips.files.formats import (
    TimeFormatError,
    detect_clock_format,
    parse_clock_s,
    parse_date_text,
    parse_weekday,
)
from vrvm.trips.files.layouts import guess_column_map, missing_roles
from vrvm.trips.files.reader import read_layout, read_trips
from vrvm.trips.synthetic import synthetic_city
from vrvm.trips.table import dateless_mask

A = "40.7500,-73.9900,40.7600,-73.9800"  # lat, lon, lat, lon: a Midtown trip
COORDS = "origin_lat,origin_lon,dest_lat,dest_lon"


def _read(text: str, **kwargs):
    return read_trips(io.StringIO(text), source="t.csv", tz="America/New_York", **kwargs)


def _clock(trips: pd.DataFrame) -> list[str]:
    return trips["start_time"].dt.strftime("%Y-%m-%d %H:%M:%S").tolist()


# ------------------------------------------------------------------------------ dates
@pytest.mark.parametrize(
    ("values", "fmt", "expected"),
    [
        (["2016-03-16", "2016-04-01"], "auto", ["2016-03-16", "2016-04-01"]),
        (["2016/3/16", "2016/4/1"], "auto", ["2016-03-16", "2016-04-01"]),
        (["16-3-2016", "1-4-2016"], "auto", ["2016-03-16", "2016-04-01"]),
        (["16.03.16", "01.04.16"], "auto", ["2016-03-16", "2016-04-01"]),
        (["3/16/2016", "4/1/2016"], "auto", ["2016-03-16", "2016-04-01"]),
        (["3/4/2016", "5/6/2016"], "dayfirst", ["2016-04-03", "2016-06-05"]),
        (["3/4/2016", "5/6/2016"], "monthfirst", ["2016-03-04", "2016-05-06"]),
    ],
)
def test_dates_in_every_order(values, fmt, expected):
    days, clock, _ = parse_date_text(pd.Series(values), fmt)
    assert [str(d)[:10] for d in days] == expected
    assert clock.tolist() == [0.0, 0.0]


def test_ambiguous_dates_name_the_column_and_both_readings():
    with pytest.raises(TimeFormatError) as err:
        parse_date_text(pd.Series(["3/4/2016", "12/6/2016"]), column="day")
    text = str(err.value)
    assert "'day'" in text and "3 April 2016" in text and "March 4, 2016" in text
    assert err.value.option == "date_format" and err.value.choices == ["dayfirst", "monthfirst"]
    # The layout's own order settles it (the Chicago portal writes month first).
    days, _, order = parse_date_text(pd.Series(["3/4/2016"]), order_hint="monthfirst")
    assert order == "monthfirst" and str(days[0])[:10] == "2016-03-04"


def test_a_file_mixing_day_first_and_month_first_is_refused():
    with pytest.raises(TimeFormatError, match="mixes day-first dates"):
        parse_date_text(pd.Series(["16/3/2016", "3/16/2016"]), column="d")


def test_unreadable_dates_become_nat_not_errors():
    days, _, _ = parse_date_text(pd.Series(["16-3-2016", "31-2-2016", "soon", None]))
    assert str(days[0])[:10] == "2016-03-16" and np.isnat(days[1:]).all()


@pytest.mark.parametrize(
    ("start", "options", "expected"),
    [
        ("2016-03-16 14:39:00", {}, "2016-03-16 14:39:00"),
        ("16-03-2016 14:39", {}, "2016-03-16 14:39:00"),
        ("16/03/2016 02:39:00 PM", {}, "2016-03-16 14:39:00"),
        ("03/16/2016 2:39 pm", {}, "2016-03-16 14:39:00"),
        ("1458153540", {}, "2016-03-16 14:39:00"),  # unix seconds, UTC
        ("1458153540000", {}, "2016-03-16 14:39:00"),  # unix milliseconds
        ("16|03|2016 14h39", {"date_format": "%d|%m|%Y %Hh%M"}, "2016-03-16 14:39:00"),
    ],
)
def test_start_time_formats(start, options, expected):
    text = f"start,secs,{COORDS}\n{start},600,{A}\n{start},660,{A}\n"
    trips, report = _read(
        text, column_map={"start_time": "start", "travel_time_s": "secs"}, **options
    )
    if start.isdigit():  # unix times are instants: compare in UTC
        got = trips["start_time"].dt.tz_convert("UTC").dt.strftime("%Y-%m-%d %H:%M:%S")
        assert got.iloc[0] == "2016-03-16 18:39:00"
    else:
        assert _clock(trips)[0] == expected
    assert report.n_kept == 2


def test_ambiguous_start_times_are_an_error_not_a_guess():
    text = f"start,secs,{COORDS}\n03/04/2016 08:00,600,{A}\n05/06/2016 09:00,600,{A}\n"
    with pytest.raises(TimeFormatError, match="read both day-first"):
        _read(text, column_map={"start_time": "start", "travel_time_s": "secs"})
    trips, _ = _read(
        text, column_map={"start_time": "start", "travel_time_s": "secs"}, date_format="dayfirst"
    )
    assert _clock(trips) == ["2016-04-03 08:00:00", "2016-06-05 09:00:00"]


# ----------------------------------------------------------------------------- clocks
@pytest.mark.parametrize(
    ("values", "fmt", "expected"),
    [
        (["08:15", "23:59"], "auto", [29700.0, 86340.0]),
        (["8:15:30", "08:15:30.25"], "auto", [29730.0, 29730.25]),
        (["12:00 AM", "12:30 PM", "1:05 p.m."], "auto", [0.0, 45000.0, 47100.0]),
        ([14.65, 0.0], "auto", [52740.0, 0.0]),
        (["14,65"], "hours", [52740.0]),
        ([52740, 3000], "auto", [52740.0, 3000.0]),
        ([1430, 900], "seconds", [1430.0, 900.0]),
        (["24:00", "13:00 PM", "7:60", "x"], "auto", [np.nan] * 4),
        (["0:30 AM", "8:15:30.", "8 :15"], "hh:mm", [np.nan] * 3),
        (["8:5", "8:05:7", "08:15:7.5"], "hh:mm", [np.nan] * 3),  # one-digit minutes, seconds: cut
        ([24.5, -1.0], "hours", [np.nan] * 2),
    ],
)
def test_clock_formats(values, fmt, expected):
    got = parse_clock_s(pd.Series(values, dtype=object), fmt)
    np.testing.assert_array_equal(got, expected)


def test_half_day_suffixes_as_files_write_them():
    # strptime's %p reads "PM" and "pm" after a space; the rest is rewritten for it.
    values = ["1:05pm", "1:05 p.m.", "1:05 P. M.", "12:00 a.m.", "12:00AM", "1:05:30.5 PM"]
    got = parse_clock_s(pd.Series(values), "hh:mm")
    np.testing.assert_array_equal(got, [47100.0, 47100.0, 47100.0, 0.0, 0.0, 47130.5])


def test_leap_seconds_are_unreadable_not_moved_to_the_next_minute():
    # strptime takes seconds 60 and 61 and pandas moves them on: a clock has no such second.
    clocks = ["23:59:60", "8:15:61", "8:15:60.5", "11:59:60 PM", "8:16:00", "8:16:01"]
    got = parse_clock_s(pd.Series(clocks), "hh:mm")
    np.testing.assert_array_equal(got, [np.nan] * 4 + [29760.0, 29761.0])
    days, clock, _ = parse_date_text(pd.Series(["31-12-2016 23:59:60", "31-12-2016 23:59:59"]))
    assert str(days[0])[:10] == "2016-12-31" and np.isnan(clock[0]) and clock[1] == 86399.0


def test_dates_beyond_what_nanoseconds_hold_are_unreadable_never_wrapped():
    values = pd.Series(["1-1-2300", "12-4-2262", "11-4-2262", "1-1-1600"])
    days, _, _ = parse_date_text(values, "dayfirst")
    assert np.isnat(days[[0, 1, 3]]).all() and str(days[2])[:10] == "2262-04-11"
    # Inside what pandas holds but outside 1970-2100: read, then dropped as out of range.
    dates = ["16-3-2016", "1-1-2200", "1-1-2300"] + [f"{d}-4-2016" for d in range(1, 29)]
    text = f"day,time,secs,{COORDS}\n" + "".join(f"{d},8:00,600,{A}\n" for d in dates)
    roles = {"start_date": "day", "start_clock": "time", "travel_time_s": "secs"}
    _, report = _read(text, column_map=roles, row_numbers=True, cleaning={"drop_duplicates": False})
    assert report.examples["out_of_range_time"] == [3]
    assert report.examples["unparseable_time"] == [4]


def test_dates_and_clocks_apart_by_white_space_or_a_t():
    values = ["16-03-2016T14:39", "1-4-2016  8:00", "1-4-2016\t8:00 pm", "2-4-2016", ""]
    days, clock, order = parse_date_text(pd.Series(values))
    assert [str(d)[:10] for d in days[:4]] == [
        "2016-03-16",
        "2016-04-01",
        "2016-04-01",
        "2016-04-02",
    ]
    assert np.isnat(days[4]) and order == "dayfirst"
    np.testing.assert_array_equal(clock, [52740.0, 28800.0, 72000.0, 0.0, 0.0])


def test_wall_clock_times_around_daylight_saving_read_as_before():
    # Repeated hour (6 Nov 2016, 01:30 twice in New York): the first, daylight-time one;
    # the spring-forward gap (13 Mar 2016, 02:30 never happens): moved on to 03:00 EDT.
    text = (
        f"start,secs,{COORDS}\n06/11/2016 01:30,600,{A}\n13/03/2016 02:30,600,{A}\n"
        f"16/03/2016 08:00,600,{A}\n"
    )
    trips, _ = _read(text, column_map={"start_time": "start", "travel_time_s": "secs"})
    utc = trips["start_time"].dt.tz_convert("UTC").dt.strftime("%Y-%m-%d %H:%M").tolist()
    assert utc == ["2016-11-06 05:30", "2016-03-13 07:00", "2016-03-16 12:00"]


def test_hhmm_numbers_are_asked_about():
    with pytest.raises(TimeFormatError, match=r"seconds since midnight .* or hours and minutes"):
        detect_clock_format(pd.Series([1430, 915, 2200]), column="t")


# --------------------------------------------------------------------------- weekdays
@pytest.mark.parametrize(
    ("values", "fmt", "expected"),
    [
        (["Monday", "tue", "SUN", "Sat.", "x"], None, [0, 1, 6, 5, -1]),
        ([1, 7, 8], "iso", [0, 6, -1]),
        ([1, 2, 7], "sunday1", [6, 0, 5]),
        ([0, 6, 7], "monday0", [0, 6, -1]),
    ],
)
def test_weekday_formats(values, fmt, expected):
    assert parse_weekday(pd.Series(values), fmt)[0].tolist() == expected


def test_numbered_weekdays_need_their_numbering():
    with pytest.raises(TimeFormatError) as err:
        parse_weekday(pd.Series([1, 2, 3]), column="dow")
    assert err.value.choices == ["iso", "sunday1", "monday0"] and "'dow'" in str(err.value)


# ------------------------------------------------------------------------------ roles
def test_date_and_clock_columns():
    text = f"day,time,secs,{COORDS}\n16-3-2016,14.65,600,{A}\n1-4-2016,8.5,900,{A}\n"
    trips, report = _read(
        text, column_map={"start_date": "day", "start_clock": "time", "travel_time_s": "secs"}
    )
    assert _clock(trips) == ["2016-03-16 14:39:00", "2016-04-01 08:30:00"]
    assert report.notes == {
        "start_date": "'day': day-first dates",
        "start_clock": "'time': decimal hours",
    }
    assert "read 'day': day-first dates; 'time': decimal hours" in report.summary()


def test_date_hour_minute_and_minutes():
    text = f"d,h,m,mins,{COORDS}\n2016-03-16,7,5,12.5,{A}\n2016-03-17,23,59,3,{A}\n"
    trips, _ = _read(
        text,
        column_map={
            "start_date": "d",
            "start_hour": "h",
            "start_minute": "m",
            "travel_time_min": "mins",
        },
    )
    assert _clock(trips) == ["2016-03-16 07:05:00", "2016-03-17 23:59:00"]
    assert trips["travel_time_s"].tolist() == [750.0, 180.0]


def test_trips_without_a_date_sit_in_the_reference_week():
    text = (
        f"h,m,dow,secs,{COORDS}\n8,15,Monday,600,{A}\n23,5,sunday,700,{A}\n"
        f"25,0,Monday,600,{A}\n8,0,someday,600,{A}\n"
    )
    trips, report = _read(
        text,
        column_map={
            "start_hour": "h",
            "start_minute": "m",
            "weekday": "dow",
            "travel_time_s": "secs",
        },
    )
    assert _clock(trips) == ["1970-01-05 08:15:00", "1970-01-11 23:05:00"]
    assert report.dateless and "no calendar date" in report.summary()
    assert report.counts["unparseable_time"] == 2 and report.examples["unparseable_time"] == [4, 5]
    assert dateless_mask(trips["start_time"]).all()


def test_clock_and_numbered_weekday_need_the_numbering():
    text = f"t,dow,secs,{COORDS}\n08:15,1,600,{A}\n09:15,7,600,{A}\n"
    roles = {"start_clock": "t", "weekday": "dow", "travel_time_s": "secs"}
    with pytest.raises(TimeFormatError, match="weekday_format='iso'"):
        _read(text, column_map=roles)
    trips, report = _read(text, column_map=roles, weekday_format="sunday1")
    assert trips["start_time"].dt.day_name().tolist() == ["Sunday", "Saturday"]
    assert report.notes["weekday"] == "'dow': numbers with Sunday = 1"


@pytest.mark.parametrize(
    ("roles", "message"),
    [
        ({"start_time": "a", "start_date": "b"}, "start_time holds date and clock"),
        ({"start_clock": "a", "start_hour": "b"}, "as start_clock or as start_hour"),
        ({"travel_time_s": "a", "travel_time_min": "b"}, "give one travel time"),
        ({"origin_zone": "a", "origin_lat": "b"}, "coordinates or as a zone"),
        ({"start_date": "a", "weekday": "b"}, "only needed when there is no start_date"),
        ({"start_minute": "a"}, "start_minute without start_hour"),
    ],
)
def test_roles_that_cannot_go_together(roles, message):
    text = "a,b,c\n1,2,3\n"
    with pytest.raises(ValueError, match=message):
        _read(text, column_map=roles)


def test_an_incomplete_map_says_what_is_still_needed():
    text = "h,secs,w,x,y,z\n8,600,1,2,3,4\n"
    with pytest.raises(ValueError, match=r"still needed: .*weekday \(or start_date\)"):
        _read(text, column_map={"start_hour": "h", "travel_time_s": "secs"})
    assert missing_roles({"origin_lat": "a", "origin_lon": "b", "dest_zone": "c"}) == [
        "start_time (or start_date + start_clock, or start_hour + weekday)",
        "travel_time_s, travel_time_min or end_time",
    ]


def test_the_form_guesses_split_roles_without_conflicts():
    guess = guess_column_map(
        ["pickup_date", "pickup_time", "duration", "pickup_latitude", "pickup_longitude"]
    )
    assert guess["start_date"] == "pickup_date" and guess["start_clock"] == "pickup_time"
    assert "start_time" not in guess and guess["travel_time_s"] == "duration"


# ------------------------------------------------------------- the first bullet
def _day_first_decimal_hour_csv(n: int = 300) -> str:
    """The NYC 2016 layout as it circulates: day-first date, decimal-hour time."""
    trips = synthetic_city(n, seed=3)
    local = trips["start_time"]
    frame = pd.DataFrame(
        {
            "pickup_date": local.dt.day.astype(str)
            + "-"
            + local.dt.month.astype(str)
            + "-"
            + local.dt.year.astype(str),
            "pickup_time": (local.dt.hour + local.dt.minute / 60).round(4),
            "trip_duration": trips["travel_time_s"].round(),
            "pickup_latitude": trips["origin_lat"],
            "pickup_longitude": trips["origin_lon"],
            "dropoff_latitude": trips["dest_lat"],
            "dropoff_longitude": trips["dest_lon"],
        }
    )
    return frame.to_csv(index=False)


def test_day_first_date_and_decimal_hour_file_loads_with_two_roles(tmp_path):
    path = tmp_path / "nyc_kaggle_split.csv"
    path.write_text(_day_first_decimal_hour_csv())
    roles = {"start_date": "pickup_date", "start_clock": "pickup_time"}
    layout, _ = read_layout(path, column_map=roles)
    # not nyc_kaggle: its header lacks pickup_datetime, and a map never picks a layout
    # (issue 31); the other roles are guessed, as the upload form guesses them
    assert layout.mapping["start_date"] == "pickup_date" and layout.schema == "custom"
    assert layout.mapping["travel_time_s"] == "trip_duration"
    trips, report = read_trips(path, column_map=roles, tz="UTC")
    assert report.n_kept > 250 and report.notes["start_date"] == "'pickup_date': day-first dates"
    assert trips["start_time"].dt.hour.nunique() > 12


# ---------------------------------------------------------------------- the real files
def test_real_nyc_sample_needs_no_help(shared_data):
    trips, report = read_trips(shared_data("nyc_taxi_2016_sample.csv"))
    # 2,000 'test' rows carry no duration (the course withheld it); the rest are kept.
    assert report.counts["missing_duration"] == 2000 and report.n_kept > 7900
    assert report.dateless and report.schema == "nyc_kaggle" and report.tz == "America/New_York"
    # Weekday 1 = Sunday read right: nights (0-5 h) are busiest on Saturday and Sunday.
    night = trips[trips["start_time"].dt.hour < 5]
    busiest = night["start_time"].dt.day_name().value_counts().index[:2]
    assert set(busiest) == {"Saturday", "Sunday"}


# --------------------------------------------------------------------- zone-id trips
def _zone_id_version(shared_data, tmp_path):
    """The NYC sample as TLC publishes trips since mid-2016: taxi-zone ids, no coordinates."""
    from vrvm.trips.places.zone_files import ZoneFile

    zones = ZoneFile.read(shared_data("nyc_taxi_zones.geojson"), id_property="LocationID")
    trips, _ = read_trips(shared_data("nyc_taxi_2016_sample.csv"))
    start = trips["start_time"].dt.tz_localize(None)
    end = start + pd.to_timedelta(trips["travel_time_s"], unit="s")
    frame = pd.DataFrame(
        {
            "tpep_pickup_datetime": start.dt.strftime("%Y-%m-%d %H:%M:%S"),
            "tpep_dropoff_datetime": end.dt.strftime("%Y-%m-%d %H:%M:%S"),
            "PULocationID": zones.zone_of(trips["origin_lat"], trips["origin_lon"]),
            "DOLocationID": zones.zone_of(trips["dest_lat"], trips["dest_lon"]),
        }
    )
    frame.loc[:4, "DOLocationID"] = "264"  # TLC's "unknown" zone: not in the zone file
    path = tmp_path / "yellow_tripdata_2016-07.csv"
    frame.to_csv(path, index=False)
    return path, zones, frame


def test_zone_id_trips_become_representative_points(shared_data, tmp_path):
    path, zones, frame = _zone_id_version(shared_data, tmp_path)
    with pytest.raises(ValueError, match=r"given by zone ids .* give the zone file"):
        read_trips(path)
    trips, report = read_trips(path, zones=zones, row_numbers=True)
    assert report.schema == "nyc_tlc" and report.counts["unknown_zone"] >= 5
    assert report.examples["unknown_zone"][:5] == [2, 3, 4, 5, 6]
    # Every end is a point inside the zone the file names.
    rows = trips["row"].to_numpy() - 2
    assert (
        zones.zone_of(trips["origin_lat"], trips["origin_lon"])
        == frame["PULocationID"].to_numpy()[rows].astype(str)
    ).all()
    assert (
        zones.zone_of(trips["dest_lat"], trips["dest_lon"])
        == frame["DOLocationID"].to_numpy()[rows].astype(str)
    ).all()
    # end_time - start_time gives the travel times back; intra-zone trips are kept.
    assert report.n_kept > 7000
    assert (frame["PULocationID"] == frame["DOLocationID"]).any()


@pytest.mark.parametrize(
    ("header", "schema", "label"),
    [
        (
            "VendorID,lpep_pickup_datetime,Lpep_dropoff_datetime,Pickup_longitude,"
            "Pickup_latitude,Dropoff_longitude,Dropoff_latitude,Trip_distance",
            "nyc_tlc",
            "green 2013-2016",
        ),
        (
            "VendorID,tpep_pickup_datetime,tpep_dropoff_datetime,PULocationID,DOLocationID",
            "nyc_tlc",
            "yellow 2016 on, taxi zone ids (with the taxi zone file)",
        ),
        (
            "VendorID,lpep_pickup_datetime,lpep_dropoff_datetime,PULocationID,DOLocationID",
            "nyc_tlc",
            "green 2016 on, taxi zone ids (with the taxi zone file)",
        ),
        (
            "Trip ID,Trip Start Timestamp,Trip End Timestamp,Trip Seconds,Trip Miles,"
            "Pickup Community Area,Dropoff Community Area,Fare",
            "chicago",
            "portal export, community areas (with a zone file)",
        ),
        (
            "Trip ID,Trip Start Timestamp,Trip Seconds,Pickup Centroid Latitude,"
            "Pickup Centroid Longitude,Dropoff Centroid Latitude,Dropoff Centroid Longitude,"
            "Pickup Community Area,Dropoff Community Area,Shared Trip Authorized",
            "chicago",
            "portal export",  # TNP ride-hail exports: coordinates win over areas
        ),
    ],
)
def test_public_layouts_are_recognised(header, schema, label):
    layout, _ = read_layout((header + "\n").encode())
    assert (layout.schema, layout.label) == (schema, label)


def test_a_split_by_date_says_the_trips_have_none(shared_data):
    from vrvm.trips.model.split import split_holdout

    trips, _ = read_trips(shared_data("nyc_taxi_2016_sample.csv"))
    with pytest.raises(ValueError, match=r"no calendar date .* hold out a random share"):
        split_holdout(trips, 0.2, how="latest")
    _, test = split_holdout(trips, 0.2, seed=0)
    assert len(test) == 1600
