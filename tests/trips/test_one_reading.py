"""One reading, whatever the door (issue 31): a NYC 2016 file of the kind that
circulates in public analyses - day-first ``date``, decimal-hour ``Time``, NYC
coordinate columns, ``trip_duration``, no city named - reads to the same trips and the
same time zone through the upload form, the CLI with any subset of ``--map`` options,
a saved recipe and Python's ``read_trips``, and the same local hours as the recognised
Kaggle layout of the same trips."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pandas as pd
import pytest

from vrvm.cli import main
from vrvm.services.analyst import store_admin, uploads
from vrvm.trips.files.layouts import UnknownLayoutError, resolve_layout
from vrvm.trips.files.reader import propose_options, read_trips
from vrvm.trips.files.recipes import ReadOptions
from vrvm.trips.home import Home
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.timezones import ZoneUnknownError, trips_zone
from vrvm.trips.table import CANONICAL_COLUMNS, trips_sha256

N_TRIPS = 400
ROLES = {
    "start_date": "date",
    "start_clock": "Time",
    "origin_lat": "pickup_latitude",
    "origin_lon": "pickup_longitude",
    "dest_lat": "dropoff_latitude",
    "dest_lon": "dropoff_longitude",
    "travel_time_s": "trip_duration",
}
SUBSETS = [
    dict(combo) for k in range(len(ROLES) + 1) for combo in itertools.combinations(ROLES.items(), k)
]
NEW_YORK = "America/New_York"


def _sample(shared_data) -> pd.DataFrame:
    """The first trips of the shared NYC sample that have a travel time; the sample's
    month is May 2016 (its weekday and day-of-month numbers pair as in May 2016)."""
    sample = pd.read_csv(shared_data("nyc_taxi_2016_sample.csv"))
    return sample.dropna(subset=["duration"]).head(N_TRIPS).reset_index(drop=True)


@pytest.fixture
def hidden(shared_data, tmp_path):
    """The file of issue 31: its columns name no city and match no known layout."""
    sample = _sample(shared_data)
    frame = pd.DataFrame(
        {
            "date": sample["day"].astype(str) + "-5-2016",  # day-first, as 16-3-2016
            "Time": sample["hour"] + sample["minute"] / 60,  # decimal hours
            "pickup_latitude": sample["pickup_latitude"],
            "pickup_longitude": sample["pickup_longitude"],
            "dropoff_latitude": sample["dropoff_latitude"],
            "dropoff_longitude": sample["dropoff_longitude"],
            "trip_duration": sample["duration"].astype(int),
        }
    )
    path = tmp_path / "nyc_2016_hidden.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def kaggle(shared_data, tmp_path):
    """The same trips in the recognised Kaggle layout (``pickup_datetime``)."""
    sample = _sample(shared_data)
    start = pd.to_datetime(
        {"year": 2016, "month": 5, "day": sample["day"], "hour": sample["hour"]}
    ) + pd.to_timedelta(sample["minute"], unit="min")
    frame = pd.DataFrame(
        {
            "pickup_datetime": start.dt.strftime("%Y-%m-%d %H:%M:%S"),
            "pickup_longitude": sample["pickup_longitude"],
            "pickup_latitude": sample["pickup_latitude"],
            "dropoff_longitude": sample["dropoff_longitude"],
            "dropoff_latitude": sample["dropoff_latitude"],
            "trip_duration": sample["duration"].astype(int),
        }
    )
    path = tmp_path / "nyc_kaggle.csv"
    frame.to_csv(path, index=False)
    return path


def _canonical(trips: pd.DataFrame) -> pd.DataFrame:
    """What must agree: the UTC instants, the local hours and minutes, the rest."""
    out = trips[list(CANONICAL_COLUMNS)].copy()
    local = trips["start_time"]
    out["start_time"] = local.dt.tz_convert("UTC").dt.round("s")
    out["local_hour"] = local.dt.hour
    out["local_minute"] = local.dt.round("min").dt.minute
    return out.reset_index(drop=True)


def _run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def _maps(subset: dict[str, str]) -> list[str]:
    return [arg for role, column in subset.items() for arg in ("--map", f"{role}={column}")]


@pytest.fixture
def reference(hidden):
    trips, report = read_trips(hidden, column_map=ROLES)
    assert report.n_kept == N_TRIPS and report.tz == NEW_YORK and report.tz_inferred
    return _canonical(trips)


@pytest.mark.parametrize("subset", SUBSETS, ids=lambda s: "+".join(s) or "none")
def test_every_subset_of_roles_reads_the_same_trips_in_new_york(hidden, reference, subset):
    if not subset:  # nothing named: refused, with every role proposed (the form's guess)
        with pytest.raises(UnknownLayoutError) as info:
            read_trips(hidden)
        assert info.value.proposal == ROLES
        return
    layout = resolve_layout(list(pd.read_csv(hidden, nrows=0).columns), "auto", subset, "f")
    # Never a layout chosen because the map supplied what it lacks ("chicago" in the issue).
    assert layout.schema == "custom" and layout.mapping == ROLES
    assert set(layout.guessed) == set(ROLES) - set(subset)
    trips, report = read_trips(hidden, column_map=subset)
    assert report.tz == NEW_YORK and report.tz_inferred
    pd.testing.assert_frame_equal(_canonical(trips), reference)


@pytest.mark.parametrize(
    "subset",
    [{}, {"start_date": "date", "start_clock": "Time"}, dict(list(ROLES.items())[:3]), ROLES],
    ids=["none", "two", "three", "all"],
)
def test_the_cli_reads_like_the_form_with_any_maps(hidden, reference, subset, tmp_path):
    status, out, err = _run("inspect", hidden, *_maps(subset))
    assert "time zone: America/New_York (the zone where the trips are)" in out, err
    proposed = next(line for line in out.splitlines() if line.startswith("read it this way"))
    assert "--map start_date=date" in proposed and "--date-format dayfirst" in proposed
    assert "--clock-format hours" in proposed
    assert status == (1 if not subset else 0)  # without maps the file needs the options
    if subset != ROLES:
        return
    model_dir = tmp_path / "model"
    argv = ["train", hidden, *_maps(subset), "--out", model_dir, "--holdout", "0"]
    fast = ["--members", "2", "--widths", "1,2", "--max-basis", "60", "--seed", "0"]
    status, out, err = _run(*argv, *fast, "--quiet")
    assert status == 0, err
    assert "time zone: America/New_York (the zone where the trips are)" in out
    assert "layout: custom" in out
    model = TravelTimeModel.load(model_dir)
    assert model.tz_ == NEW_YORK
    summary = model.training_summary_
    assert summary["sha256"] == trips_sha256(read_trips(hidden, column_map=subset)[0])
    assert summary["start_time_min"].endswith("-04:00")  # EDT, not UTC


def test_cli_error_hints_speak_in_flags(hidden, tmp_path):
    status, _, err = _run("train", hidden, "--out", tmp_path / "m")
    assert status == 1
    assert "Proposed" in err and "--map start_date=date --map start_clock=Time" in err
    assert "column_map=" not in err
    status, _, err = _run("train", hidden, "--out", tmp_path / "m", "--debug")
    assert "--map travel_time_s=trip_duration" in err and "column_map=" not in err
    # Python keeps its own words
    with pytest.raises(UnknownLayoutError, match=r"column_map=\{'start_date': 'date'"):
        read_trips(hidden)


def test_form_recipe_and_python_doors_agree(hidden, reference, tmp_path):
    data, name = hidden.read_bytes(), hidden.name
    asked = uploads.read_upload(name, data, home=tmp_path)
    assert asked.needs_mapping and asked.proposal is not None
    # the form pre-fills what every door proposes, the CLI's `vrvm inspect` line too
    form = uploads.form_defaults(asked)
    assert form.column_map == ROLES
    assert form == propose_options(hidden).options
    assert (form.date_format, form.clock_format) == ("dayfirst", "hours")
    outcome = uploads.read_upload(name, data, options=form, home=tmp_path)
    assert outcome.ok and outcome.report.tz == NEW_YORK
    pd.testing.assert_frame_equal(_canonical(outcome.trips), reference)
    # the form's live preview reads the same zone
    preview = uploads.read_upload(name, data, options=form, home=tmp_path, max_rows=50)
    assert preview.report.tz == NEW_YORK
    # a recipe kept from the form reads the next upload without it, alike
    uploads.save_recipe(tmp_path, "nyc 2016", outcome)
    again = uploads.read_upload(name, data, home=tmp_path)
    assert again.recipe == "nyc 2016" and again.ok
    pd.testing.assert_frame_equal(_canonical(again.trips), reference)
    # and Python with the recipe's options
    trips, _ = read_trips(hidden, **again.options.read_kwargs())
    pd.testing.assert_frame_equal(_canonical(trips), reference)


def test_recognised_nyc_file_gives_the_same_local_hours_in_one_store(
    hidden, kaggle, reference, tmp_path
):
    """The issue's store mixed hours 4-5 h apart: a recognised NYC file and the
    hidden-style one must read the same trips, so a store holding both agrees."""
    known, report = read_trips(kaggle)
    assert report.schema == "nyc_kaggle" and report.tz == NEW_YORK and not report.tz_inferred
    pd.testing.assert_frame_equal(_canonical(known), reference)
    home = tmp_path / "home"
    first = uploads.read_upload(kaggle.name, kaggle.read_bytes(), home=home)
    store_admin.add_upload(home, first)
    asked = uploads.read_upload(hidden.name, hidden.read_bytes(), home=home)
    second = uploads.read_upload(
        hidden.name, hidden.read_bytes(), options=uploads.form_defaults(asked), home=home
    )
    message = store_admin.add_upload(home, second)
    # the same instants: every trip is already there (read in UTC they were all "new")
    assert message == f"Added 0 new trips to the store; {N_TRIPS} were already there."
    stored = Home(home).trips.load()
    assert stored.attrs["tz"] == NEW_YORK and len(stored) == N_TRIPS


def test_tz_overrides_and_unclear_zones_are_refused(hidden, tmp_path):
    trips, report = read_trips(hidden, column_map=ROLES, tz="UTC")
    assert report.tz == "UTC" and not report.tz_inferred
    assert trips["start_time"].dt.hour.iloc[0] == int(pd.read_csv(hidden)["Time"].iloc[0])
    # trips in two cities whose clocks differ: refused, never read in one of them
    frame = pd.read_csv(hidden)
    half = frame.index < len(frame) // 2  # these trips moved, whole, to Chicago
    frame.loc[half, ["pickup_latitude", "dropoff_latitude"]] += 41.88 - 40.75
    frame.loc[half, ["pickup_longitude", "dropoff_longitude"]] += -87.63 + 73.98
    path = tmp_path / "two_cities.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ZoneUnknownError, match="several time zones") as info:
        read_trips(path, column_map=ROLES)
    assert set(info.value.zones) == {NEW_YORK, "America/Chicago"}
    status, _, err = _run("inspect", path, *_maps(ROLES))
    assert status == 1 and "--tz" in err
    trips, report = read_trips(path, column_map=ROLES, tz=NEW_YORK)
    assert report.tz == NEW_YORK
    # the upload form asks for the zone instead
    outcome = uploads.read_upload(
        path.name, path.read_bytes(), options=ReadOptions(column_map=ROLES)
    )
    assert outcome.needs_mapping and outcome.zone_question is not None


def test_trips_zone_counts_zones_with_one_clock_as_one():
    # Detroit keeps New York's clock all year: one zone for local times
    lat = np.array([40.75] * 60 + [42.33] * 40)
    lon = np.array([-73.98] * 60 + [-83.05] * 40)
    assert trips_zone(lat, lon) == NEW_YORK
    with pytest.raises(ZoneUnknownError, match="no trip has usable start coordinates"):
        trips_zone(np.array([np.nan]), np.array([np.nan]), source="x.csv")
