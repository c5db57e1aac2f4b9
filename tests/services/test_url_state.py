"""Shareable views: query parameters written and read back."""

from __future__ import annotations

import pandas as pd

from vrvm.services.map.places import ODState, place_from_latlon, place_from_zone
from vrvm.services.planning.url_state import ViewParams, from_query_params, to_query_params


def test_query_parameters_round_trip(tiny_area, tiny_model):
    zone_place = place_from_zone(tiny_area, tiny_area.grid["zone"][100])
    row = tiny_area.grid.iloc[300]
    point = place_from_latlon(tiny_area, row["lat"] + 0.0012345, row["lon"] - 0.001)
    state = ODState(zone_place, point)
    departure = pd.Timestamp("2024-03-05 08:15", tz=tiny_model.tz_)
    params = to_query_params(
        state, departure, threshold_min=8, mode="coverage", metric="median", confidence=0.9
    )
    assert all(isinstance(v, str) for v in params.values())
    view, warnings = from_query_params(params, tiny_area, tiny_model.tz_)
    assert warnings == []
    assert view.state == state
    assert view.departure == departure
    assert (view.threshold_min, view.mode, view.metric, view.confidence) == (
        8.0,
        "coverage",
        "median",
        0.9,
    )
    # streamlit may hand over repeated keys as lists
    listed = {k: [v] for k, v in params.items()}
    assert from_query_params(listed, tiny_area, tiny_model.tz_)[0] == view


def test_bad_query_parameters_are_ignored_with_warnings(tiny_area):
    params = {
        "o": "41.88,-87.63",
        "d": "x",
        "t": "not a time",
        "thr": "-3",
        "mode": "teleport",
        "metric": "vibes",
        "conf": "2",
    }
    view, warnings = from_query_params(params, tiny_area, "UTC")
    assert view == ViewParams()
    assert len(warnings) == 7
