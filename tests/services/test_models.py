"""Model versions: names, captions, the versions table."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from vrvm import TravelTimeModel, read_trips
from vrvm.services.versions.models import (
    SYNTHETIC_MODEL_NAME,
    UNNAMED_MODEL,
    data_description,
    default_model_name,
    is_synthetic,
    model_caption,
    model_name,
    publish_model,
    versions_table,
)
from vrvm.trips.home import Home

OLD_HOME = Path(__file__).resolve().parents[1] / "data" / "home-0.1.0"


def test_data_description_says_synthetic(tiny_model):
    assert is_synthetic(tiny_model)
    text = data_description(tiny_model)
    assert "SYNTHETIC" in text and "3,000 trips" in text
    assert text.startswith("Synthetica (synthetic): ")


def test_versions_table_of_an_empty_store(tmp_path):
    table = versions_table(tmp_path)
    assert table.empty and "version" in table.columns and "model" in table.columns


@pytest.mark.parametrize(
    ("file_name", "name"),
    [
        ("chicago_taxi_trips.csv", "chicago taxi trips"),
        ("/home/ana/data/nyc_taxi_2016_sample.csv", "nyc taxi 2016 sample"),
        (r"C:\Users\ana\Trips\Berlin-rides.parquet", "Berlin rides"),
        ("week1.csv.gz", "week1"),
        ("trips.2024.zip", "trips 2024"),
        ("", UNNAMED_MODEL),
        ("<bytes>", UNNAMED_MODEL),
        (None, UNNAMED_MODEL),
        ("x" * 300 + ".csv", "x" * 100),
    ],
)
def test_default_model_name_from_a_file_name(file_name, name):
    assert default_model_name(file_name) == name


def test_the_demo_model_is_named_after_the_synthetic_city(tiny_home, tiny_model):
    assert tiny_model.name == SYNTHETIC_MODEL_NAME == "Synthetica (synthetic)"
    assert model_name(tiny_model) == SYNTHETIC_MODEL_NAME
    assert versions_table(tiny_home)["model"].tolist() == [SYNTHETIC_MODEL_NAME]


def test_a_0_1_0_model_without_a_name_is_named_after_its_training_data(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(OLD_HOME, home)
    old = TravelTimeModel.load(Home(home).models.active_path())
    assert old.name is None
    assert model_name(old) == SYNTHETIC_MODEL_NAME  # from its summary's city
    assert versions_table(home)["model"].tolist() == [SYNTHETIC_MODEL_NAME]
    # without a city, from the file it was read from; without either, "unnamed model"
    summary = dict(old.training_summary_)
    del summary["city"], summary["synthetic"]
    old.training_summary_ = {**summary, "source": "/home/ana/chicago_taxi_trips.csv"}
    assert model_name(old) == "chicago taxi trips"
    old.training_summary_ = {**summary, "source": "trip store /home/ana/.vrvm/trips"}
    assert model_name(old) == UNNAMED_MODEL
    del old.training_summary_["source"]
    assert model_name(old) == UNNAMED_MODEL


def test_captions_name_the_model_and_never_show_a_path(tiny_model, shared_data, tmp_path):
    path = shared_data("sf_bikeshare_2019-02_partial.csv")
    trips, _ = read_trips(path)
    assert trips.attrs["source"] == str(path)  # the reader keeps the path ...
    model = copy.deepcopy(tiny_model)
    model.name = None
    model.training_summary_ = {**model.training_summary_, "source": str(path)}
    model.training_summary_.pop("city")
    model.training_summary_.pop("synthetic")
    caption = model_caption(3, model)
    # ... the caption names the model after the file, without its folders
    assert caption.startswith("Model version 3 · sf bikeshare 2019 02 partial: 3,000 trips")
    assert "/" not in caption and str(path.parent) not in caption
    model.name = "San Francisco bikes"
    assert model_caption(3, model).startswith("Model version 3 · San Francisco bikes: ")
    # a version published by `vrvm update` records its data file: the table shows its name
    home = tmp_path / "home"
    publish_model(home, model, metrics=None, info={"kind": "update", "data": {"source": str(path)}})
    table = versions_table(home)
    assert table["data"].tolist() == ["sf_bikeshare_2019-02_partial.csv"]
    assert table["model"].tolist() == ["San Francisco bikes"]
    assert Home(home).models.versions()[0].info["name"] == "San Francisco bikes"


def test_versions_table_scores_carry_their_units(tiny_home):
    table = versions_table(tiny_home)
    info = Home(tiny_home).models.versions()[0].info["metrics"]
    assert table["hold-out CRPS (min)"].iloc[0] == pytest.approx(info["crps_s"] / 60, abs=1e-3)
    assert table["MAE (min)"].iloc[0] == pytest.approx(info["mae_s"] / 60, abs=1e-3)
    assert table["90 % interval coverage (%)"].iloc[0] == pytest.approx(
        100 * info["coverage_90"], abs=1e-3
    )
