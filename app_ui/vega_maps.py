"""The zone map as a Vega-Lite spec drawn on a canvas: no WebGL (no Streamlit here).

The dashboard's clickable zone map by default (:func:`app_ui.od_picker.show_map`): the
same zones, fills, tooltips, boundaries and A/B markers as :func:`app_ui.maps.zone_deck`,
drawn by Vega-Lite ``geoshape`` layers on a ``<canvas>``. Without a graphics card (virtual
desktops, thin clients, this project's headless Chromium) deck.gl draws through a
software WebGL and a map click took about 930 ms to an answer; this map took about
160 ms (BENCHMARKS.md, "Renderers side by side"). What it cannot do is pan, zoom, show
a basemap or draw arcs: those keep deck.gl (the sidebar's pan-and-zoom setting, the
basemap, the relevance-vector arcs).

The projection is deck.gl's initial view (:attr:`ServiceArea.view`): Web Mercator with
a 512-pixel world at zoom ``z`` is d3's ``mercator`` with scale ``512 * 2**z / (2 pi)``,
centred in the chart; so a zone is at the same pixel on either map.

Data: the zone shapes (hexagons as a table of their corners, a planner's polygons as
GeoJSON) and the boundaries (GeoJSON) do not change while the page is used; the zones'
fills, labels and tooltips (``zone_info``), the origin and destination (``od``) and the
markers are small tables joined to the shapes by zone id, so that a click or a swap
changes only them.

Clicks: the zones are drawn a second time on top of everything, transparent, and only
that layer takes the pointer (hover highlight, tooltip, click): a point selection,
:data:`PICK` (``fields: ["zone"]``). So a click on a marker or an outline picks the zone
beneath the pointer, as on the deck.gl map, whose outlines and markers are not pickable.
Streamlit returns ``{"selection": {PICK: [{"zone": ...}]}}``, which
:func:`vrvm.services.map.places.zone_from_selection` reads.
"""

from __future__ import annotations

import html
import math
import weakref
from collections.abc import Sequence

import numpy as np
import pandas as pd

from app_ui import maps
from vrvm.services.map import map_layers
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.boundaries import boundary_layers
from vrvm.services.map.places import ODState

PICK = "zones"
"""The selection parameter's name: the zone layer's id on the deck.gl map too, so one
reader takes either map's selection."""

HOVER = "hover"
MAX_ZONES = 5000
"""Above this many zones the map is drawn by deck.gl: Vega draws every zone three times
(fill, outline and the transparent layer that takes the pointer) on each rerun."""

_DIGITS = 5  # 1e-5 degrees, about 1 m: the outlines' precision on the canvas
_ZONE_LINE = "rgba(90,90,90,0.55)"
_HOVER_FILL = "rgba(255,214,0,0.55)"  # deck.gl's highlight colour
_GEOMETRY_CACHE: dict[int, tuple[weakref.ref, pd.DataFrame | list, dict]] = {}


def css(rgba: Sequence[float]) -> str:
    """A colour ``[r, g, b]`` or ``[r, g, b, a]`` (``a`` from 0 to 255) as CSS.

    Examples
    --------
    >>> css([255, 0, 0, 128])
    'rgba(255,0,0,0.502)'
    >>> css((0, 0, 0))
    'rgba(0,0,0,1.000)'
    """
    r, g, b, *a = (int(v) for v in rgba)
    return f"rgba({r},{g},{b},{(a[0] if a else 255) / 255:.3f})"


def _clockwise(ring: Sequence) -> list:
    """``ring`` (``[[lon, lat], ...]``) closed, rounded and clockwise: d3-geo reads a
    counter-clockwise exterior as the whole sphere but the polygon (it fills the map)."""
    xy = np.round(np.asarray(ring, dtype=float)[:, :2], _DIGITS)
    if len(xy) and not np.array_equal(xy[0], xy[-1]):
        xy = np.vstack([xy, xy[:1]])
    twice_area = np.sum(xy[:-1, 0] * xy[1:, 1] - xy[1:, 0] * xy[:-1, 1])
    return (xy[::-1] if twice_area > 0 else xy).tolist()


def for_d3(geometry: dict) -> dict:
    """A GeoJSON (multi)polygon with d3-geo's ring orientation (exteriors clockwise,
    holes counter-clockwise) and rounded coordinates; other geometries unchanged.

    Examples
    --------
    >>> square = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}
    >>> for_d3(square)["coordinates"][0]
    [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]
    """
    kind = geometry.get("type")
    if kind not in ("Polygon", "MultiPolygon"):
        return geometry
    polygons = [geometry["coordinates"]] if kind == "Polygon" else geometry["coordinates"]
    fixed = [
        [_clockwise(ring) if i == 0 else _clockwise(ring)[::-1] for i, ring in enumerate(rings)]
        for rings in polygons
        if rings
    ]
    return {"type": kind, "coordinates": fixed[0] if kind == "Polygon" else fixed}


def _geometries(area: ServiceArea) -> tuple[pd.DataFrame | list[dict], dict[str, list[dict]]]:
    """The zone shapes in grid order and the styled boundary features, made once per area
    (they are the spec's bulk).

    Hexagons are a table (``zone``, the corners ``x0``..``x5``, ``y0``..``y5``): Streamlit
    sends it as Arrow and Vega makes each polygon (:data:`_HEXAGON`), where GeoJSON in the
    spec is turned into JSON and back five times a rerun by Streamlit (71 ms for 773
    zones). A planner's polygons, of any shape, are GeoJSON features with a ``zone``
    property.
    """
    cached = _GEOMETRY_CACHE.get(id(area))
    if cached is not None and cached[0]() is area:
        return cached[1], cached[2]
    ids = area.grid["zone"].astype(str).tolist()
    if area.shapes is not None:
        zones = [
            {"type": "Feature", "geometry": for_d3(geometry), "properties": {"zone": zone}}
            for zone, geometry in zip(ids, area.shapes, strict=True)
        ]
    else:
        rings = [
            for_d3({"type": "Polygon", "coordinates": [ring]})["coordinates"][0][:-1]
            for ring in area.grid["boundary"]
        ]
        if all(len(ring) == 6 for ring in rings):  # no H3 pentagon among them
            corners = np.asarray(rings, dtype=np.float64)  # (zones, 6, lon/lat)
            zones = pd.DataFrame(
                {
                    "zone": ids,
                    **{f"x{i}": corners[:, i, 0] for i in range(6)},
                    **{f"y{i}": corners[:, i, 1] for i in range(6)},
                }
            )
        else:
            zones = [
                {
                    "type": "Feature",
                    "geometry": {"type": "Polygon", "coordinates": [[*ring, ring[0]]]},
                    "properties": {"zone": zone},
                }
                for zone, ring in zip(ids, rings, strict=True)
            ]
    boundaries = {}
    for kind, collection in boundary_layers(area.boundaries).items():
        styled = maps.styled_boundaries(collection, kind)["features"]
        boundaries[kind] = [
            {
                "type": "Feature",
                "geometry": for_d3(feature.get("geometry") or {}),
                "properties": {
                    "_fill": css(feature["properties"]["_fill"]),
                    "_line": css(feature["properties"]["_line"]),
                    "_width": feature["properties"]["_width"],
                },
            }
            for feature in styled
        ]
    _GEOMETRY_CACHE[id(area)] = (weakref.ref(area), zones, boundaries)
    weakref.finalize(area, _GEOMETRY_CACHE.pop, id(area), None)
    return zones, boundaries


def _zone_info(area: ServiceArea, fill, tips) -> pd.DataFrame:
    """Per zone: ``zone``, ``label`` and ``tip`` (as written: Vega's tooltip is text, and
    escapes what it shows) and ``fill`` (CSS)."""
    data = map_layers.zone_layer_data(area, fill=fill, tips=tips)
    return pd.DataFrame(
        {
            "zone": data["zone"].astype(str),
            "label": area.grid["label"].astype(str).to_numpy(),
            # the tips are written for deck.gl's HTML tooltip (escaped): Vega's shows text
            "tip": [html.unescape(str(tip)) for tip in data["tip"]],
            "fill": [css(c) for c in data["fill"]],
        }
    )


def _geo_layer(name: str, **mark) -> dict:
    return {"data": {"name": name}, "mark": {"type": "geoshape", **mark}}


_HEXAGON = (
    "{type: 'Polygon', coordinates: [["
    + ", ".join(f"[datum.x{i}, datum.y{i}]" for i in (0, 1, 2, 3, 4, 5, 0))
    + "]]}"
)
"""A Vega expression: a hexagon's GeoJSON polygon from its corners' columns."""


def _shape_layer(zones, lookup: list[str] | None = None, **mark) -> dict:
    """A layer drawing every zone's shape, with ``zone`` in each datum and, if given, the
    ``lookup`` fields of ``zone_info`` joined to it."""
    layer = _geo_layer("zone_shapes", **mark)
    if isinstance(zones, pd.DataFrame):  # hexagons: made from their corners
        transform = [{"calculate": _HEXAGON, "as": "geo"}]
        layer["encoding"] = {"shape": {"field": "geo", "type": "geojson"}}
    else:
        transform = [{"calculate": "datum.properties.zone", "as": "zone"}]
        layer["encoding"] = {}
    if lookup:
        transform.append(
            {
                "lookup": "zone",
                "from": {"data": {"name": "zone_info"}, "key": "zone", "fields": lookup},
            }
        )
    layer["transform"] = transform
    return layer


_TOOLTIP = [
    {"field": "label", "type": "nominal", "title": "zone"},
    {"field": "tip", "type": "nominal", "title": " "},
]


def zone_spec(
    area: ServiceArea,
    state: ODState,
    *,
    fill=None,
    tips: Sequence[str] | None = None,
    height: int = 560,
    markers: pd.DataFrame | None = None,
    under: Sequence[dict] = (),
) -> dict:
    """The clickable zone map (selection :data:`PICK`) with origin A and destination B.

    Parameters
    ----------
    area : ServiceArea
        The zones and boundaries, and the initial view.
    state : ODState
        The origin and destination to outline and mark.
    fill : array-like of shape (n_zones, 4), optional
        RGBA fills of a choropleth, in grid order (default: pale, as on the deck.gl map);
        the A and B zones are then outlined, not filled, so their colour shows.
    tips : sequence of str, optional
        One tooltip line per zone (default: its training trip ends).
    height : int
        Pixels; the width is the page column's.
    markers : pandas.DataFrame, optional
        ``lat``, ``lon``, ``name``, ``label`` and ``color`` (RGBA): markers instead of A and
        B (e.g. a fleet's bases); a click on one is a click on the zone beneath.
    under : sequence of dict
        GeoJSON features with RGBA ``fill`` and ``line`` properties, drawn under the zones
        (e.g. isochrone regions the zones' fills leave visible).

    Returns
    -------
    dict
        The Vega-Lite spec for ``st.vega_lite_chart(spec, on_select="rerun",
        selection_mode=[PICK])``.
    """
    zones, boundaries = _geometries(area)
    datasets: dict = {"zone_shapes": zones, "zone_info": _zone_info(area, fill, tips)}
    layers = []
    if boundaries.get("areas"):
        datasets["areas"] = boundaries["areas"]
        layers.append(_boundary_layer("areas", filled=True))
    if under:
        datasets["under"] = [
            {
                "type": "Feature",
                "geometry": for_d3(f.get("geometry") or {}),
                "properties": {
                    **f["properties"],
                    **{k: css(f["properties"][k]) for k in ("fill", "line")},
                },
            }
            for f in under
        ]
        layers.append(_boundary_layer("under", filled=True, fields=("fill", "line", 1.5)))
    zone_layer = _shape_layer(zones, ["fill"], stroke=_ZONE_LINE, strokeWidth=0.8, tooltip=None)
    zone_layer["encoding"]["fill"] = {"field": "fill", "type": "nominal", "scale": None}
    layers.append(zone_layer)
    for kind in ("lines", "points"):
        if boundaries.get(kind):
            datasets[kind] = boundaries[kind]
            layers.append(_boundary_layer(kind, filled=kind == "points"))
    # the A and B zones: outlined in their colours above the zones (filled unless a
    # choropleth's colours must show)
    od = map_layers.od_zone_data(state, filled=fill is None)
    datasets["od"] = pd.DataFrame(
        {
            "zone": od["zone"].astype(str),
            "line": [css(c) for c in od["line"]],
            "odfill": [css(c) for c in od["fill"]],
        },
        columns=["zone", "line", "odfill"],
    )
    od_layer = _shape_layer(zones, strokeWidth=4, tooltip=None)
    od_layer["transform"] += [
        {
            "lookup": "zone",
            "from": {"data": {"name": "od"}, "key": "zone", "fields": ["line", "odfill"]},
        },
        {"filter": "isValid(datum.line)"},
    ]
    od_layer["encoding"].update(
        fill={"field": "odfill", "type": "nominal", "scale": None},
        stroke={"field": "line", "type": "nominal", "scale": None},
    )
    layers.append(od_layer)
    datasets["markers"] = _marker_table(state, markers)
    position = {
        "longitude": {"field": "lon", "type": "quantitative"},
        "latitude": {"field": "lat", "type": "quantitative"},
    }
    dot = {"type": "circle", "size": 380, "opacity": 1, "stroke": "white", "strokeWidth": 2}
    layers.append(
        {
            "data": {"name": "markers"},
            "mark": {**dot, "tooltip": None},
            "encoding": {**position, "fill": {"field": "color", "type": "nominal", "scale": None}},
        }
    )
    layers.append(
        {
            "data": {"name": "markers"},
            "mark": {
                "type": "text",
                "color": "white",
                "fontSize": 14,
                "fontWeight": 700,
                "baseline": "middle",
                "align": "center",
                "tooltip": None,
            },
            "encoding": {**position, "text": {"field": "name"}},
        }
    )
    # on top of everything, the zones again, transparent: they alone take the pointer
    # (hover, tooltip, click), as on the deck.gl map, whose outlines and markers are not
    # pickable: a click on a marker picks the zone beneath the pointer
    hits = _shape_layer(zones, ["label", "tip"], fill="transparent", strokeOpacity=0)
    hits["params"] = [
        {"name": PICK, "select": {"type": "point", "fields": ["zone"]}},
        {"name": HOVER, "select": {"type": "point", "fields": ["zone"], "on": "pointerover"}},
    ]
    hits["encoding"].update(
        fill={
            "condition": {"param": HOVER, "empty": False, "value": _HOVER_FILL},
            "value": "transparent",
        },
        tooltip=_TOOLTIP,
    )
    layers.append(hits)
    view = area.view
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "height": height,
        # every side given: Streamlit adds padding at the bottom of a spec that has none
        # there, which would move the map off the view the clicks are computed from
        "padding": {"left": 0, "top": 0, "right": 0, "bottom": 0},
        "autosize": {"type": "none"},
        "config": {"view": {"stroke": None}},
        "usermeta": {"embedOptions": {"renderer": "canvas"}},
        "projection": {
            "type": "mercator",
            "scale": 512.0 * 2.0**view.zoom / (2.0 * math.pi),
            "center": [view.longitude, view.latitude],
            "translate": {"expr": "[width / 2, height / 2]"},
        },
        "datasets": datasets,
        "layer": layers,
    }


def _boundary_layer(name: str, *, filled: bool, fields=("_fill", "_line", "_width")) -> dict:
    """A non-clickable layer of features whose properties name their CSS colours."""
    fill, line, width = fields
    encoding = {"stroke": {"field": f"properties.{line}", "type": "nominal", "scale": None}}
    if filled:
        encoding["fill"] = {"field": f"properties.{fill}", "type": "nominal", "scale": None}
    if isinstance(width, str):
        encoding["strokeWidth"] = {
            "field": f"properties.{width}",
            "type": "quantitative",
            "scale": None,
        }
    mark = {"filled": filled, "tooltip": None}
    if not isinstance(width, str):
        mark["strokeWidth"] = width
    layer = _geo_layer(name, **mark)
    layer["encoding"] = encoding
    return layer


def _marker_table(state: ODState, markers: pd.DataFrame | None) -> pd.DataFrame:
    """The markers, A and B or the given ones, colours as CSS. They take no clicks: the
    zone beneath them does (the top layer of :func:`zone_spec`)."""
    columns = ["lat", "lon", "name", "label", "color"]
    markers = map_layers.marker_data(state) if markers is None else markers.copy()
    if "label" not in markers:
        markers["label"] = markers["name"]
    markers["color"] = [css(c) for c in markers["color"]]
    markers["name"] = markers["name"].astype(str)
    markers["label"] = markers["label"].astype(str)
    return pd.DataFrame(markers, columns=columns)
