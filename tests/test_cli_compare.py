"""``vrvm compare`` on two saved models: Parquet and CSV out, the summary, refusals."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from vrvm import TravelTimeModel, synthetic_city
from vrvm.cli import main
from vrvm.services.answers.matrix import read_points
from vrvm.services.planning.compare import compare_columns, compare_matrix

DEPART = "2024-03-05 08:15"


def run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def _fit(trips: pd.DataFrame) -> TravelTimeModel:
    return TravelTimeModel(n_members=3, max_basis=60, kernel_widths=[1.5, 3.0], random_state=0).fit(
        trips
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Model A on synthetic trips, B on the same trips 30 % slower, saved to folders."""
    trips = synthetic_city(1500, seed=1)
    folder = tmp_path_factory.mktemp("compare-models")
    _fit(trips).save(folder / "A")
    _fit(trips.assign(travel_time_s=trips["travel_time_s"] * 1.3)).save(folder / "B")
    return folder / "A", folder / "B"


@pytest.fixture
def files(tmp_path):
    """Three origins without names and two named destinations, as CSV."""
    points = synthetic_city(10, seed=21)
    pd.DataFrame({"lat": points["origin_lat"][:3], "lon": points["origin_lon"][:3]}).to_csv(
        tmp_path / "O.csv", index=False
    )
    pd.DataFrame(
        {
            "name": ["depot", "clinic, east"],
            "lat": points["dest_lat"][3:5].to_numpy(),
            "lon": points["dest_lon"][3:5].to_numpy(),
        }
    ).to_csv(tmp_path / "D.csv", index=False)
    return tmp_path / "O.csv", tmp_path / "D.csv"


def test_parquet_out_is_the_services_comparison(models, files, tmp_path):
    (model_a, model_b), (origins, destinations) = models, files
    out = tmp_path / "C.parquet"
    status, stdout, err = run(
        "compare", model_a, model_b, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "--out", out,
    )  # fmt: skip
    assert status == 0, err
    assert "3 origins x 2 destinations = 6 pairs, leaving Tue 2024-03-05 08:15" in err
    assert f"wrote 6 pairs to {out}" in err
    table = pd.read_parquet(out)
    assert list(table.columns) == ["origin", "destination", *compare_columns()]
    assert list(table.columns[:5]) == [
        "origin", "destination", "median_a_s", "median_b_s", "p_slower",
    ]  # fmt: skip
    schema = pq.read_schema(out)
    assert str(schema.field("origin").type) == "int64"
    assert str(schema.field("destination").type) == "string"
    assert str(schema.field("within_uncertainty").type) == "bool"
    expected = compare_matrix(
        TravelTimeModel.load(model_a),
        TravelTimeModel.load(model_b),
        read_points(origins),
        read_points(destinations),
        DEPART,
    )
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)
    assert table["origin"].tolist() == [2, 2, 3, 3, 4, 4]
    assert table["destination"].tolist() == ["depot", "clinic, east"] * 3
    assert (table["p_slower"] > 0.6).all() and (table["median_b_s"] > table["median_a_s"]).all()
    lines = stdout.splitlines()
    assert lines[0].startswith("compared 6 pairs: A = ")
    n_slower = int((table["p_slower"] > 0.9).sum())
    assert f"slower under B (P(slower) > 0.9): {n_slower:,} pair" in lines[1]
    change = table["median_change_s"].median()
    assert f"median change of the median (B - A): {change:+,.0f} s" in lines[2]
    assert "change within the models' own uncertainty:" in lines[3]


def test_csv_with_a_threshold_and_stdout(models, files, tmp_path):
    (model_a, model_b), (origins, destinations) = models, files
    out = tmp_path / "C.csv.gz"
    status, _, err = run(
        "compare", model_a, model_b, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "--within", "10min", "--out", out, "--quiet",
    )  # fmt: skip
    assert status == 0, err
    assert err == ""
    table = pd.read_csv(out)
    assert list(table.columns[-3:]) == [
        "p_within_600s_a",
        "p_within_600s_b",
        "p_within_600s_change",
    ]
    assert np.allclose(
        table["p_within_600s_change"], table["p_within_600s_b"] - table["p_within_600s_a"]
    )
    assert table["within_uncertainty"].dtype == bool
    status, stdout, err = run(
        "compare", model_a, model_b, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "--within", "600s",
    )  # fmt: skip
    assert status == 0, err
    piped = pd.read_csv(io.StringIO(stdout))
    pd.testing.assert_frame_equal(piped, table)
    assert "compared 6 pairs" in err  # the summary steps aside for the table


def test_the_same_model_twice_changes_nothing(models, files):
    (model_a, _), (origins, destinations) = models, files
    status, stdout, err = run(
        "compare", model_a, model_a, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART,
    )  # fmt: skip
    assert status == 0, err
    table = pd.read_csv(io.StringIO(stdout))
    assert np.allclose(table["p_slower"], 0.5) and (table["median_change_s"] == 0).all()
    assert table["within_uncertainty"].all()
    assert "within the models' own uncertainty: 6 pairs (100.0 %)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--within", "-3"], "expected a travel time > 0"),
        (["--within", "soon"], "expected a travel time > 0"),
        (["--within", "600"], "minutes or seconds"),
        (["--depart", "tomorrow-ish"], "expected a date and time"),
    ],
)
def test_usage_errors_exit_2(models, files, argv, message):
    (model_a, model_b), (origins, destinations) = models, files
    status, _, err = run(
        "compare", model_a, model_b, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, *argv,
    )  # fmt: skip
    assert status == 2
    assert message in err


def test_a_missing_option_is_a_usage_error(models, files):
    (model_a, model_b), (origins, _) = models, files
    status, _, err = run("compare", model_a, model_b, "--origins", origins, "--depart", DEPART)
    assert status == 2
    assert "--destinations" in err


def test_points_outside_the_models_areas_are_one_clear_error(models, files, tmp_path):
    (model_a, model_b), (origins, _) = models, files
    pd.DataFrame({"name": ["Chicago Loop"], "lat": [41.8781], "lon": [-87.6298]}).to_csv(
        tmp_path / "far.csv", index=False
    )
    out = tmp_path / "C.parquet"
    status, stdout, err = run(
        "compare", model_a, model_b, "--origins", origins, "--destinations", tmp_path / "far.csv",
        "--depart", DEPART, "--out", out,
    )  # fmt: skip
    assert status == 1
    assert err.startswith("vrvm: error: points outside the training area of A")
    assert "Chicago Loop (41.87810, -87.62980)" in err
    assert "Traceback" not in err and err.count("\n") == 1
    assert stdout == "" and not out.exists()


def test_bad_points_and_models_are_runtime_errors(models, files, tmp_path):
    (model_a, model_b), (origins, destinations) = models, files
    pd.DataFrame({"lat": ["41.9", "north"], "lon": [-87.6, -87.6]}).to_csv(
        tmp_path / "bad.csv", index=False
    )
    status, _, err = run(
        "compare", model_a, model_b, "--origins", tmp_path / "bad.csv", "--destinations",
        destinations, "--depart", DEPART,
    )  # fmt: skip
    assert status == 1
    assert "bad.csv: column 'lat': row 3 ('north')" in err
    status, _, err = run(
        "compare", model_a, tmp_path / "nowhere", "--origins", origins, "--destinations",
        destinations, "--depart", DEPART,
    )  # fmt: skip
    assert status == 1
    assert err.startswith("vrvm: error:") and "Traceback" not in err
