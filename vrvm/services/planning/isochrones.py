"""Probability isochrones: the regions reached within t minutes with probability at least p.

From a place (``direction="from"``: where can I get to?) or to it (``"to"``: who can
reach the hospital?), at one departure time, every zone of the service area gets
P(T <= t), T the travel time between the place and the zone's point; the zones where
that probability is at least p are dissolved into one (Multi)Polygon per p
(:func:`probability_isochrones`). A zone meeting p = 0.95 meets p = 0.9 and p = 0.5
too, so the regions are nested by construction; a zone inside a region that does not
meet p leaves a hole. :func:`isochrones_geojson` exports them with the properties
that define them, :func:`isochrone_table` summarises them and :func:`isochrone_map`
gives the map its fills, tooltips and legend.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import shapely

from vrvm.services.answers.forecast import query_frame
from vrvm.services.answers.schedule import local_time
from vrvm.services.display.colours import PROBABILITY_PALETTE, hex_colour, rgba
from vrvm.services.map.area import DRAW_TOLERANCE_DEG, ServiceArea
from vrvm.services.map.places import Place
from vrvm.services.planning.coverage import coverage_grid
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = [
    "DEFAULT_PROBABILITIES",
    "DIRECTIONS",
    "Isochrone",
    "IsochroneMap",
    "Isochrones",
    "dissolve_zones",
    "geodesic_area_km2",
    "isochrone_map",
    "isochrone_table",
    "isochrones_geojson",
    "level_colours",
    "probability_isochrones",
    "reach_probabilities",
]

DIRECTIONS = ("from", "to")
"""``"from"``: trips from the place to every zone; ``"to"``: from every zone to the place."""
DEFAULT_PROBABILITIES = (0.5, 0.9, 0.95)

# the "from" query frame with its ends exchanged: every zone to the place
_REVERSED = {
    "origin_lat": "dest_lat",
    "origin_lon": "dest_lon",
    "dest_lat": "origin_lat",
    "dest_lon": "origin_lon",
}


@dataclass(frozen=True)
class Isochrone:
    """The region reached within the threshold with probability at least ``probability``.

    Attributes
    ----------
    probability : float
        p, in (0, 1).
    zones : tuple of str
        Ids of the zones where P(T <= t) >= p, in grid order.
    geometry : shapely.MultiPolygon
        Those zones dissolved (empty when no zone meets p); lon/lat degrees.
    area_km2 : float
        Its geodesic area on the WGS84 ellipsoid, km².
    """

    probability: float
    zones: tuple[str, ...]
    geometry: shapely.MultiPolygon
    area_km2: float

    @property
    def n_zones(self) -> int:
        return len(self.zones)


@dataclass(frozen=True)
class Isochrones:
    """Nested probability isochrones around one place at one departure time.

    Attributes
    ----------
    direction : str
        ``"from"`` or ``"to"`` the place (:data:`DIRECTIONS`).
    place : Place
        The origin (``"from"``) or destination (``"to"``).
    departure : pandas.Timestamp
        Departure time (time-zone aware, in the model's zone); for ``"to"`` the time
        every trip leaves its zone.
    within_min : float
        The threshold t in minutes.
    reach : pandas.DataFrame
        One row per zone (grid order): ``zone``, ``number``, ``label``, ``lat``,
        ``lon``, ``median_min`` and ``prob_within`` (P(T <= t)).
    levels : tuple of Isochrone
        One per probability, in increasing p (so the outermost region first).
    zone_kind : str
        ``"hexagons"`` or ``"polygons"`` (the planner's zones).
    """

    direction: str
    place: Place
    departure: pd.Timestamp
    within_min: float
    reach: pd.DataFrame
    levels: tuple[Isochrone, ...]
    zone_kind: str

    @property
    def probabilities(self) -> tuple[float, ...]:
        return tuple(level.probability for level in self.levels)


def _check_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    return direction


def _check_within(within_min: float) -> float:
    try:
        value = float(within_min)
    except (TypeError, ValueError):
        value = float("nan")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"within_min must be a positive number of minutes, got {within_min!r}")
    return value


def _check_probabilities(probabilities: Sequence[float]) -> tuple[float, ...]:
    """Distinct probabilities in (0, 1), sorted increasingly."""
    values = np.asarray(list(probabilities), dtype=float)
    if values.size == 0:
        raise ValueError("probabilities: give at least one probability p in (0, 1)")
    bad = values[~((values > 0) & (values < 1))]
    if bad.size:
        raise ValueError(f"probabilities must lie strictly between 0 and 1, got {bad.tolist()}")
    return tuple(float(p) for p in np.unique(values))


def reach_probabilities(
    model: TravelTimeModel,
    area: ServiceArea,
    place: Place,
    departure,
    within_min: float,
    *,
    direction: str = "from",
) -> pd.DataFrame:
    """P(T <= ``within_min``) between ``place`` and every zone of the area.

    ``direction="from"``: T is the time from the place to the zone's point (the
    coverage map's :func:`~vrvm.services.planning.coverage.coverage_grid`); ``"to"``: from the
    zone's point to the place, leaving at ``departure`` (one
    :meth:`~vrvm.trips.model.travel_time.TravelTimeModel.predict_dist` call for all zones).

    Returns
    -------
    pandas.DataFrame
        ``zone``, ``number``, ``label``, ``lat``, ``lon``, ``median_min`` and
        ``prob_within``, one row per zone in grid order.
    """
    _check_direction(direction)
    within_min = _check_within(within_min)
    columns = ["zone", "number", "label", "lat", "lon"]
    if direction == "from":
        grid = coverage_grid(model, area, place, departure, within_min)
        return grid[[*columns, "median_min", "prob_within"]].reset_index(drop=True)
    grid = area.grid
    dist = model.predict_dist(query_frame(place, grid, departure).rename(columns=_REVERSED))
    out = grid[columns].reset_index(drop=True)
    out["median_min"] = dist.ppf(0.5) / 60.0
    out["prob_within"] = dist.prob_within(60.0 * within_min)
    return out


def dissolve_zones(polygons: np.ndarray, mask: np.ndarray) -> shapely.MultiPolygon:
    """The union of the masked zone polygons as one MultiPolygon (empty when none is).

    Examples
    --------
    >>> squares = np.array([shapely.box(x, 0, x + 1, 1) for x in range(4)])
    >>> region = dissolve_zones(squares, np.array([True, True, False, True]))
    >>> region.geom_type, len(region.geoms), region.area
    ('MultiPolygon', 2, 3.0)
    >>> dissolve_zones(squares, np.zeros(4, dtype=bool)).is_empty
    True
    """
    chosen = np.asarray(polygons, dtype=object)[np.asarray(mask, dtype=bool)]
    if chosen.size == 0:
        return shapely.MultiPolygon()
    union = shapely.union_all(chosen)
    parts = [part for part in shapely.get_parts(union) if part.geom_type == "Polygon"]
    # exteriors counter-clockwise, holes clockwise (RFC 7946 and the geodesic area's sign)
    return shapely.orient_polygons(shapely.MultiPolygon(parts))


@cache
def _geod():
    from pyproj import Geod  # installed with geopandas (zone files' areas); imported on use

    return Geod(ellps="WGS84")


def geodesic_area_km2(geometry) -> float:
    """Area of a lon/lat (Multi)Polygon on the WGS84 ellipsoid in km², holes excluded.

    Examples
    --------
    >>> round(geodesic_area_km2(shapely.box(0.0, 0.0, 1.0, 1.0)), 1)  # 1° x 1° at the equator
    12308.8
    """
    if geometry.is_empty:
        return 0.0
    area_m2, _ = _geod().geometry_area_perimeter(shapely.orient_polygons(geometry))
    return abs(float(area_m2)) / 1e6


def probability_isochrones(
    model: TravelTimeModel,
    area: ServiceArea,
    place: Place,
    departure,
    within_min: float,
    probabilities: Sequence[float] = DEFAULT_PROBABILITIES,
    *,
    direction: str = "from",
) -> Isochrones:
    """The zones where P(T <= t) >= p, dissolved into one region per p.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    area : ServiceArea
        The zones (hexagons, or the planner's polygons, each standing for its
        representative point).
    place : Place
        The origin (``direction="from"``) or the destination (``"to"``).
    departure : datetime-like
        Departure time; a naive time is a wall-clock time in the model's time zone.
    within_min : float
        The threshold t, in minutes.
    probabilities : sequence of float, default=(0.5, 0.9, 0.95)
        The levels p, each in (0, 1); sorted, duplicates dropped.
    direction : {"from", "to"}, default="from"
        Trips from the place to every zone, or from every zone to the place.

    Returns
    -------
    Isochrones
        The zones' probabilities and one :class:`Isochrone` per p. The region of a
        larger p lies inside that of a smaller one (its zones are a subset).

    Notes
    -----
    Zone j belongs to level p when ``F_j(60 t) >= p``, ``F_j`` the ensemble's mixture
    cdf of the trip between the place and zone j's point. The region is the union of
    those zones' polygons (hexagons, or the zone file's exact polygons), so its holes
    are zones inside it that do not meet p, and gaps between a zone file's polygons.
    """
    direction = _check_direction(direction)
    within_min = _check_within(within_min)
    levels_p = _check_probabilities(probabilities)
    departure = local_time(departure, model.tz_)
    reach = reach_probabilities(model, area, place, departure, within_min, direction=direction)
    prob = reach["prob_within"].to_numpy(float)
    zone_ids = reach["zone"].astype(str).to_numpy()
    polygons = area.polygons
    levels = []
    for p in levels_p:
        meets = prob >= p
        geometry = dissolve_zones(polygons, meets)
        levels.append(
            Isochrone(
                probability=p,
                zones=tuple(zone_ids[meets].tolist()),
                geometry=geometry,
                area_km2=geodesic_area_km2(geometry),
            )
        )
    return Isochrones(
        direction=direction,
        place=place,
        departure=departure,
        within_min=within_min,
        reach=reach,
        levels=tuple(levels),
        zone_kind=area.kind,
    )


def _percent(p: float) -> str:
    """``0.9 -> "90"``, ``0.975 -> "97.5"``."""
    return f"{100 * p:.4g}"


def _definition(result: Isochrones, p: float) -> str:
    ends = "from the place to the zone" if result.direction == "from" else "from the zone to it"
    return (
        f"P(T <= {60 * result.within_min:g} s) >= {p:g}, T the travel time {ends}, "
        "leaving at the departure time"
    )


def isochrone_table(result: Isochrones) -> pd.DataFrame:
    """One row per level: ``p``, ``zones`` (how many meet it) and ``area_km2``."""
    return pd.DataFrame(
        {
            "p": [level.probability for level in result.levels],
            "zones": np.array([level.n_zones for level in result.levels], dtype=np.int64),
            "area_km2": [level.area_km2 for level in result.levels],
        }
    )


def isochrones_geojson(result: Isochrones, *, synthetic: bool = False) -> bytes:
    """The isochrones as a GeoJSON FeatureCollection (UTF-8), one MultiPolygon per p.

    Features come in increasing p (outermost first). Each feature's properties define
    its polygon: ``direction``, ``place_name``, ``place_lat``, ``place_lon``,
    ``place_zone``, ``departure`` (ISO 8601 with its UTC offset), ``within_s``,
    ``within_min``, ``p``, ``definition`` (the condition in words), ``n_zones``,
    ``zones`` (their ids), ``area_km2`` (geodesic, WGS84) and ``zone_kind``. An empty
    region is a MultiPolygon without coordinates.
    """
    place = result.place
    common: dict[str, Any] = {
        "direction": result.direction,
        "place_name": place.label,
        "place_lat": float(place.lat),
        "place_lon": float(place.lon),
        "place_zone": place.zone,
        "departure": result.departure.isoformat(),
        "within_s": 60.0 * result.within_min,
        "within_min": result.within_min,
        "zone_kind": result.zone_kind,
    }
    features = [
        {
            "type": "Feature",
            "properties": {
                **common,
                "p": level.probability,
                "definition": _definition(result, level.probability),
                "n_zones": level.n_zones,
                "zones": list(level.zones),
                "area_km2": round(level.area_km2, 6),
            },
            "geometry": shapely.geometry.mapping(level.geometry),
        }
        for level in result.levels
    ]
    document = {
        "type": "FeatureCollection",
        "features": features,
        "direction": result.direction,
        "departure": result.departure.isoformat(),
        "within_s": 60.0 * result.within_min,
        "synthetic": bool(synthetic),
    }
    return json.dumps(document, allow_nan=False).encode("utf-8")


def level_colours(n: int) -> np.ndarray:
    """RGB of ``n`` nested levels, pale (smallest p, outermost) to dark (largest p).

    Spread over the probability palette's greens (without its grey), interpolated
    when there are more levels than colours, so that every level differs.

    Examples
    --------
    >>> level_colours(3).tolist()
    [[161, 217, 155], [65, 171, 93], [0, 109, 44]]
    """
    greens = np.asarray(PROBABILITY_PALETTE[1:], dtype=float)
    where = np.arange(1, n + 1) / max(n, 1) * (len(greens) - 1)
    channels = [np.interp(where, np.arange(len(greens)), greens[:, c]) for c in range(3)]
    return np.round(np.column_stack(channels)).astype(np.int64)


@dataclass(frozen=True)
class IsochroneMap:
    """What the map draws: the regions, the zones' fills and tooltips, the legend.

    Attributes
    ----------
    features : list of dict
        One GeoJSON feature per non-empty level, outermost first (drawn in that order,
        each on top of the last), geometry simplified by
        :data:`~vrvm.services.map.area.DRAW_TOLERANCE_DEG`, properties ``p``, ``fill`` and
        ``line`` (RGBA).
    zone_fill : numpy.ndarray
        RGBA per zone (grid order): almost transparent over a region, faint grey outside.
    tips : list of str
        Tooltip per zone, plain text in lines (numbers only, no markup): P(T <= t),
        the median and the largest level the zone meets.
    legend : list of tuple
        ``(label, "#rrggbb")`` per level.
    """

    features: list[dict]
    zone_fill: np.ndarray
    tips: list[str]
    legend: list[tuple[str, str]]


def isochrone_map(result: Isochrones) -> IsochroneMap:
    """Fills, tooltips and legend of the isochrone map (see :class:`IsochroneMap`)."""
    colours = level_colours(len(result.levels))
    features = [
        {
            "type": "Feature",
            "properties": {
                "p": level.probability,
                "fill": rgba(rgb, 120),
                "line": rgba(np.round(0.7 * rgb), 230),
            },
            "geometry": shapely.geometry.mapping(
                shapely.simplify(level.geometry, DRAW_TOLERANCE_DEG, preserve_topology=True)
            ),
        }
        for level, rgb in zip(result.levels, colours, strict=True)
        if not level.geometry.is_empty
    ]
    t = f"{result.within_min:g}"
    prob = result.reach["prob_within"].to_numpy(float)
    # the largest level each zone meets (-1: none)
    thresholds = np.asarray(result.probabilities)
    met = np.searchsorted(thresholds, prob, side="right") - 1
    fill = np.tile(np.array([120, 130, 140, 28]), (len(prob), 1))
    fill[met >= 0] = (255, 255, 255, 1)  # the region below shows; still picked by a click
    where = "From the origin to here" if result.direction == "from" else "From here to the place"
    # rounded down, so that a zone just short of a level never reads as meeting it
    shown = np.floor(1000.0 * prob) / 10.0
    tips = []
    for p_zone, median, level in zip(shown, result.reach["median_min"], met, strict=True):
        tip = f"{where}: P(arrive within {t} min) = {p_zone:.1f} %\nmedian {median:.1f} min"
        if level >= 0:
            pct = _percent(thresholds[level])
            tip += f"\nIn the {pct} % isochrone: P(arrive within {t} min) ≥ {pct} %"
        else:
            tip += f"\nOutside every isochrone (P below {_percent(thresholds[0])} %)"
        tips.append(tip)
    legend = [
        (f"P(arrive within {t} min) ≥ {_percent(level.probability)} %", hex_colour(rgb))
        for level, rgb in zip(result.levels, colours, strict=True)
    ]
    return IsochroneMap(features=features, zone_fill=fill, tips=tips, legend=legend)
