"""Origins and destinations: places from zones, lists and typed coordinates; map clicks.

A :class:`Place` is a zone's point (a hexagon's centre, a polygon's representative
point) or a typed point; :class:`ODState` holds the origin,
the destination and the last map selection acted upon, so that the same click is never
applied twice when Streamlit re-sends a chart's selection (:func:`apply_map_selection`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from vrvm.services.map.area import ServiceArea

__all__ = [
    "ODState",
    "Place",
    "apply_map_click",
    "apply_map_selection",
    "busiest_zones",
    "central_place",
    "locate",
    "parse_latlon",
    "place_from_label",
    "place_from_latlon",
    "place_from_zone",
    "zone_from_selection",
]


@dataclass(frozen=True)
class Place:
    """An origin or destination: coordinates, the zone holding them and a label."""

    lat: float
    lon: float
    zone: str | None
    label: str
    kind: str = "zone"  # "zone" (a zone centre) or "point" (typed coordinates)


def place_from_zone(area: ServiceArea, zone: str) -> Place:
    """The point a zone stands for (its centre, or a polygon's representative point)."""
    index = area.zone_index.get(zone)
    if index is None:
        raise ValueError(f"zone {zone!r} is not in the service area")
    row = area.grid.iloc[index]
    return Place(round(float(row["lat"]), 6), round(float(row["lon"]), 6), zone, row["label"])


def busiest_zones(area: ServiceArea, n: int = 10) -> list[str]:
    """The ``n`` zones with the most training trip ends (ties in display order)."""
    grid = area.grid.sort_values("n_points", ascending=False, kind="stable")
    return grid["zone"].astype(str).head(n).tolist()


def central_place(area: ServiceArea) -> Place:
    """The zone a view opens on: the busiest, the one with the most training trip ends
    (in a city, downtown; the map's centre can fall in a quiet district)."""
    return place_from_zone(area, busiest_zones(area, 1)[0])


def place_from_label(area: ServiceArea, label: str) -> Place:
    """The zone chosen in the searchable list."""
    matches = np.flatnonzero(area.grid["label"].to_numpy() == label)
    if matches.size == 0:
        raise ValueError(f"no zone is labelled {label!r}")
    return place_from_zone(area, area.grid["zone"].iloc[int(matches[0])])


def parse_latlon(text: str) -> tuple[float, float]:
    """Read ``"lat, lon"`` (comma, semicolon or space separated) in degrees.

    Examples
    --------
    >>> parse_latlon(" -39.98, -30.01 ")
    (-39.98, -30.01)
    >>> parse_latlon("41.88 -87.63")
    (41.88, -87.63)
    """
    parts = [p for p in re.split(r"[\s,;]+", str(text).strip()) if p]
    if len(parts) != 2:
        raise ValueError(f"type a latitude and a longitude such as '41.88, -87.63', got {text!r}")
    try:
        lat, lon = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"{text!r} is not two numbers (latitude, longitude)") from None
    if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
        raise ValueError(f"{text!r}: latitude must lie in [-90, 90] and longitude in [-180, 180]")
    return lat, lon


def place_from_latlon(area: ServiceArea, lat: float, lon: float) -> Place:
    """A typed point, which must lie in one of the service area's zones.

    A point at the (6-decimal) coordinates a zone stands for is that zone; any other
    point keeps its exact coordinates and is labelled with the zone it falls in. A
    point in no zone (the bay between them, another city) is refused with the nearest
    zone and how far it is: no training trip starts or ends there.
    """
    lat, lon = round(float(lat), 6), round(float(lon), 6)
    if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
        raise ValueError(f"({lat}, {lon}) are not valid coordinates")
    row = int(area.zone_rows([lat], [lon])[0])
    if row < 0:
        nearest, km = area.nearest_zone(lat, lon)
        raise ValueError(
            f"({lat:.5f}, {lon:.5f}) is outside the service area: it is not near any "
            f"training trips. The nearest zone is {area.grid['label'].iloc[nearest]}, "
            f"{_distance_text(km)} away."
        )
    centre = place_from_zone(area, str(area.grid["zone"].iloc[row]))
    if (centre.lat, centre.lon) == (lat, lon):
        return centre
    return Place(lat, lon, centre.zone, f"{lat:.5f}, {lon:.5f} (in {centre.label})", kind="point")


def locate(area: ServiceArea, place: Place) -> Place | None:
    """The same place among ``area``'s zones, or None when none of them holds it.

    A zone still in ``area`` is that zone as ``area`` has it (its label may have
    changed with the boundaries naming it); a zone no longer in it becomes the zone
    holding its point (a hexagon's centre falls in one of the planner's polygons);
    typed coordinates keep their point, labelled with the zone holding it. So a
    place picked on one map never stands, under its old label, for a zone of another.
    """
    if place.kind == "point":
        try:
            return place_from_latlon(area, place.lat, place.lon)
        except ValueError:  # outside every zone of this map
            return None
    if place.zone in area.zone_index:
        return place_from_zone(area, place.zone)
    row = int(area.zone_rows([place.lat], [place.lon])[0])
    return None if row < 0 else place_from_zone(area, str(area.grid["zone"].iloc[row]))


def _distance_text(km: float) -> str:
    """A distance for a sentence.

    Examples
    --------
    >>> _distance_text(0.42), _distance_text(3.456), _distance_text(9876.5)
    ('420 m', '3.5 km', '9,876 km')
    """
    if km < 1:
        return f"{max(round(km * 1000, -1), 10):.0f} m"
    return f"{km:.1f} km" if km < 100 else f"{km:,.0f} km"


@dataclass(frozen=True)
class ODState:
    """Origin, destination and the last map selection already acted upon."""

    origin: Place | None = None
    dest: Place | None = None
    last_selection: str | None = None

    def located(self, area: ServiceArea) -> ODState:
        """The same trip on ``area``'s zones (see :func:`locate`); ``self`` when unchanged.

        A page calls it on every run, so the places it shows and answers for are always
        zones of the map it draws, whatever changed since they were picked (the zone
        file, the boundaries naming the zones, the model and so its hexagons).
        """
        origin = None if self.origin is None else locate(area, self.origin)
        dest = None if self.dest is None else locate(area, self.dest)
        if origin == self.origin and dest == self.dest:
            return self
        return replace(self, origin=origin, dest=dest)

    def swapped(self) -> ODState:
        return replace(self, origin=self.dest, dest=self.origin)

    def cleared(self) -> ODState:
        return replace(self, origin=None, dest=None)

    @property
    def complete(self) -> bool:
        return self.origin is not None and self.dest is not None


def apply_map_click(state: ODState, place: Place, *, mode: str = "od") -> ODState:
    """What a click on a zone does.

    ``mode="od"``: the first click sets the origin, the second the destination, a
    third starts a new pair. ``mode="origin"`` (coverage map): a click sets the origin.
    """
    if mode == "origin":
        return replace(state, origin=place)
    if state.origin is None or state.dest is not None:
        return replace(state, origin=place, dest=None)
    return replace(state, dest=place)


def zone_from_selection(
    selection: Mapping[str, Any] | None, area: ServiceArea, layer_id: str = "zones"
) -> str | None:
    """The zone picked in a map's selection event, or None.

    Accepts the chart's state or its ``selection`` member, from either map:

    * ``st.pydeck_chart``: ``{"selection": {"indices": {layer_id: [i]}, "objects":
      {layer_id: [record]}}}``;
    * ``st.vega_lite_chart`` with a point selection named ``layer_id`` over the field
      ``zone``: ``{"selection": {layer_id: [{"zone": ...}]}}``.

    The picked object's ``zone`` (a record's, a GeoJSON feature's property, or the
    selected field) is used when present, else its index into the layer's data (the
    service area's grid order).
    """
    if not selection:
        return None
    inner = selection.get("selection", selection)
    if not isinstance(inner, Mapping):
        return None
    objects = (inner.get("objects") or {}).get(layer_id) or []
    if not objects and "indices" not in inner and isinstance(inner.get(layer_id), list):
        objects = inner[layer_id]  # a Vega-Lite point selection: the picked field values
    if objects and isinstance(objects[0], Mapping):
        picked = objects[0]
        properties = picked.get("properties")
        zone = picked.get("zone")
        if zone is None and isinstance(properties, Mapping):
            zone = properties.get("zone")
        if isinstance(zone, str) and zone in area.zone_index:
            return zone
    indices = (inner.get("indices") or {}).get(layer_id) or []
    if indices:
        try:
            i = int(indices[0])
        except (TypeError, ValueError):
            return None
        if 0 <= i < len(area.grid):
            return str(area.grid["zone"].iloc[i])
    return None


def _fingerprint(selection: Mapping[str, Any] | None) -> str | None:
    """What identifies a click: the picked indices per layer, not the picked objects.

    When the page redraws the map with new layer data (the origin coloured, a
    choropleth), the browser re-sends the same selection with the objects' new
    properties; that is not a new click. A Vega-Lite selection holds the picked zone
    ids only (no indices), which a redraw does not change: they are the fingerprint.
    """
    if not selection:
        return None
    inner = selection.get("selection", selection)
    if not isinstance(inner, Mapping):
        return None
    if "indices" in inner or "objects" in inner:
        picked = {k: v for k, v in (inner.get("indices") or {}).items() if v}
    else:
        picked = {k: v for k, v in inner.items() if isinstance(v, list) and v}
    return json.dumps(picked, sort_keys=True, default=str) if picked else None


def apply_map_selection(
    state: ODState,
    selection: Mapping[str, Any] | None,
    area: ServiceArea,
    *,
    mode: str = "od",
    layer_id: str = "zones",
) -> ODState:
    """Apply a map selection event to the state, once.

    Streamlit keeps a chart's selection across reruns, so the same selection is seen
    again on every rerun; it is applied only when it differs from the last one acted
    upon. An empty selection (the user clicked the selected zone again) forgets the
    last one, so clicking the same zone later counts as a new click.
    """
    fingerprint = _fingerprint(selection)
    if fingerprint is None:
        return replace(state, last_selection=None) if state.last_selection else state
    if fingerprint == state.last_selection:
        return state
    zone = zone_from_selection(selection, area, layer_id)
    state = replace(state, last_selection=fingerprint)
    if zone is None:
        return state
    return apply_map_click(state, place_from_zone(area, zone), mode=mode)
