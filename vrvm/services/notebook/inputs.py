"""What a notebook hands over: places as GeoDataFrames, tables or H3 cells, and the model's area.

The notebook functions (:mod:`vrvm.services.notebook`) take places the way r5py, osmnx and
geopandas users hold them and turn them into the one shape the services compute on, a
table of ``id``, ``lat`` and ``lon`` (degrees, WGS84):

* a :class:`geopandas.GeoDataFrame` with an ``id`` column, in any CRS: converted to
  EPSG:4326, points as they are, polygons at their representative point
  (``shapely.point_on_surface``: inside the polygon, unlike a concave zone's centroid;
  the point a planner's zone stands for everywhere in vrvm);
* a :class:`pandas.DataFrame` with ``id``, ``lat`` and ``lon``;
* a sequence of H3 cell ids (each cell's centre; the id is the cell).

Nothing is guessed: a GeoDataFrame without a CRS, a frame without ``id``, duplicate or
missing ids, coordinates beyond ±90/±180 (a projected CRS declared as degrees), empty
geometries and empty inputs are refused with the input's name and the first offending
ids. One place (an origin, a deadline's destination) may also be an H3 cell id, a
shapely ``Point`` (x = longitude, y = latitude) or a ``(lat, lon)`` pair.

**The model's area** (:func:`model_extent`) is its training extent, as the model itself
records it: H3 zones filling the convex hull of its relevance-vector trips and the
bounding box of its training trips (the service area of a model whose trips were not
kept). A place outside it is in another city or far out of the training data, where the
model extrapolates: answer tables flag it per row (``outside_area``), and one place
(an isochrone's centre, a base, an arrive-by end) is refused there. How many training
trips stand behind an answer inside the extent is another question, answered when the
training trips are given: the support counts the dashboard shows
(:mod:`vrvm.services.map.support`), with the zones where the trips go
(:func:`answer_area`).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Sequence

import geopandas as gpd
import h3
import numpy as np
import pandas as pd
import shapely

from vrvm.services.map.area import ServiceArea, build_service_area
from vrvm.services.map.places import Place, place_from_latlon
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.zone_files import ZoneFile
from vrvm.trips.table import trips_sha256

__all__ = [
    "PLACE_COLUMNS",
    "answer_area",
    "area_place",
    "model_extent",
    "outside_area",
    "place_table",
    "single_place",
]

PLACE_COLUMNS = ("id", "lat", "lon")
"""The columns of a place table: the caller's id, latitude and longitude (degrees)."""
_SHOWN = 5  # offending ids named in a message
_AREAS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_AREAS_LOCK = threading.Lock()


def _named(values) -> str:
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    more = f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else ""
    return ", ".join(repr(v) for v in values[:_SHOWN]) + more


def _check_ids(ids: pd.Series, what: str) -> np.ndarray:
    """The ids as an object array: present, and each once."""
    missing = ids.isna().to_numpy()
    if missing.any():
        rows = ids.index[missing]
        raise ValueError(f"{what}: the id is missing on rows {_named(rows)} (index labels)")
    duplicated = ids.duplicated(keep=False).to_numpy()
    if duplicated.any():
        raise ValueError(
            f"{what}: ids must be distinct; repeated: {_named(pd.unique(ids[duplicated]))}"
        )
    return ids.to_numpy(dtype=object)


def _check_degrees(ids: np.ndarray, lat: np.ndarray, lon: np.ndarray, what: str, hint: str):
    bad = ~(np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90) & (np.abs(lon) <= 180))
    if bad.any():
        shown = [f"{i!r} ({a}, {b})" for i, a, b in zip(ids[bad], lat[bad], lon[bad], strict=True)]
        raise ValueError(
            f"{what}: expected latitude and longitude in degrees (|lat| <= 90, |lon| <= 180)"
            f"{hint}; not at ids {', '.join(shown[:_SHOWN])}"
        )


def _from_geodataframe(frame: gpd.GeoDataFrame, what: str) -> pd.DataFrame:
    if frame.crs is None:
        raise ValueError(
            f"{what}: the GeoDataFrame has no CRS, so its coordinates cannot be read; set the "
            "one they are in (e.g. frame.set_crs('EPSG:4326'))"
        )
    if "id" not in frame.columns:
        raise ValueError(f"{what}: expected an 'id' column naming each place (as r5py does)")
    ids = _check_ids(frame["id"], what)
    geometry = frame.geometry.to_crs("EPSG:4326").to_numpy()
    empty = shapely.is_missing(geometry) | shapely.is_empty(geometry)
    if empty.any():
        raise ValueError(f"{what}: no geometry at ids {_named(ids[empty])}")
    kinds = shapely.get_type_id(geometry)
    point, polygon, multipolygon = 0, 3, 6
    other = ~np.isin(kinds, [point, polygon, multipolygon])
    if other.any():
        names = pd.unique(np.array([g.geom_type for g in geometry[other]], dtype=object))
        raise ValueError(
            f"{what}: expected points or polygons; ids {_named(ids[other])} are {', '.join(names)}"
        )
    points = np.where(kinds == point, geometry, shapely.point_on_surface(geometry))
    lon, lat = shapely.get_x(points), shapely.get_y(points)
    hint = " after conversion to EPSG:4326: is the frame's CRS the one its coordinates are in?"
    _check_degrees(ids, lat, lon, what, hint)
    return pd.DataFrame({"id": ids, "lat": lat, "lon": lon})


def _from_frame(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    missing = [c for c in PLACE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{what}: expected columns id, lat and lon (degrees), or a GeoDataFrame with an "
            f"id column; missing: {', '.join(missing)}"
        )
    ids = _check_ids(frame["id"], what)
    coords = {}
    for column in ("lat", "lon"):
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(values) & frame[column].notna().to_numpy()
        if bad.any():
            raise ValueError(f"{what}: column {column!r} is not a number at ids {_named(ids[bad])}")
        coords[column] = values
    _check_degrees(ids, coords["lat"], coords["lon"], what, "")
    return pd.DataFrame({"id": ids, "lat": coords["lat"], "lon": coords["lon"]})


def _from_cells(cells: Sequence, what: str) -> pd.DataFrame:
    ids = pd.Series(list(cells), dtype=object)
    ids = pd.Series(_check_ids(ids, what), dtype=object)
    bad = np.array([not (isinstance(c, str) and h3.is_valid_cell(c)) for c in ids], dtype=bool)
    if bad.any():
        raise ValueError(
            f"{what}: expected H3 cell ids, a DataFrame with id, lat and lon, or a "
            f"GeoDataFrame with an id column; not H3 cells: {_named(ids[bad])}"
        )
    centres = np.array([h3.cell_to_latlng(c) for c in ids], dtype=np.float64).reshape(-1, 2)
    return pd.DataFrame({"id": ids.to_numpy(), "lat": centres[:, 0], "lon": centres[:, 1]})


def place_table(places, what: str = "places") -> pd.DataFrame:
    """Places as a table of ``id``, ``lat`` and ``lon`` (degrees, EPSG:4326), in order.

    Parameters
    ----------
    places : geopandas.GeoDataFrame, pandas.DataFrame or sequence of str
        A GeoDataFrame with an ``id`` column (points or polygons, any CRS; a polygon
        stands for its representative point), a DataFrame with ``id``, ``lat`` and
        ``lon``, or H3 cell ids.
    what : str, default="places"
        The argument's name, for the messages ("origins").

    Returns
    -------
    pandas.DataFrame
        ``id`` (as given), ``lat``, ``lon`` (float64), one row per place.

    Raises
    ------
    ValueError
        Naming ``what`` and the offending ids: no places, no CRS, no ``id`` column,
        missing or repeated ids, coordinates not in degrees, empty or non-areal
        geometries, strings that are not H3 cells.

    Examples
    --------
    >>> import geopandas as gpd, shapely
    >>> zones = gpd.GeoDataFrame({"id": ["A", "B"]}, geometry=[
    ...     shapely.box(-87.70, 41.80, -87.60, 41.90), shapely.Point(-87.63, 41.88)],
    ...     crs="EPSG:4326").to_crs("EPSG:26916")  # UTM zone 16N, metres
    >>> place_table(zones, "origins").round(4)
      id    lat    lon
    0  A  41.85 -87.65
    1  B  41.88 -87.63
    >>> place_table(pd.DataFrame({"id": [1, 1], "lat": [41.8, 41.9], "lon": [-87.6, -87.6]}),
    ...             "destinations")
    Traceback (most recent call last):
    ...
    ValueError: destinations: ids must be distinct; repeated: 1
    """
    if isinstance(places, gpd.GeoSeries):
        raise ValueError(f"{what}: a GeoSeries has no ids; give a GeoDataFrame with an id column")
    if isinstance(places, gpd.GeoDataFrame):
        table = _from_geodataframe(places, what)
    elif isinstance(places, pd.DataFrame):
        table = _from_frame(places, what)
    elif isinstance(places, str) or not isinstance(
        places, Sequence | pd.Index | pd.Series | np.ndarray
    ):
        raise ValueError(
            f"{what}: expected a GeoDataFrame with an id column, a DataFrame with id, lat "
            f"and lon, or a list of H3 cell ids; got {type(places).__name__}"
        )
    else:
        table = _from_cells(places, what)
    if len(table) == 0:
        raise ValueError(f"{what}: no places (the input is empty)")
    return table


def single_place(place, what: str = "place") -> tuple[str, float, float]:
    """One place as ``(id, lat, lon)``: a one-row frame (see :func:`place_table`), an H3
    cell id, a shapely Point (x = longitude, y = latitude, degrees) or ``(lat, lon)``.

    Examples
    --------
    >>> single_place((41.88, -87.63), "origin")
    ('41.88, -87.63', 41.88, -87.63)
    >>> single_place(shapely.Point(-87.63, 41.88))[1:]
    (41.88, -87.63)
    >>> single_place(pd.DataFrame({"id": ["a", "b"], "lat": [1, 2], "lon": [3, 4]}), "origin")
    Traceback (most recent call last):
    ...
    ValueError: origin: expected one place, got 2 rows
    """
    if isinstance(place, shapely.Point):
        lat, lon = float(place.y), float(place.x)
        ident = f"{lat:g}, {lon:g}"
    elif isinstance(place, str):
        row = place_table([place], what).iloc[0]
        return str(row["id"]), float(row["lat"]), float(row["lon"])
    elif isinstance(place, pd.DataFrame):
        table = place_table(place, what)
        if len(table) != 1:
            raise ValueError(f"{what}: expected one place, got {len(table)} rows")
        row = table.iloc[0]
        return str(row["id"]), float(row["lat"]), float(row["lon"])
    elif isinstance(place, tuple | list) and len(place) == 2:
        try:
            lat, lon = float(place[0]), float(place[1])
        except (TypeError, ValueError):
            raise ValueError(f"{what}: expected (lat, lon) in degrees, got {place!r}") from None
        ident = f"{lat:g}, {lon:g}"
    else:
        raise ValueError(
            f"{what}: expected a one-row GeoDataFrame or DataFrame, an H3 cell id, a shapely "
            f"Point (lon, lat) or a (lat, lon) pair; got {type(place).__name__}"
        )
    _check_degrees(np.array([ident], dtype=object), np.array([lat]), np.array([lon]), what, "")
    return ident, lat, lon


def _trips_key(trips) -> str | None:
    return None if trips is None else trips_sha256(trips)


def _cached(model: TravelTimeModel, key: tuple, build) -> ServiceArea:
    """An area kept while the model lives, rebuilt when the model learns (n_updates_)."""
    key = (getattr(model, "n_updates_", 0), *key)
    with _AREAS_LOCK:
        kept = _AREAS.setdefault(model, {})
        area = kept.get(key)
    if area is None:
        area = build()
        with _AREAS_LOCK:
            kept[key] = area
    return area


def model_extent(model: TravelTimeModel) -> ServiceArea:
    """The model's area: H3 zones over its training extent (see the module), kept while
    the model is unchanged."""
    return _cached(model, ("extent",), lambda: build_service_area(model))


def _zone_file(zones: gpd.GeoDataFrame, what: str) -> ZoneFile:
    """A GeoDataFrame of polygons (``id``, optional ``name``) as a checked zone file."""
    if not isinstance(zones, gpd.GeoDataFrame):
        raise ValueError(f"{what}: expected a GeoDataFrame of polygons with an id column")
    place_table(zones, what)  # the CRS, ids and geometries, checked with the same words
    columns = ["id", *(["name"] if "name" in zones.columns else [])]
    plain = zones[columns].copy()
    plain["id"] = plain["id"].astype(str)
    if "name" in plain.columns:
        plain["name"] = plain["name"].fillna("").astype(str)
    frame = gpd.GeoDataFrame(
        plain, geometry=zones.geometry.to_crs("EPSG:4326").to_numpy(), crs="EPSG:4326"
    )
    return ZoneFile.from_geojson(  # the checks of an uploaded zone file, on its GeoJSON
        json.loads(frame.to_json(drop_id=True)),
        id_property="id",
        name_property="name" if "name" in columns else None,
        label=what,
    )


def answer_area(
    model: TravelTimeModel,
    trips: pd.DataFrame | None = None,
    zones: gpd.GeoDataFrame | None = None,
) -> ServiceArea:
    """The zones an answer is given over (:func:`~vrvm.services.map.area.build_service_area`).

    A planner's polygons when ``zones`` are given (every polygon, each at its
    representative point, with the training trip ends in it when ``trips`` are given);
    else H3 zones where the training ``trips`` start or end (the dashboard's zones, with
    their support index); else the model's extent (:func:`model_extent`).
    """
    if zones is not None:
        zone_file = _zone_file(zones, "zones")
        return _cached(
            model,
            ("polygons", zone_file.fingerprint, _trips_key(trips)),
            lambda: build_service_area(model, trips=trips, zones=zone_file, all_zones=True),
        )
    if trips is None:
        return model_extent(model)
    return _cached(
        model, ("hexagons", _trips_key(trips)), lambda: build_service_area(model, trips=trips)
    )


def outside_area(model: TravelTimeModel, lat, lon) -> np.ndarray:
    """Whether each point lies outside the model's extent (:func:`model_extent`)."""
    return model_extent(model).zone_rows(lat, lon) < 0


def area_place(model: TravelTimeModel, area: ServiceArea, place, what: str) -> Place:
    """One place for an answer over ``area``: refused outside the model's extent (naming
    the nearest zone), else at its coordinates (to 6 decimals, as the dashboard's places)
    in the zone of ``area`` holding it, if any."""
    ident, lat, lon = single_place(place, what)
    try:
        found = place_from_latlon(model_extent(model), lat, lon)
    except ValueError as exc:
        order = " (a pair is read as (lat, lon))" if isinstance(place, tuple | list) else ""
        raise ValueError(f"{what} {ident!r}: {exc}{order}") from None
    row = int(area.zone_rows([found.lat], [found.lon])[0])
    zone = None if row < 0 else str(area.grid["zone"].iloc[row])
    return Place(found.lat, found.lon, zone, ident, kind="point")
