"""``vrvm stops`` end to end: the printed legs and total, the CSV and JSON files, errors."""

from __future__ import annotations

import io
import json

import h3
import numpy as np
import pandas as pd
import pytest

from vrvm.cli import main
from vrvm.services.planning.stops import QUANTILE_LEVELS, read_stops, trip_with_stops
from vrvm.trips.synthetic import synthetic_lat_lon

DEPART = "2024-03-05 06:30"


def run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def point(x_km: float, y_km: float) -> tuple[float, float]:
    lat, lon = synthetic_lat_lon(np.array([x_km]), np.array([y_km]))
    return float(lat[0]), float(lon[0])


@pytest.fixture(scope="module")
def model_dir(tiny_home):
    from vrvm.trips.home import Home

    return Home(tiny_home).models.active_path()


@pytest.fixture(scope="module")
def model(model_dir):
    from vrvm import TravelTimeModel

    return TravelTimeModel.load(model_dir)


@pytest.fixture
def stops_file(tmp_path):
    """Base -> scene (a log-normal dwell) -> hospital, as CSV."""
    rows = []
    for name, x, y, median, p90 in [
        ("base", -6, 6, "", ""),
        ("scene", 0, 2, "10", "18"),
        ("hospital", 2, 3.5, "", ""),
    ]:
        lat, lon = point(x, y)
        rows.append(
            {"name": name, "lat": lat, "lon": lon, "dwell_median_min": median, "dwell_p90_min": p90}
        )
    path = tmp_path / "stops.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_prints_each_leg_and_the_total_as_the_service(model_dir, model, stops_file):
    status, out, err = run(
        "stops", model_dir, "--stops", stops_file, "--depart", DEPART, "--within", "45min"
    )
    assert status == 0, err
    trip = trip_with_stops(model, read_stops(stops_file), DEPART)
    legs = trip.legs()
    lines = out.splitlines()
    assert lines[0] == "base -> scene -> hospital, leaving Tue 2024-03-05 06:30 UTC"
    assert lines[2].startswith("leg  from -> to")
    first = next(line for line in lines if line.startswith("  1  base -> scene"))
    assert f"{legs['median_s'].iloc[0] / 60:.1f} (" in first
    assert "06:30" in first
    second = next(line for line in lines if line.startswith("  2  scene -> hospital"))
    assert f"{legs['depart'].iloc[1]:%H:%M} (" in second
    assert "dwell at scene: log-normal, median 10 min, 90 % within 18 min" in out
    lo, hi = trip.interval(0.9)
    assert (
        f"total: median {trip.median() / 60:.1f} min, 90 % interval {lo / 60:.1f}-"
        f"{hi / 60:.1f} min" in out
    )
    p = float(trip.prob_within(45 * 60))
    assert f"P(total within 45 min) = {100 * p:.1f} %" in out
    assert "legs independent given when each leaves" in out
    assert err == ""


def test_csv_out_holds_the_quantiles_of_the_total_and_of_each_leg(
    model_dir, model, stops_file, tmp_path
):
    out_file = tmp_path / "result" / "Q.csv"
    status, out, err = run(
        "stops", model_dir, "--stops", stops_file, "--depart", DEPART, "--out", out_file
    )
    assert status == 0, err
    assert out.startswith("base -> scene -> hospital") and f"wrote {out_file}" in err
    table = pd.read_csv(out_file)
    assert list(table.columns) == ["part", "leg", "from", "to", "level", "time_s", "arrive"]
    assert len(table) == len(QUANTILE_LEVELS) * 3
    assert list(table["part"].unique()) == ["total", "leg"]
    total = table[table["part"] == "total"]
    np.testing.assert_allclose(total["level"], QUANTILE_LEVELS)
    trip = trip_with_stops(model, read_stops(stops_file), DEPART)
    np.testing.assert_allclose(total["time_s"], trip.ppf(np.array(QUANTILE_LEVELS)), rtol=1e-12)
    arrive = pd.to_datetime(total["arrive"])
    assert str(arrive.dt.tz) == "UTC" and arrive.is_monotonic_increasing
    legs = table[table["part"] == "leg"]
    assert sorted(legs["leg"].unique()) == [1, 2]
    assert list(legs.loc[legs["leg"] == 2, "from"].unique()) == ["scene"]
    assert [p.name for p in out_file.parent.iterdir()] == ["Q.csv"]  # no temporary left


def test_json_out_is_the_whole_answer(model_dir, model, stops_file, tmp_path):
    out_file = tmp_path / "trip.json"
    status, _, err = run(
        "stops", model_dir, "--stops", stops_file, "--depart", "2024-03-05T06:30:00+00:00",
        "--within", "3000s", "--out", out_file, "-q",
    )  # fmt: skip
    assert status == 0, err
    assert err == ""
    document = json.loads(out_file.read_text())
    assert set(document) == {"departure", "time_zone", "stops", "total", "legs", "quantiles"}
    assert document["departure"] == "2024-03-05T06:30:00+00:00"
    assert [s["name"] for s in document["stops"]] == ["base", "scene", "hospital"]
    assert document["stops"][1]["dwell"] == {"kind": "lognormal", "minutes": [10.0, 18.0]}
    trip = trip_with_stops(model, read_stops(stops_file), DEPART)
    assert document["total"]["within_s"] == 3000.0
    assert document["total"]["p_within"] == pytest.approx(float(trip.prob_within(3000.0)))
    assert document["total"]["median_s"] == pytest.approx(trip.median(), rel=1e-12)
    assert [leg["to"] for leg in document["legs"]] == ["scene", "hospital"]
    assert len(document["quantiles"]) == 3 * len(QUANTILE_LEVELS)


def test_stops_given_as_zone_ids(model_dir, tmp_path):
    cells = [h3.latlng_to_cell(*point(x, y), 8) for x, y in ((-6, 6), (0, 2))]
    path = tmp_path / "zones.csv"
    path.write_text("zone,dwell_min\n" + f"{cells[0]},\n{cells[1]},\n")
    status, out, err = run("stops", model_dir, "--stops", path, "--depart", DEPART)
    assert status == 0, err
    assert f"  1  {cells[0]} -> {cells[1]}" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--depart", DEPART], "the following arguments are required: --stops"),
        (["--stops", "S.csv", "--depart", DEPART, "--within", "fast"], "--within: expected a"),
        (["--stops", "S.csv", "--depart", DEPART, "--within=0min"], "--within: expected a"),
        (["--stops", "S.csv", "--depart", "soon"], "--depart: expected a date and time"),
        (["--stops", "S.csv", "--depart", DEPART, "--out", "Q.txt"], "ending in .csv"),
    ],
)
def test_usage_errors(model_dir, argv, message):
    status, out, err = run("stops", model_dir, *argv)
    assert status == 2
    assert message in err and out == ""


def test_data_errors_name_the_file_column_and_row(model_dir, stops_file, tmp_path):
    bad = tmp_path / "bad.csv"
    frame = pd.read_csv(stops_file, dtype=str, keep_default_na=False)
    frame.loc[1, "dwell_p90_min"] = "5"  # below the median of 10
    frame.to_csv(bad, index=False)
    out_file = tmp_path / "Q.csv"
    out_file.write_text("kept\n")
    status, out, err = run(
        "stops", model_dir, "--stops", bad, "--depart", DEPART, "--out", out_file
    )
    assert status == 1 and out == ""
    assert err.startswith(f"vrvm: error: {bad}: column 'dwell_median_min': row 3: ")
    assert "at least its median" in err and "Traceback" not in err
    assert out_file.read_text() == "kept\n"  # untouched

    one = tmp_path / "one.csv"
    frame.head(1).to_csv(one, index=False)
    status, _, err = run("stops", model_dir, "--stops", one, "--depart", DEPART)
    assert status == 1 and "at least two stops, got 1" in err

    same = tmp_path / "same.csv"
    pd.concat([frame.head(1), frame.head(1).assign(name="again")]).to_csv(same, index=False)
    status, _, err = run("stops", model_dir, "--stops", same, "--depart", DEPART)
    assert status == 1 and "stops 1 and 2 (base, again) are the same point" in err

    status, _, err = run("stops", model_dir, "--stops", tmp_path / "nope.csv", "--depart", DEPART)
    assert status == 1 and "nope.csv: no such file" in err
