"""Private mode's aggregates: k trips or nothing, zone centres instead of trips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vrvm.services.access import ANALYST, VIEWER, Access
from vrvm.services.privacy import (
    observed_summary,
    privacy_view,
    private_relevance_table,
    relevance_arcs,
)
from vrvm.services.relevance import relevance_table

VIEWER_ACCESS = Access(VIEWER, who="", how="none")
ANALYST_ACCESS = Access(ANALYST, who="ana", how="passphrase")


def test_observed_trips_are_summarised_only_where_k_trips_fell():
    rng = np.random.default_rng(0)
    hours = np.concatenate([rng.uniform(7, 9, 8), rng.uniform(12, 15, 3), rng.uniform(17, 18, 5)])
    trips = pd.DataFrame({"hour": hours, "minutes": rng.uniform(10, 30, hours.size)})
    summary = observed_summary(trips, 5)
    assert summary[["hour_from", "hour_to", "n"]].values.tolist() == [[6, 9, 8], [15, 18, 5]]
    assert (summary["q25"] <= summary["median"]).all() and (
        summary["median"] <= summary["q75"]
    ).all()
    assert summary["n"].min() >= 5  # the 3 trips around noon are not shown at all
    # no bin with k, but k in all: one all-day row; fewer than k: nothing
    spread = pd.DataFrame({"hour": [1.0, 5, 9, 13, 17, 21], "minutes": [10.0] * 6})
    assert observed_summary(spread, 5)[["hour_from", "hour_to", "n"]].values.tolist() == [
        [0, 24, 6]
    ]
    assert observed_summary(spread.head(4), 5).empty
    with pytest.raises(ValueError, match="divide 24"):
        observed_summary(trips, 5, bin_hours=5)


def test_private_mode_applies_to_viewers_on_real_data():
    real = {"synthetic": False}
    assert privacy_view(**real, access=VIEWER_ACCESS, environ={}).private
    assert privacy_view(**real, access=VIEWER_ACCESS, raw=True, environ={}).private
    view = privacy_view(**real, access=ANALYST_ACCESS, environ={})
    assert view.private and view.can_switch  # private by default, analysts may switch
    assert not privacy_view(**real, access=ANALYST_ACCESS, raw=True, environ={}).private
    assert not privacy_view(synthetic=True, access=VIEWER_ACCESS, environ={}).private
    off = {"VRVM_PRIVATE_MODE": "off"}
    assert not privacy_view(**real, access=VIEWER_ACCESS, environ=off).private
    k = privacy_view(**real, access=VIEWER_ACCESS, environ={"VRVM_PRIVATE_MIN_TRIPS": "8"})
    assert k.min_trips == 8 and "at least 8 trips" in k.sentence()
    with pytest.raises(ValueError, match="VRVM_PRIVATE_MIN_TRIPS"):
        privacy_view(**real, access=VIEWER_ACCESS, environ={"VRVM_PRIVATE_MIN_TRIPS": "1"})


def test_relevance_vectors_become_zones_without_coordinates_or_times(tiny_model, tiny_area):
    table = relevance_table(tiny_model)
    private = private_relevance_table(table, tiny_area)
    assert len(private) == len(table)
    assert list(private.columns) == [
        "member",
        "origin zone",
        "destination zone",
        "day",
        "hour",
        "travel (min)",
        "weight",
        "width",
        "n_widths",
    ]
    assert set(private["origin zone"]) <= set(tiny_area.grid["label"]) | {"outside the zones"}
    assert private["travel (min)"].dtype.kind == "i"
    arcs = relevance_arcs(table, tiny_area)
    assert arcs["n"].sum() == len(table) and arcs["n"].max() >= 1
    centres = set(zip(tiny_area.grid["lat"], tiny_area.grid["lon"], strict=True))
    ends = set(zip(arcs["origin_lat"], arcs["origin_lon"], strict=True))
    assert ends <= centres  # every arc starts at a zone's centre
    trips = set(zip(table["origin_lat"].round(6), table["origin_lon"].round(6), strict=True))
    assert not ends & trips
    np.testing.assert_allclose(arcs["weight"].sum(), table["weight"].sum())
    assert relevance_arcs(table.head(0), tiny_area).empty
