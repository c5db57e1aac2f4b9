"""The data of the map's layers: zone fills and tooltips, the origin and destination.

Plain tables (one record per zone or marker) that a map component turns into deck.gl
layers; the zone layer keeps the service area's grid order, so a click's index is a
grid row. Hexagons are drawn from their H3 ids; a planner's polygons need their
shapes, which :func:`zone_features` joins to the records as GeoJSON features.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import pandas as pd

from vrvm.services.display.colours import DEST_RGB, ORIGIN_RGB, rgba
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import ODState

__all__ = ["marker_data", "od_zone_data", "zone_features", "zone_layer_data"]


def zone_layer_data(
    area: ServiceArea,
    *,
    fill: np.ndarray | None = None,
    tips: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Records of the clickable zone layer (grid order, so indices are grid rows).

    One record per zone: ``zone`` (the H3 id the map draws the hexagon from, or the
    polygon's id), ``label`` (HTML-escaped, for the tooltip), ``fill`` (RGBA) and ``tip`` (tooltip
    HTML; by default how many training trips start or end in the zone). ``fill``
    colours a choropleth; without it zones are pale (paler still where no training
    trip starts or ends: the thin ring around the trips). The origin and destination
    are not in it (:func:`od_zone_data` draws them above), so the layer, the largest
    part of the map, stays the same while they change.
    """
    grid = area.grid
    n = len(grid)
    if fill is None:
        fills = np.tile(np.array([120, 130, 140, 28]), (n, 1))
        fills[grid["n_points"].to_numpy() == 0, 3] = 12
    else:
        fills = np.array(fill)
    return pd.DataFrame(
        {
            "zone": grid["zone"].to_numpy(),
            # tooltips are HTML and labels may hold names from an uploaded file
            "label": [html.escape(label) for label in grid["label"]],
            "fill": fills.astype(int).tolist(),
            "tip": list(tips) if tips is not None else _trip_end_tips(grid),
        }
    )


def zone_features(area: ServiceArea, data: pd.DataFrame) -> list[dict]:
    """The polygon zones of ``data["zone"]`` as GeoJSON features, in the order of ``data``.

    Each feature carries the record's columns as properties and ``zone`` at its top
    level too (a picked feature names its zone either way); the geometry is the
    polygon simplified for drawing (``area.shapes``). Records naming no zone of the
    area are left out.
    """
    if area.shapes is None:
        raise ValueError("the service area's zones are hexagons, not polygons")
    index = area.zone_index
    return [
        {
            "type": "Feature",
            "zone": record["zone"],
            "properties": record,
            "geometry": area.shapes[index[record["zone"]]],
        }
        for record in data.to_dict(orient="records")
        if record["zone"] in index
    ]


def od_zone_data(state: ODState, *, filled: bool = True) -> pd.DataFrame:
    """The origin and destination zones in their colours, drawn above the zone layer:
    ``line`` (RGBA) and ``fill`` (RGBA, translucent; clear with ``filled=False``, above a
    choropleth whose colour must show)."""
    rows = [
        {"zone": place.zone, "line": rgba(rgb, 255), "fill": rgba(rgb, 200 if filled else 0)}
        for place, rgb in ((state.origin, ORIGIN_RGB), (state.dest, DEST_RGB))
        if place is not None and place.zone is not None
    ]
    return pd.DataFrame(rows, columns=["zone", "line", "fill"])


def marker_data(state: ODState) -> pd.DataFrame:
    """Origin (A) and destination (B) markers."""
    rows = []
    for place, name, rgb in ((state.origin, "A", ORIGIN_RGB), (state.dest, "B", DEST_RGB)):
        if place is not None:
            rows.append(
                {
                    "lat": place.lat,
                    "lon": place.lon,
                    "name": name,
                    "label": place.label,
                    "color": rgba(rgb, 255),
                }
            )
    return pd.DataFrame(rows, columns=["lat", "lon", "name", "label", "color"])


def _trip_end_tips(grid: pd.DataFrame) -> list[str]:
    return [
        f"{n:,} training trip ends in this zone" if n else "No training trip starts or ends here"
        for n in grid["n_points"]
    ]
