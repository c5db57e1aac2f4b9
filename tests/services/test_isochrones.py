"""Probability isochrones checked against brute force.

Each zone's probability is recomputed one query at a time (its own ``predict_dist``
call), and each region is checked point by point: the representative point of every
zone that meets p lies inside the p region, every other zone's lies outside. Both
directions, hexagons and a planner's polygons (a small zone file over the synthetic
city, with a ring around an inner zone), nesting, areas and the GeoJSON export.
"""

from __future__ import annotations

import json

import h3
import numpy as np
import pandas as pd
import pytest
import shapely
from shapely.geometry import Point, shape

from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.map.area import build_service_area
from vrvm.services.map.places import Place, central_place, place_from_zone
from vrvm.services.planning.isochrones import (
    DEFAULT_PROBABILITIES,
    dissolve_zones,
    geodesic_area_km2,
    isochrone_map,
    isochrone_table,
    isochrones_geojson,
    level_colours,
    probability_isochrones,
    reach_probabilities,
)
from vrvm.trips.home import Home
from vrvm.trips.places.zone_files import ZoneFile

DEPARTURE = "2024-03-05 08:15"
LEVELS = (0.3, 0.5, 0.9, 0.95)


@pytest.fixture(scope="module")
def polygon_area(tiny_home, tiny_model, tiny_area):
    """A 4 x 4 grid of boxes over the trips, one of them a ring around its own centre."""
    lat_lo, lon_lo, lat_hi, lon_hi = tiny_area.bbox
    lats = np.linspace(lat_lo - 0.01, lat_hi + 0.01, 5)
    lons = np.linspace(lon_lo - 0.01, lon_hi + 0.01, 5)
    features = []
    for i in range(4):
        for j in range(4):
            cell = shapely.box(lons[j], lats[i], lons[j + 1], lats[i + 1])
            name = f"Box {i}-{j}"
            if (i, j) == (1, 1):  # a ring and the zone in its hole
                inner = shapely.box(*shapely.buffer(cell, -0.25 * (lons[1] - lons[0])).bounds)
                features.append(_feature(f"{i}{j}c", "Centre", inner))
                cell = cell.difference(inner)
                name = "Ring"
            features.append(_feature(f"{i}{j}", name, cell))
    zones = ZoneFile.from_geojson({"type": "FeatureCollection", "features": features})
    trips = Home(tiny_home).load_training_trips(tiny_model)
    return build_service_area(tiny_model, trips=trips, zones=zones)


def _feature(zone_id: str, name: str, geometry) -> dict:
    return {
        "type": "Feature",
        "properties": {"id": zone_id, "name": name},
        "geometry": json.loads(shapely.to_geojson(geometry)),
    }


def brute_force_probabilities(model, area, place: Place, within_min: float, direction: str):
    """P(T <= t) of every zone, one predict_dist call per zone."""
    out = []
    for lat, lon in zip(area.grid["lat"], area.grid["lon"], strict=True):
        ends = ((place.lat, place.lon), (lat, lon))
        if direction == "to":
            ends = ends[::-1]
        query = pd.DataFrame(
            {
                "origin_lat": [ends[0][0]],
                "origin_lon": [ends[0][1]],
                "dest_lat": [ends[1][0]],
                "dest_lon": [ends[1][1]],
                "start_time": [pd.Timestamp(DEPARTURE, tz=model.tz_)],
            }
        )
        out.append(float(model.predict_dist(query).cdf(60.0 * within_min)[0]))
    return np.array(out)


def check_regions(result, area, expected_prob: np.ndarray) -> None:
    """Zones in each region == zones meeting p, point by point; nesting; areas."""
    np.testing.assert_allclose(result.reach["prob_within"], expected_prob, rtol=1e-10, atol=1e-12)
    zone_ids = area.grid["zone"].astype(str).to_numpy()
    points = [Point(lon, lat) for lat, lon in zip(area.grid["lat"], area.grid["lon"], strict=True)]
    zone_areas = np.array([geodesic_area_km2(polygon) for polygon in area.polygons])
    previous = None
    for level in result.levels:
        meets = expected_prob >= level.probability
        assert level.zones == tuple(zone_ids[meets])
        assert level.geometry.geom_type == "MultiPolygon" and level.geometry.is_valid
        for point, inside in zip(points, meets, strict=True):
            assert level.geometry.contains(point) == bool(inside)
        # the zones do not overlap: the region's area is the sum of theirs
        assert level.area_km2 == pytest.approx(zone_areas[meets].sum(), rel=1e-9, abs=1e-9)
        if previous is not None:  # nested: the larger p inside the smaller
            assert set(level.zones) <= set(previous.zones)
            assert shapely.difference(level.geometry, previous.geometry).area < 1e-12
        previous = level


@pytest.mark.parametrize("direction", ["from", "to"])
def test_hexagon_regions_hold_exactly_the_zones_meeting_p(tiny_model, tiny_area, direction):
    place = central_place(tiny_area)
    result = probability_isochrones(
        tiny_model, tiny_area, place, DEPARTURE, 15, LEVELS, direction=direction
    )
    expected = brute_force_probabilities(tiny_model, tiny_area, place, 15, direction)
    assert 0 < (expected >= 0.95).sum() < (expected >= 0.3).sum() < len(expected)
    check_regions(result, tiny_area, expected)
    assert result.probabilities == LEVELS and result.zone_kind == "hexagons"
    # the hexagons' own areas (H3, on a sphere) agree with the ellipsoid's to 1 %
    outer = result.levels[0]
    h3_km2 = sum(h3.cell_area(cell, "km^2") for cell in outer.zones)
    assert outer.area_km2 == pytest.approx(h3_km2, rel=0.01)


def test_from_and_to_differ_and_from_agrees_with_the_coverage_map(tiny_model, tiny_area):
    place = central_place(tiny_area)
    away = reach_probabilities(tiny_model, tiny_area, place, DEPARTURE, 20, direction="from")
    back = reach_probabilities(tiny_model, tiny_area, place, DEPARTURE, 20, direction="to")
    assert list(away.columns) == list(back.columns)
    assert away["zone"].tolist() == back["zone"].tolist() == tiny_area.grid["zone"].tolist()
    assert not np.allclose(away["prob_within"], back["prob_within"])
    # the place's own zone: the same trip either way
    row = tiny_area.zone_row(place.zone)
    assert away["prob_within"][row] == pytest.approx(back["prob_within"][row], abs=1e-12)
    assert away["median_min"][row] == pytest.approx(back["median_min"][row], rel=1e-9)


@pytest.mark.parametrize("direction", ["from", "to"])
def test_polygon_zone_regions(tiny_model, polygon_area, direction):
    assert polygon_area.kind == "polygons" and "Ring" in " ".join(polygon_area.labels)
    place = place_from_zone(polygon_area, polygon_area.grid["zone"].iloc[5])
    within = 25
    result = probability_isochrones(
        tiny_model, polygon_area, place, DEPARTURE, within, LEVELS, direction=direction
    )
    expected = brute_force_probabilities(tiny_model, polygon_area, place, within, direction)
    assert 0 < (expected >= 0.95).sum() < (expected >= 0.3).sum() < len(expected)
    check_regions(result, polygon_area, expected)
    # the exact polygons' areas, as the zone file computes them (equal-area projection)
    zones = polygon_area.zone_file
    for level in result.levels:
        file_km2 = zones.area_km2[zones.positions(list(level.zones))].sum()
        assert level.area_km2 == pytest.approx(file_km2, rel=1e-4, abs=1e-9)


class PatternModel:
    """A stand-in model whose P(T <= t) for the query of grid row j is ``prob[j]``."""

    tz_ = "UTC"

    def __init__(self, prob: np.ndarray, within_min: float):
        from scipy.stats import norm

        self.loc = 60.0 * within_min - 60.0 * norm.ppf(np.clip(prob, 1e-6, 1 - 1e-6))

    def predict_dist(self, queries: pd.DataFrame) -> MixtureDistribution:
        assert len(queries) == self.loc.size
        return MixtureDistribution(self.loc[None, :], 60.0)


def test_holes_and_separate_parts(tiny_area):
    """Zones that miss p inside a region are holes; far zones that meet it, other parts."""
    grid = tiny_area.grid
    zones = set(grid["zone"])
    # a zone whose three rings are all zones of the area
    centre = next(z for z in grid["zone"] if set(h3.grid_disk(z, 3)) <= zones)
    ring = set(h3.grid_disk(centre, 2)) - {centre}
    far = next(z for z in grid["zone"] if h3.grid_distance(centre, z) > 6)
    prob = np.where(grid["zone"].isin(ring), 0.97, 0.1)
    prob[grid["zone"].to_numpy() == far] = 0.6
    model = PatternModel(prob, 15)
    place = place_from_zone(tiny_area, centre)
    result = probability_isochrones(model, tiny_area, place, DEPARTURE, 15, (0.5, 0.9))
    check_regions(result, tiny_area, prob)
    half, ninety = result.levels
    assert len(half.geometry.geoms) == 2  # the ring, and the far zone alone
    assert len(ninety.geometry.geoms) == 1
    (ring_part,) = ninety.geometry.geoms
    assert len(ring_part.interiors) == 1  # the place's own zone, which misses p
    hole = shapely.Polygon(ring_part.interiors[0])
    assert hole.equals(tiny_area.polygons[tiny_area.zone_row(centre)])
    # a level nobody meets is empty, and exported as such
    empty = probability_isochrones(model, tiny_area, place, DEPARTURE, 15, (0.99,))
    assert empty.levels[0].geometry.is_empty and empty.levels[0].area_km2 == 0.0
    feature = json.loads(isochrones_geojson(empty))["features"][0]
    assert shape(feature["geometry"]).is_empty and feature["properties"]["n_zones"] == 0


def test_geojson_export_round_trips(tiny_model, tiny_area):
    place = central_place(tiny_area)
    result = probability_isochrones(tiny_model, tiny_area, place, DEPARTURE, 15, direction="to")
    document = json.loads(isochrones_geojson(result, synthetic=True))
    assert document["type"] == "FeatureCollection" and document["synthetic"] is True
    assert len(document["features"]) == len(DEFAULT_PROBABILITIES)
    for feature, level in zip(document["features"], result.levels, strict=True):
        assert feature["type"] == "Feature"
        geometry = shape(feature["geometry"])
        assert geometry.geom_type == "MultiPolygon" and geometry.is_valid
        assert geometry.equals(level.geometry)
        props = feature["properties"]
        assert props["direction"] == "to" and props["p"] == level.probability
        assert props["place_name"] == place.label and props["place_zone"] == place.zone
        assert (props["place_lat"], props["place_lon"]) == (place.lat, place.lon)
        assert props["within_s"] == 900.0 and props["within_min"] == 15.0
        assert props["n_zones"] == level.n_zones == len(props["zones"])
        assert props["area_km2"] == pytest.approx(level.area_km2, abs=1e-6)
        assert props["zone_kind"] == "hexagons"
        assert "from the zone to it" in props["definition"]
        departure = pd.Timestamp(props["departure"])
        assert departure.tzinfo is not None
        assert departure == pd.Timestamp(DEPARTURE, tz=tiny_model.tz_)


def test_table_and_map(tiny_model, tiny_area):
    place = central_place(tiny_area)
    result = probability_isochrones(tiny_model, tiny_area, place, DEPARTURE, 15)
    table = isochrone_table(result)
    assert table.columns.tolist() == ["p", "zones", "area_km2"]
    assert table["p"].tolist() == list(DEFAULT_PROBABILITIES)
    assert table["zones"].tolist() == [level.n_zones for level in result.levels]
    assert table["zones"].is_monotonic_decreasing
    drawn = isochrone_map(result)
    assert [f["properties"]["p"] for f in drawn.features] == [
        level.probability for level in result.levels if level.n_zones
    ]
    assert len({tuple(f["properties"]["fill"]) for f in drawn.features}) == len(drawn.features)
    assert [label for label, _ in drawn.legend] == [
        "P(arrive within 15 min) ≥ 50 %",
        "P(arrive within 15 min) ≥ 90 %",
        "P(arrive within 15 min) ≥ 95 %",
    ]
    assert len(drawn.tips) == len(drawn.zone_fill) == len(tiny_area.grid)
    prob = result.reach["prob_within"].to_numpy()
    inner = int(np.argmax(prob))
    assert "In the 95 % isochrone: P(arrive within 15 min) ≥ 95 %" in drawn.tips[inner]
    outer = int(np.argmin(prob))
    assert "Outside every isochrone" in drawn.tips[outer]
    assert drawn.zone_fill[outer][3] > drawn.zone_fill[inner][3]
    assert not any("<" in tip or ">" in tip for tip in drawn.tips)  # plain text, no markup


def test_level_colours_are_distinct():
    for n in range(1, 8):
        colours = level_colours(n)
        assert colours.shape == (n, 3) and len({tuple(c) for c in colours}) == n
        # darker (smaller sum of channels) for larger p
        assert np.all(np.diff(colours.sum(axis=1)) < 0)


def test_dissolve_squares_with_a_hole():
    squares = np.array([shapely.box(x, y, x + 1, y + 1) for y in range(3) for x in range(3)])
    ring = np.ones(9, dtype=bool)
    ring[4] = False
    region = dissolve_zones(squares, ring)
    (part,) = region.geoms
    assert len(part.interiors) == 1 and region.area == pytest.approx(8.0)
    assert part.exterior.is_ccw and not part.interiors[0].is_ccw  # RFC 7946 orientation


def test_bad_requests_name_the_problem(tiny_model, tiny_area):
    place = central_place(tiny_area)
    with pytest.raises(ValueError, match="direction must be one of"):
        probability_isochrones(tiny_model, tiny_area, place, DEPARTURE, 15, direction="across")
    with pytest.raises(ValueError, match="at least one probability"):
        probability_isochrones(tiny_model, tiny_area, place, DEPARTURE, 15, [])
    with pytest.raises(ValueError, match=r"strictly between 0 and 1, got \[1.0\]"):
        probability_isochrones(tiny_model, tiny_area, place, DEPARTURE, 15, [0.5, 1.0])
    with pytest.raises(ValueError, match="within_min must be a positive number"):
        probability_isochrones(tiny_model, tiny_area, place, DEPARTURE, -5)
    # duplicates are dropped and the levels sorted
    result = probability_isochrones(tiny_model, tiny_area, place, DEPARTURE, 15, [0.9, 0.5, 0.9])
    assert result.probabilities == (0.5, 0.9)
