"""Zones where trips are: their size chosen from the trips, their cells, their clusters.

The dashboard's clickable zones are the H3 cells where the training trips start or
end, with a thin ring around them and the narrow gaps between them closed
(:func:`trip_zones`); no convex hull is filled across water or empty suburbs. The
resolution follows the trips (a typical trip spans several zones; the densest
cluster of trip ends has enough zones to pick from), and the zones are grouped into
clusters (a city and its airport; the separate cities of one bike-share system), so
that a map can open on the densest one. When a planner's zone file is given instead,
the zones are its polygons that hold trip ends (:func:`trip_polygons`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import h3
import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from vrvm.trips.places.geo import haversine_km
from vrvm.trips.places.zone_files import ZoneFile
from vrvm.trips.places.zones import (
    _MAX_RESOLUTION,
    _check_resolution,
    boundary_lonlat,
    cell_ints_to_parent,
    choose_h3_resolution,
    latlng_to_cell_ints,
)

__all__ = [
    "EDGE_RINGS",
    "FILL_RINGS",
    "MIN_CLUSTER_ZONES",
    "SPAN_EDGES",
    "TripPolygons",
    "TripZones",
    "trip_polygons",
    "trip_zones",
    "zone_neighbours",
]


SPAN_EDGES = 3.0
"""A typical (median) trip spans at least this many zone edges."""
MIN_CLUSTER_ZONES = 100
"""Zones holding trip ends wanted in the densest cluster (at most one level finer)."""
FILL_RINGS = 2
"""Gaps between trip-holding zones are closed up to this many rings (a closing)."""
EDGE_RINGS = 1
"""Width, in cells, of the ring of zones kept around each trip-holding one."""
KEEP_SHARE = 0.99
"""Share of trip ends kept in zones when the sparsest cells go to respect max_zones."""


@dataclass(frozen=True)
class TripZones:
    """The zones where trips start or end, as chosen by :func:`trip_zones`.

    Attributes
    ----------
    grid : pandas.DataFrame
        One row per zone, sorted by ``zone``: ``zone`` (H3 id), ``lat``, ``lon``
        (centre), ``boundary`` (closed ``[[lon, lat], ...]``), ``n_points`` (trip ends
        in the zone) and ``cluster`` (0 for the cluster holding the most trip ends,
        1 for the next, ...).
    resolution : int
        H3 resolution of the zones.
    median_trip_km : float
        Median great-circle length of the trips whose two ends differ (NaN if none).
    focus_bbox : tuple of float
        ``(lat_min, lon_min, lat_max, lon_max)`` of the densest cluster, where a map
        should open: its zones, or the 1st to 99th percentiles of its trip ends
        (widened by one zone edge) when the zones reach much further.
    covered_share : float
        Share of the trip ends lying in a zone (1.0 unless the sparsest cells were
        left out to respect ``max_zones``).
    """

    grid: pd.DataFrame
    resolution: int
    median_trip_km: float
    focus_bbox: tuple[float, float, float, float]
    covered_share: float


def zone_neighbours(zones: Sequence[str]) -> sparse.csr_matrix:
    """Which zones touch: boolean ``(n, n)`` matrix, True on the diagonal too.

    Examples
    --------
    >>> import h3
    >>> cell = "882664c1a9fffff"
    >>> zones = [cell, *sorted(h3.grid_ring(cell, 1))[:2], "8826641a5bfffff"]
    >>> zone_neighbours(zones).toarray().sum(axis=1).tolist()
    [3, 2, 2, 1]
    """
    index = {z: i for i, z in enumerate(zones)}
    src, dst = list(range(len(index))), list(range(len(index)))
    for i, zone in enumerate(zones):
        for cell in h3.grid_ring(zone, 1):
            j = index.get(cell)
            if j is not None:
                src.append(i)
                dst.append(j)
    n = len(index)
    return sparse.csr_matrix((np.ones(len(src), dtype=bool), (src, dst)), shape=(n, n))


def _disk(cells, rings: int) -> set[str]:
    out: set[str] = set()
    for cell in cells:
        out.update(h3.grid_disk(cell, rings))
    return out


def _zone_cells(occupied: set[str], fill_rings: int, edge_rings: int) -> set[str]:
    """Occupied cells, a ring of ``edge_rings`` around them and their closed gaps.

    The closing (dilation by ``fill_rings`` rings, then erosion by as many) adds the
    cells whose whole ``fill_rings``-neighbourhood lies within ``fill_rings`` of an
    occupied cell: holes and narrow gaps inside the cloud of trip ends, never an
    outward band, so the zones do not spread over water or empty land.
    """
    zones = _disk(occupied, edge_rings) | set(occupied)
    if fill_rings:
        dilated = _disk(occupied, fill_rings)
        zones |= {
            c for c in dilated - zones if all(n in dilated for n in h3.grid_disk(c, fill_rings))
        }
    return zones


def _clusters(neighbours, n_points: np.ndarray, o_row: np.ndarray, d_row: np.ndarray):
    """Cluster of each zone, ranked by trip ends (0 = most).

    Touching zones form components; two components merge when the trips between
    them number at least 3 and 1 % of the smaller one's trip ends. An airport thus
    joins the city its trips go to, while cities sharing a file but no trips (the
    bike-share systems of San Francisco, Oakland and San Jose) stay apart, whatever
    a few odd trips say.
    """
    n_comp, comp = connected_components(neighbours, directed=False)
    both = (o_row >= 0) & (d_row >= 0)
    a, b = comp[o_row[both]], comp[d_row[both]]
    links = sparse.coo_matrix((np.ones(a.size), (a, b)), shape=(n_comp, n_comp)).tocsr()
    links = (links + links.T).tocoo()
    ends = np.bincount(comp, weights=n_points, minlength=n_comp)
    strong = (links.row != links.col) & (
        links.data >= np.maximum(3.0, 0.01 * np.minimum(ends[links.row], ends[links.col]))
    )
    merged = sparse.coo_matrix(
        (np.ones(int(strong.sum())), (links.row[strong], links.col[strong])),
        shape=(n_comp, n_comp),
    )
    _, group = connected_components(merged, directed=False)
    group_ends = np.bincount(group, weights=ends)
    rank = np.empty(group_ends.size, dtype=np.int64)
    rank[np.lexsort((np.arange(group_ends.size), -group_ends))] = np.arange(group_ends.size)
    return rank[group[comp]]


@dataclass(frozen=True)
class _Layout:
    """Zones at one resolution, before they become a :class:`TripZones`."""

    resolution: int
    zones: list[str]
    n_points: np.ndarray
    cluster: np.ndarray
    end_row: np.ndarray  # zone row of each trip end (origins, then destinations); -1 outside

    def densest_occupied(self) -> int:
        return int(((self.cluster == 0) & (self.n_points > 0)).sum())


def _layout(end_cells: np.ndarray, resolution: int, keep: set[str] | None, rings) -> _Layout:
    """Zones around the cells of the trip ends (``end_cells``: H3 cells as integers)."""
    counts = pd.Series(end_cells).value_counts()
    occupied = {h3.int_to_str(int(c)) for c in counts.index} if keep is None else keep
    zones = sorted(_zone_cells(occupied, *rings))
    zone_ints = pd.Index(np.array([h3.str_to_int(z) for z in zones], dtype=np.uint64))
    n_points = counts.reindex(zone_ints, fill_value=0).to_numpy(dtype=np.int64)
    end_row = zone_ints.get_indexer(end_cells)
    o_row, d_row = np.split(end_row, 2)
    cluster = _clusters(zone_neighbours(zones), n_points, o_row, d_row)
    return _Layout(int(resolution), zones, n_points, cluster, end_row)


def _finest_for_span(median_km: float, span_edges: float) -> int:
    """Coarsest resolution whose average edge is at most ``median_km / span_edges``."""
    edges = np.array([h3.average_hexagon_edge_length(r, unit="km") for r in range(16)])
    fits = np.flatnonzero(edges <= median_km / span_edges)
    return int(fits[0]) if fits.size else _MAX_RESOLUTION


def trip_zones(
    origin_lat,
    origin_lon,
    dest_lat,
    dest_lon,
    *,
    resolution: int | None = None,
    max_zones: int = 2500,
    span_edges: float = SPAN_EDGES,
    min_cluster_zones: int = MIN_CLUSTER_ZONES,
    fill_rings: int = FILL_RINGS,
    edge_rings: int = EDGE_RINGS,
) -> TripZones:
    """Zones where trips start or end, sized for the trips, grouped into clusters.

    Parameters
    ----------
    origin_lat, origin_lon, dest_lat, dest_lon : array-like of float
        Trip ends in degrees, one entry per trip; trips with a NaN are ignored.
    resolution : int, optional
        H3 resolution of the zones; default: chosen from the trips (Notes).
    max_zones : int, default=2500
        At most this many zones (a map draws a few thousand hexagons at most).
    span_edges : float, default=3
        A median trip spans at least this many zone edges.
    min_cluster_zones : int, default=100
        Zones holding trip ends wanted in the densest cluster.
    fill_rings, edge_rings : int, default=2 and 1
        Gaps closed between trip-holding zones, and the ring kept around them.

    Returns
    -------
    TripZones

    Notes
    -----
    *Which cells.* Zones are the cells holding trip ends, the ``edge_rings`` ring
    of cells around each (a trip "near" a zone may start in the next street), and
    the cells closing gaps between them (a morphological closing by a disc of
    ``fill_rings`` rings, which fills holes and narrow gaps but never grows outward).
    Every zone without trip ends thus lies within ``max(edge_rings, fill_rings)``
    rings of one with trip ends: no convex hull is filled across water or empty
    suburbs.

    *Which size.* With ``L`` the median length of trips whose ends differ, the
    resolution is the coarsest whose average edge is at most ``L / span_edges`` (so a
    typical trip crosses several zones), or one level finer when the densest cluster
    would otherwise hold fewer than ``min_cluster_zones`` zones with trip ends (so a
    small, dense city still has zones to pick from). It is then made coarser while
    the zones exceed ``max_zones``, after first leaving out the cells holding the
    fewest trip ends (at most 1 - ``KEEP_SHARE`` of them), which are usually a sparse
    tail of far-off trips. Without any trip of positive length the resolution comes
    from :func:`choose_h3_resolution` (600 cells over the extent).

    *Clusters.* Touching zones form components, merged when enough trips join them
    (see ``_clusters``); the cluster with the most trip ends is number 0 and its trip
    ends give ``focus_bbox``, where a map should open.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> lat = 41.88 + rng.uniform(-0.05, 0.05, (2, 3000))   # about 11 km x 8 km
    >>> lon = -87.63 + rng.uniform(-0.05, 0.05, (2, 3000))
    >>> tz = trip_zones(lat[0], lon[0], lat[1], lon[1])
    >>> tz.resolution, round(tz.median_trip_km, 1), tz.covered_share
    (8, 4.8, 1.0)
    >>> int(tz.grid["cluster"].max()), bool((tz.grid["n_points"] > 0).mean() > 0.6)
    (0, True)
    """
    o_lat, o_lon = np.asarray(origin_lat, float).ravel(), np.asarray(origin_lon, float).ravel()
    d_lat, d_lon = np.asarray(dest_lat, float).ravel(), np.asarray(dest_lon, float).ravel()
    if not o_lat.size == o_lon.size == d_lat.size == d_lon.size:
        raise ValueError("origin and destination coordinates must have one entry per trip")
    keep = np.isfinite(o_lat) & np.isfinite(o_lon) & np.isfinite(d_lat) & np.isfinite(d_lon)
    if not keep.any():
        raise ValueError("trip_zones needs at least one trip with finite coordinates")
    lat = np.concatenate([o_lat[keep], d_lat[keep]])
    lon = np.concatenate([o_lon[keep], d_lon[keep]])
    length_km = haversine_km(o_lat[keep], o_lon[keep], d_lat[keep], d_lon[keep])
    moving = length_km > 0.01  # round trips and ends snapped to one centroid say nothing
    median_km = float(np.median(length_km[moving])) if moving.any() else float("nan")
    rings = (int(fill_rings), int(edge_rings))

    if resolution is not None:
        candidates = [_check_resolution(resolution)]
    elif np.isfinite(median_km):
        coarse = _finest_for_span(median_km, span_edges)
        candidates = [coarse, min(coarse + 1, _MAX_RESOLUTION)]
    else:
        candidates = [choose_h3_resolution(lat, lon, target_zones=600)]
    # one H3 lookup per distinct point, at the finest candidate; parents for coarser
    # (as integers: no text object per trip end, parents by bit arithmetic)
    finest = latlng_to_cell_ints(lat, lon, max(candidates))

    def cells_at(r: int) -> np.ndarray:
        return cell_ints_to_parent(finest, r)

    layout = _layout(cells_at(candidates[0]), candidates[0], None, rings)
    if len(candidates) > 1 and layout.densest_occupied() < min_cluster_zones:
        layout = _layout(cells_at(candidates[1]), candidates[1], None, rings)
    r = layout.resolution
    while len(layout.zones) > max_zones:
        cells = cells_at(r)
        counts = pd.Series(cells).value_counts()
        kept = counts.index[: int(np.searchsorted(counts.cumsum(), KEEP_SHARE * len(cells))) + 1]
        layout = _layout(cells, r, {h3.int_to_str(int(c)) for c in kept}, rings)
        if len(layout.zones) <= max_zones or r == 0:
            break
        r -= 1
        layout = _layout(cells_at(r), r, None, rings)

    zones = layout.zones
    centres = np.array([h3.cell_to_latlng(c) for c in zones], dtype=np.float64).reshape(-1, 2)
    grid = pd.DataFrame(
        {
            "zone": zones,
            "lat": centres[:, 0],
            "lon": centres[:, 1],
            "boundary": [boundary_lonlat(c) for c in zones],
            "n_points": layout.n_points,
            "cluster": layout.cluster,
        }
    )
    inside = layout.end_row >= 0
    densest = inside.copy()
    densest[inside] = layout.cluster[layout.end_row[inside]] == 0
    return TripZones(
        grid=grid,
        resolution=layout.resolution,
        median_trip_km=median_km,
        focus_bbox=_focus_bbox(grid, lat[densest], lon[densest], layout.resolution),
        covered_share=float(inside.mean()),
    )


def _focus_bbox(grid: pd.DataFrame, lat: np.ndarray, lon: np.ndarray, resolution: int):
    """Where a map of the zones should open: the densest cluster, without its thin tails.

    The box of the cluster's zones, unless it is more than 1.5 times as tall or as
    wide as the box of the 1st to 99th percentiles of the cluster's trip ends
    (widened by one zone edge), which is then used instead: a few trips to a far
    suburb do not shrink the city into a corner of the map.
    """
    ring = np.concatenate([np.asarray(b) for b in grid.loc[grid["cluster"] == 0, "boundary"]])
    full = np.array([ring[:, 1].min(), ring[:, 0].min(), ring[:, 1].max(), ring[:, 0].max()])
    lat_lo, lat_hi = np.percentile(lat, [1.0, 99.0])
    lon_lo, lon_hi = np.percentile(lon, [1.0, 99.0])
    pad_lat = h3.average_hexagon_edge_length(resolution, unit="km") / 111.195
    pad_lon = pad_lat / max(np.cos(np.radians(0.5 * (lat_lo + lat_hi))), 1e-6)
    core = np.array([lat_lo - pad_lat, lon_lo - pad_lon, lat_hi + pad_lat, lon_hi + pad_lon])
    span_full, span_core = full[2:] - full[:2], core[2:] - core[:2]
    box = full if np.all(span_full <= 1.5 * span_core) else core
    return tuple(float(v) for v in box)


@dataclass(frozen=True)
class TripPolygons:
    """The polygons of a zone file where trips start or end, as found by :func:`trip_polygons`.

    Attributes
    ----------
    positions : numpy.ndarray of int64
        Positions (in the zone file) of the polygons holding at least one trip end, in
        file order: the zones, row by row.
    n_points : numpy.ndarray of int64
        Trip ends in each of those polygons.
    origin_row, dest_row : numpy.ndarray of int64
        Row (into ``positions``) of each trip's origin and destination; -1 outside
        every polygon or for a NaN coordinate.
    covered_share : float
        Share of the (finite) trip ends lying in a polygon.
    """

    positions: np.ndarray
    n_points: np.ndarray
    origin_row: np.ndarray
    dest_row: np.ndarray
    covered_share: float


def _polygon_of_points(zones: ZoneFile, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Zone file position of each point (-1 outside), one lookup per distinct point."""
    finite = np.isfinite(lat) & np.isfinite(lon)
    where = np.full(lat.shape, -1, dtype=np.int64)
    # trip files often snap ends to a few hundred centroids: look each one up once
    codes, points = pd.factorize(lat[finite] + 1j * lon[finite])
    if len(points):
        found = zones.zone_index(np.real(points), np.imag(points))
        where[finite] = found[codes]
    return where


def trip_polygons(zones: ZoneFile, origin_lat, origin_lon, dest_lat, dest_lon) -> TripPolygons:
    """The polygons of ``zones`` that hold trip ends, and the polygon of every trip end.

    Parameters
    ----------
    zones : ZoneFile
        The planner's polygons (taxi zones, community areas).
    origin_lat, origin_lon, dest_lat, dest_lon : array-like of float
        Trip ends in degrees, one entry per trip (NaN: in no polygon).

    Returns
    -------
    TripPolygons

    Notes
    -----
    A point lies in the polygon that covers it (edges included; the smallest where
    polygons overlap), as :meth:`ZoneFile.zone_index` decides. Polygons holding no trip
    end are left out: nothing is known about travel there.

    Examples
    --------
    >>> from vrvm.trips.places.zone_files import ZoneFile
    >>> square = lambda x: {"type": "Polygon", "coordinates": [
    ...     [[x, 0], [x + 1, 0], [x + 1, 1], [x, 1], [x, 0]]]}
    >>> doc = {"type": "FeatureCollection", "features": [
    ...     {"type": "Feature", "properties": {"id": i}, "geometry": square(i)}
    ...     for i in range(3)]}
    >>> tp = trip_polygons(ZoneFile.from_geojson(doc), [0.5, 0.5], [0.5, 2.5], [0.5, 9], [2.5, 9])
    >>> tp.positions.tolist(), tp.n_points.tolist(), tp.dest_row.tolist(), tp.covered_share
    ([0, 2], [1, 2], [1, -1], 0.75)
    """
    o_lat, o_lon = np.asarray(origin_lat, float).ravel(), np.asarray(origin_lon, float).ravel()
    d_lat, d_lon = np.asarray(dest_lat, float).ravel(), np.asarray(dest_lon, float).ravel()
    if not o_lat.size == o_lon.size == d_lat.size == d_lon.size:
        raise ValueError("origin and destination coordinates must have one entry per trip")
    n = o_lat.size
    where = _polygon_of_points(
        zones, np.concatenate([o_lat, d_lat]), np.concatenate([o_lon, d_lon])
    )
    counts = np.bincount(where[where >= 0], minlength=len(zones))
    positions = np.flatnonzero(counts)
    row_of = np.full(len(zones) + 1, -1, dtype=np.int64)  # the last entry: outside (-1)
    row_of[positions] = np.arange(positions.size)
    rows = row_of[where]
    finite = np.isfinite(np.concatenate([o_lat, d_lat])) & np.isfinite(
        np.concatenate([o_lon, d_lon])
    )
    return TripPolygons(
        positions=positions.astype(np.int64),
        n_points=counts[positions].astype(np.int64),
        origin_row=rows[:n],
        dest_row=rows[n:],
        covered_share=float((where[finite] >= 0).mean()) if finite.any() else 0.0,
    )
