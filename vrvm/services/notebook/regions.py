"""Answers over zones as GeoDataFrames for a notebook: probability isochrones and reach.

:func:`isochrones` is the Plan page's probability isochrones
(:func:`vrvm.services.planning.isochrones.probability_isochrones`): for each probability p
the region of the zones reached within T minutes with probability at least p, one row per
p with its geodesic area. :func:`reach` is fleet coverage
(:func:`vrvm.services.planning.fleet.fleet_coverage`, the HTTP API's ``POST /v1/coverage``
and the Plan page's fleet section): per zone P(the best base arrives within T), P(any base does),
which base is best, and the median time from that base (the OD matrix's median,
:func:`vrvm.services.answers.matrix.iter_matrix`). Zones are the model's H3 hexagons or,
given ``zones``, a planner's polygons (every polygon given, each at its representative
point). Geometries are in EPSG:4326 (longitude, latitude).
"""

from __future__ import annotations

from collections.abc import Sequence

import geopandas as gpd
import numpy as np
import pandas as pd

from vrvm.services.answers.matrix import iter_matrix
from vrvm.services.notebook.inputs import (
    answer_area,
    area_place,
    model_extent,
    outside_area,
    place_table,
)
from vrvm.services.planning.fleet import bases_at_points, fleet_coverage
from vrvm.services.planning.isochrones import DEFAULT_PROBABILITIES, probability_isochrones
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = ["isochrones", "reach"]

CRS = "EPSG:4326"


def isochrones(
    model: TravelTimeModel,
    place,
    *,
    departure,
    within_min: float,
    probabilities: Sequence[float] = DEFAULT_PROBABILITIES,
    direction: str = "from",
    zones: gpd.GeoDataFrame | None = None,
    trips: pd.DataFrame | None = None,
) -> gpd.GeoDataFrame:
    """The regions reached within ``within_min`` minutes with probability at least p.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    place : GeoDataFrame, DataFrame, str, shapely.Point or (lat, lon)
        The origin (``direction="from"``) or destination (``"to"``): a one-row frame, an
        H3 cell id, a Point (x = longitude) or a ``(lat, lon)`` pair. A place outside
        the model's extent is refused, naming the nearest zone.
    departure : datetime-like
        When every trip leaves; a naive time is a wall-clock time in the model's zone.
    within_min : float
        The threshold T > 0, in minutes.
    probabilities : sequence of float, default=(0.5, 0.9, 0.95)
        The levels p in (0, 1).
    direction : {"from", "to"}, default="from"
        Trips from the place to every zone, or from every zone to the place.
    zones : geopandas.GeoDataFrame, optional
        A planner's polygons (``id``, optional ``name``, any CRS) to build the regions
        from; default the model's H3 hexagons.
    trips : pandas.DataFrame, optional
        The model's training trips: the hexagons are then where they go (the
        dashboard's zones); default hexagons over the model's extent.

    Returns
    -------
    geopandas.GeoDataFrame
        One row per probability, increasing (the outermost region first):
        ``probability``, ``within_min``, ``area_km2`` (geodesic, WGS84), ``n_zones`` and
        ``geometry`` (a MultiPolygon, empty when no zone meets p), CRS EPSG:4326.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> regions = isochrones(model, (-40.0, -29.95), departure="2024-03-12 08:00",
    ...                      within_min=20)
    >>> regions[["probability", "within_min"]].to_numpy().tolist()
    [[0.5, 20.0], [0.9, 20.0], [0.95, 20.0]]
    >>> bool(regions["area_km2"].is_monotonic_decreasing), regions.crs.to_epsg()
    (True, 4326)
    """
    area = answer_area(model, trips, zones)
    found = area_place(model, area, place, "place")
    result = probability_isochrones(
        model, area, found, departure, within_min, probabilities, direction=direction
    )
    return gpd.GeoDataFrame(
        {
            "probability": [level.probability for level in result.levels],
            "within_min": result.within_min,
            "area_km2": [level.area_km2 for level in result.levels],
            "n_zones": [level.n_zones for level in result.levels],
        },
        geometry=[level.geometry for level in result.levels],
        crs=CRS,
    )


def _median_from_best(model, bases, grid, departure, best_rows) -> np.ndarray:
    """The median minutes from each zone's best base (the OD matrix's median): each base
    to the zones it is the best base of, one pair a zone (the matrix's values, to the
    last bits, do not depend on how its pairs are batched)."""
    points = grid[["zone", "lat", "lon"]].rename(columns={"zone": "label"})
    sources = bases[["name", "lat", "lon"]].rename(columns={"name": "label"})
    median = np.empty(len(grid))
    for base in np.unique(best_rows):
        zones = np.flatnonzero(best_rows == base)
        pairs = iter_matrix(model, sources.iloc[[base]], points.iloc[zones], departure)
        median[zones] = pd.concat(list(pairs), ignore_index=True)["median_s"].to_numpy()
    return median / 60.0


def reach(
    model: TravelTimeModel,
    bases,
    *,
    departure,
    within_min: float,
    zones: gpd.GeoDataFrame | None = None,
    trips: pd.DataFrame | None = None,
) -> gpd.GeoDataFrame:
    """Per zone, the chance that the best of ``bases`` (and any of them) arrives in time.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    bases : geopandas.GeoDataFrame, pandas.DataFrame or sequence of str
        The bases, as the origins of :func:`~vrvm.services.notebook.tables.travel_time_matrix`
        (their ids name them); at most 50, each in the model's extent.
    departure : datetime-like
        When the vehicles leave; a naive time is a wall-clock time in the model's zone.
    within_min : float
        The threshold T > 0, in minutes.
    zones : geopandas.GeoDataFrame, optional
        A planner's polygons (``id``, optional ``name``, any CRS): one row per polygon.
        Default: the model's H3 hexagons.
    trips : pandas.DataFrame, optional
        The model's training trips: the hexagons are where they go, and each zone has
        ``support_trips``, the training trips starting or ending in it.

    Returns
    -------
    geopandas.GeoDataFrame
        One row per zone: ``id``, ``name`` (polygons only), ``p_best`` (P(the base
        with the highest P(within T) arrives within T), the base dispatch would send),
        ``p_any`` (P(at least one base does), each member's scenario shared by all
        bases), ``best_base``, ``median_min`` (median minutes from the best base),
        ``outside_area`` (the zone's point lies outside the model's extent),
        ``support_trips`` (with ``trips``) and ``geometry``, CRS EPSG:4326.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> bases = pd.DataFrame({"id": ["north", "south"], "lat": [-39.95, -40.05],
    ...                       "lon": [-29.95, -29.95]})
    >>> zones = reach(model, bases, departure="2024-03-12 08:00", within_min=15)
    >>> sorted(set(zones["best_base"])), bool((zones["p_any"] >= zones["p_best"]).all())
    (['north', 'south'], True)
    """
    sites = place_table(bases, "bases")
    outside = outside_area(model, sites["lat"], sites["lon"])
    if outside.any():
        found = model_extent(model)
        row, km = found.nearest_zone(float(sites["lat"][outside].iloc[0]),
                                     float(sites["lon"][outside].iloc[0]))  # fmt: skip
        raise ValueError(
            f"bases: outside the model's extent (no training trips near): ids "
            f"{sites['id'][outside].tolist()[:5]}; the first is {km:.1f} km from the nearest "
            f"zone, {found.grid['label'].iloc[row]}"
        )
    located = bases_at_points(
        model_extent(model), sites["id"].astype(str), sites["lat"], sites["lon"]
    )
    area = answer_area(model, trips, zones)
    coverage = fleet_coverage(model, area, located, departure, within_min)
    grid = coverage.grid
    best_rows = np.argmax(coverage.prob, axis=0)
    out = pd.DataFrame({"id": grid["zone"].to_numpy(dtype=object)})
    if "name" in grid.columns:
        out["name"] = grid["name"].to_numpy(dtype=object)
    out["p_best"] = grid["p_best"].to_numpy()
    out["p_any"] = grid["p_any"].to_numpy()
    out["best_base"] = grid["best_base"].to_numpy(dtype=object)
    out["median_min"] = _median_from_best(model, located, area.grid, departure, best_rows)
    out["outside_area"] = outside_area(model, grid["lat"], grid["lon"])
    if trips is not None:
        out["support_trips"] = area.grid["n_points"].to_numpy(dtype=np.int64)
    return gpd.GeoDataFrame(out, geometry=np.asarray(area.polygons, dtype=object), crs=CRS)
