"""Private mode's aggregates: k trips or nothing, zone centres instead of trips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vrvm.services.access.policy import ANALYST, VIEWER, Access
from vrvm.services.analyst.relevance import relevance_table
from vrvm.services.map.privacy import (
    OTHER_PAIRS,
    observed_summary,
    privacy_view,
    private_relevance_table,
    relevance_arcs,
    relevance_groups,
)

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


def test_a_wrong_privacy_setting_fails_closed_for_everyone():
    """Blank or malformed: private mode on every model, no raw switch even for an
    analyst who asked, and k from its own setting when that one is right."""
    cases = [
        ({"VRVM_PRIVATE_MODE": " "}, 5),
        ({"VRVM_PRIVATE_MODE": "of", "VRVM_PRIVATE_MIN_TRIPS": "9"}, 9),
        ({"VRVM_PRIVATE_MODE": "off", "VRVM_PRIVATE_MIN_TRIPS": ""}, 5),
        ({"VRVM_PRIVATE_MODE": "off", "VRVM_PRIVATE_MIN_TRIPS": "1"}, 5),
    ]
    for environ, k in cases:
        for access in (VIEWER_ACCESS, ANALYST_ACCESS):
            view = privacy_view(synthetic=True, access=access, raw=True, environ=environ)
            assert view.private and not view.can_switch and view.min_trips == k
            assert view.problem.startswith("$VRVM_PRIVATE_M")
    assert privacy_view(synthetic=True, access=VIEWER_ACCESS, environ={}).problem == ""


def _trips(pairs: dict[tuple[int, int], int], area) -> pd.DataFrame:
    """Relevance rows: ``n`` distinct trips between the centres of each pair of zones."""
    grid = area.grid
    rows = []
    for (o, d), n in pairs.items():
        for i in range(n):
            rows.append(
                {
                    "member": i % 2,
                    "origin_lat": grid["lat"].iloc[o] + 1e-5 * i,
                    "origin_lon": grid["lon"].iloc[o],
                    "dest_lat": grid["lat"].iloc[d],
                    "dest_lon": grid["lon"].iloc[d] + 1e-5 * i,
                    "travel_time_s": 600.0 + 60 * i,
                    "start_time": pd.Timestamp("2024-03-12 07:00", tz="UTC")
                    + pd.Timedelta(hours=i),
                    "hour": 7 + i,
                    "weight": 1.0 + i,
                    "width": 1.5 if i % 2 else 3.0,
                    "pair": (o, d),
                }
            )
    return pd.DataFrame(rows)


def test_viewers_see_relevance_vectors_only_in_zone_pairs_of_k_trips(tiny_area):
    table = _trips({(0, 1): 6, (2, 3): 5, (1, 0): 4, (4, 5): 1, (5, 6): 2}, tiny_area)
    shown, rest = relevance_groups(table, tiny_area, min_trips=5)
    assert sorted(shown["n"]) == [5, 6] and len(rest) == 7
    assert shown["n"].min() >= 5
    labels = tiny_area.grid["label"]
    six = shown.set_index("n").loc[6]
    assert (six["origin"], six["destination"]) == (labels[0], labels[1])
    assert (six["q25"], six["median"], six["q75"]) == (11, 12, 14)  # quartiles, whole minutes
    assert six["hours"] == "08-11 h" and six["weight"] == pytest.approx(21.0)
    labels = tiny_area.grid["label"]
    # pairs that share origins (apart in the rows' order): groups of 2 to 6 trips
    many = {(o % 4, (5 * o + 1) % 12): 2 + o % 5 for o in range(12)}
    for pairs in ({(0, 1): 6, (2, 3): 5, (1, 0): 4}, many):
        rows = _trips(pairs, tiny_area).sample(frac=1.0, random_state=1)  # any row order
        for group in relevance_groups(rows, tiny_area, min_trips=2)[0].itertuples():
            (pair,) = [p for p in pairs if (labels[p[0]], labels[p[1]]) == group[5:7]]
            part = rows[rows["pair"] == pair]
            minutes = np.quantile(part["travel_time_s"] / 60, [0.25, 0.5, 0.75]).round()
            assert group.n == pairs[pair] and [group.q25, group.median, group.q75] == list(minutes)
            assert group.width == part["width"].iloc[part["weight"].argmax()]
    # the table: the two pairs, then the 7 trips of the three smaller pairs in one row
    private = private_relevance_table(table, tiny_area, min_trips=5)
    assert private["trips"].tolist() == [6, 5, 7]
    assert private["origin zone"].iloc[-1] == OTHER_PAIRS
    assert private["destination zone"].iloc[-1] == "3 pairs"
    assert private["trips"].min() >= 5 and private["trips"].sum() == len(table)
    assert not {"member", "hour", "day", "start_time", "origin_lat"} & set(private.columns)
    # the smaller pairs' row is left out when they are fewer than k together
    small = _trips({(1, 0): 4, (4, 5): 1, (5, 6): 2}, tiny_area)
    assert private_relevance_table(small, tiny_area, min_trips=5)["trips"].tolist() == [7]
    assert private_relevance_table(small, tiny_area, min_trips=8).empty
    # arcs only for the pairs of k trips, from zone centre to zone centre
    arcs = relevance_arcs(table, tiny_area, min_trips=5)
    assert sorted(arcs["n"]) == [5, 6]
    centres = set(zip(tiny_area.grid["lat"], tiny_area.grid["lon"], strict=True))
    assert set(zip(arcs["origin_lat"], arcs["origin_lon"], strict=True)) <= centres
    # a trip that is a relevance vector of two members counts once
    twice = pd.concat([table, table.head(1).assign(member=1)], ignore_index=True)
    assert relevance_groups(twice, tiny_area, min_trips=5)[0]["n"].max() == 6


def test_relevance_vectors_become_zones_without_coordinates_or_times(tiny_model, tiny_area):
    table = relevance_table(tiny_model)
    for k in (2, 5):
        private = private_relevance_table(table, tiny_area, min_trips=k)
        assert private["trips"].min() >= k and private["trips"].sum() <= len(table)
        assert set(private["origin zone"]) <= set(tiny_area.grid["label"]) | {
            "outside the zones",
            OTHER_PAIRS,
        }
        assert private["travel median (min)"].dtype.kind == "i"
    arcs = relevance_arcs(table, tiny_area, min_trips=2)
    assert arcs["n"].min() >= 2
    everything = relevance_arcs(table, tiny_area, min_trips=1)
    assert everything["n"].sum() == len(table)
    centres = set(zip(tiny_area.grid["lat"], tiny_area.grid["lon"], strict=True))
    ends = set(zip(arcs["origin_lat"], arcs["origin_lon"], strict=True))
    assert ends <= centres  # every arc starts at a zone's centre
    trips = set(zip(table["origin_lat"].round(6), table["origin_lon"].round(6), strict=True))
    assert not ends & trips
    np.testing.assert_allclose(everything["weight"].sum(), table["weight"].sum())
    assert relevance_arcs(table.head(0), tiny_area, min_trips=2).empty
