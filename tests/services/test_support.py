"""The training trips behind an answer: zone index, pair and origin counts, thin flags."""

from __future__ import annotations

import h3
import numpy as np
import pandas as pd
import pytest

from vrvm.services.map.support import (
    THIN_TRIPS,
    PairSupport,
    build_trip_support,
    minute_of_day,
    origin_support,
    pair_support,
)

RES = 8


def small_frame(n: int = 400, seed: int = 0):
    """Trips between the cells of a 2-ring disk (19 zones) and one far-off zone."""
    rng = np.random.default_rng(seed)
    centre = h3.latlng_to_cell(41.88, -87.63, RES)
    zones = sorted(h3.grid_disk(centre, 2))
    cells = np.array([*zones, h3.latlng_to_cell(42.3, -88.2, RES)])  # last: not a zone
    o, d = rng.integers(0, len(cells), n), rng.integers(0, len(cells), n)
    o_lat, o_lon = np.array([h3.cell_to_latlng(c) for c in cells[o]]).T
    d_lat, d_lon = np.array([h3.cell_to_latlng(c) for c in cells[d]]).T
    start = pd.Timestamp("2024-03-04", tz="UTC") + pd.to_timedelta(
        rng.integers(0, 7 * 24 * 60, n), unit="min"
    )
    trips = pd.DataFrame(
        {
            "origin_lat": o_lat,
            "origin_lon": o_lon,
            "dest_lat": d_lat,
            "dest_lon": d_lon,
            "start_time": start,
            "travel_time_s": 600.0,
        }
    )
    return zones, cells[o], cells[d], trips


def brute_force(zones, o_cells, d_cells, minutes, origin, dest, departure_min, window=60):
    near_o = set(h3.grid_disk(zones[origin], 1)) & set(zones)
    near_d = set(h3.grid_disk(zones[dest], 1)) & set(zones)
    n_pair = n_near = n_time = 0
    for o, d, m in zip(o_cells, d_cells, minutes, strict=True):
        if o == zones[origin] and d == zones[dest]:
            n_pair += 1
        if o in near_o and d in near_d:
            n_near += 1
            gap = abs(m - departure_min) % 1440
            n_time += min(gap, 1440 - gap) <= window
    return n_pair, n_near, n_time


def test_counts_equal_a_brute_force_count():
    zones, o_cells, d_cells, trips = small_frame()
    support = build_trip_support(zones, RES, trips, "America/Chicago")
    local = trips["start_time"].dt.tz_convert("America/Chicago")
    minutes = (local.dt.hour * 60 + local.dt.minute).to_numpy()
    assert support.n_trips == len(trips) and support.n_zones == len(zones)
    for departure_min in (0.0, 8 * 60 + 15.0, 23 * 60 + 50.0):
        for origin in range(len(zones)):
            table = origin_support(support, origin, departure_min)
            for dest in range(len(zones)):
                expected = brute_force(
                    zones, o_cells, d_cells, minutes, origin, dest, departure_min
                )
                got = pair_support(support, origin, dest, departure_min)
                assert (got.n_zone_pair, got.n_near, got.n_near_at_time) == expected
                assert table["support_trips"][dest] == expected[1]
                assert table["support_trips_at_time"][dest] == expected[2]


def test_time_window_wraps_around_midnight():
    zones, _, _, trips = small_frame(n=1)
    trips["start_time"] = pd.Timestamp("2024-03-05 00:20", tz="UTC")
    support = build_trip_support(zones, RES, trips, "UTC")
    o = zones.index(h3.latlng_to_cell(trips["origin_lat"][0], trips["origin_lon"][0], RES))
    d = zones.index(h3.latlng_to_cell(trips["dest_lat"][0], trips["dest_lon"][0], RES))
    assert pair_support(support, o, d, 23 * 60 + 50).n_near_at_time == 1
    assert pair_support(support, o, d, 22 * 60).n_near_at_time == 0


def test_thin_and_busy_pairs():
    zones = sorted(h3.grid_disk(h3.latlng_to_cell(41.88, -87.63, RES), 6))
    busy_o, busy_d, lonely = zones[0], zones[60], zones[-1]
    rows = [(busy_o, busy_d)] * 40 + [(busy_d, busy_o)] * 2
    ends = np.array([[*h3.cell_to_latlng(a), *h3.cell_to_latlng(b)] for a, b in rows])
    trips = pd.DataFrame(ends, columns=["origin_lat", "origin_lon", "dest_lat", "dest_lon"])
    trips["start_time"] = pd.Timestamp("2024-03-05 08:00", tz="UTC")
    support = build_trip_support(zones, RES, trips, "UTC")
    index = {z: i for i, z in enumerate(zones)}
    busy = pair_support(support, index[busy_o], index[busy_d], 8 * 60)
    assert not busy.thin and not busy.thin_at_time and busy.n_near == 40
    assert "40 training trips" in busy.sentence() and "caution" not in busy.sentence()
    at_night = pair_support(support, index[busy_o], index[busy_d], 20 * 60)
    assert not at_night.thin and at_night.thin_at_time and "other times" in at_night.sentence()
    back = pair_support(support, index[busy_d], index[busy_o], 8 * 60)
    assert back.thin and back.n_near == 2 and back.sentence().startswith("Only 2 training trips")
    nothing = pair_support(support, index[lonely], index[busy_d], 8 * 60)
    assert nothing.thin and nothing.n_near == 0
    assert nothing.sentence().startswith("No training trip") and "caution" in nothing.sentence()
    assert PairSupport(0, THIN_TRIPS, THIN_TRIPS).thin is False
    assert PairSupport(0, THIN_TRIPS - 1, 0).thin is True


def test_minute_of_day_in_the_model_zone():
    assert minute_of_day(pd.Timestamp("2024-07-01 12:30", tz="UTC"), "America/Chicago") == 450
    assert minute_of_day(pd.Timestamp("2024-07-01 12:30")) == 750  # naive: wall clock
    with pytest.raises(ValueError):
        minute_of_day("not a time")


def test_a_place_of_another_map_is_refused_not_called_unknown(tiny_model, tiny_area):
    """The dashboard once asked the support of a hexagon on a map of polygons: the zone
    was not found, and the page said the training trips "were not kept"."""
    from dataclasses import replace

    from vrvm.services.answers.forecast import answer_od, od_support
    from vrvm.services.map.places import central_place, place_from_zone

    origin = central_place(tiny_area)
    dest = place_from_zone(tiny_area, tiny_area.grid["zone"][5])
    departure = pd.Timestamp("2024-03-05 08:15", tz=tiny_model.tz_)
    support = od_support(tiny_area, origin, dest, departure, tiny_model.tz_)
    assert support is not None and support.n_near > 0
    elsewhere = replace(origin, zone="Q3", label="Q3 · South-East")  # a polygon's id
    with pytest.raises(ValueError, match="origin 'Q3 · South-East' is not one of the map's"):
        od_support(tiny_area, elsewhere, dest, departure, tiny_model.tz_)
    with pytest.raises(ValueError, match="destination 'Q3 · South-East' is not one of"):
        answer_od(
            tiny_model, origin, elsewhere, departure, 15, trips=None, resolution=8, area=tiny_area
        )


def test_a_kind_of_day_the_model_never_saw_is_said():
    """The San Francisco bike-share sample has weekday trips only: a model trained on it
    answered for a Saturday with no word that it never saw a weekend."""
    zones, _, _, trips = small_frame()
    local = trips["start_time"].dt.tz_convert("America/Chicago")
    weekdays = trips.loc[local.dt.weekday.to_numpy() < 5].reset_index(drop=True)
    support = build_trip_support(zones, RES, weekdays, "America/Chicago")
    assert support.day_kind_trips("weekend") == 0
    assert support.day_kind_trips("weekday") == len(weekdays)
    od = weekdays.index[0]
    o = zones.index(h3.latlng_to_cell(*weekdays.loc[od, ["origin_lat", "origin_lon"]], RES))
    d = zones.index(h3.latlng_to_cell(*weekdays.loc[od, ["dest_lat", "dest_lon"]], RES))
    saturday = pair_support(support, o, d, 8 * 60, weekday=5)
    assert saturday.n_near > 0 and saturday.day_kind == "weekend" and saturday.n_day_kind == 0
    assert saturday.thin_day and saturday.caution
    text = saturday.sentence()
    assert "None of the training trips departed on a weekend" in text
    assert "for a Saturday" in text and text.endswith("Treat it with caution.")
    tuesday = pair_support(support, o, d, 8 * 60, weekday=1)
    assert not tuesday.thin_day and tuesday.n_day_kind == len(weekdays)
    assert "weekend" not in tuesday.sentence()
    # not asked: nothing claimed either way
    assert pair_support(support, o, d, 8 * 60).n_day_kind is None
    # thin for the pair and for the day: one caution, both reasons
    both = PairSupport(0, 1, 0, weekday=6, n_day_kind=0).sentence()
    assert both.count("Treat it with caution.") == 1 and "for a Sunday" in both


def test_the_kind_of_day_is_the_local_one():
    """05:00 UTC on a Saturday is still Friday night in Chicago."""
    zones, _, _, trips = small_frame(n=1)
    trips["start_time"] = pd.Timestamp("2024-03-09 05:00", tz="UTC")
    assert build_trip_support(zones, RES, trips, "America/Chicago").day_kind_trips("weekday") == 1
    assert build_trip_support(zones, RES, trips, "UTC").day_kind_trips("weekend") == 1
