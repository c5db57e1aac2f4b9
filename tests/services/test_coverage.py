"""Reach from an origin: coverage grid, colours, exports."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from vrvm.services.answers.forecast import forecast_od
from vrvm.services.display.colours import THIN_SWATCH
from vrvm.services.map.places import place_from_zone
from vrvm.services.map.support import THIN_TRIPS, minute_of_day, pair_support
from vrvm.services.planning.coverage import (
    THIN_LEGEND,
    coverage_colors,
    coverage_csv,
    coverage_geojson,
    coverage_grid,
    coverage_map,
    reachable_summary,
)

DEPARTURE = pd.Timestamp("2024-03-05 08:15", tz="UTC")


def test_coverage_grid_by_median_and_probability(tiny_model, tiny_area, pair):
    origin, _ = pair
    grid = coverage_grid(tiny_model, tiny_area, origin, DEPARTURE, threshold_min=15)
    assert len(grid) == len(tiny_area.grid)
    assert grid["prob_within"].between(0, 1).all()
    assert (grid["lower80_min"] < grid["median_min"]).all()
    assert (grid["median_min"] < grid["upper80_min"]).all()
    for i in (0, len(grid) // 2):
        dest = place_from_zone(tiny_area, grid["zone"][i])
        single = forecast_od(tiny_model, origin, dest, DEPARTURE, 15)
        assert grid["median_min"][i] == pytest.approx(single.median_min, rel=1e-9)
        assert grid["prob_within"][i] == pytest.approx(single.prob_within, abs=1e-12)
    longer = coverage_grid(tiny_model, tiny_area, origin, DEPARTURE, threshold_min=30)
    assert (longer["prob_within"] >= grid["prob_within"]).all()
    summary = reachable_summary(longer, 0.9)
    assert summary["n_reached"] == int((longer["prob_within"] >= 0.9).sum())
    assert summary["n_zones"] == len(grid) and 0 <= summary["share"] <= 1


def test_coverage_colours_and_legends(tiny_model, tiny_area, pair):
    grid = coverage_grid(tiny_model, tiny_area, pair[0], DEPARTURE, threshold_min=15)
    colours, legend = coverage_colors(grid, "probability")
    assert colours.shape == (len(grid), 4)
    assert [label for label, _ in legend] == [
        "0 % - 50 %",
        "50 % - 80 %",
        "80 % - 90 %",
        "90 % - 95 %",
        "95 % - 100 %",
    ]
    top = grid["prob_within"].to_numpy() >= 0.95
    if top.any():
        assert (colours[top, :3] == (0, 109, 44)).all()
    colours, legend = coverage_colors(grid, "median")
    edges = [float(label.split(" min")[0]) for label, _ in legend]
    assert edges[0] <= grid["median_min"].min() and len({c for _, c in legend}) == len(legend)
    with pytest.raises(ValueError, match="metric"):
        coverage_colors(grid, "mean")


def test_coverage_exports(tiny_model, tiny_area, pair):
    origin = pair[0]
    grid = coverage_grid(tiny_model, tiny_area, origin, DEPARTURE, threshold_min=8)
    table = pd.read_csv(io.BytesIO(coverage_csv(grid, origin, DEPARTURE, 8, synthetic=True)))
    assert len(table) == len(grid)
    assert {"zone", "label", "median_min", "p_within_8min", "departure", "data"} <= set(table)
    np.testing.assert_allclose(table["p_within_8min"], grid["prob_within"], rtol=1e-5)
    assert table["data"].str.contains("SYNTHETIC").all()
    document = json.loads(coverage_geojson(grid, origin, DEPARTURE, 8, synthetic=True))
    assert document["type"] == "FeatureCollection" and document["synthetic"] is True
    assert len(document["features"]) == len(grid)
    feature = document["features"][0]
    assert feature["geometry"]["type"] == "Polygon"
    assert feature["properties"]["zone"] == grid["zone"][0]
    assert math.isclose(feature["properties"]["p_within_8min"], grid["prob_within"][0])
    assert document["threshold_min"] == 8.0 and document["origin"]["lat"] == origin.lat


def test_reach_map_fades_thin_zones(tiny_model, tiny_area, pair):
    origin = pair[0]
    grid = coverage_grid(tiny_model, tiny_area, origin, DEPARTURE, threshold_min=15)
    row = tiny_area.zone_row(origin.zone)
    for i in (0, row, len(grid) // 2):  # the map's counts are the pair counts
        dest = place_from_zone(tiny_area, grid["zone"][i])
        single = pair_support(tiny_area.support, row, i, minute_of_day(DEPARTURE, "UTC"))
        assert grid["support_trips"][i] == single.n_near
        assert grid["support_trips_at_time"][i] == single.n_near_at_time
        assert grid["thin"][i] == single.thin and dest.zone == grid["zone"][i]
    thin = grid["thin"].to_numpy()
    assert thin.any() and not thin.all()
    assert (grid.loc[thin, "support_trips"] < THIN_TRIPS).all()
    plain, _ = coverage_colors(grid, "probability")
    fill, tips, legend = coverage_map(grid, "probability", 15)
    assert (fill[thin, 3] < plain[thin, 3]).all()  # faded: more transparent ...
    np.testing.assert_array_equal(fill[~thin], plain[~thin])  # ... the others untouched
    assert legend[-1] == (THIN_LEGEND, THIN_SWATCH)
    first_thin, first_ok = np.flatnonzero(thin)[0], np.flatnonzero(~thin)[0]
    n = grid["support_trips"][first_thin]
    assert f"{n:,} training trips from near the origin" in tips[first_thin]
    assert "Thin data" in tips[first_thin] and "Thin data" not in tips[first_ok]
    summary = reachable_summary(grid, 0.9)
    assert summary["n_thin"] == int(thin.sum()) and summary["thin_trips"] == THIN_TRIPS


def test_reach_map_without_kept_trips_claims_no_support(tiny_model, tiny_area, pair):
    from dataclasses import replace

    bare = replace(tiny_area, support=None)
    grid = coverage_grid(tiny_model, bare, pair[0], DEPARTURE, threshold_min=15)
    assert "thin" not in grid.columns and "n_thin" not in reachable_summary(grid, 0.9)
    _, tips, legend = coverage_map(grid, "median", 15)
    assert all("training trips" not in tip for tip in tips)
    assert THIN_LEGEND not in [label for label, _ in legend]
