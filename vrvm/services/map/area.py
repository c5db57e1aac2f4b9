"""The service area: the map's clickable zones, their labels and the initial map view.

Zones are the H3 cells where the model's training trips start or end, sized for
those trips (:func:`vrvm.trips.places.trip_zones.trip_zones`), numbered in reading order and
named after boundary polygons when there are some (:mod:`vrvm.services.map.boundaries`);
or, when a planner's zone file is chosen (:func:`set_zone_choice`), its polygons that
hold trip ends (taxi zones, community areas; :func:`vrvm.trips.places.trip_zones.trip_polygons`),
each standing for its representative point. The initial view fits the densest cluster
of trip ends into the map (:func:`view_for_bbox`, in deck.gl's Web-Mercator
conventions), and the training trips are indexed by zone once
(:class:`vrvm.services.map.support.TripSupport`, derived by :mod:`vrvm.services.map.trip_index`
and kept beside trips kept in the data home) so that every answer can say how much data
stands behind it, reading only the trips from near its origin.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import shapely

from vrvm.services.access.policy import Access, record
from vrvm.services.map.boundaries import place_names
from vrvm.services.map.support import TripSupport, observed_near, observed_trips
from vrvm.services.map.trip_index import (
    as_trip_table,
    cells_grid,
    hexagon_layout,
    in_id_order,
    polygon_layout,
    reading_order,
    trip_zone_layout,
)
from vrvm.services.versions.models import is_synthetic
from vrvm.trips.home import Home
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.geo import LocalProjection
from vrvm.trips.places.trip_zones import trip_polygons
from vrvm.trips.places.zone_files import ZoneFile
from vrvm.trips.places.zones import boundary_lonlat, choose_h3_resolution, latlng_to_zone, zone_grid
from vrvm.trips.store.kept_zones import ZoneFileEntry
from vrvm.trips.store.trip_table import TripTable
from vrvm.trips.synthetic import synthetic_city_geojson

__all__ = [
    "DRAW_TOLERANCE_DEG",
    "ServiceArea",
    "ViewState",
    "build_service_area",
    "load_zone_choice",
    "mercator_x",
    "mercator_y",
    "set_zone_choice",
    "view_for_bbox",
    "zone_choice",
]

logger = logging.getLogger(__name__)

DRAW_TOLERANCE_DEG = 1e-4
"""Polygons are simplified by this much (about 10 m) for drawing, never for lookups."""


@dataclass(frozen=True)
class ViewState:
    """Initial map view: centre, zoom (deck.gl / Web Mercator, 512-pixel world)."""

    latitude: float
    longitude: float
    zoom: float


_WORLD_PX = 512.0  # deck.gl's world size at zoom 0


def mercator_x(lon) -> np.ndarray:
    """Web-Mercator x of longitudes, in pixels of the 512-pixel world at zoom 0."""
    return (np.asarray(lon, dtype=float) + 180.0) / 360.0 * _WORLD_PX


def mercator_y(lat) -> np.ndarray:
    """Web-Mercator y of latitudes, in pixels of the 512-pixel world at zoom 0."""
    phi = np.radians(np.clip(lat, -85.05112878, 85.05112878))
    return (np.pi - np.log(np.tan(np.pi / 4 + phi / 2))) / (2 * np.pi) * _WORLD_PX


def view_for_bbox(
    lat_min: float,
    lon_min: float,
    lat_max: float,
    lon_max: float,
    *,
    width_px: int = 800,
    height_px: int = 560,
    padding: float = 0.06,
) -> ViewState:
    """Centre and zoom that fit a box into a ``width_px`` x ``height_px`` map.

    Examples
    --------
    >>> v = view_for_bbox(41.6, -87.95, 42.05, -87.5)
    >>> round(v.latitude, 2), round(v.longitude, 3), 9 < v.zoom < 11
    (41.83, -87.725, True)
    """
    x0, x1 = mercator_x(np.array([lon_min, lon_max]))
    y1, y0 = mercator_y(np.array([lat_min, lat_max]))
    span_x = max(x1 - x0, 1e-9)
    span_y = max(y1 - y0, 1e-9)
    usable = 1.0 - 2.0 * padding
    zoom = min(np.log2(width_px * usable / span_x), np.log2(height_px * usable / span_y))
    mid_y = 0.5 * (y0 + y1)
    lat_c = np.degrees(2 * np.arctan(np.exp(np.pi - mid_y / _WORLD_PX * 2 * np.pi)) - np.pi / 2)
    return ViewState(float(lat_c), float(0.5 * (lon_min + lon_max)), float(zoom))


@dataclass(frozen=True)
class ServiceArea:
    """The clickable zones of the map and what is needed to draw them.

    Attributes
    ----------
    grid : pandas.DataFrame
        One row per zone in display order: ``zone`` (H3 id, or the polygon's id as
        text), ``number`` (1, 2, ... from north-west to south-east; id order for
        polygons), ``label`` (``"Zone 12 · Downtown"``; ``"32 · Loop"`` for a polygon),
        ``place`` (boundary or polygon name, or ""), ``lat``, ``lon`` (the point the
        zone stands for in predictions: the hexagon's centre, a polygon's
        representative point), ``boundary`` (``[[lon, lat], ...]``: the hexagon, or the
        exterior ring of a polygon's largest part), ``n_points`` (training trip ends in
        the zone) and, when built from trips, ``cluster`` (0 for the densest cluster of
        trip ends; hexagons only). Polygon zones also have ``geometry`` (the exact
        polygon as a GeoJSON geometry).
    resolution : int
        H3 resolution of the zones (for polygons: of the hexagons the trips would have
        had, which chose the view).
    bbox : tuple of float
        ``(lat_min, lon_min, lat_max, lon_max)`` of the zones.
    view : ViewState
        Initial map view: the densest cluster of trip ends (all zones without trips).
    boundaries : dict or None
        GeoJSON drawn under the zones (boundary polygons, river, ...).
    synthetic : bool
        Whether the area is the synthetic city.
    support : TripSupport or None
        The training trips indexed by zone (None when they were not kept).
    median_trip_km : float or None
        Median length of the training trips whose ends differ.
    zone_file : ZoneFile or None
        The planner's polygons when the zones are some of them (None: H3 hexagons).
    shapes : tuple of dict or None
        The polygon zones' GeoJSON geometries in grid order, simplified by
        :data:`DRAW_TOLERANCE_DEG` for drawing (None for hexagons).
    boundary_problem : str or None
        Why the boundary file given was set aside (the area is then built without it),
        for the page to say; None when it was used (or none was given).
    """

    grid: pd.DataFrame
    resolution: int
    bbox: tuple[float, float, float, float]
    view: ViewState
    boundaries: dict | None = None
    synthetic: bool = False
    support: TripSupport | None = field(default=None, repr=False)
    median_trip_km: float | None = None
    zone_file: ZoneFile | None = field(default=None, repr=False)
    shapes: tuple[dict, ...] | None = field(default=None, repr=False)
    boundary_problem: str | None = None

    @property
    def kind(self) -> str:
        """``"hexagons"`` (H3 cells from the trips) or ``"polygons"`` (a zone file)."""
        return "hexagons" if self.zone_file is None else "polygons"

    @cached_property
    def _file_rows(self) -> np.ndarray:
        """Grid row of each polygon of the zone file (-1: no trip end, not a zone), then -1."""
        rows = np.full(len(self.zone_file) + 1, -1, dtype=np.int64)
        rows[self.zone_file.positions(self.grid["zone"])] = np.arange(len(self.grid))
        return rows

    def zone_rows(self, lat, lon) -> np.ndarray:
        """Grid row of the zone holding each point (degrees), -1 outside every zone."""
        lat = np.atleast_1d(np.asarray(lat, dtype=float))
        lon = np.atleast_1d(np.asarray(lon, dtype=float))
        if self.zone_file is not None:
            return self._file_rows[self.zone_file.zone_index(lat, lon)]
        rows = np.full(lat.shape, -1, dtype=np.int64)
        ok = np.isfinite(lat) & np.isfinite(lon)
        cells = latlng_to_zone(lat[ok], lon[ok], self.resolution)
        rows[ok] = self._zone_ids.get_indexer(cells)
        return rows

    @cached_property
    def _outlines(self) -> np.ndarray:
        if self.zone_file is not None:
            return self.zone_file.geometries[self.zone_file.positions(self.grid["zone"])]
        return np.array([shapely.Polygon(b) for b in self.grid["boundary"]], dtype=object)

    @property
    def polygons(self) -> np.ndarray:
        """Each zone's shape in grid order (shapely): its hexagon, or the planner's exact polygon.

        Hexagons share their vertices exactly (H3 computes each once), so a union of
        neighbouring ones has no slivers.
        """
        return self._outlines

    def nearest_zone(self, lat: float, lon: float) -> tuple[int, float]:
        """Grid row of the zone nearest to a point and its distance in km (0 inside)."""
        projection = LocalProjection(float(lat), float(lon))

        def to_km(coords: np.ndarray) -> np.ndarray:
            return np.column_stack(projection.forward(coords[:, 1], coords[:, 0]))

        distance = shapely.distance(shapely.transform(self._outlines, to_km), shapely.Point(0, 0))
        row = int(np.argmin(distance))
        return row, float(distance[row])

    def observed_between(
        self,
        trips: pd.DataFrame | TripTable | None,
        origin_zone: str | None,
        dest_zone: str | None,
        tz=None,
    ) -> pd.DataFrame:
        """Training trips from one zone to another (see :func:`~support.observed_trips`).

        Empty when the trips were not kept or either place is not a zone. Reads only
        the origin zone's trips from the support index.
        """
        o_row, d_row = self.zone_row(origin_zone), self.zone_row(dest_zone)
        if trips is None or self.support is None or o_row is None or d_row is None:
            return pd.DataFrame(columns=["hour", "minutes", "start_time", "weekend"])
        frame = trips if isinstance(trips, pd.DataFrame) else None
        return observed_trips(self.support, frame, o_row, d_row, tz)

    def observed_near(
        self, origin_cell: str, dest_cell: str, tz=None, *, min_trips: int = 3, max_rings: int = 1
    ) -> tuple[pd.DataFrame, int] | None:
        """Training trips between two H3 cells (or their disks), from the support index.

        See :func:`~support.observed_near`; None when the index cannot say (no trips
        kept, polygon zones, or an index without the ends' cells).
        """
        if self.support is None or self.zone_file is not None:
            return None
        if not {"origin_cell", "dest_cell", "start_time"} <= set(self.support.index.columns):
            return None
        return observed_near(
            self.support,
            pd.Index(self.grid["zone"]),
            origin_cell,
            dest_cell,
            tz=tz,
            min_trips=min_trips,
            max_rings=max_rings,
        )

    @cached_property
    def zone_index(self) -> dict[str, int]:
        """Zone id -> row position in ``grid`` (built once: the grid never changes)."""
        return {z: i for i, z in enumerate(self.grid["zone"])}

    @cached_property
    def _zone_ids(self) -> pd.Index:
        return pd.Index(self.grid["zone"])

    def zone_row(self, zone: str | None) -> int | None:
        """Row of ``zone`` in ``grid``, or None when it is not one of the zones."""
        matches = np.flatnonzero(self.grid["zone"].to_numpy() == zone)
        return int(matches[0]) if matches.size else None

    @property
    def labels(self) -> list[str]:
        """Zone labels in display order (for a searchable list)."""
        return self.grid["label"].tolist()


def _extent_points(model: TravelTimeModel) -> tuple[np.ndarray, np.ndarray]:
    """Without the training trips: the relevance-vector trips and the training box."""
    rv = model.relevance_trips()
    lat = np.concatenate([rv["origin_lat"].to_numpy(float), rv["dest_lat"].to_numpy(float)])
    lon = np.concatenate([rv["origin_lon"].to_numpy(float), rv["dest_lon"].to_numpy(float)])
    bbox = model.training_summary_.get("bbox")
    if bbox:  # the corners make the filled hull reach the whole training extent
        lat_lo, lon_lo, lat_hi, lon_hi = bbox
        lat = np.concatenate([lat, [lat_lo, lat_lo, lat_hi, lat_hi]])
        lon = np.concatenate([lon, [lon_lo, lon_hi, lon_lo, lon_hi]])
    return lat, lon


def _extent_grid(
    model: TravelTimeModel, resolution: int | None, target_zones: int, max_zones: int
) -> tuple[pd.DataFrame, int]:
    """Zones filling the training extent, when where the trips went is unknown."""
    lat, lon = _extent_points(model)
    if resolution is not None:
        return zone_grid(lat, lon, resolution=resolution, padding_rings=1), int(resolution)
    # coarser while the filled area has too many zones (outlying trips, an airport)
    resolution = choose_h3_resolution(lat, lon, target_zones=target_zones)
    while True:
        try:
            grid = zone_grid(lat, lon, resolution=resolution, padding_rings=1)
        except ValueError:  # far more cells than zone_grid allows
            if resolution == 0:
                raise
            resolution -= 1
            continue
        if len(grid) <= max_zones or resolution == 0:
            return grid, int(resolution)
        resolution -= 1


def build_service_area(
    model: TravelTimeModel,
    *,
    trips: pd.DataFrame | TripTable | None = None,
    resolution: int | None = None,
    target_zones: int = 600,
    max_zones: int = 2500,
    boundaries: dict | None = None,
    zones: ZoneFile | None = None,
    all_zones: bool = False,
) -> ServiceArea:
    """Zones where the model's training trips go, labelled, with an initial view.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    trips : TripTable or pandas.DataFrame, optional
        Its training trips (see :func:`~vrvm.trips.home.training_trip_table`). The zones
        are the cells where they start or end, with a thin ring
        (:func:`~vrvm.trips.places.trip_zones.trip_zones`), the view opens on their densest
        cluster, and they are indexed by zone for the support counts
        (:mod:`vrvm.services.map.trip_index`: derived once and kept beside trips kept in
        the data home, so that a later call reads none of them; indexed in memory for
        a DataFrame). Without them (a model whose trips were not kept) the zones fill
        the convex hull of the relevance-vector trips and the training bounding box,
        and no support is counted.
    resolution : int, optional
        H3 resolution of the map zones; default: chosen from the trips (a typical trip
        spans several zones), or, without trips, the one giving about ``target_zones``
        zones over the extent.
    max_zones : int, default=2500
        At most this many zones (coarser zones otherwise).
    boundaries : dict, optional
        GeoJSON FeatureCollection whose polygons name the zones (e.g. community
        areas) and which is drawn under them. Default: the synthetic city's layers
        for a model trained on it.
    zones : ZoneFile, optional
        A planner's polygons (taxi zones, community areas): the zones are then those
        holding training trip ends (relevance-vector trip ends without the trips),
        in id order, labelled ``"<id> · <name>"``, each standing for its
        representative point; the others are drawn faintly under them and cannot be
        picked. Support counts are per polygon pair (no neighbours).
    all_zones : bool, default=False
        With ``zones``, every polygon of the file is a zone, those holding no trip end
        too (``n_points`` 0), and no pair support is indexed: the notebook API's
        answers have one row per polygon given.

    Returns
    -------
    ServiceArea

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> trips = synthetic_city(600, seed=1)
    >>> model = TravelTimeModel(n_members=1, kernel_widths=[2.0], max_basis=20).fit(trips)
    >>> doc = {"type": "FeatureCollection", "features": [
    ...     {"type": "Feature", "properties": {"id": i, "name": name}, "geometry": {
    ...         "type": "Polygon", "coordinates": [[[x, -41], [x + 0.4, -41],
    ...         [x + 0.4, -39], [x, -39], [x, -41]]]}}
    ...     for i, (name, x) in enumerate([("West", -30.4), ("East", -30.0), ("Far", 10)])]}
    >>> area = build_service_area(model, trips=trips, zones=ZoneFile.from_geojson(doc))
    >>> area.kind, area.labels, area.support.n_trips
    ('polygons', ['0 · West', '1 · East'], 600)
    >>> int(area.zone_rows(-40.0, -30.2)[0]), int(area.zone_rows(-40.0, 10.2)[0])
    (0, -1)
    """
    synthetic = is_synthetic(model)
    if boundaries is None and synthetic:
        boundaries = synthetic_city_geojson()
    table = as_trip_table(trips)
    try:  # a boundary file is never the map's end: the map is drawn without it
        drawn = drawn_boundaries(boundaries)
    except (ValueError, TypeError, shapely.errors.GEOSException) as exc:
        return _without_boundaries(exc, model, trips, resolution, target_zones, max_zones, zones)
    if zones is not None:
        return _polygon_area(model, table, zones, drawn, synthetic, max_zones, all_zones)
    focus, median_km, support = None, None, None
    idle = []
    if table is not None:
        layout, support = hexagon_layout(table, model.tz_, resolution, max_zones)
        resolution, focus = layout["resolution"], layout["focus"]
        median_km = np.nan if layout["median_km"] is None else layout["median_km"]
        grid = cells_grid(layout["zones"], n_points=layout["n_points"], cluster=layout["cluster"])
        # Only zones where trips start or end can be picked; the thin ring around them
        # is drawn faintly underneath, for continuity.
        idle = [
            ("", {"type": "Polygon", "coordinates": [list(map(list, boundary_lonlat(z)))]})
            for z in layout["idle"]
        ]
    else:
        grid, resolution = _extent_grid(model, resolution, target_zones, max_zones)
        grid = reading_order(grid, resolution)
    # centres to 6 decimals (0.1 m), as places and shared links carry them
    grid["lat"], grid["lon"] = grid["lat"].round(6), grid["lon"].round(6)
    grid.insert(1, "number", np.arange(1, len(grid) + 1))
    try:  # named after the file alone: the idle ring drawn with it names nothing
        places = place_names(grid["lat"].to_numpy(), grid["lon"].to_numpy(), boundaries)
    except ValueError as exc:  # a file beyond what the map builds: drawn without it
        return _without_boundaries(exc, model, trips, resolution, target_zones, max_zones, zones)
    grid.insert(2, "place", places)
    grid.insert(
        2,
        "label",
        [
            _zone_label(n, p, a, b)
            for n, p, a, b in zip(grid["number"], places, grid["lat"], grid["lon"], strict=True)
        ],
    )
    ring_lon = np.concatenate([np.asarray(b)[:, 0] for b in grid["boundary"]])
    ring_lat = np.concatenate([np.asarray(b)[:, 1] for b in grid["boundary"]])
    bbox = (
        float(ring_lat.min()),
        float(ring_lon.min()),
        float(ring_lat.max()),
        float(ring_lon.max()),
    )
    return ServiceArea(
        grid=grid,
        resolution=int(resolution),
        bbox=bbox,
        view=view_for_bbox(*(focus or bbox)),
        boundaries=_with_idle(drawn, idle),
        synthetic=synthetic,
        support=support,
        median_trip_km=median_km,
    )


def _without_boundaries(
    problem: Exception, model, trips, resolution, target_zones, max_zones, zones
) -> ServiceArea:
    """The area built without the boundary file that could not be used, saying why.

    A kept file is checked when it is saved and when it is read
    (:func:`vrvm.services.map.boundaries.load_boundaries`), so this is the last line only:
    whatever the file, the pages still get their map.
    """
    logger.warning("the boundary file is set aside, the map is drawn without it: %s", problem)
    area = build_service_area(
        model,
        trips=trips,
        resolution=resolution,
        target_zones=target_zones,
        max_zones=max_zones,
        boundaries={"type": "FeatureCollection", "features": []},
        zones=zones,
    )
    message = f"The boundary file is not drawn and names no zone: {problem}"
    return dataclasses.replace(area, boundary_problem=message)


def _largest_rings(geometries: np.ndarray) -> list[list[list[float]]]:
    """Exterior ring ``[[lon, lat], ...]`` of each geometry's largest polygon."""
    parts, owner = shapely.get_parts(geometries, return_index=True)
    order = np.lexsort((-shapely.area(parts), owner))
    first = order[np.unique(owner[order], return_index=True)[1]]
    rings = shapely.get_exterior_ring(parts[first])
    return [np.round(shapely.get_coordinates(r), 6).tolist() for r in rings]


def _polygon_area(
    model: TravelTimeModel,
    table: TripTable | None,
    zones: ZoneFile,
    boundaries: dict | None,
    synthetic: bool,
    max_zones: int,
    all_zones: bool = False,
) -> ServiceArea:
    """The service area whose zones are the polygons of ``zones`` holding trip ends (all
    of them with ``all_zones``, without a pair index)."""
    support = None
    if table is not None:
        layout, support = polygon_layout(table, zones, model.tz_)
        positions = np.asarray(layout["positions"], dtype=np.int64)
        found_points = np.asarray(layout["n_points"], dtype=np.int64)
    else:
        ends = model.relevance_trips()
        found = trip_polygons(
            zones, ends["origin_lat"], ends["origin_lon"], ends["dest_lat"], ends["dest_lon"]
        )
        positions, found_points = found.positions, found.n_points
    if all_zones:  # every polygon, with the trip ends found in it (0 for the others)
        points = np.zeros(len(zones), dtype=np.int64)
        points[np.asarray(positions, dtype=np.int64)] = found_points
        positions, found_points, support = np.arange(len(zones), dtype=np.int64), points, None
    if positions.size == 0:
        raise ValueError(
            f"no training trip starts or ends in a zone of {zones.source}: "
            "is it a map of this model's city?"
        )
    if positions.size > max_zones:
        raise ValueError(
            f"{positions.size:,} zones of {zones.source} hold trip ends; at most "
            f"{max_zones:,} can be drawn"
        )
    where = in_id_order(zones.ids, positions)
    n_points = found_points[np.searchsorted(positions, where)]
    geometries = zones.geometries[where]
    lat, lon = zones.representative_points(zones.ids[where])  # inside the polygon
    ids, names = zones.ids[where].astype(str), zones.names[where]
    grid = pd.DataFrame(
        {
            "zone": ids,
            "number": np.arange(1, where.size + 1),
            "label": [f"{z} · {n}" if n else f"Zone {z}" for z, n in zip(ids, names, strict=True)],
            "place": names,
            "lat": np.round(lat, 6),
            "lon": np.round(lon, 6),
            "boundary": _largest_rings(geometries),
            "n_points": n_points,
            # the polygons for exports, to 6 decimals (0.1 m)
            "geometry": [json.loads(g) for g in shapely.to_geojson(_rounded(geometries, 6))],
        }
    )
    if not pd.Index(grid["label"]).is_unique:  # cannot happen: ids are distinct
        raise ValueError(f"zone labels of {zones.source} are not distinct")
    shapes = tuple(json.loads(g) for g in shapely.to_geojson(_for_drawing(geometries)))
    lon_lo, lat_lo, lon_hi, lat_hi = shapely.total_bounds(geometries)
    bbox = (float(lat_lo), float(lon_lo), float(lat_hi), float(lon_hi))
    focus, median_km = None, None
    if table is not None:  # open on the densest cluster of trip ends, as the hexagons would
        hexagons = trip_zone_layout(table, None, 2500)
        resolution, focus = hexagons["resolution"], hexagons["focus"]
        median_km = np.nan if hexagons["median_km"] is None else hexagons["median_km"]
    else:
        resolution = choose_h3_resolution(grid["lat"], grid["lon"], target_zones=600)
    idle = np.setdiff1d(np.arange(len(zones)), where)
    return ServiceArea(
        grid=grid,
        resolution=int(resolution),
        bbox=bbox,
        view=view_for_bbox(*(focus or bbox)),
        boundaries=_with_idle(boundaries, _idle_polygons(zones, idle)),
        synthetic=synthetic,
        support=support,
        median_trip_km=median_km,
        zone_file=zones,
        shapes=shapes,
    )


def _rounded(geometries: np.ndarray, decimals: int) -> np.ndarray:
    return shapely.transform(geometries, lambda xy: np.round(xy, decimals))


def _for_drawing(geometries: np.ndarray, coarser: float = 1.0) -> np.ndarray:
    """Polygons simplified (topology kept) and rounded to 5 decimals (1 m), for a map."""
    tolerance = coarser * DRAW_TOLERANCE_DEG
    return _rounded(shapely.simplify(geometries, tolerance, preserve_topology=True), 5)


def drawn_boundaries(boundaries: dict | None) -> dict | None:
    """Boundary GeoJSON as the map draws it: each geometry simplified and rounded as the
    zones are (:func:`_for_drawing`).

    The map is sent to the browser after every change of the page, and an uploaded
    file can be detailed: Chicago's 77 community areas are 2.2 MB of coordinates, a few
    percent of that drawn. Zones are named after the file itself, not this copy.
    Features without a geometry shapely can read are kept as they are.

    Examples
    --------
    >>> ring = [[0.0, 0.0], *[[1e-6 * i, 0.0] for i in range(1, 1000)], [1.0, 0.0],
    ...         [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]
    >>> document = {"type": "FeatureCollection", "features": [{"type": "Feature",
    ...     "properties": {"name": "a"}, "geometry": {"type": "Polygon", "coordinates": [ring]}}]}
    >>> drawn = drawn_boundaries(document)["features"][0]
    >>> len(drawn["geometry"]["coordinates"][0]), drawn["properties"]
    (5, {'name': 'a'})
    """
    features = (boundaries or {}).get("features")
    if not isinstance(features, list) or not features:
        return boundaries
    # one vectorised read, simplification and write for the whole file: per feature,
    # shapely's call overheads made 20,000 small zones take seconds
    texts = [_geometry_text(f) for f in features]
    shapes = shapely.from_geojson(texts, on_invalid="ignore")
    readable = np.flatnonzero(~shapely.is_missing(shapes))
    written = shapely.to_geojson(_for_drawing(shapes[readable]))
    geometries = json.loads("[" + ",".join(written) + "]")  # one parse, not one per feature
    drawn = list(features)  # features without a geometry shapely can read stay as they are
    for i, geometry in zip(readable, geometries, strict=True):
        drawn[i] = {**features[i], "geometry": geometry}
    return {**boundaries, "features": drawn}


def _geometry_text(feature) -> str:
    """A feature's geometry as JSON text; ``"null"`` (not drawn as a shape) if it has none."""
    try:
        return json.dumps(feature.get("geometry")) if isinstance(feature, dict) else "null"
    except (TypeError, ValueError, RecursionError):  # a document built in Python
        return "null"


def _idle_polygons(zones: ZoneFile, idle: np.ndarray) -> list[tuple[str, dict]]:
    """(name, GeoJSON geometry) of the polygons at positions ``idle``, for drawing."""
    simplified = _for_drawing(zones.geometries[idle], coarser=4.0)  # faint: coarser still
    names = zones.names[idle]
    return [
        (str(name), json.loads(g))
        for name, g in zip(names, shapely.to_geojson(simplified), strict=True)
    ]


def _with_idle(boundaries: dict | None, idle: list[tuple[str, dict]]) -> dict | None:
    """``boundaries`` with zones that hold no trip end, drawn faintly and not pickable."""
    if not idle:
        return boundaries
    features = [
        {"type": "Feature", "properties": {"name": name, "kind": "idle_zone"}, "geometry": g}
        for name, g in idle
    ]
    document = dict(boundaries or {"type": "FeatureCollection"})
    document["features"] = [*features, *((boundaries or {}).get("features") or [])]
    return document


# ------------------------------------------------------------- which zones are clickable


def zone_choice(home: str | os.PathLike[str]) -> ZoneFileEntry | None:
    """The kept zone file whose polygons are the clickable zones (None: hexagons)."""
    name = Home(home).zones.clickable_choice()
    return Home(home).zones.entry(name) if name else None


def set_zone_choice(
    home: str | os.PathLike[str], name: str | None, *, by: Access | None = None
) -> None:
    """Make the kept zone file ``name`` the clickable zones (None: hexagons from the trips)."""
    if by is not None:
        by.require("zones")
    Home(home).zones.choose_clickable(name)
    record(home, by, "zones", what="clickable zones", name=name)


def load_zone_choice(home: str | os.PathLike[str], name: str) -> ZoneFile:
    """The polygons of the kept zone file ``name`` (KeyError, ZoneFileError: see the home)."""
    return Home(home).zones.load(name)


def _zone_label(number: int, place: str, lat: float, lon: float) -> str:
    where = place if place else f"{lat:.4f}, {lon:.4f}"
    return f"Zone {number} · {where}"
