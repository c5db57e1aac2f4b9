"""The Retrain page's upload on real files and every way of naming columns: the real NYC
and San Francisco samples without help, the mapping form with formats, recipes that
remember a mapping, and zone-id trips with a zone file kept in the home."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("streamlit")

from tests.app.test_pages import RETRAIN, metrics, no_exception, run_app, shown, table_with
from tests.trips.test_formats import _day_first_decimal_hour_csv, _zone_id_version
from vrvm.trips.home import Home


def _upload(at, name: str, data: bytes):
    at.file_uploader(key="retrain_upload").upload(name, data, "text/csv").run()
    no_exception(at)
    return at


def _retrain_page():
    return run_app().switch_page(RETRAIN).run()


def _role(at, role: str):
    return next(s for s in at.selectbox if (s.key or "").endswith(f"_role_{_fid(at)}_{role}"))


def _fid(at) -> str:
    """The form's file id, from the key of its first role selectbox."""
    key = next(s.key for s in at.selectbox if (s.key or "").endswith("_origin_lat"))
    return key[len("retrain_role_") : -len("_origin_lat")]


def test_real_nyc_sample_uploads_without_help(vrvm_home, shared_data):
    at = _upload(_retrain_page(), "nyc.csv", shared_data("nyc_taxi_2016_sample.csv").read_bytes())
    assert metrics(at)["Kept"] == "8,000"
    captions = " ".join(c.value for c in at.caption)
    assert "numbers with Sunday = 1" in captions and "No calendar date" in captions
    preview = table_with(at, "start (local)")
    assert preview["start (local)"].iloc[0] == "Thu 10:48"  # weekday and clock, no date
    # Another city than the (synthetic) active model's: flagged before it is added.
    assert any("cannot update this model" in i.value for i in at.info)
    next(b for b in at.button if b.label.startswith("Add 8,000 trips")).click().run()
    no_exception(at)
    assert metrics(at)["Trips in the store"] == "8,000"
    # Train a new model of its own on them and publish it under its name.
    at.text_input(key="retrain_name").set_value("NYC taxi 2016")
    at.number_input(key="retrain_members").set_value(2)
    at.text_input(key="retrain_widths").input("1.5, 3")
    at.number_input(key="retrain_max_basis").set_value(100)
    at.checkbox(key="retrain_option_update").uncheck()
    at.button(key="FormSubmitter:retrain_settings-Train and evaluate").click().run()
    no_exception(at)
    scores = table_with(at, "trips scored")
    assert scores.loc["trips scored", "Full retrain"] == 1600
    crps_min = scores.loc["CRPS (min)", "Full retrain"]
    assert 1.5 < crps_min < 4.5  # sane for Manhattan taxi trips (2.6 min with 8 members)
    next(b for b in at.button if b.label.startswith("Publish “Full retrain”")).click().run()
    no_exception(at)
    at.switch_page("app.py").run()
    caption = at.caption[0].value
    assert "NYC taxi 2016" in caption and "no calendar date" in caption


def test_real_sf_bike_share_uploads_without_help(vrvm_home, shared_data):
    data = shared_data("sf_bikeshare_2019-02_partial.csv").read_bytes()
    at = _upload(_retrain_page(), "sf.csv", data)
    assert int(metrics(at)["Kept"].replace(",", "")) > 14000
    assert any("America/Los_Angeles (where the trips are)" in c.value for c in at.caption)


def _map_nyc_split(at) -> None:
    """Name every role of the day-first, decimal-hour NYC file (``p_`` columns) in the form."""
    for role, column in (
        ("start_date", "p_date"),
        ("start_clock", "p_time"),
        ("origin_lat", "p_latitude"),
        ("origin_lon", "p_longitude"),
        ("dest_lat", "dropoff_latitude"),
        ("dest_lon", "dropoff_longitude"),
        ("travel_time_s", "trip_duration"),
    ):
        _role(at, role).set_value(column)


def test_the_form_reads_day_first_dates_and_decimal_hours_and_keeps_a_recipe(vrvm_home):
    data = _day_first_decimal_hour_csv().replace("pickup_", "p_").encode()
    at = _upload(_retrain_page(), "nyc_split.csv", data)
    assert any("do not match a known export" in w.value for w in at.warning)
    fid = _fid(at)
    _map_nyc_split(at)
    at.text_input(key=f"retrain_tz_{fid}").set_value("UTC").run()
    no_exception(at)
    # the trips as read so far, live, before the whole file is read
    live = next(c.value for c in at.caption if c.value.startswith("Preview of the first"))
    assert live.startswith("Preview of the first 300 rows") and "day-first dates" in live
    assert table_with(at, "start (local)")["start (local)"].str.match(r"20\d\d-").all()
    at.text_input(key=f"retrain_recipe_{fid}").set_value("taxi course")
    next(b for b in at.button if b.label == "Read with these columns").click().run()
    no_exception(at)
    assert int(metrics(at)["Kept"].replace(",", "")) > 250
    assert any("'p_date': day-first dates" in shown(c.value) for c in at.caption)
    assert any("Saved the recipe 'taxi course'" in s.value for s in at.success)
    assert Home(vrvm_home).recipes.list()[0].options.column_map["start_date"] == "p_date"

    # The next file with the same header is read with the recipe, without the form.
    again = _upload(_retrain_page(), "next_month.csv", data)
    assert not [w for w in again.warning if "known export" in w.value]
    assert any("recipe “taxi course”" in i.value for i in again.info)
    assert int(metrics(again)["Kept"].replace(",", "")) > 250


def test_ambiguous_dates_ask_for_the_order(vrvm_home):
    rows = "".join(
        f"{d}/0{m}/2016 0{h}:30,{600 + i},41.88,-87.63,41.90,-87.65\n"
        for i, (d, m, h) in enumerate([(3, 4, 8), (5, 6, 9), (1, 2, 7)] * 5)
    )
    data = ("start_time,travel_time_s,origin_lat,origin_lon,dest_lat,dest_lon\n" + rows).encode()
    at = _upload(_retrain_page(), "amb.csv", data)
    assert any("read both day-first (3 April 2016)" in w.value for w in at.warning)
    fid = _fid(at)
    assert at.selectbox(key=f"retrain_date_{fid}").value == "dayfirst"  # the first choice
    at.selectbox(key=f"retrain_date_{fid}").set_value("monthfirst")
    next(b for b in at.button if b.label == "Read with these columns").click().run()
    no_exception(at)
    assert metrics(at)["Kept"] == "15"
    assert table_with(at, "start (local)")["start (local)"].iloc[0] == "2016-03-04 08:30"


def test_zone_id_trips_with_a_zone_file_kept_in_the_home(vrvm_home, shared_data, tmp_path):
    path, _, _ = _zone_id_version(shared_data, tmp_path)
    Home(vrvm_home).zones.add(
        "nyc_taxi_zones",
        shared_data("nyc_taxi_zones.geojson").read_bytes(),
        id_property="LocationID",
    )
    at = _upload(_retrain_page(), "yellow.csv", path.read_bytes())
    assert any("given by zone ids" in e.value for e in [*at.error, *at.warning])
    fid = _fid(at)
    at.selectbox(key=f"retrain_zones_{fid}").set_value("nyc_taxi_zones")
    next(b for b in at.button if b.label == "Read with these columns").click().run()
    no_exception(at)
    assert int(metrics(at)["Kept"].replace(",", "")) > 7000
    reasons = table_with(at, "reason")
    assert "unknown_zone" in reasons["reason"].tolist()
    assert isinstance(reasons, pd.DataFrame)


def test_user_text_reaches_the_page_escaped(vrvm_home):
    """A file name that is Markdown (a link, an image, an icon) shows as written."""
    name = "[click](http://example.org)![x](http://example.org/p.png):material/bomb:.csv"
    at = _upload(_retrain_page(), name, b"a,b,c\n1,2,3\n")
    texts = [m.value for m in at.markdown] + [w.value for w in at.warning]
    mine = [t for t in texts if "click" in t]
    assert mine and all("[click](" not in t and ":material/bomb:" not in t for t in mine)
    assert any(shown(t).startswith(f"**{name}**") for t in mine)


def test_form_reads_a_file_that_names_no_city_where_its_trips_are(vrvm_home, shared_data):
    """Issue 31: the form guessed all seven roles of a NYC file of the kind that circulates
    (day-first ``date``, decimal-hour ``Time``) and read it in UTC; it is read in New
    York, which the preview and the report say, with the formats pre-filled."""
    sample = pd.read_csv(shared_data("nyc_taxi_2016_sample.csv")).dropna(subset=["duration"])
    sample = sample.head(300)
    hidden = pd.DataFrame(
        {
            "date": sample["day"].astype(str) + "-5-2016",
            "Time": sample["hour"] + sample["minute"] / 60,
            "pickup_latitude": sample["pickup_latitude"],
            "pickup_longitude": sample["pickup_longitude"],
            "dropoff_latitude": sample["dropoff_latitude"],
            "dropoff_longitude": sample["dropoff_longitude"],
            "trip_duration": sample["duration"].astype(int),
        }
    )
    at = _upload(_retrain_page(), "nyc_2016.csv", hidden.to_csv(index=False).encode())
    assert _role(at, "start_date").value == "date" and _role(at, "start_clock").value == "Time"
    assert _role(at, "travel_time_s").value == "trip_duration"
    dates = next(s for s in at.selectbox if s.key == f"retrain_date_{_fid(at)}")
    clock = next(s for s in at.selectbox if s.key == f"retrain_clock_{_fid(at)}")
    assert (dates.value, clock.value) == ("dayfirst", "hours")  # as `vrvm inspect` proposes
    captions = " ".join(shown(c.value) for c in at.caption)
    assert "times read in America/New_York (where the trips are)" in captions
    next(b for b in at.button if b.label == "Read with these columns").click().run()
    no_exception(at)
    assert metrics(at)["Kept"] == "300"
    captions = " ".join(shown(c.value) for c in at.caption)
    assert "Schema: custom · times read in America/New_York (where the trips are)" in captions
    preview = table_with(at, "start (local)")
    first = sample.iloc[0]
    assert preview["start (local)"].iloc[0] == (
        f"2016-05-{int(first['day']):02d} {int(first['hour']):02d}:{int(first['minute']):02d}"
    )
