"""pydeck decks and map legends of the dashboard (no Streamlit here: the views draw them).

The layer data and colours come from :mod:`vrvm.services.map.map_layers`,
:mod:`vrvm.services.map.boundaries` and :mod:`vrvm.services.display.colours`; this module only puts
them into deck.gl layers. Without a basemap (the offline default) the zones and boundary
layers are the whole map. Hexagon zones are drawn in the browser from their H3 ids; a
planner's polygon zones (taxi zones, community areas) as GeoJSON features.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence

import pandas as pd
import pydeck as pdk
from pydeck.bindings.json_tools import default_serialize

from vrvm.services.map import map_layers
from vrvm.services.map.area import ServiceArea, ViewState
from vrvm.services.map.boundaries import boundary_layers as boundary_collections
from vrvm.services.map.places import ODState

ZONE_LAYER = "zones"
TOOLTIP_STYLE = {
    "backgroundColor": "rgba(30, 30, 30, 0.9)",
    "color": "white",
    "fontSize": "13px",
    "padding": "6px 8px",
    "whiteSpace": "pre-line",  # "\n" in a field breaks the line (Streamlit escapes "<br/>" there)
    # An info box pinned to the map's top-left corner instead of a box at the pointer:
    # deck.gl places its tooltip right of and below the pointer and the chart clips it,
    # so near the canvas's right or bottom edge it was cut off. deck.gl applies this
    # style after its own translate(x, y), so "none" undoes it.
    "transform": "none",
    "top": "8px",
    "left": "8px",
    "maxWidth": "min(340px, calc(100% - 16px))",
    "borderRadius": "4px",
}

# Styling of boundary features by their "kind" (the synthetic city's layers); other
# GeoJSON files get the defaults.
_LINE_STYLE = {
    "river": ([66, 146, 198, 230], 5),
    "highway": ([120, 120, 120, 220], 3),
    "bridge": ([60, 60, 60, 255], 6),
    "arterials": ([170, 170, 170, 110], 1),
}
_AREA_STYLE = {
    "downtown": ([240, 200, 120, 60], [200, 140, 40, 200]),
    "city_limits": ([0, 0, 0, 0], [110, 110, 110, 160]),
    # polygons of the clickable zone file that no trip reaches: drawn faintly, not picked
    "idle_zone": ([200, 200, 200, 25], [150, 150, 150, 90]),
}


def styled_boundaries(collection: dict, kind: str) -> dict:
    """A boundary collection with its drawing style in each feature's properties: ``_fill``
    and ``_line`` (RGBA) and ``_width`` (pixels), by the feature's ``kind``; text escaped."""
    features = []
    for feature in collection["features"]:
        props = _escaped(feature.get("properties") or {})
        feature_kind = props.get("kind", "")
        if kind == "lines":
            colour, width = _LINE_STYLE.get(feature_kind, ([110, 110, 110, 180], 2))
            props.update(_line=colour, _width=width, _fill=[0, 0, 0, 0])
        elif kind == "areas":
            fill, line = _AREA_STYLE.get(feature_kind, ([0, 0, 0, 0], [90, 90, 90, 150]))
            props.update(_line=line, _width=1.5, _fill=fill)
        else:
            props.update(_line=[40, 40, 40, 255], _width=1, _fill=[60, 60, 60, 230])
        features.append({**feature, "properties": props})
    return {"type": "FeatureCollection", "features": features}


def _escaped(properties: dict) -> dict:
    """A boundary feature's properties as the browser gets them: text HTML-escaped.

    They come from an uploaded file and a deck.gl tooltip is HTML: names and other
    text are escaped here even though no boundary layer has a tooltip today (and
    Streamlit escapes too). Nested values (lists, objects) and numbers that JSON cannot
    hold (1e999 reads as infinity) are left out: the map uses none of them.
    """
    return {
        html.escape(str(key)): html.escape(value) if isinstance(value, str) else value
        for key, value in properties.items()
        if value is None
        or isinstance(value, (str, int, bool))
        or (isinstance(value, float) and math.isfinite(value))
    }


def boundary_layers(boundaries: dict | None) -> list[pdk.Layer]:
    """Non-pickable GeoJSON layers: polygons under the zones, lines and points on top."""
    layers = []
    for kind, collection in boundary_collections(boundaries).items():
        layers.append(
            pdk.Layer(
                "GeoJsonLayer",
                styled_boundaries(collection, kind),
                id=f"boundaries-{kind}",
                pickable=False,
                stroked=True,
                filled=True,
                get_fill_color="properties._fill",
                get_line_color="properties._line",
                get_line_width="properties._width",
                line_width_units="'pixels'",
                point_radius_min_pixels=6,
                get_point_radius=150,
            )
        )
    return layers


def _zone_layers(area: ServiceArea, data: pd.DataFrame, od_data: pd.DataFrame):
    """The clickable zone layer (id ``zones``) and the origin/destination outlines."""
    common = {"stroked": True, "pickable": False}
    if area.kind == "polygons":
        zones = pdk.Layer(
            "GeoJsonLayer",
            map_layers.zone_features(area, data),
            id=ZONE_LAYER,
            get_fill_color="properties.fill",
            get_line_color=[90, 90, 90, 140],
            line_width_min_pixels=1,
            filled=True,
            **{**common, "pickable": True},
            auto_highlight=True,
            highlight_color=[255, 214, 0, 140],
        )
        od_zones = pdk.Layer(
            "GeoJsonLayer",
            map_layers.zone_features(area, od_data),
            id="od-zones",
            get_line_color="properties.line",
            get_fill_color="properties.fill",
            line_width_min_pixels=4,
            filled=True,
            **common,
        )
        return zones, od_zones
    # Hexagons drawn in the browser from their H3 ids: a tenth of the JSON of polygons.
    zones = pdk.Layer(
        "H3HexagonLayer",
        data,
        id=ZONE_LAYER,
        get_hexagon="zone",
        get_fill_color="fill",
        get_line_color=[90, 90, 90, 110],
        line_width_min_pixels=1,
        filled=True,
        extruded=False,
        **{**common, "pickable": True},
        auto_highlight=True,
        highlight_color=[255, 214, 0, 140],
    )
    od_zones = pdk.Layer(
        "H3HexagonLayer",
        od_data,
        id="od-zones",
        get_hexagon="zone",
        get_line_color="line",
        get_fill_color="fill",
        line_width_min_pixels=4,
        filled=True,
        extruded=False,
        **common,
    )
    return zones, od_zones


def _zone_outline(area: ServiceArea) -> pdk.Layer:
    """Every zone, faint and not pickable (under the relevance-vector arcs)."""
    style = {
        "get_fill_color": [120, 130, 140, 14],
        "get_line_color": [120, 120, 120, 60],
        "line_width_min_pixels": 1,
        "stroked": True,
        "filled": True,
        "pickable": False,
    }
    if area.kind == "polygons":
        features = map_layers.zone_features(area, area.grid[["zone"]])
        return pdk.Layer("GeoJsonLayer", features, id="zones-outline", **style)
    return pdk.Layer(
        "H3HexagonLayer",
        area.grid[["zone"]],
        id="zones-outline",
        get_hexagon="zone",
        extruded=False,
        **style,
    )


class CompactDeck(pdk.Deck):
    """A ``pydeck.Deck`` whose JSON has no indentation.

    ``st.pydeck_chart`` sends ``Deck.to_json()`` to the browser on every rerun;
    pydeck indents it, which makes a map of a few hundred zones several times larger
    (and slower to send and parse) than it needs to be.
    """

    def to_json(self) -> str:
        return json.dumps(self, sort_keys=True, default=default_serialize, separators=(",", ":"))


def _deck(layers, view: ViewState, *, basemap: bool, tooltip, pitch: float = 0) -> pdk.Deck:
    # map_provider=None with pydeck's default map_style sentinel draws no basemap at all
    # (map_style=None would make Streamlit fall back to a Carto basemap).
    kwargs: dict = {"map_provider": None}
    if basemap:
        kwargs = {"map_provider": "carto", "map_style": pdk.map_styles.CARTO_LIGHT}
    return CompactDeck(
        layers=layers,
        # no double-click zoom: deck.gl holds every click ~300 ms to tell it from a double
        # click (visgl/deck.gl#3783); the maps are clicked, and zoomed by wheel or buttons
        views=[pdk.View(type="MapView", controller={"doubleClickZoom": False})],
        initial_view_state=pdk.ViewState(
            latitude=view.latitude, longitude=view.longitude, zoom=view.zoom, pitch=pitch, bearing=0
        ),
        tooltip=tooltip,
        **kwargs,
    )


def zone_deck(
    area: ServiceArea,
    state: ODState,
    *,
    fill=None,
    tips=None,
    basemap: bool = False,
    under: Sequence[pdk.Layer] = (),
    markers: pd.DataFrame | None = None,
) -> pdk.Deck:
    """Clickable zones (layer id ``zones``) with origin A and destination B marked.

    The zones' layer does not depend on A and B: they are drawn in small layers above
    it (``od-zones``, ``od-markers``, ``od-labels``).

    ``under``: layers drawn beneath the zones (above the boundary areas), such as
    regions the zones' fills leave visible (:func:`isochrone_layer`). ``markers``
    (columns ``lat``, ``lon``, ``name``, ``label``, ``color``; a fleet's bases) replace
    the A and B markers.
    """
    data = map_layers.zone_layer_data(area, fill=fill, tips=tips)
    boundaries = boundary_layers(area.boundaries)
    areas = [layer for layer in boundaries if layer.id == "boundaries-areas"]
    overlays = [layer for layer in boundaries if layer.id != "boundaries-areas"]
    od_data = map_layers.od_zone_data(state, filled=fill is None)
    zones, od_zones = _zone_layers(area, data, od_data)
    markers = map_layers.marker_data(state) if markers is None else markers.copy()
    # the marker labels name zones, perhaps after an uploaded file: escaped like the zones'
    markers["label"] = [html.escape(str(label)) for label in markers["label"]]
    layers = [*areas, *under, zones, *overlays, od_zones]
    if len(markers):
        layers.append(
            pdk.Layer(
                "ScatterplotLayer",
                markers,
                id="od-markers",
                get_position="[lon, lat]",
                get_fill_color="color",
                get_line_color=[255, 255, 255, 255],
                line_width_min_pixels=2,
                stroked=True,
                radius_min_pixels=11,
                radius_max_pixels=11,
                pickable=False,
            )
        )
        layers.append(
            pdk.Layer(
                "TextLayer",
                markers,
                id="od-labels",
                get_position="[lon, lat]",
                get_text="name",
                get_color=[255, 255, 255, 255],
                get_size=14,
                font_weight=700,
                get_text_anchor="'middle'",
                get_alignment_baseline="'center'",
                pickable=False,
            )
        )
    tooltip = {"html": "<b>{label}</b><br/>{tip}", "style": TOOLTIP_STYLE}
    return _deck(layers, area.view, basemap=basemap, tooltip=tooltip)


def _od_arcs(data: pd.DataFrame, layer_id: str, *, width) -> pdk.Layer:
    """Arcs from ``origin_lon/lat`` to ``dest_lon/lat`` in each row's ``color``; ``width``
    in pixels, or the name of a column holding it."""
    return pdk.Layer(
        "ArcLayer",
        data,
        id=layer_id,
        get_source_position="[origin_lon, origin_lat]",
        get_target_position="[dest_lon, dest_lat]",
        get_source_color="color",
        get_target_color="color",
        get_width=width,
        get_height=0.15,
        width_min_pixels=1,
        pickable=True,
        auto_highlight=True,
    )


def arc_deck(
    table: pd.DataFrame,
    colours,
    area: ServiceArea,
    *,
    basemap: bool = False,
) -> pdk.Deck:
    """Relevance-vector trips as arcs from origin to destination."""
    data = table[
        [
            "member",
            "origin_lat",
            "origin_lon",
            "dest_lat",
            "dest_lon",
            "hour",
            "travel_min",
            "weight",
            "width",
        ]
    ].copy()
    data["color"] = [list(map(int, c)) for c in colours]
    data["travel_min"] = data["travel_min"].round(1)
    data["weight"] = data["weight"].round(4)
    data["width"] = data["width"].round(3)
    outline = _zone_outline(area)
    arcs = _od_arcs(data, "relevance-arcs", width=1.5)
    ends = pdk.Layer(
        "ScatterplotLayer",
        data,
        id="relevance-origins",
        get_position="[origin_lon, origin_lat]",
        get_fill_color="color",
        radius_min_pixels=2,
        radius_max_pixels=4,
        pickable=False,
    )
    tooltip = {
        "html": "<b>member {member}</b>, departs {hour}:00<br/>{travel_min} min observed"
        "<br/>|weight| {weight}, kernel width {width}",
        "style": TOOLTIP_STYLE,
    }
    layers = [outline, *boundary_layers(area.boundaries), arcs, ends]
    # a tilted view, so that arcs rise off the map instead of overlapping as lines
    return _deck(layers, area.view, basemap=basemap, tooltip=tooltip, pitch=35)


def zone_arc_deck(
    arcs: pd.DataFrame,
    colours,
    area: ServiceArea,
    *,
    basemap: bool = False,
) -> pdk.Deck:
    """Relevance vectors counted per zone pair, as arcs between the zones' centres
    (private mode: :func:`vrvm.services.map.privacy.relevance_arcs`)."""
    data = arcs[["origin_lat", "origin_lon", "dest_lat", "dest_lon", "n", "hours"]].copy()
    data["origin"] = [html.escape(str(label)) for label in arcs["origin"]]
    data["destination"] = [html.escape(str(label)) for label in arcs["destination"]]
    data["weight"] = arcs["weight"].round(4)
    data["arc_width"] = 1.0 + arcs["n"].clip(upper=8).to_numpy(float) / 2.0  # more, wider
    data["color"] = [list(map(int, c)) for c in colours]
    outline = _zone_outline(area)
    layer = _od_arcs(data, "relevance-zone-arcs", width="arc_width")
    tooltip = {
        "html": "<b>{n} relevance vector(s)</b> from {origin}<br/>to {destination}"
        "<br/>departing {hours}; summed |weight| {weight}",
        "style": TOOLTIP_STYLE,
    }
    layers = [outline, *boundary_layers(area.boundaries), layer]
    return _deck(layers, area.view, basemap=basemap, tooltip=tooltip, pitch=35)


def legend_html(legend: list[tuple[str, str]], title: str) -> str:
    """A colour legend as HTML; labels are escaped.

    Entries are ``(label, css)`` pairs, ``css`` a colour (``"#rrggbb"``) or any CSS
    background (the hatched swatch of thin-data zones).
    """
    items = "".join(
        f"<span style='display:inline-block;margin:2px 10px 2px 0;white-space:nowrap'>"
        f"<span style='display:inline-block;width:16px;height:12px;background:{colour};"
        f"border:1px solid #999;vertical-align:middle;margin-right:4px'></span>"
        f"{html.escape(label)}</span>"
        for label, colour in legend
    )
    return f"<div style='font-size:0.85rem'><b>{html.escape(title)}</b><br/>{items}</div>"


def isochrone_layer(features: list[dict]) -> pdk.Layer:
    """Nested regions (GeoJSON features with ``fill`` and ``line``), outermost first.

    Not pickable: it lies under the clickable zones, whose tooltips say what the
    regions mean (:func:`vrvm.services.planning.isochrones.isochrone_map`).
    """
    return pdk.Layer(
        "GeoJsonLayer",
        {"type": "FeatureCollection", "features": features},
        id="isochrones",
        get_fill_color="properties.fill",
        get_line_color="properties.line",
        line_width_min_pixels=2,
        stroked=True,
        filled=True,
        pickable=False,
    )
