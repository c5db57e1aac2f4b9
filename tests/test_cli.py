"""Tests of the vrvm command line, run in-process through vrvm.cli.main."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from vrvm.cli import main
from vrvm.services.analyst.demo import demo_predictions
from vrvm.services.answers.predictions import PREDICTION_COLUMNS, SCORE_COLUMNS
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.synthetic import SYNTHETIC_CITY_NAME, synthetic_city, synthetic_city_geojson

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
    assert "2 members on 2,000 trips" in out
    assert "kernel widths: 1, 2" in out
    assert "relevance vectors per member:" in out
    assert "kept 2,000 of 2,000 rows" in err  # the cleaning report, on stderr
    assert "members: 2/2 done" in err  # the progress (non-terminal form)
    model = TravelTimeModel.load(root / "model")
    assert len(model.members_) == 2 and model.kernel_widths_.tolist() == [1.0, 2.0]
    assert model.noise_model == "distance" and model.noise_scale_coef_.any()


def test_train_with_constant_noise(workdir, tmp_path):
    root, _, _ = workdir
    args = ("--out", str(tmp_path / "m"), *TRAIN_FAST, "--noise-model", "constant", "-q")
    status, _, err = run("train", str(root / "trips.csv"), *args, "--recalibration", "none")
    assert status == 0, err
    model = TravelTimeModel.load(tmp_path / "m")
    assert model.noise_model == "constant" and not model.noise_scale_coef_.any()
    assert model.recalibration == "none" and model.spread_.pit_map is None


def test_train_without_the_median_trees_or_the_forest(workdir, tmp_path):
    root, default_out, _ = workdir
    # 2,000 trips: the stage, and either the forest's pool or the median trees
    model = TravelTimeModel.load(root / "model")
    forest = model.forest_durations_
    assert "forest neighbours: " in default_out
    if forest.active:
        assert "median trees dropped" in default_out and "median trees: " not in default_out
    else:
        assert "forest neighbours: off" in default_out and "median trees: " in default_out
    args = ("--out", str(tmp_path / "m"), *TRAIN_FAST, "--no-median-trees")
    status, out, err = run("train", str(root / "trips.csv"), *args, "--no-forest-durations")
    assert status == 0, err
    assert "location stage: " in out and "median trees: " not in out
    assert "forest neighbours" not in out
    model = TravelTimeModel.load(tmp_path / "m")
    assert model.median_trees is False and model.location_.median_trees_ is None
    assert model.forest_durations is False and model.forest_durations_ is None


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


def test_predict_warns_of_weekend_queries_to_a_model_of_weekdays(workdir, tmp_path):
    root, _, _ = workdir
    trips = pd.read_csv(root / "trips.csv", parse_dates=["start_time"])
    weekdays = trips[trips["start_time"].dt.weekday < 5]  # UTC, the model's zone
    weekdays.to_csv(tmp_path / "weekdays.csv", index=False)
    args = ("--out", str(tmp_path / "m"), *TRAIN_FAST, "-q")
    status, _, err = run("train", str(tmp_path / "weekdays.csv"), *args)
    assert status == 0, err
    queries = synthetic_city(40, seed=11).drop(columns="travel_time_s")
    n_weekend = int((queries["start_time"].dt.weekday >= 5).sum())
    assert 0 < n_weekend < len(queries)
    queries.to_csv(tmp_path / "q.csv", index=False)
    status, out, err = run("predict", str(tmp_path / "m"), str(tmp_path / "q.csv"), "-q")
    assert status == 0, err
    assert err == (
        f"vrvm: warning: {n_weekend} of 40 queries depart on a weekend, but none of the "
        "training trips did: the model answers for them with what it learned on weekdays\n"
    )
    assert list(pd.read_csv(io.StringIO(out)).columns) == ["row", *PREDICTION_COLUMNS]
    # a model of every day says nothing
    status, _, err = run("predict", str(root / "model"), str(tmp_path / "q.csv"), "-q")
    assert status == 0 and err == ""
    # nor does one saved before it counted its trips' kinds of day (unknown, not none)
    manifest = json.loads((tmp_path / "m" / "model.json").read_text())
    del manifest["metadata"]["training_summary"]["day_kind_trips"]
    (tmp_path / "m" / "model.json").write_text(json.dumps(manifest))
    status, again, err = run("predict", str(tmp_path / "m"), str(tmp_path / "q.csv"), "-q")
    assert status == 0 and err == "" and again == out


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
    assert "1 of 6 query rows could not be used" in err
    assert "rows 5" in err  # line 5 of the file


def test_predict_blank_lines_bad_travel_times_and_drop_off_times(workdir, tmp_path):
    """Every data row gets an output row; blank lines are skipped, line numbers kept."""
    root, _, _ = workdir
    trips = synthetic_city(4, seed=13)
    end = trips["start_time"] + pd.to_timedelta(trips["travel_time_s"], unit="s")
    queries = pd.DataFrame(
        {
            "tpep_pickup_datetime": trips["start_time"].dt.strftime("%Y-%m-%d %H:%M:%S"),
            "tpep_dropoff_datetime": end.dt.strftime("%Y-%m-%d %H:%M:%S"),
            "pickup_latitude": trips["origin_lat"],
            "pickup_longitude": trips["origin_lon"],
            "dropoff_latitude": trips["dest_lat"],
            "dropoff_longitude": trips["dest_lon"],
        }
    )
    queries.loc[1, "tpep_dropoff_datetime"] = ""  # no truth: predicted, not scored
    queries.loc[2, "tpep_dropoff_datetime"] = queries.loc[2, "tpep_pickup_datetime"]  # 0 s
    lines = queries.to_csv(index=False).splitlines()
    (tmp_path / "q.csv").write_text("\n".join([*lines[:3], "", *lines[3:]]) + "\n")
    status, out, err = run("predict", str(root / "model"), str(tmp_path / "q.csv"), "--tz", "UTC")
    assert status == 0, err
    preds = pd.read_csv(io.StringIO(out))
    assert preds["row"].tolist() == [2, 3, 5, 6]  # line 4 is blank
    assert list(preds.columns) == ["row", *PREDICTION_COLUMNS, "travel_time_s", *SCORE_COLUMNS]
    assert preds.loc[2, list(PREDICTION_COLUMNS)].isna().all()  # zero travel time: unusable
    assert preds.drop(index=2)["median_s"].notna().all()
    assert preds.loc[1, list(SCORE_COLUMNS)].isna().all()
    np.testing.assert_array_equal(
        preds.loc[[0, 3], "travel_time_s"], trips.loc[[0, 3], "travel_time_s"]
    )
    assert "1 of 4 query rows could not be used" in err
    assert "non_positive_duration: 1" in err and "rows 5" in err


def test_predict_when_no_row_is_usable(workdir, tmp_path):
    root, _, _ = workdir
    queries = synthetic_city(2, seed=14).drop(columns="travel_time_s")
    queries["start_time"] = "never"
    queries.to_csv(tmp_path / "q.csv", index=False)
    status, out, err = run("predict", str(root / "model"), str(tmp_path / "q.csv"))
    assert status == 0, err
    preds = pd.read_csv(io.StringIO(out))
    assert preds["row"].tolist() == [2, 3] and preds[list(PREDICTION_COLUMNS)].isna().all().all()
    assert "2 of 2 query rows could not be used" in err


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
    assert "could not recognise the trip schema" in line and "'a', 'b'" in line
    assert "a travel time is optional" in line


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
        ["train", "trips.csv", "--out", "m", "--holdout", "1"],
        ["train", "trips.csv", "--out", "m", "--holdout", "-0.1"],
        ["train", "trips.csv", "--out", "m", "--holdout", "a fifth"],
        ["demo", "--trips", "0"],
        ["demo", "--n-jobs", "0"],
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


# --------------------------------------------------------------------------- holdout
def test_train_with_holdout_stores_and_prints_the_metrics(workdir, tmp_path):
    root, _, _ = workdir
    status, out, err = run(
        "train",
        str(root / "trips.csv"),
        "--out",
        str(tmp_path / "m"),
        *TRAIN_FAST,
        "--holdout",
        "0.25",
        "-q",
    )
    assert status == 0, err
    assert err == ""  # --quiet
    assert "2 members on 1,500 trips" in out
    summary = next(line for line in out.splitlines() if line.startswith("held out"))
    assert "500 trips (25%, split seed 0)" in summary
    assert "CRPS" in summary and "NLL" in summary and "90% interval coverage" in summary
    model = TravelTimeModel.load(tmp_path / "m")
    metrics = model.metrics_
    assert metrics["holdout"] == {
        "fraction": 0.25,
        "how": "random",
        "seed": 0,
        "n_train": 1500,
        "n_test": 500,
    }
    assert metrics["n"] == 500 and metrics["crps_s"] > 0
    assert model.training_summary_["n_trips"] == 1500
    coverage = {i["level"]: i["coverage"] for i in metrics["intervals"]}
    assert f"{100 * coverage[0.9]:.1f} %" in summary


def test_holdout_split_is_seeded_disjoint_and_in_file_order():
    from vrvm.trips.model.split import split_holdout as _split_holdout

    trips = synthetic_city(200, seed=5)
    trips["tag"] = np.arange(200)
    train, test = _split_holdout(trips, 0.1, seed=3)
    assert len(train) == 180 and len(test) == 20
    assert sorted([*train["tag"], *test["tag"]]) == list(range(200))
    assert test["tag"].is_monotonic_increasing and train["tag"].is_monotonic_increasing
    again = _split_holdout(trips, 0.1, seed=3)[1]
    other = _split_holdout(trips, 0.1, seed=4)[1]
    assert again["tag"].tolist() == test["tag"].tolist() != other["tag"].tolist()
    assert test.attrs["synthetic"] is True  # provenance survives the split
    with pytest.raises(ValueError, match="no trips to test on"):
        _split_holdout(trips.head(3), 0.1, seed=0)


# --------------------------------------------------------------------------- demo
def test_demo_trains_saves_and_shows_labelled_examples(tmp_path):
    out_dir = tmp_path / "models" / "demo"
    argv = ["demo", "--trips", "300", "--members", "2", "--n-jobs", "1", "--seed", "1"]
    status, out, err = run(*argv, "--out", str(out_dir))
    assert status == 0, err
    assert "SYNTHETIC" in err and "members: 2/2 done" in err  # progress as in train
    assert "trained 2 members on 300 synthetic trips" in out
    assert SYNTHETIC_CITY_NAME in out and "SYNTHETIC" in out and "not a real place" in out
    for label in ("Downtown -> airport", "same bank", "over river", "Short hop"):
        assert label in out
    table = out[out.index("trip ") :].splitlines()
    assert sum("08:15 (rush)" in line for line in table) == 5
    assert sum("03:00 (night)" in line for line in table) == 5
    assert f"vrvm predict {out_dir}" in out
    model = TravelTimeModel.load(out_dir)
    assert len(model.members_) == 2 and model.training_summary_["n_trips"] == 300
    # running it again replaces the model (the README's first command must be repeatable)
    small = ["demo", "--trips", "100", "--members", "1", "--n-jobs", "1", "-q"]
    status, _, err = run(*small, "--out", str(out_dir))
    assert status == 0 and err == ""
    assert len(TravelTimeModel.load(out_dir).members_) == 1


def test_demo_needs_no_arguments():
    from vrvm.cli import build_parser

    args = build_parser().parse_args(["demo"])
    assert (args.trips, args.members, args.n_jobs, args.seed) == (20_000, 8, 2, 0)
    assert args.out == "models/demo" and args.handler.__name__ == "_cmd_demo"
    assert build_parser().parse_args(["train", "t.csv", "--out", "m"]).holdout == 0


def test_demo_predictions_are_consistent(workdir):
    root, _, _ = workdir
    examples = demo_predictions(TravelTimeModel.load(root / "model"))
    assert len(examples) == 10 and examples["trip"].nunique() == 5
    assert examples["departure"].tolist() == ["08:15", "03:00"] * 5
    assert np.all(examples["lo_min"] < examples["median_min"])
    assert np.all(examples["median_min"] < examples["hi_min"])
    rush = examples.iloc[::2]
    assert np.all(rush["deadline_min"] % 5 == 0)
    assert np.all(rush["deadline_min"] >= rush["median_min"] + 1)
    assert np.all(rush["p_within"].between(0.5, 1.0))
    # the same deadline for both departures of a trip
    np.testing.assert_array_equal(
        examples["deadline_min"].iloc[::2], examples["deadline_min"].iloc[1::2]
    )
    airport = examples.iloc[0]
    assert airport["trip"] == "Downtown -> airport" and 15 < airport["distance_km"] < 25


def test_demo_places_are_on_the_synthetic_map():
    from vrvm.services.analyst.demo import DEMO_TRIPS as _DEMO_TRIPS
    from vrvm.trips.synthetic import synthetic_lat_lon as _synthetic_lat_lon

    airport = next(
        f for f in synthetic_city_geojson()["features"] if f["properties"]["kind"] == "airport"
    )
    lon, lat = airport["geometry"]["coordinates"]
    trip = next(t for t in _DEMO_TRIPS if t.label == "Downtown -> airport")
    assert _synthetic_lat_lon(*trip.dest_km) == pytest.approx((lat, lon), abs=1e-6)


def test_python_dash_m_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "vrvm", "demo-data"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "--out" in result.stderr


def test_progress_bar_redraws_on_a_terminal():
    from vrvm.cli._output import ProgressBar

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    bar = ProgressBar(stream, width=4)
    bar(1, 2, 0.5, "members")  # the fit's protocol: done, total, elapsed_s, phase
    bar(2, 2, 1.0, "members")
    first = "members [##--] 1/2  0.5 s, about 0.5 s left"
    last = "members [####] 2/2  1.0 s"  # padded over the longer line before it
    assert stream.getvalue() == f"\r{first}\r{last}{' ' * (len(first) - len(last))}\n"


def test_update_a_model_directory_and_a_store(workdir, tmp_path):
    from vrvm.trips.store.model_store import ModelStore

    root, _, _ = workdir
    new = synthetic_city(300, seed=21)
    new.to_csv(tmp_path / "new.csv", index=False)
    # a plain model directory, written to --out
    status, out, err = run(
        "update",
        str(root / "model"),
        str(tmp_path / "new.csv"),
        "--out",
        str(tmp_path / "updated"),
        "--forgetting",
        "0.999",
    )
    assert status == 0, err
    assert "updated 2 members with 300 trips" in out
    updated = TravelTimeModel.load(tmp_path / "updated")
    assert updated.n_updates_ == 300
    assert updated.update_history_[0]["forgetting"] == 0.999
    assert TravelTimeModel.load(root / "model").n_updates_ == 0  # the original is untouched
    # a model store: the update becomes a new active version that says what it learned
    store = ModelStore(tmp_path / "store")
    store.add(lambda path: TravelTimeModel.load(root / "model").save(path), info={"kind": "train"})
    status, out, err = run(
        "update", str(tmp_path / "store"), str(tmp_path / "new.csv"), "--assign", "all"
    )
    assert status == 0, err
    assert store.active_version() == 2
    info = store.versions()[-1].info
    assert info["kind"] == "update" and store.versions()[-1].parent == 1
    assert info["data"]["n_trips"] == 300 and info["assign"] == "all"
    # bad forgetting is a usage error
    status, _, err = run(
        "update", str(root / "model"), str(tmp_path / "new.csv"), "--forgetting", "1.5"
    )
    assert status == 2 and "(0, 1]" in err


def test_train_on_the_real_sf_bike_share_file_without_help(shared_data, tmp_path):
    path = shared_data("sf_bikeshare_2019-02_partial.csv")
    status, out, err = run(
        "train", str(path), "--out", str(tmp_path / "sf"), *TRAIN_FAST, "--holdout", "0.2"
    )
    assert status == 0, err
    assert "local times read in America/Los_Angeles" in err  # the report says why
    # bike trips' skewed times: a map is worth it (the members' own beside a forest's pool)
    assert "PIT map: degree" in out or "PIT map of the members alone: degree" in out
    model = TravelTimeModel.load(tmp_path / "sf")
    assert model.tz_ == "America/Los_Angeles"
    metrics = model.metrics_
    assert metrics["n"] == 2_921
    # bike trips of a few minutes: sane scores, calibrated intervals
    assert 60 < metrics["crps_s"] < 300
    coverage = {i["level"]: i["coverage"] for i in metrics["intervals"]}
    assert 0.85 < coverage[0.9] < 0.97


@pytest.mark.parametrize("evidence", ["all", "sample", "1.5"])
def test_train_a_parquet_file_in_two_stages_with_either_evidence(tmp_path, evidence):
    trips = tmp_path / "trips.parquet"
    synthetic_city(3000, seed=2).to_parquet(trips, row_group_size=1000)
    out = tmp_path / "model"
    # without the location stage: on Synthetica its trees leave the pairs nothing to add
    status, stdout, err = run(
        "train", str(trips), "--out", str(out), *TRAIN_FAST,
        "--subsample-size", "500", "--stage-one-evidence", evidence, "--no-location-stage",
    )  # fmt: skip
    assert status == 0, err
    # 2 members x 500 of 3,000 trips: each sampled trip stands for 3
    words = {"all": "counted as 3 trips", "sample": "counted as one trip", "1.5": "as 1.5 trips"}
    assert "two stages: basis chosen on a sample of" in stdout and words[evidence] in stdout
    model = TravelTimeModel.load(out)
    assert model.pair_offsets_ is not None  # summed by a third pass
    assert model.location_ is None and "location stage: " not in stdout
    assert "(1 part read three times: the third for the zone-pair offsets)" in stdout
    if evidence == "sample":  # without the offsets: two passes
        status, stdout, err = run(
            "train", str(trips), "--out", str(tmp_path / "plain"), *TRAIN_FAST,
            "--subsample-size", "1000", "--no-pair-offsets",
        )  # fmt: skip
        assert status == 0, err
        assert "(1 part read twice)" in stdout and "zone-pair offsets:" not in stdout
        # the default, fitted on the sample (2 x 1,000 trips: enough for the stage)
        assert "location stage: " in stdout
        staged = TravelTimeModel.load(tmp_path / "plain")
        assert staged.pair_offsets_ is None and staged.location_ is not None
    expected = 1.5 if evidence == "1.5" else evidence
    assert model.stage_one_evidence == expected
    assert model.training_summary_["two_stage"]["stage_one_evidence"] == expected


@pytest.mark.parametrize("value", ["x", "0.5", "inf", "nan"])
def test_train_refuses_an_unknown_stage_one_evidence(tmp_path, value):
    status, _, err = run(
        "train", "x.csv", "--out", str(tmp_path / "m"), "--stage-one-evidence", value
    )
    assert status == 2 and "--stage-one-evidence" in err
    assert "expected 'all', 'sample' or a number >= 1" in err
