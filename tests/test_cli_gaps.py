"""``vrvm gaps`` end to end on the tiny demo model: CSV and GeoJSON, an origin, bad input."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from vrvm.cli import main
from vrvm.services.map.area import build_service_area
from vrvm.services.planning.data_gaps import zone_gaps
from vrvm.trips.home import Home

DEPART = "2024-03-05 08:15"
TRIP_COLUMNS = {"start_time", "travel_time_s", "dest_lat", "dest_lon"}


def run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def model_dir(tiny_home):
    return Home(tiny_home).models.active_path()


def test_csv_with_the_homes_trips(tiny_home, tiny_model, model_dir, tmp_path):
    out = tmp_path / "gaps.csv"
    status, stdout, stderr = run(
        "gaps", model_dir, "--depart", DEPART, "--home", tiny_home, "--destinations", 40,
        "--out", out,
    )  # fmt: skip
    assert status == 0, stderr
    table = pd.read_csv(out)
    assert "the model's own uncertainty is" in stdout and "1. Zone" in stdout
    assert f"wrote {len(table):,} zones" in stderr
    assert not (TRIP_COLUMNS & set(table.columns))
    assert table["data"].iloc[0].startswith("SYNTHETIC")
    assert (table["support_trips"] >= 0).all() and table["support_trips"].sum() > 0
    # the same numbers as the service on the same area and departure
    trips = Home(tiny_home).training_trip_table(tiny_model)
    area = build_service_area(tiny_model, trips=trips)
    expected = zone_gaps(
        tiny_model, area, pd.Timestamp(DEPART, tz=tiny_model.tz_), max_destinations=40
    )
    np.testing.assert_allclose(table["epistemic_share"], expected["epistemic_share"], rtol=1e-5)
    assert table["rank"].tolist() == expected["rank"].tolist()


def test_geojson_from_an_origin_with_a_trip_file(tiny_home, tiny_model, model_dir, tmp_path):
    trips = Home(tiny_home).load_training_trips(tiny_model)
    trips.to_csv(tmp_path / "trips.csv", index=False)
    area = build_service_area(tiny_model, trips=trips)
    busiest = area.grid.sort_values("n_points", ascending=False).iloc[0]
    out = tmp_path / "gaps.geojson"
    status, _, stderr = run(
        "gaps", model_dir, "--depart", DEPART, "--depart", "2024-03-05 17:30",
        f"--origin={busiest['lat']},{busiest['lon']}", "--trips", tmp_path / "trips.csv",
        "--out", out, "-q",
    )  # fmt: skip
    assert status == 0, stderr
    document = json.loads(out.read_text())
    assert document["type"] == "FeatureCollection" and len(document["features"]) == len(area.grid)
    assert len(document["departures"]) == 2 and document["scale"] == "log-seconds"
    assert document["origin"]["lat"] == pytest.approx(busiest["lat"])
    props = [f["properties"] for f in document["features"]]
    assert sum(p["epistemic_share"] is None for p in props) == 1  # the origin's own zone
    assert {"support_trips", "support_trips_at_time", "rank"} <= set(props[0])
    assert stderr == ""


def test_without_trips_no_support(model_dir, tmp_path):
    out = tmp_path / "gaps.csv"
    status, _, stderr = run(
        "gaps", model_dir, "--depart", DEPART, "--destinations", 10, "--out", out
    )
    assert status == 0, stderr
    assert "no support counts" in stderr
    table = pd.read_csv(out)
    assert "support_trips" not in table.columns and len(table) > 1


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["--depart", DEPART, "--out", "gaps.txt"], 2, "ending in .csv or .geojson"),
        (["--depart", "soon", "--out", "g.csv"], 2, "expected a date and time"),
        (["--out", "g.csv"], 2, "--depart"),
        (["--depart", DEPART, "--origin", "91,0", "--out", "g.csv"], 2, "--origin"),
        (["--depart", DEPART, "--trips", "t.csv", "--home", "h", "--out", "g.csv"], 2, "--home"),
        (["--depart", DEPART, "--home", "nowhere", "--out", "g.csv"], 1, "no such data home"),
        (
            ["--depart", DEPART, "--origin", "0,0", "--destinations", "5", "--out", "g.csv"],
            1,
            "vrvm: error:",
        ),
    ],
)
def test_bad_input(model_dir, tmp_path, monkeypatch, argv, status, message):
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run("gaps", model_dir, *argv)
    assert code == status
    assert message in stderr
    assert "Traceback" not in stderr
    assert not list(tmp_path.glob("g*.*"))


def test_a_home_without_the_models_trips(model_dir, tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, stderr = run(
        "gaps", model_dir, "--depart", DEPART, "--home", tmp_path / "empty", "--out",
        tmp_path / "g.csv",
    )  # fmt: skip
    assert code == 1
    assert "keeps no training trips" in stderr and "--trips" in stderr
