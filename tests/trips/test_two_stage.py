"""Training out of core: data sets read part by part and the two-stage fit."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from vrvm.trips.files.dataset import TripDataset
from vrvm.trips.files.reader import read_trips
from vrvm.trips.model._outofcore import row_uniforms
from vrvm.trips.model.training import fit_dataset
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.synthetic import synthetic_city

# Small and fast; subsample_size makes the 12,000 trips a two-stage fit (4 x 1,000).
FAST = {
    "n_members": 4,
    "kernel_widths": [1.0, 2.0],
    "max_basis": 120,
    "subsample_size": 1000,
    "random_state": 0,
}
NO_WHOLE_FILE_CHECKS = {"max_radius_km": None, "drop_duplicates": False}


@pytest.fixture(scope="module")
def trips():
    return synthetic_city(12_000, seed=0)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, trips):
    """The trips as a folder of two Parquet files of 1,500-row row groups."""
    root = tmp_path_factory.mktemp("trips")
    trips.iloc[:7000].to_parquet(root / "a.parquet", row_group_size=1500)
    sub = root / "later"
    sub.mkdir()
    trips.iloc[7000:].to_parquet(sub / "b.parquet", row_group_size=1500)
    (root / ".hidden.parquet").write_bytes(b"not read")
    return root


@pytest.fixture(scope="module")
def queries():
    return synthetic_city(300, seed=7)


@pytest.fixture(scope="module")
def two_stage(folder):
    calls = []
    model = TravelTimeModel(**FAST)
    outcome = fit_dataset(
        model, TripDataset(folder, part_rows=3000), progress=lambda *a: calls.append(a)
    )
    return model, outcome, calls


def _close(a, b, rtol):
    return np.allclose(a.loc, b.loc, rtol=rtol) and np.allclose(a.scale, b.scale, rtol=rtol)


# ----------------------------------------------------------------------------- data sets
def test_a_folder_is_its_parquet_files_in_parts_of_whole_row_groups(folder, trips):
    data = TripDataset(folder, part_rows=3000)
    assert [p.split("/")[-1] for p in data.files] == ["a.parquet", "b.parquet"]
    assert data.n_rows == len(trips)
    assert [p.row_groups for p in data.parts] == [(0, 1), (2, 3), (4,), (0, 1), (2, 3)]
    assert [p.n_rows for p in data.parts] == [3000, 3000, 1000, 3000, 2000]
    read = pd.concat([t for part in data.parts for t, _ in data.read(part)], ignore_index=True)
    whole = read_trips(folder / "a.parquet", cleaning=NO_WHOLE_FILE_CHECKS)[0]
    first = read.iloc[:7000].drop(columns="row").reset_index(drop=True)
    pd.testing.assert_frame_equal(first, whole.reset_index(drop=True), check_like=True)
    # rows are numbered as in each file (the first data row is 2)
    assert read["row"].iloc[[0, 3000, 6999, 7000]].tolist() == [2, 3002, 7001, 2]
    # the description travels to workers (a few hundred bytes), rows do not
    again = pickle.loads(pickle.dumps(data))
    assert len(pickle.dumps(data)) < 50_000 and again.parts == data.parts


def test_a_large_row_group_is_cut_into_parts_of_whole_batches(tmp_path, trips, monkeypatch):
    import vrvm.trips.files._batches as batches
    import vrvm.trips.files.dataset as dataset

    monkeypatch.setattr(batches, "PARQUET_BATCH_ROWS", 1000)
    monkeypatch.setattr(dataset, "PARQUET_BATCH_ROWS", 1000)
    trips.iloc[:5500].to_parquet(tmp_path / "one.parquet", row_group_size=10_000)
    data = TripDataset(tmp_path / "one.parquet", part_rows=2000)
    assert [(p.row_groups, p.skip, p.n_rows) for p in data.parts] == [
        ((0,), 0, 2000),
        ((0,), 2000, 2000),
        ((0,), 4000, 1500),
    ]
    rows = [t["row"].to_numpy() for part in data.parts for t, _ in data.read(part)]
    np.testing.assert_array_equal(np.concatenate(rows), np.arange(2, 5502))
    assert [p.n_rows for p in data.split(10_000).parts] == [5500]


def test_a_csv_file_is_one_part_read_in_batches(tmp_path, trips):
    path = tmp_path / "trips.csv"
    trips.iloc[:500].to_csv(path, index=False)
    data = TripDataset(path)
    assert len(data.parts) == 1
    got = pd.concat([t for t, _ in data.read(data.parts[0])])
    assert len(got) == 500 and got["row"].iloc[0] == 2


def test_data_sets_refuse_what_they_cannot_read(tmp_path, trips):
    with pytest.raises(FileNotFoundError, match="no such file"):
        TripDataset(tmp_path / "missing.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no Parquet files"):
        TripDataset(tmp_path / "empty")
    with pytest.raises(ValueError, match="part_rows"):
        TripDataset(tmp_path, part_rows=0)
    in_memory = TripDataset.from_frame(trips.head(100))
    with pytest.raises(TypeError, match="in its own process"):
        pickle.dumps(in_memory)


def test_each_trip_draws_its_own_numbers_whatever_the_batches():
    rows = np.arange(2, 50_002)
    whole = row_uniforms(3, 1, rows, 2)
    pieces = np.concatenate(
        [row_uniforms(3, 1, rows[i : i + 777], 2) for i in range(0, 50_000, 777)]
    )
    np.testing.assert_array_equal(whole, pieces)
    assert not np.array_equal(whole, row_uniforms(3, 2, rows, 2))  # another file
    assert not np.array_equal(whole, row_uniforms(4, 1, rows, 2))  # another seed
    counts = np.bincount((whole * 8).astype(int), minlength=8)
    assert counts.min() > 0.95 * 50_000 / 8


# ----------------------------------------------------------------------------- the fit
def test_two_stage_fit_reads_everything_and_reports_its_phases(two_stage, trips):
    model, outcome, calls = two_stage
    assert outcome.n_trips == len(trips) and outcome.report.n_kept == len(trips)
    assert model.shard_sizes_.sum() == len(trips)
    assert model.shard_sizes_.min() > 0.9 * len(trips) / 4
    summary = model.training_summary_
    assert summary["n_trips"] == len(trips)
    assert summary["two_stage"]["sample_trips"] == pytest.approx(4000, rel=0.1)
    lats = np.concatenate([trips["origin_lat"], trips["dest_lat"]])
    assert summary["bbox"][0] == lats.min() and summary["bbox"][2] == lats.max()
    assert pd.Timestamp(summary["start_time_max"]) == trips["start_time"].max()
    assert summary["travel_time_s"]["max"] == trips["travel_time_s"].max()
    weekend = int((trips["start_time"].dt.weekday >= 5).sum())  # UTC, the model's zone
    assert summary["day_kind_trips"] == {"weekday": len(trips) - weekend, "weekend": weekend}
    phases = [c[3] for c in calls]
    n_parts = summary["two_stage"]["parts"]  # whole files here: 7,000 and 5,000 rows
    assert n_parts == 2
    passes = ["statistics"] * n_parts + ["offsets"] * n_parts  # offsets: the third pass
    # the members' phase reports its start (0 of 4) and each member; the location
    # stage's boosting fits (when the sample has enough trips) come before it
    stage = model.location_  # its folds, their median trees and the final ones, and its own
    location = [] if stage is None else ["location"] * (2 * stage.n_folds + 2)
    assert phases == ["reading"] * n_parts + location + ["members"] * 5 + passes
    assert [c[:2] for c in calls if c[3] == "statistics"][-1] == (2, 2)
    assert [c[:2] for c in calls if c[3] == "offsets"][-1] == (2, 2)
    assert model.pair_offsets_.levels[0]["n"].sum() == len(trips)


def test_two_stage_model_does_not_depend_on_the_parts_or_the_processes(two_stage, folder, queries):
    model, _, _ = two_stage
    other = TravelTimeModel(**{**FAST, "n_jobs": 2})
    fit_dataset(other, TripDataset(folder, part_rows=1500))
    assert _close(model.predict_dist(queries), other.predict_dist(queries), 1e-9)


def test_the_second_stage_learns_from_all_trips(two_stage):
    model, _, _ = two_stage
    test = synthetic_city(3000, seed=11)
    # a one-stage fit on as many trips as the two-stage fit's sample
    small = TravelTimeModel(**FAST).fit(synthetic_city(4000, seed=0))
    assert model.evaluate(test)["crps_s"] < small.evaluate(test)["crps_s"]
    assert all(m.n_updates_ == 0 for m in model.members_)


def test_a_small_data_set_is_fitted_in_one_stage_as_in_memory(folder, queries, trips):
    data = TripDataset(folder)
    model = TravelTimeModel(**{**FAST, "subsample_size": 5000})
    outcome = fit_dataset(model, data)
    assert "two_stage" not in model.training_summary_
    in_memory = TravelTimeModel(**{**FAST, "subsample_size": 5000}).fit(
        read_trips(folder / "a.parquet")[0].pipe(
            lambda a: pd.concat([a, read_trips(folder / "later" / "b.parquet")[0]])
        )
    )
    assert _close(model.predict_dist(queries), in_memory.predict_dist(queries), 1e-12)
    assert outcome.report.n_kept == len(trips)


def test_a_large_table_in_memory_takes_the_two_stage_path(trips, queries):
    model = TravelTimeModel(**FAST).fit(trips)
    assert model.training_summary_["two_stage"]["parts"] == 1
    assert model.shard_sizes_.sum() == len(trips)
    assert np.isfinite(model.predict(queries)).all()


def test_holdout_trips_are_kept_out_of_the_fit(folder, trips):
    model = TravelTimeModel(**FAST)
    outcome = fit_dataset(model, TripDataset(folder), holdout=0.25)
    assert outcome.n_test == pytest.approx(0.25 * len(trips), rel=0.05)
    assert model.shard_sizes_.sum() + outcome.n_test == len(trips)
    assert len(outcome.test) == outcome.n_test  # below the cap, all of them
    scores = model.evaluate(outcome.test.drop(columns=["file", "row"]))
    assert 0.8 < {e["level"]: e["coverage"] for e in scores["intervals"]}[0.9] < 0.97


def test_cleaning_out_of_core_matches_reading_whole_files(tmp_path, trips):
    messy = trips.head(4000).copy()
    messy.loc[messy.index[::50], "travel_time_s"] = -5.0  # 80 non-positive durations
    messy.loc[messy.index[7], "origin_lat"] = 0.0
    messy.loc[messy.index[7], "origin_lon"] = 0.0
    messy.to_parquet(tmp_path / "messy.parquet", row_group_size=1000)
    model = TravelTimeModel(**{**FAST, "subsample_size": 500})
    outcome = fit_dataset(model, TripDataset(tmp_path / "messy.parquet", part_rows=1000))
    _, whole = read_trips(tmp_path / "messy.parquet", cleaning={"drop_duplicates": False})
    assert outcome.report.counts == whole.counts
    assert outcome.report.n_kept == whole.n_kept == model.shard_sizes_.sum()


def test_the_first_stage_has_the_evidence_of_all_trips(two_stage, folder, monkeypatch):
    """By default each sampled trip weighs as the trips it stands for (1 / the sampling
    rate, here 3: the default bound): the first stage proposes more
    functions than on the sample's own evidence (compared without a reserve, which here
    would hold every candidate), the second stage keeps more of them, and the model
    scores better on new trips."""
    import vrvm.trips.model.training as training

    model, _, _ = two_stage
    summary = model.training_summary_["two_stage"]
    assert summary["stage_one_evidence"] == 3.0
    assert summary["stage_one_weight"] == pytest.approx(3.0)
    assert {m.get_params()["n_reserve"] for m in model.members_} == {0}  # no reserve needed
    monkeypatch.setattr(training, "RESERVE_COLUMNS", 0)
    sample = TravelTimeModel(**{**FAST, "stage_one_evidence": "sample"})
    fit_dataset(sample, TripDataset(folder, part_rows=3000))
    assert sample.training_summary_["two_stage"]["stage_one_evidence"] == "sample"
    assert model.n_relevance_.sum() > sample.n_relevance_.sum()
    test = synthetic_city(3000, seed=11)
    assert model.evaluate(test)["crps_s"] < sample.evaluate(test)["crps_s"]


def test_the_first_stage_weight_is_the_inverse_sampling_rate(folder, member_weights):
    weights = member_weights
    model = TravelTimeModel(**FAST)
    fit_dataset(model, TripDataset(folder, part_rows=3000))
    # 4 members x 1,000 of 12,000 trips: each sampled trip stands for 3 trips
    assert weights == [pytest.approx(3.0)] * 4
    weights.clear()
    in_one_stage = TravelTimeModel(**{**FAST, "subsample_size": 5000})
    fit_dataset(in_one_stage, TripDataset(folder, part_rows=3000))
    # all trips fit in the first stage: the one-stage fit's shard_weight
    assert weights == [pytest.approx(in_one_stage.shard_weight)] * 4


@pytest.mark.parametrize(("evidence", "weight"), [(2.0, 2.0), (1.0, 1.0), ("all", 3.0), (10, 3.0)])
def test_a_number_bounds_the_first_stage_weight(folder, member_weights, evidence, weight):
    """A number caps the trips a sampled trip counts for (here it stands for 3)."""
    model = TravelTimeModel(**{**FAST, "stage_one_evidence": evidence})
    fit_dataset(model, TripDataset(folder, part_rows=3000))
    assert member_weights == [pytest.approx(weight)] * 4
    assert model.training_summary_["two_stage"]["stage_one_weight"] == pytest.approx(weight)
    assert {m.get_params()["n_reserve"] for m in model.members_} == {0}


def test_a_lower_bound_keeps_fewer_functions(two_stage, folder):
    """The bound is what keeps the members small whatever N: a weight of 1.5 instead of
    3 proposes fewer functions, and the second stage keeps fewer."""
    model, _, _ = two_stage
    bounded = TravelTimeModel(**{**FAST, "stage_one_evidence": 1.5})
    fit_dataset(bounded, TripDataset(folder, part_rows=3000))
    assert bounded.n_relevance_.sum() < model.n_relevance_.sum()


@pytest.mark.parametrize("evidence", [0.5, "most", float("nan"), True])
def test_an_unknown_first_stage_evidence_is_refused(evidence):
    with pytest.raises(ValueError, match="stage_one_evidence"):
        TravelTimeModel(**{**FAST, "stage_one_evidence": evidence}).fit(synthetic_city(300))


def test_with_the_samples_evidence_a_reserve_lets_the_second_stage_add_functions(
    folder, tmp_path, monkeypatch
):
    import json

    import vrvm.trips.model.training as training

    params = {**FAST, "stage_one_evidence": "sample"}
    model = TravelTimeModel(**params)
    fit_dataset(model, TripDataset(folder, part_rows=3000))
    assert {m.get_params()["n_reserve"] for m in model.members_} == {training.RESERVE_COLUMNS}
    assert all(m._reserve is None for m in model.members_)  # used, then forgotten
    monkeypatch.setattr(training, "RESERVE_COLUMNS", 0)
    without = TravelTimeModel(**params)
    fit_dataset(without, TripDataset(folder, part_rows=3000))  # the same first stage
    evidence = [sum(m.log_evidence_ for m in fit.members_) for fit in (model, without)]
    assert evidence[0] > evidence[1]
    assert model.n_relevance_.sum() > without.n_relevance_.sum()
    test = synthetic_city(3000, seed=11)
    assert model.evaluate(test)["crps_s"] < without.evaluate(test)["crps_s"]
    # the reserve is a fitting option, not part of the saved model: same format
    saved = []
    for name, fit in (("with", model), ("without", without)):
        fit.save(tmp_path / name)
        meta = json.loads((tmp_path / name / "model.json").read_text())["metadata"]
        saved.append([sorted(m["params"]) for m in meta["members"]])
        again = TravelTimeModel.load(tmp_path / name)
        assert _close(again.predict_dist(test), fit.predict_dist(test), 1e-12)
    assert saved[0] == saved[1] and "n_reserve" not in saved[0][0]


def test_reestimating_keeps_the_first_stage_functions_without_a_reserve(folder):
    model = TravelTimeModel(**{**FAST, "refit": "reestimate"})
    fit_dataset(model, TripDataset(folder, part_rows=3000))
    assert {m.get_params()["n_reserve"] for m in model.members_} == {0}
    assert model.training_summary_["two_stage"]["refit"] == "reestimate"
