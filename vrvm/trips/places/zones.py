"""H3 zones: resolution choice, point-to-zone lookup, map grids and stratified shards.

Zones are `H3 <https://h3geo.org>`_ hexagonal cells (h3-py v4 API), identified by
their 15-character hexadecimal strings. They serve two purposes:

* **stratification** - :func:`stratified_shards` deals trips across the members of
  an ensemble so that every member sees every (origin zone, destination zone,
  hour) stratum in proportion;
* **maps** - :func:`zone_grid` lists every cell of the service area, with its
  centre and boundary, so that a clickable zone map has no holes, and
  :func:`zones_geojson` exports it. (The dashboard's zones follow the trips
  instead: :mod:`vrvm.trips.places.trip_zones`.)

Geometry is computed as if longitudes did not wrap: service areas crossing the
antimeridian are not supported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import h3
import numpy as np
import pandas as pd
from h3.api import basic_int as h3_int
from scipy.spatial import ConvexHull, QhullError

from vrvm.trips.places.geo import EARTH_RADIUS_KM, LocalProjection, haversine_km

__all__ = [
    "cell_ints_to_parent",
    "choose_h3_resolution",
    "latlng_to_cell_ints",
    "latlng_to_zone",
    "stratified_shards",
    "trip_strata",
    "zone_grid",
    "zone_of",
    "zones_geojson",
]

_MAX_RESOLUTION = 15


def _check_resolution(resolution: int) -> int:
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)):
        raise ValueError(f"resolution must be an integer in [0, 15], got {resolution!r}")
    if not 0 <= resolution <= _MAX_RESOLUTION:
        raise ValueError(f"resolution must be an integer in [0, 15], got {resolution!r}")
    return int(resolution)


def _latlon_arrays(lat, lon, *, allow_nan: bool = False) -> tuple[np.ndarray, np.ndarray]:
    lat = np.atleast_1d(np.asarray(lat, dtype=np.float64)).ravel()
    lon = np.atleast_1d(np.asarray(lon, dtype=np.float64)).ravel()
    if lat.shape != lon.shape:
        raise ValueError(f"lat and lon must have the same length, got {lat.size} and {lon.size}")
    if allow_nan:
        keep = np.isfinite(lat) & np.isfinite(lon)
        lat, lon = lat[keep], lon[keep]
    else:
        bad = ~(np.isfinite(lat) & np.isfinite(lon))
        if bad.any():
            rows = np.flatnonzero(bad)
            shown = ", ".join(str(i) for i in rows[:10])
            more = f", ... ({rows.size} in total)" if rows.size > 10 else ""
            raise ValueError(f"NaN or infinite coordinates at positions [{shown}{more}]")
    if np.any(np.abs(lat) > 90.0) or np.any(np.abs(lon) > 180.0):
        raise ValueError("latitudes must lie in [-90, 90] and longitudes in [-180, 180]")
    return lat, lon


def choose_h3_resolution(lat, lon, *, target_zones: int = 200) -> int:
    """H3 resolution at which the data's extent holds about ``target_zones`` cells.

    Parameters
    ----------
    lat, lon : array-like of float
        Points of the service area in degrees (for trips, both origins and
        destinations). Pairs with a NaN are ignored.
    target_zones : int, default=200
        Desired number of cells covering the extent.

    Returns
    -------
    int
        Resolution in ``[0, 15]``.

    Notes
    -----
    The extent is the bounding box of the 1st to 99th percentiles of latitude and
    of longitude, so a few stray points (airports, GPS glitches) do not inflate it.
    Its area on the sphere is approximated as
    ``A = R^2 * dphi * dlambda * cos(phi_mid)`` (radians). The chosen resolution
    ``r`` minimises ``|log(A / a_r) - log(target_zones)|``, where ``a_r`` is H3's
    average hexagon area, i.e. the expected cell count is the closest to the target
    on a log scale. Since ``a_r`` shrinks about sevenfold per level, the expected
    count lies within a factor ``sqrt(7) ~ 2.6`` of the target.

    Examples
    --------
    >>> import numpy as np
    >>> from vrvm.trips.places.zones import choose_h3_resolution
    >>> rng = np.random.default_rng(0)
    >>> lat = 41.85 + rng.uniform(-0.15, 0.15, 1000)  # about 33 km x 25 km
    >>> lon = -87.70 + rng.uniform(-0.15, 0.15, 1000)
    >>> choose_h3_resolution(lat, lon)
    7
    >>> choose_h3_resolution(lat, lon, target_zones=2000)
    8
    """
    if isinstance(target_zones, bool) or not isinstance(target_zones, (int, np.integer)):
        raise ValueError(f"target_zones must be a positive integer, got {target_zones!r}")
    if target_zones < 1:
        raise ValueError(f"target_zones must be a positive integer, got {target_zones!r}")
    lat, lon = _latlon_arrays(lat, lon, allow_nan=True)
    if lat.size == 0:
        raise ValueError("no finite coordinates to choose a resolution from")
    lat_lo, lat_hi = np.percentile(lat, [1.0, 99.0])
    lon_lo, lon_hi = np.percentile(lon, [1.0, 99.0])
    area_km2 = (
        EARTH_RADIUS_KM**2
        * np.radians(lat_hi - lat_lo)
        * np.radians(lon_hi - lon_lo)
        * np.cos(np.radians(0.5 * (lat_lo + lat_hi)))
    )
    if not area_km2 > 0.0:
        raise ValueError(
            "the points span no area (1st-99th percentile box is degenerate); "
            "choose the resolution explicitly"
        )
    resolutions = np.arange(_MAX_RESOLUTION + 1)
    hex_area = np.array([h3.average_hexagon_area(int(r), unit="km^2") for r in resolutions])
    misfit = np.abs(np.log(area_km2 / hex_area) - np.log(target_zones))
    return int(resolutions[np.argmin(misfit)])


def latlng_to_zone(lat, lon, resolution: int) -> np.ndarray:
    """H3 cell id of each point.

    Parameters
    ----------
    lat, lon : array-like of float
        Coordinates in degrees; NaN is an error (positions are reported).
    resolution : int
        H3 resolution in ``[0, 15]``.

    Returns
    -------
    numpy.ndarray of str, dtype object, shape (n,)

    Notes
    -----
    Identical coordinate pairs are looked up once, so trip tables whose points are
    snapped to a few hundred centroids (as the Chicago portal's are) cost a few
    hundred calls to H3 whatever their length.

    Examples
    --------
    >>> from vrvm.trips.places.zones import latlng_to_zone
    >>> latlng_to_zone([41.88, 41.88, 41.98], [-87.63, -87.63, -87.63], 7)
    array(['872664c1affffff', '872664c1affffff', '872664c32ffffff'],
          dtype=object)
    """
    codes, cells = _distinct_cells(lat, lon, resolution)
    if cells.size == 0:
        return np.empty(0, dtype=object)
    return np.array([h3.int_to_str(int(c)) for c in cells], dtype=object)[codes]


def latlng_to_cell_ints(lat, lon, resolution: int) -> np.ndarray:
    """H3 cell of each point as an unsigned 64-bit integer (as :func:`latlng_to_zone`).

    The same cells as :func:`latlng_to_zone` (``h3.int_to_str`` gives their ids), without
    a text object per point: for millions of trip ends.

    Examples
    --------
    >>> cells = latlng_to_cell_ints([41.88, 41.98], [-87.63, -87.63], 7)
    >>> cells.dtype, [h3.int_to_str(int(c)) for c in cells]
    (dtype('uint64'), ['872664c1affffff', '872664c32ffffff'])
    """
    if np.size(lat) <= _FEW_POINTS:  # one trip's ends (an update): no factorisation
        resolution = _check_resolution(resolution)
        lat, lon = _latlon_arrays(lat, lon)
        to_cell = h3_int.latlng_to_cell
        return np.array(
            [to_cell(a, b, resolution) for a, b in zip(lat.tolist(), lon.tolist(), strict=True)],
            dtype=np.uint64,
        )
    codes, cells = _distinct_cells(lat, lon, resolution)
    return cells[codes] if cells.size else np.empty(0, dtype=np.uint64)


_FEW_POINTS = 16
"""Up to this many points, :func:`latlng_to_cell_ints` looks each up directly: for a trip
or two, pandas' factorisation of distinct points costs some 100 µs, the lookups 2 µs each."""


def _distinct_cells(lat, lon, resolution: int) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, cells)``: the cell (integer) of each distinct point and each point's code."""
    resolution = _check_resolution(resolution)
    lat, lon = _latlon_arrays(lat, lon)
    # Complex numbers hash a (lat, lon) pair as one value, so factorize dedupes pairs.
    codes, uniques = pd.factorize(lat + 1j * lon)
    to_cell = h3_int.latlng_to_cell
    lats, lons = uniques.real.tolist(), uniques.imag.tolist()
    cells = np.fromiter(
        (to_cell(a, b, resolution) for a, b in zip(lats, lons, strict=True)),
        dtype=np.uint64,
        count=len(uniques),
    )
    return codes, cells


_RES_SHIFT = np.uint64(52)
_RES_MASK = np.uint64(0xF) << _RES_SHIFT


def cell_ints_to_parent(cells: np.ndarray, resolution: int) -> np.ndarray:
    """Parents at ``resolution`` of H3 cells given as integers (of that or a finer one).

    As ``h3.cell_to_parent``, vectorised: the resolution field is set and the digits
    of the finer resolutions are set to 7 (unused), per the H3 index layout.

    Examples
    --------
    >>> cell = latlng_to_cell_ints([41.88], [-87.63], 9)
    >>> h3.int_to_str(int(cell_ints_to_parent(cell, 7)[0])) == h3.cell_to_parent(
    ...     h3.int_to_str(int(cell[0])), 7)
    True
    """
    resolution = _check_resolution(resolution)
    cells = np.asarray(cells, dtype=np.uint64)
    unused = np.uint64(0)
    for digit in range(resolution + 1, _MAX_RESOLUTION + 1):
        unused |= np.uint64(7) << np.uint64(3 * (_MAX_RESOLUTION - digit))
    return (cells & ~_RES_MASK) | (np.uint64(resolution) << _RES_SHIFT) | unused


def zone_of(lat: float, lon: float, resolution: int) -> str:
    """H3 cell id of a single point.

    Examples
    --------
    >>> from vrvm.trips.places.zones import zone_of
    >>> zone_of(41.88, -87.63, 7)
    '872664c1affffff'
    """
    resolution = _check_resolution(resolution)
    lat_a, lon_a = _latlon_arrays(lat, lon)
    if lat_a.size != 1:
        raise ValueError("zone_of takes a single point; use latlng_to_zone for arrays")
    return h3.latlng_to_cell(float(lat_a[0]), float(lon_a[0]), resolution)


def _hull_fill(lat: np.ndarray, lon: np.ndarray, resolution: int, max_cells: int) -> set[str]:
    """Cells whose centre lies within one cell radius of the points' convex hull.

    Every cell that touches the hull has its centre within its circumradius of the
    hull, so filling the hull buffered by the largest circumradius of the data's
    cells (plus a 10 % margin for H3's size variation) yields every cell touching it.
    The hull and its buffer are built in an azimuthal equidistant plane about the
    median point.
    """
    centre = LocalProjection(float(np.median(lat)), float(np.median(lon)))
    x, y = centre.forward(lat, lon)
    points = np.unique(np.column_stack([x, y]), axis=0)
    # Largest centre-to-vertex distance among the cells of a few data points.
    sample = points[:: max(1, len(points) // 50)]
    s_lat, s_lon = centre.inverse(sample[:, 0], sample[:, 1])
    radius_km = 0.0
    for cell in {
        h3.latlng_to_cell(float(a), float(b), resolution) for a, b in zip(s_lat, s_lon, strict=True)
    }:
        c_lat, c_lon = h3.cell_to_latlng(cell)
        vertices = np.array(h3.cell_to_boundary(cell))
        radius_km = max(
            radius_km, float(haversine_km(c_lat, c_lon, vertices[:, 0], vertices[:, 1]).max())
        )
    buffer_km = 1.1 * radius_km

    if len(points) >= 3:
        try:
            hull_points = points[ConvexHull(points).vertices]
        except QhullError:  # all points collinear: buffer the segment instead
            hull_points = points
    else:
        hull_points = points
    # Minkowski sum of the hull with a disc, approximated from outside by a
    # 16-gon circumscribing the disc (circumradius = buffer / cos(pi / 16)).
    angles = 2.0 * np.pi * np.arange(16) / 16
    ring = buffer_km / np.cos(np.pi / 16) * np.column_stack([np.cos(angles), np.sin(angles)])
    buffered = (hull_points[:, None, :] + ring[None, :, :]).reshape(-1, 2)
    outline = ConvexHull(buffered)
    expected = outline.volume / h3.average_hexagon_area(resolution, unit="km^2")
    if expected > max_cells:
        raise ValueError(
            f"filling the service area at resolution {resolution} needs about "
            f"{expected:,.0f} cells (> max_cells={max_cells:,}); remove outlying points "
            "or choose a coarser resolution"
        )
    # Densify to <= 2 km steps so that the outline's edges are straight in the
    # projected plane whether H3 joins vertices by great circles or in lat/lng
    # (the two differ by under 0.1 m over 2 km).
    corners = buffered[outline.vertices]
    steps = np.maximum(
        1, np.ceil(np.linalg.norm(np.roll(corners, -1, axis=0) - corners, axis=1) / 2.0)
    ).astype(int)
    dense = np.concatenate(
        [
            a + (b - a) * (np.arange(k)[:, None] / k)
            for a, b, k in zip(corners, np.roll(corners, -1, axis=0), steps, strict=True)
        ]
    )
    o_lat, o_lon = centre.inverse(dense[:, 0], dense[:, 1])
    polygon = h3.LatLngPoly([(float(a), float(b)) for a, b in zip(o_lat, o_lon, strict=True)])
    return set(h3.h3shape_to_cells(polygon, resolution))


def boundary_lonlat(cell: str) -> list[list[float]]:
    ring = [[float(lng), float(lat)] for lat, lng in h3.cell_to_boundary(cell)]
    ring.append(list(ring[0]))
    return ring


def zone_grid(
    lat, lon, *, resolution: int, padding_rings: int = 1, max_cells: int = 200_000
) -> pd.DataFrame:
    """All H3 cells of the service area, ready for a clickable zone map.

    The grid is the union of (a) the cells holding data points, (b) every cell
    touching the convex hull of the points, and (c) ``padding_rings`` rings of
    neighbours around those, so a map drawn from it has no holes.

    Parameters
    ----------
    lat, lon : array-like of float
        Points of the service area in degrees (for trips, both origins and
        destinations); NaN is an error.
    resolution : int
        H3 resolution, for example from :func:`choose_h3_resolution`.
    padding_rings : int, default=1
        Rings of neighbouring cells added around the filled area.
    max_cells : int, default=200_000
        Refuse (ValueError) when the filled hull would need more cells than this,
        which usually means an outlying point such as ``(0, 0)``.

    Returns
    -------
    pandas.DataFrame
        One row per cell, sorted by ``zone``, with columns ``zone`` (cell id),
        ``lat``, ``lon`` (cell centre), ``boundary`` (closed list of ``[lon, lat]``
        pairs, as pydeck's ``PolygonLayer`` and GeoJSON expect) and ``n_points``
        (number of input points in the cell).

    Notes
    -----
    H3 fills a polygon with the cells whose *centres* it contains. To get every cell
    that *touches* the hull, the hull is first buffered (in an azimuthal equidistant
    plane) by 1.1 times the largest centre-to-vertex distance of the data's cells.

    Examples
    --------
    >>> from vrvm.trips.places.zones import zone_grid
    >>> grid = zone_grid([41.88, 41.90, 41.86], [-87.63, -87.66, -87.66], resolution=8)
    >>> list(grid.columns)
    ['zone', 'lat', 'lon', 'boundary', 'n_points']
    >>> int(grid["n_points"].sum()), len(grid) > 3
    (3, True)
    >>> ring = grid["boundary"].iloc[0]
    >>> ring[0] == ring[-1], len(ring)
    (True, 7)
    """
    resolution = _check_resolution(resolution)
    if isinstance(padding_rings, bool) or not isinstance(padding_rings, (int, np.integer)):
        raise ValueError(f"padding_rings must be a non-negative integer, got {padding_rings!r}")
    if padding_rings < 0:
        raise ValueError(f"padding_rings must be a non-negative integer, got {padding_rings!r}")
    lat, lon = _latlon_arrays(lat, lon)
    if lat.size == 0:
        raise ValueError("zone_grid needs at least one point")

    point_cells = latlng_to_zone(lat, lon, resolution)
    counts = pd.Series(point_cells).value_counts()
    cells = set(counts.index) | _hull_fill(lat, lon, resolution, max_cells)
    if padding_rings:
        cells = set().union(*(h3.grid_disk(c, int(padding_rings)) for c in cells))

    zones = sorted(cells)
    centres = np.array([h3.cell_to_latlng(c) for c in zones], dtype=np.float64)
    return pd.DataFrame(
        {
            "zone": zones,
            "lat": centres[:, 0],
            "lon": centres[:, 1],
            "boundary": [boundary_lonlat(c) for c in zones],
            "n_points": counts.reindex(zones, fill_value=0).to_numpy(dtype=np.int64),
        }
    )


def zones_geojson(grid: pd.DataFrame) -> dict[str, Any]:
    """GeoJSON ``FeatureCollection`` of a :func:`zone_grid` (JSON-serialisable).

    Each feature is a ``Polygon`` with the cell boundary; its properties are
    ``zone``, ``lat``, ``lon``, ``n_points`` and any extra columns of ``grid``
    holding scalars (for example a predicted median travel time).

    Examples
    --------
    >>> import json
    >>> from vrvm.trips.places.zones import zone_grid, zones_geojson
    >>> gj = zones_geojson(zone_grid([41.88], [-87.63], resolution=7, padding_rings=0))
    >>> gj["type"], len(gj["features"]), gj["features"][0]["geometry"]["type"]
    ('FeatureCollection', 1, 'Polygon')
    >>> _ = json.dumps(gj)
    """
    missing = [c for c in ("zone", "boundary") if c not in grid.columns]
    if missing:
        raise ValueError(f"grid is missing column(s) {missing}; build it with zone_grid")
    prop_cols = [c for c in grid.columns if c != "boundary"]
    features = []
    for record in grid[prop_cols].to_dict(orient="records"):
        features.append({"type": "Feature", "properties": json_scalars(record)})
    for feature, boundary in zip(features, grid["boundary"], strict=True):
        ring = [[float(x), float(y)] for x, y in boundary]
        if ring and ring[0] != ring[-1]:
            ring.append(list(ring[0]))
        feature["geometry"] = {"type": "Polygon", "coordinates": [ring]}
    return {"type": "FeatureCollection", "features": features}


def json_scalars(record: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in record.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not np.isfinite(value):
            value = None  # JSON has no NaN
        out[str(key)] = value
    return out


def _stratum_ids(keys: pd.DataFrame | Sequence[Any] | np.ndarray | pd.Series) -> np.ndarray:
    """Dense integer id of each row's stratum (the combination of its key values)."""
    if isinstance(keys, pd.DataFrame):
        columns = [keys[c].to_numpy() for c in keys.columns]
    elif isinstance(keys, (pd.Series, np.ndarray)) and np.ndim(keys) == 1:
        columns = [np.asarray(keys)]
    else:
        columns = [np.asarray(k) for k in keys]
    if not columns:
        raise ValueError("keys must hold at least one column defining the strata")
    n = len(columns[0])
    if any(c.ndim != 1 or len(c) != n for c in columns):
        raise ValueError(
            "every key must be one-dimensional with one entry per row, got lengths "
            f"{[len(c) for c in columns]}"
        )
    stratum = np.zeros(n, dtype=np.int64)
    for column in columns:
        # NaN/None form their own stratum rather than being dropped.
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        # Mixed-radix combination, re-densified so it never exceeds n * n_uniques.
        stratum = pd.factorize(stratum * len(uniques) + codes)[0].astype(np.int64)
    return stratum


def stratified_shards(
    keys: pd.DataFrame | Sequence[Any] | np.ndarray | pd.Series,
    n_shards: int,
    *,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Assign rows to ``n_shards`` shards, spreading every stratum evenly.

    Parameters
    ----------
    keys : pandas.DataFrame, or sequence of 1-D arrays, or a single 1-D array
        Columns whose value combinations define the strata (for trips: origin zone,
        destination zone and hour of day). Missing values form their own stratum.
    n_shards : int
        Number of shards, between 1 and the number of rows.
    random_state : int, numpy.random.Generator or None, default=None
        Seed for the shuffles; an int gives a reproducible assignment.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        Shard index in ``[0, n_shards)`` of each row.

    Notes
    -----
    The strata are put in random order, rows are shuffled within each stratum, and
    the resulting sequence is dealt round-robin from a random first shard. Each
    stratum is thus a contiguous run of the deal, starting at a random shard
    (wherever the previous stratum stopped), so

    * within every stratum, shard counts differ by at most 1, and
    * overall, shard sizes differ by at most 1 (exactly, not just on average),

    and no per-row Python loop is needed (one sort). Each stratum's starting shard
    is uniformly distributed, but starts are not independent across strata: they
    are chained so that the leftover rows of the strata (``n_s mod n_shards``) fill
    the shards evenly, which independent offsets would not guarantee.

    Examples
    --------
    >>> import numpy as np
    >>> from vrvm.trips.places.zones import stratified_shards
    >>> zone = np.array(["a"] * 6 + ["b"] * 3)
    >>> shards = stratified_shards([zone], 3, random_state=0)
    >>> np.bincount(shards).tolist()
    [3, 3, 3]
    >>> [np.bincount(shards[zone == z], minlength=3).tolist() for z in "ab"]
    [[2, 2, 2], [1, 1, 1]]
    """
    if isinstance(n_shards, bool) or not isinstance(n_shards, (int, np.integer)):
        raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
    stratum = _stratum_ids(keys)
    n = stratum.size
    if not 1 <= n_shards <= max(n, 1):
        raise ValueError(
            f"n_shards must lie between 1 and the number of rows ({n}), got {n_shards}"
        )
    rng = np.random.default_rng(random_state)
    n_strata = int(stratum.max()) + 1 if n else 0
    stratum_rank = rng.permutation(n_strata)  # random order of the strata
    # Sort rows by (stratum rank, random tie-break): strata in random order,
    # rows shuffled within each stratum.
    order = np.lexsort((rng.random(n), stratum_rank[stratum]))
    shards = np.empty(n, dtype=np.int64)
    shards[order] = (rng.integers(n_shards) + np.arange(n)) % n_shards
    return shards


def trip_strata(
    trips: pd.DataFrame, tz: str, zones, h3_resolution: int | None, target_zones: int
) -> tuple[list, int | None]:
    """Stratification keys of trips: (origin zone, destination zone, local hour).

    ``zones``: the trips' own zone labels, shape ``(n,)`` or ``(n, k)``, or None for
    H3 cells at ``h3_resolution`` (None: chosen by :func:`choose_h3_resolution` with
    ``target_zones``). Returns the keys and the resolution used (None with labels).
    """
    times = trips["start_time"]
    if times.dt.tz is not None:
        times = times.dt.tz_convert(tz)
    hour = times.dt.hour.to_numpy()
    if zones is not None:
        if isinstance(zones, pd.DataFrame):
            keys = [zones[c].to_numpy() for c in zones.columns]
        else:
            arr = np.asarray(zones, dtype=object)
            keys = [arr] if arr.ndim == 1 else [arr[:, j] for j in range(arr.shape[1])]
        if any(len(k) != len(trips) for k in keys) or not keys:
            raise ValueError(
                f"zones must hold one label (or one row of labels) per trip: got "
                f"{[len(k) for k in keys]} labels for {len(trips)} trips"
            )
        return [*keys, hour], None
    o_lat, o_lon = trips["origin_lat"].to_numpy(float), trips["origin_lon"].to_numpy(float)
    d_lat, d_lon = trips["dest_lat"].to_numpy(float), trips["dest_lon"].to_numpy(float)
    resolution = h3_resolution
    if resolution is None:
        resolution = choose_h3_resolution(
            np.concatenate([o_lat, d_lat]),
            np.concatenate([o_lon, d_lon]),
            target_zones=target_zones,
        )
    origin = latlng_to_zone(o_lat, o_lon, resolution)
    dest = latlng_to_zone(d_lat, d_lon, resolution)
    return [origin, dest, hour], int(resolution)
