"""Tests of the vrvm command line, run in-process through vrvm.cli.main."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from vrvm.cli import PREDICTION_COLUMNS, SCORE_COLUMNS, main, read_queries
from vrvm.datasets import synthetic_city
from vrvm.model import TravelTimeModel

TRAIN_FAST = ["--members", "2", "--widths", "1,2", "--max-basis", "100", "--seed", "0"]


def run(*argv: str) -> tuple[int, str, str]:
    """Run ``vrvm argv...`` in-process; return (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """demo-data and train once for the whole module."""
    root = tmp_path_factory.mktemp("cli")
    status, _, err = run("demo-data", "--out", str(root / "trips.csv"), "--n", "2000")
    assert status == 0, err
    status, out, err = run(
        "train", str(root / "trips.csv"), "--out", str(root / "model"), *TRAIN_FAST
    )
    assert status == 0, err
    return root, out, err


def test_demo_data_says_it_is_synthetic(tmp_path):
    status, out, err = run(
        "demo-data", "--out", str(tmp_path / "d.parquet"), "--n", "50", "--seed", "3"
    )
    assert status == 0 and out == ""
    assert "SYNTHETIC" in err
    trips = pd.read_parquet(tmp_path / "d.parquet")
    expected = synthetic_city(50, seed=3)
    assert list(trips.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(trips, expected, check_like=True)


def test_train_summary_report_and_progress(workdir):
    root, out, err = workdir
    assert "trained 2 members on 2,000 trips" in out
    assert "kernel widths: 1, 2" in out
    assert "relevance vectors per member:" in out
    assert "kept 2,000 of 2,000 rows" in err  # the cleaning report, on stderr
    assert "members: 2/2 done" in err  # the progress (non-terminal form)
    model = TravelTimeModel.load(root / "model")
    assert len(model.members_) == 2 and model.kernel_widths_.tolist() == [1.0, 2.0]


def test_predict_queries_without_travel_times(workdir, tmp_path):
    root, _, _ = workdir
    queries = synthetic_city(30, seed=11).drop(columns="travel_time_s")
    queries.to_csv(tmp_path / "q.csv", index=False)
    status, _, err = run(
        "predict", str(root / "model"), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")
    )
    assert status == 0, err
    preds = pd.read_csv(tmp_path / "p.csv")
    assert list(preds.columns) == ["row", *PREDICTION_COLUMNS]
    assert preds["row"].tolist() == list(range(2, 32))
    model = TravelTimeModel.load(root / "model")
    np.testing.assert_allclose(preds["median_s"], model.predict(queries), rtol=1e-12)
    assert np.all(preds["q05_s"] < preds["q25_s"])
    assert np.all((preds["q25_s"] < preds["median_s"]) & (preds["median_s"] < preds["q75_s"]))
    assert np.all(preds["q75_s"] < preds["q95_s"])


def test_predict_scores_rows_with_travel_times_and_keeps_unreadable_rows(workdir, tmp_path):
    root, _, _ = workdir
    queries = synthetic_city(6, seed=12)
    queries["start_time"] = queries["start_time"].astype(str)
    queries.loc[1, "travel_time_s"] = np.nan  # no truth: predicted, not scored
    queries.loc[3, "start_time"] = "not a time"  # unreadable: empty row in the output
    queries.to_csv(tmp_path / "q.csv", index=False)
    status, out, err = run("predict", str(root / "model"), str(tmp_path / "q.csv"))
    assert status == 0, err
    preds = pd.read_csv(io.StringIO(out))  # --out defaults to stdout
    assert list(preds.columns) == ["row", *PREDICTION_COLUMNS, "travel_time_s", *SCORE_COLUMNS]
    assert len(preds) == 6
    assert preds.loc[3, list(PREDICTION_COLUMNS)].isna().all()
    assert preds.drop(index=3)["median_s"].notna().all()
    assert preds.loc[1, list(SCORE_COLUMNS)].isna().all()
    scored = preds.drop(index=[1, 3])
    assert scored[list(SCORE_COLUMNS)].notna().all().all()
    assert np.all((scored["cdf"] > 0) & (scored["cdf"] < 1) & (scored["crps"] > 0))
    np.testing.assert_array_equal(
        scored["travel_time_s"], queries.drop(index=[1, 3])["travel_time_s"]
    )
    assert "1 of 6 query rows could not be read" in err
    assert "rows 5" in err  # line 5 of the file


def test_read_queries_chicago_schema_naive_times_in_the_model_zone(tmp_path):
    csv = tmp_path / "chicago.csv"
    csv.write_text(
        "Trip Start Timestamp,Pickup Centroid Latitude,Pickup Centroid Longitude,"
        "Dropoff Centroid Latitude,Dropoff Centroid Longitude,Fare\n"
        "01/01/2016 12:00:00 AM,41.88,-87.63,41.90,-87.65,10.5\n"
        "\n"
        "01/01/2016 08:30:00 AM,41.88,-87.63,41.95,-87.65,12.0\n"
    )
    table = read_queries(csv, tz="America/Chicago")
    assert not table.has_travel_time
    assert table.rows.tolist() == [2, 4]  # the blank line 3 is skipped
    assert table.report.n_empty_rows == 1
    start = table.queries["start_time"]
    assert str(start.iloc[1]) == "2016-01-01 08:30:00-06:00"
    assert table.queries["travel_time_s"].isna().all()


def test_read_queries_with_travel_times_from_drop_off_times(tmp_path):
    csv = tmp_path / "tlc.csv"
    csv.write_text(
        "tpep_pickup_datetime,tpep_dropoff_datetime,pickup_latitude,pickup_longitude,"
        "dropoff_latitude,dropoff_longitude\n"
        "2016-01-01 00:00:00,2016-01-01 00:10:00,40.75,-73.99,40.76,-73.98\n"
        "2016-01-01 01:00:00,,40.75,-73.99,40.76,-73.98\n"
        "2016-01-01 02:00:00,2016-01-01 02:05:00,40.75,-73.99,40.76,-73.98\n"
    )
    table = read_queries(csv)
    assert table.has_travel_time
    assert table.queries["row"].tolist() == [2, 3, 4]
    np.testing.assert_array_equal(table.queries["travel_time_s"], [600.0, np.nan, 300.0])
    # the destination is the real one, not the helper columns
    assert table.queries["dest_lat"].tolist() == [40.76] * 3


def test_evaluate_json_and_table(workdir):
    root, _, _ = workdir
    test = root / "test.csv"
    synthetic_city(300, seed=21).to_csv(test, index=False)
    status, out, err = run("evaluate", str(root / "model"), str(test), "--json")
    assert status == 0, err
    metrics = json.loads(out)
    assert metrics["n"] == 300
    assert {"median", "mean", "nll", "crps_s", "intervals", "pit"} <= set(metrics)
    assert [i["level"] for i in metrics["intervals"]] == [0.5, 0.8, 0.9, 0.95]
    assert "kept 300 of 300 rows" in err

    status, out, err = run("evaluate", str(root / "model"), str(test))
    assert status == 0, err
    assert "RMSE (s)" in out and "CRPS (s)" in out and "PIT histogram" in out


# --------------------------------------------------------------------------- errors
def _assert_one_line_error(status: int, err: str, expected_status: int = 1) -> str:
    assert status == expected_status
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("vrvm: error: ")
    assert "Traceback" not in err
    return lines[0]


def test_binary_file_is_a_data_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x00\x01\x02 not a table")
    status, out, err = run("train", str(bad), "--out", str(tmp_path / "m"))
    line = _assert_one_line_error(status, err)
    assert "binary" in line and out == ""
    assert not (tmp_path / "m").exists()


def test_unknown_schema_is_one_line(workdir, tmp_path):
    root, _, _ = workdir
    bad = tmp_path / "ab.csv"
    bad.write_text("a,b\n1,2\n")
    status, _, err = run("train", str(bad), "--out", str(tmp_path / "m"))
    line = _assert_one_line_error(status, err)
    assert "could not recognise the trip schema" in line and "--debug" in line
    status, _, err = run("predict", str(root / "model"), str(bad))
    line = _assert_one_line_error(status, err)
    assert "could not find the query columns" in line and "'a', 'b'" in line


def test_missing_inputs_are_data_errors(workdir, tmp_path):
    root, _, _ = workdir
    status, _, err = run("predict", str(tmp_path / "nomodel"), str(root / "trips.csv"))
    assert "does not exist" in _assert_one_line_error(status, err)
    status, _, err = run("evaluate", str(root / "model"), str(tmp_path / "none.csv"))
    assert "no such file" in _assert_one_line_error(status, err)


def test_refuses_to_overwrite_a_directory_that_is_not_a_model(workdir, tmp_path):
    root, _, _ = workdir
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.tex").write_text("...")
    status, _, err = run(
        "train", str(root / "trips.csv"), "--out", str(tmp_path / "precious"), *TRAIN_FAST, "-q"
    )
    assert "not a model directory" in _assert_one_line_error(status, err)
    assert (tmp_path / "precious" / "thesis.tex").exists()


def test_debug_shows_the_traceback(tmp_path, monkeypatch):
    status, _, err = run("--debug", "predict", str(tmp_path / "nomodel"), "q.csv")
    assert (
        status == 1
        and "Traceback" in err
        and err.strip().splitlines()[-1].startswith("vrvm: error:")
    )
    status, _, err = run("predict", str(tmp_path / "nomodel"), "q.csv", "--debug")
    assert status == 1 and "Traceback" in err
    monkeypatch.setenv("VRVM_DEBUG", "1")
    status, _, err = run("predict", str(tmp_path / "nomodel"), "q.csv")
    assert status == 1 and "Traceback" in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["train", "trips.csv"],  # --out missing
        ["train", "trips.csv", "--out", "m", "--widths", "1,-2"],
        ["train", "trips.csv", "--out", "m", "--members", "0"],
        ["train", "trips.csv", "--out", "m", "--target", "minutes"],
        ["train", "trips.csv", "--out", "m", "--tz", "Mars/Olympus_Mons"],
        ["train", "trips.csv", "--out", "m", "--scheduler", "tcp://127.0.0.1:1"],
        ["demo-data"],
    ],
)
def test_usage_errors_exit_2(argv):
    status, out, err = run(*argv)
    assert status == 2
    assert "error:" in err and "Traceback" not in err and out == ""


def test_help_and_version_exit_0():
    status, out, _ = run("--help")
    assert status == 0 and "train" in out and "Exit status" in out
    status, out, _ = run("--version")
    assert status == 0 and out.startswith("vrvm ")


def test_python_dash_m_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "vrvm", "demo-data"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "--out" in result.stderr


def test_progress_bar_redraws_on_a_terminal():
    from vrvm.cli import _ProgressBar

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    bar = _ProgressBar(stream, "members", width=4)
    bar(1, 2, 0.5)
    bar(2, 2, 1.0)
    assert stream.getvalue() == ("\rmembers [##--] 1/2     0.5 s\rmembers [####] 2/2     1.0 s\n")
