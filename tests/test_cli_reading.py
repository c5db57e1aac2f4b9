"""The CLI's reading options (--map, the formats, --zones) and ``vrvm inspect``,
on made-up files in every format and on the real NYC and San Francisco samples."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from tests.trips.test_formats import _day_first_decimal_hour_csv, _zone_id_version
from vrvm.cli import main
from vrvm.trips.model.travel_time import TravelTimeModel

TRAIN_FAST = ["--members", "2", "--widths", "1,2", "--max-basis", "100", "--seed", "0"]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def day_first(tmp_path):
    path = tmp_path / "nyc_split.csv"
    path.write_text(_day_first_decimal_hour_csv())
    return path


def test_inspect_shows_roles_rows_and_report_and_says_trainable(shared_data):
    status, out, err = run("inspect", shared_data("nyc_taxi_2016_sample.csv"))
    assert status == 0, err
    assert "layout: nyc_kaggle (2016 sample with split time fields" in out
    assert "weekday            weekday:" in out and "obs_id             (not used)" in out
    assert "time zone: America/New_York (the layout's city)" in out
    assert "read 'weekday': numbers with Sunday = 1" in out
    assert "no calendar date" in out
    assert "first 10 trips as read" in out and "Thu 10:48" in out  # weekday and clock
    assert "can be trained on: 8,000 trips kept" in out


def test_inspect_refuses_what_cannot_be_trained(tmp_path):
    path = tmp_path / "two.csv"
    path.write_text(
        "origin_lat,origin_lon,dest_lat,dest_lon,start_time,travel_time_s\n"
        "40.75,-73.99,40.76,-73.98,2016-05-03 08:00,600\n"
        "40.75,-73.99,40.77,-73.95,2016-05-03 09:00,0\n"
    )
    status, out, _ = run("inspect", path, "--tz", "America/New_York")
    assert status == 1
    assert "cannot be trained on: 1 trips kept after cleaning, at least 24 needed" in out


def test_ambiguous_dates_stop_the_cli_until_the_format_is_given(tmp_path):
    path = tmp_path / "amb.csv"
    days = [(3, 4, 8), (5, 6, 9), (1, 2, 17)] * 10
    rows = "".join(
        f"{d}/0{m}/2016,{h}.5,{600 + i},40.75,-73.99,40.76,-73.98\n"
        for i, (d, m, h) in enumerate(days)
    )
    path.write_text("date,clock,secs,plat,plon,dlat,dlon\n" + rows)
    roles = [
        "--map",
        "start_date=date",
        "--map",
        "start_clock=clock",
        "--map",
        "travel_time_s=secs",
        "--map",
        "origin_lat=plat",
        "--map",
        "origin_lon=plon",
        "--map",
        "dest_lat=dlat",
        "--map",
        "dest_lon=dlon",
        "--tz",
        "America/New_York",
    ]
    status, _, err = run("inspect", path, *roles)
    assert status == 1
    assert "column 'date': dates such as '3/04/2016' read both day-first (3 April 2016)" in err
    status, out, err = run("inspect", path, *roles, "--date-format", "%d/%m/%Y")
    assert status == 0, err
    assert "Sun 08:30" in out or "2016-04-03 08:30" in out


def test_train_and_predict_a_day_first_decimal_hour_file_with_map(day_first, tmp_path):
    model_dir = tmp_path / "m"
    roles = ["--map", "start_date=pickup_date", "--map", "start_clock=pickup_time"]
    status, _, err = run("train", day_first, "--out", model_dir, *roles, *TRAIN_FAST)
    assert status == 0, err
    assert "'pickup_date': day-first dates; 'pickup_time': decimal hours" in err
    status, _, err = run("predict", model_dir, day_first, "--out", tmp_path / "p.csv", *roles)
    assert status == 0, err
    predictions = pd.read_csv(tmp_path / "p.csv")
    assert predictions["median_s"].notna().mean() > 0.9
    status, _out, err = run("evaluate", model_dir, day_first, *roles, "--json")
    assert status == 0, err


def test_bad_reading_options_are_usage_errors(day_first):
    assert run("inspect", day_first, "--map", "start_date")[0] == 2
    assert run("inspect", day_first, "--map", "pickup=pickup_date")[0] == 2
    assert run("inspect", day_first, "--clock-format", "HHMM")[0] == 2
    assert run("inspect", day_first, "--date-format", "european")[0] == 2
    status, _, err = run("inspect", day_first, "--map", "start_date=x", "--map", "start_date=y")
    assert status == 1 and "--map names start_date more than once" in err


def test_real_nyc_sample_trains_from_the_cli(shared_data, tmp_path):
    status, _out, err = run(
        "train",
        shared_data("nyc_taxi_2016_sample.csv"),
        "--out",
        tmp_path / "nyc",
        "--holdout",
        "0.2",
        *TRAIN_FAST,
    )
    assert status == 0, err
    model = TravelTimeModel.load(tmp_path / "nyc")
    assert model.tz_ == "America/New_York"
    # Sane answers: a Midtown -> JFK trip at 08:00 takes longer than a short hop.
    queries = pd.DataFrame(
        {
            "origin_lat": [40.7549, 40.7549],
            "origin_lon": [-73.9840, -73.9840],
            "dest_lat": [40.6413, 40.7590],
            "dest_lon": [-73.7781, -73.9845],
            "start_time": pd.to_datetime(["2016-05-03 08:00"] * 2).tz_localize("America/New_York"),
        }
    )
    median_min = model.predict_dist(queries).median() / 60
    assert 25 < median_min[0] < 120 and median_min[1] < 15


def test_zone_id_trips_train_from_the_cli_with_zones(shared_data, tmp_path):
    path, _, _ = _zone_id_version(shared_data, tmp_path)
    status, _, err = run("inspect", path)
    assert status == 1 and "--zones FILE.geojson:ID_PROPERTY" in err
    zones = f"{shared_data('nyc_taxi_zones.geojson')}:LocationID"
    status, out, err = run("inspect", path, "--zones", zones)
    assert status == 0, err
    assert "PULocationID" in out and "origin_zone" in out and "unknown_zone" in out
    status, out, err = run("train", path, "--out", tmp_path / "z", "--zones", zones, *TRAIN_FAST)
    assert status == 0, err


def test_real_sf_bike_share_inspects_clean(shared_data):
    status, out, err = run("inspect", shared_data("sf_bikeshare_2019-02_partial.csv"))
    assert status == 0, err
    assert "layout: bikeshare (GoBike / Bay Wheels 2017-2020)" in out
    assert "America/Los_Angeles (the zone where the trips are)" in out
