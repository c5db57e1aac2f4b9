"""Retraining: candidates from the store, scored on one hold-out, published."""

from __future__ import annotations

import shutil

import pytest

from vrvm import TravelTimeModel, synthetic_city
from vrvm.services.analyst.evaluation import (
    calibration_curve,
    metrics_table,
    pit_frame,
    predicted_vs_observed,
)
from vrvm.services.analyst.retrain import (
    TrainingSettings,
    parse_widths,
    publish_candidate,
    run_retrain,
    suggest_model_name,
    train_candidates,
)
from vrvm.services.versions.models import StoreConflictError, activate_version, versions_table
from vrvm.trips.home import Home


def test_parse_widths():
    assert parse_widths(" Auto ") == "auto"
    assert parse_widths("1, 2.5") == (1.0, 2.5)
    assert parse_widths([1, 2]) == (1.0, 2.0)
    for bad in ("x", "0", "-1, 2", "inf"):
        with pytest.raises(ValueError):
            parse_widths(bad)


SMALL = TrainingSettings(n_members=2, kernel_widths=(1.5, 3.0), max_basis=80, holdout_fraction=0.25)


def test_retrain_flow_from_store_to_published_version(tmp_path, tiny_home, tiny_model):
    home = tmp_path / "home"
    shutil.copytree(tiny_home, home)
    store = Home(home).trips
    added = store.add(synthetic_city(800, seed=21), source="upload.csv")
    assert added.n_added == 800
    calls = []
    result = train_candidates(
        home,
        SMALL,
        ["full", "update"],
        active=tiny_model,
        active_version=1,
        progress=lambda *args: calls.append(args),
    )
    assert (len(result.train), len(result.holdout)) == (600, 200)
    full, update = "Full retrain", "Update with new trips (fast)"
    assert list(result.candidates) == [full, update] and result.errors == {}
    assert result.kinds == {full: "train", update: "update"}
    assert result.trips_used == {full: 600, update: 600}  # added after version 1: all new
    assert result.candidates[update] is not tiny_model
    members = [c for c in calls if c[0] == "full" and c[4] == "members"]
    assert members[-1][1:3] == (2, 2)  # progress(option, done, total, elapsed_s, phase)
    assert set(result.metrics) == {full, update, "active (v1)"}
    assert result.comparable and result.refused_update is None and not result.new_area
    assert result.area_check.ok
    # a retrain of the same city keeps the active model's name; so does the update
    assert {m.name for m in result.candidates.values()} == {"Synthetica (synthetic)"}
    table = result.metrics_table()
    assert table.equals(metrics_table(result.metrics))
    assert list(table.columns) == [full, update, "active (v1)"]
    assert table.loc["trips scored"].tolist() == [200, 200, 200]
    assert table.loc["CRPS (min)", "Full retrain"] == pytest.approx(
        result.metrics["Full retrain"]["crps_s"] / 60
    )
    # publishing makes a new active version and leaves the old one re-activatable
    version = publish_candidate(home, result, "Full retrain")
    models = Home(home).models
    assert version == 2 and models.active_version() == 2
    info = models.versions()[-1].info
    assert models.versions()[-1].parent == 1
    assert info["kind"] == "train" and info["n_trips"] == 600
    assert info["name"] == "Synthetica (synthetic)" and info["new_area"] is False
    published = TravelTimeModel.load(models.active_path())
    assert published.metrics_["n"] == 200
    assert Home(home).load_training_trips(published) is not None
    # the other candidate was built on version 1, which is no longer active: publishing
    # it would fork the lineage, so it is refused and nothing is written
    with pytest.raises(StoreConflictError, match=r"built on version 1.*now 2"):
        publish_candidate(home, result, update)
    assert models.latest_version() == 2
    versions = versions_table(home)
    assert versions["version"].tolist() == [2, 1]
    assert versions["active"].tolist() == [True, False]
    assert versions["kind"].tolist() == ["train", "demo"]
    assert versions["lineage"].tolist() == ["v2 ← v1", "v1"]
    activate_version(home, 1)
    table = versions_table(home)
    assert table["active"].tolist() == [False, True]
    assert table["state"].tolist() == ["", "active"]


def test_a_failed_training_publishes_nothing(tmp_path, tiny_home, tiny_model):
    home = tmp_path / "home"
    shutil.copytree(tiny_home, home)
    trips = synthetic_city(60, seed=4)
    bad = TrainingSettings(n_members=40, kernel_widths=(1.0,), max_basis=10)
    result = run_retrain(trips, bad, active=tiny_model, active_version=1)
    assert result.candidates == {} and "too few" in result.errors["Full retrain"]
    empty = run_retrain(
        trips,
        SMALL,
        options=["update"],
        active=tiny_model,
        active_version=1,
        new_trips=trips.iloc[:0],
    )
    assert "no trips were added" in empty.errors["Update with new trips (fast)"]
    assert Home(home).models.active_version() == 1
    assert len(Home(home).models.versions()) == 1


def test_retrain_charts_data(tiny_model):
    holdout = synthetic_city(300, seed=9)
    y = holdout["travel_time_s"].to_numpy()
    dist = tiny_model.predict_dist(holdout)
    pvo = predicted_vs_observed(dist, y, max_points=100)
    assert len(pvo) == 100
    assert (pvo["lower_min"] <= pvo["median_min"]).all() and (
        pvo["median_min"] <= pvo["upper_min"]
    ).all()
    assert pvo["inside"].mean() == pytest.approx(0.8, abs=0.15)
    curve = calibration_curve(dist, y, levels=(0.5, 0.9))
    assert curve["nominal"].tolist() == [0.5, 0.9]
    assert curve["observed"].is_monotonic_increasing
    metrics = tiny_model.evaluate(holdout)
    pit = pit_frame(metrics)
    assert len(pit) == 10 and pit["density"].mean() == pytest.approx(1.0)
    assert pit_frame({}).empty


def test_update_learns_only_the_new_trips_of_the_training_part(tiny_model):
    trips = synthetic_city(400, seed=5)
    result = run_retrain(
        trips,
        SMALL,
        options=["update"],
        active=tiny_model,
        active_version=1,
        new_trips=trips.head(100),
    )
    name = "Update with new trips (fast)"
    candidate = result.candidates[name]
    assert result.kinds[name] == "update"
    assert candidate is not tiny_model and tiny_model.n_updates_ == 0  # active model untouched
    held_out = int(result.holdout["start_time"].isin(trips.head(100)["start_time"]).sum())
    assert candidate.n_updates_ == 100 - held_out == result.trips_used[name]
    assert 0 < candidate.n_updates_ < 100


def test_the_cli_and_the_retrain_page_hold_out_the_same_trips(tmp_path):
    """``vrvm train --holdout 0.2 --seed 0`` and the Retrain page (fraction 0.2, seed 0)
    score a model on the same trips, even when the store lists them in another order."""
    import io

    from vrvm.cli import main
    from vrvm.services.analyst.store_admin import add_upload
    from vrvm.services.analyst.uploads import read_upload
    from vrvm.trips.table import trip_ids

    trips = synthetic_city(500, seed=11)
    trips.to_csv(tmp_path / "trips.csv", index=False)
    argv = ["train", str(tmp_path / "trips.csv"), "--out", str(tmp_path / "cli")]
    argv += ["--holdout", "0.2", "--seed", "0", "--members", "2", "--widths", "1.5,3"]
    argv += ["--max-basis", "80", "--n-jobs", "1", "-q"]
    assert main(argv, stdout=io.StringIO(), stderr=io.StringIO()) == 0
    cli_model = TravelTimeModel.load(tmp_path / "cli")

    # the page: the same trips uploaded in another order, then a retrain with the same split
    home = tmp_path / "home"
    shuffled = trips.sample(frac=1.0, random_state=4)
    outcome = read_upload("shuffled.csv", shuffled.to_csv(index=False).encode())
    add_upload(home, outcome)
    settings = TrainingSettings(
        n_members=2, kernel_widths=(1.5, 3.0), max_basis=80, holdout_fraction=0.2
    )
    result = train_candidates(home, settings, ["full"], active=cli_model, active_version=None)

    cli_metrics = cli_model.metrics_
    page_metrics = result.metrics[result.active_name]
    assert len(result.holdout) == cli_metrics["holdout"]["n_test"] == page_metrics["n"] == 100
    assert page_metrics["crps_s"] == pytest.approx(cli_metrics["crps_s"], rel=1e-12)
    assert page_metrics["nll"] == pytest.approx(cli_metrics["nll"], rel=1e-12)
    # the check can fail: another seed holds out other trips, and the scores differ
    other = train_candidates(
        home,
        TrainingSettings(**{**settings.__dict__, "random_state": 1}),
        ["full"],
        active=cli_model,
        active_version=None,
    )
    assert set(trip_ids(other.holdout)) != set(trip_ids(result.holdout))
    assert other.metrics[other.active_name]["crps_s"] != pytest.approx(cli_metrics["crps_s"])


def _far_away(trips, dlat: float = 81.88, dlon: float = -57.63):
    """The trips moved by (dlat, dlon) degrees: from the synthetic city to Chicago."""
    out = trips.copy()
    for column in ("origin_lat", "dest_lat"):
        out[column] += dlat
    for column in ("origin_lon", "dest_lon"):
        out[column] += dlon
    return out


def test_an_update_with_another_citys_trips_is_refused(tmp_path, tiny_home, tiny_model):
    """Chicago-like trips cannot update the synthetic city's model: the update is refused
    with the numbers, and the full retrain is a new model of its own."""
    home = tmp_path / "home"
    shutil.copytree(tiny_home, home)
    Home(home).trips.add(
        _far_away(synthetic_city(600, seed=21)), source="/tmp/chicago_trips.csv", synthetic=False
    )
    assert suggest_model_name(home, tiny_model) == "chicago trips"
    result = train_candidates(home, SMALL, ["full", "update"], active=tiny_model, active_version=1)
    update = "Update with new trips (fast)"
    refused = result.refused_update
    assert refused is not None and not refused.ok and refused.share_inside == 0.0
    assert refused.distance_km > 8000 and refused.n_trips == 450
    assert result.errors == {update: refused.reason}
    assert refused.reason.startswith("Only 0% of the ends of the 450 trips")
    assert list(result.candidates) == ["Full retrain"] and result.new_area
    assert not result.comparable
    new_model = result.candidates["Full retrain"]
    assert new_model.name == "chicago trips"
    assert tiny_model.n_updates_ == 0  # the active model is untouched
    version = publish_candidate(home, result, "Full retrain")
    info = Home(home).models.versions()[-1].info
    assert Home(home).models.versions()[-1].parent is None
    assert version == 2 and info["new_area"] is True
    assert info["name"] == "chicago trips"
    assert versions_table(home)["model"].tolist() == ["chicago trips", "Synthetica (synthetic)"]


def test_an_update_with_trips_of_the_same_area_is_accepted(tiny_model):
    trips = synthetic_city(400, seed=6)
    near = _far_away(trips, dlat=0.01, dlon=0.01)  # about 1 km away: the same city
    result = run_retrain(near, SMALL, options=["update"], active=tiny_model, active_version=1)
    assert result.errors == {} and result.refused_update is None
    assert list(result.candidates) == ["Update with new trips (fast)"]


def test_the_name_field_and_its_default(tmp_path, tiny_model):
    home = tmp_path / "home"
    assert suggest_model_name(home, tiny_model) == "Synthetica (synthetic)"  # empty store
    assert suggest_model_name(home, None) == "unnamed model"
    Home(home).trips.add(synthetic_city(100, seed=3), source="week 2.csv")
    assert suggest_model_name(home, tiny_model) == "Synthetica (synthetic)"  # same area
    assert suggest_model_name(home, None) == "week 2 (synthetic)"
    Home(home).trips.add(synthetic_city(100, seed=4), source="synthetic demo trips")
    assert suggest_model_name(home, None) == "Synthetica (synthetic)"
    trips = synthetic_city(300, seed=4)
    named = TrainingSettings(**{**SMALL.__dict__, "name": "  Synthetica, March  "})
    result = run_retrain(trips, named, active=tiny_model, active_version=1)
    assert result.candidates["Full retrain"].name == "Synthetica, March"
    unnamed = run_retrain(trips, SMALL, active=None)
    assert unnamed.candidates["Full retrain"].name is None


def test_a_large_hold_out_is_scored_on_a_uniform_sample(tiny_model, monkeypatch):
    import vrvm.services.analyst.retrain as retrain

    trips = synthetic_city(800, seed=12)
    whole = run_retrain(trips, SMALL, active=tiny_model, active_version=1)
    assert whole.n_scored == len(whole.holdout) == 200
    assert all(s.metrics["n"] == 200 for s in whole.scores.values())
    monkeypatch.setattr(retrain, "MAX_TEST_TRIPS", 50)  # stands for 100,000
    sampled = run_retrain(trips, SMALL, active=tiny_model, active_version=1)
    assert sampled.n_scored == 50 and len(sampled.holdout) == 200
    assert {s.metrics["n"] for s in sampled.scores.values()} == {50}  # every model, the same
