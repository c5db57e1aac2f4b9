"""The zone map drawn without WebGL, for the floors of ``bench_ui.py --floors`` (issue 37).

Two stand-ins for the page's deck.gl map (:func:`app_ui.od_picker.show_map`), from the
same data (:mod:`vrvm.services.map.map_layers`, the area's boundaries) and in the same
initial view (the deck's Web-Mercator view: a 512-pixel world at its zoom, so the
bench finds a zone at the same pixel on every map):

* :func:`show_vega_lite`: Vega-Lite ``geoshape`` layers on a canvas (``st.vega_lite_chart``
  with a point selection, ``on_select="rerun"``). The zones and boundaries are GeoJSON
  datasets kept in the spec; the origin and destination are small tabular datasets
  (``od``, ``markers``), so that a swap changes only them and Streamlit updates the
  drawn chart's data in place instead of embedding a new chart.
* :func:`show_folium`: Leaflet's canvas renderer (``prefer_canvas``) through
  ``streamlit-folium``, no tiles, Leaflet served by Streamlit's static file serving from
  ``static/`` beside these scripts (no network). The zones are the map's own script
  (drawn once); the origin and destination a feature group that ``streamlit-folium``
  replaces without drawing the map anew.

Both read a click as a zone and apply it as the page does
(:func:`vrvm.services.map.places.apply_map_click`: first click the origin, second the
destination).
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import numpy as np
import streamlit as st

from app_ui import od_picker
from vrvm.services.display.colours import DEST_RGB, ORIGIN_RGB
from vrvm.services.map import map_layers
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.boundaries import boundary_layers
from vrvm.services.map.places import ODState, apply_map_click, place_from_zone

LEAFLET_JS = "/app/static/leaflet.js"
LEAFLET_CSS = "/app/static/leaflet.css"
PICK = "pick"

# the boundary styles of app_ui.maps (colour RGBA, width), as CSS
_LINE_STYLE = {
    "river": ((66, 146, 198, 230), 5),
    "highway": ((120, 120, 120, 220), 3),
    "bridge": ((60, 60, 60, 255), 6),
    "arterials": ((170, 170, 170, 110), 1),
}
_AREA_STYLE = {
    "downtown": ((240, 200, 120, 60), (200, 140, 40, 200)),
    "city_limits": ((0, 0, 0, 0), (110, 110, 110, 160)),
    "idle_zone": ((200, 200, 200, 25), (150, 150, 150, 90)),
}


def css(rgba) -> str:
    """A colour ``[r, g, b, a]`` (``a`` 0-255) as CSS."""
    r, g, b, *a = (int(v) for v in rgba)
    return f"rgba({r},{g},{b},{(a[0] if a else 255) / 255:.3f})"


def trip_line(state: ODState) -> str:
    """The floors' answer line (what the bench waits for to change)."""
    origin = state.origin.label if state.origin else "-"
    dest = state.dest.label if state.dest else "-"
    return f"A trip typically goes {origin} to {dest}."


def _clockwise(ring: list) -> list:
    """``ring`` ([[lon, lat], ...]) clockwise, the exterior's orientation d3-geo expects:
    counter-clockwise, a polygon is read as the whole sphere but it (so it fills the map).
    """
    xy = np.asarray(ring, dtype=float)
    twice_area = np.sum(xy[:-1, 0] * xy[1:, 1] - xy[1:, 0] * xy[:-1, 1])
    return [list(p) for p in (ring[::-1] if twice_area > 0 else ring)]


def for_d3(geometry: dict) -> dict:
    """A GeoJSON (multi)polygon with the ring orientations of d3-geo (exteriors clockwise,
    holes counter-clockwise); other geometries unchanged."""
    if geometry.get("type") not in ("Polygon", "MultiPolygon"):
        return geometry
    polygons = geometry["coordinates"]
    if geometry["type"] == "Polygon":
        polygons = [polygons]
    fixed = [
        [_clockwise(ring) if i == 0 else _clockwise(ring)[::-1] for i, ring in enumerate(polygon)]
        for polygon in polygons
    ]
    return {
        "type": geometry["type"],
        "coordinates": fixed[0] if geometry["type"] == "Polygon" else fixed,
    }


def zone_features(area: ServiceArea) -> list[dict]:
    """The clickable zones as GeoJSON features with ``zone``, ``label``, ``tip`` and
    ``fill`` (CSS) properties, in grid order."""
    data = map_layers.zone_layer_data(area)
    features = []
    for i, record in enumerate(data.to_dict(orient="records")):
        if area.shapes is not None:
            geometry = area.shapes[i]
        else:
            ring = [[round(lon, 5), round(lat, 5)] for lon, lat in area.grid["boundary"].iloc[i]]
            geometry = {"type": "Polygon", "coordinates": [ring]}
        features.append(
            {
                "type": "Feature",
                "geometry": for_d3(geometry),
                "properties": {
                    "zone": str(record["zone"]),
                    "label": str(area.grid["label"].iloc[i]),
                    "tip": record["tip"],
                    "fill": css(record["fill"]),
                },
            }
        )
    return features


def styled_boundaries(area: ServiceArea) -> dict[str, list[dict]]:
    """The area's boundary ``areas`` and ``lines`` with CSS ``_fill``, ``_line``, ``_width``."""
    out = {}
    for kind, collection in boundary_layers(area.boundaries).items():
        if kind == "points":
            continue
        features = []
        for feature in collection["features"]:
            props = dict(feature.get("properties") or {})
            if kind == "lines":
                line, width = _LINE_STYLE.get(props.get("kind"), ((110, 110, 110, 180), 2))
                fill = (0, 0, 0, 0)
            else:
                fill, line = _AREA_STYLE.get(props.get("kind"), ((0, 0, 0, 0), (90, 90, 90, 150)))
                width = 1.5
            style = {"_fill": css(fill), "_line": css(line), "_width": width}
            geometry = for_d3(feature.get("geometry") or {})
            features.append({**feature, "geometry": geometry, "properties": {**props, **style}})
        out[kind] = features
    return out


def _od_rows(state: ODState) -> tuple[list[dict], list[dict]]:
    od = [
        {"zone": str(place.zone), "line": css((*rgb, 255)), "odfill": css((*rgb, 200))}
        for place, rgb in ((state.origin, ORIGIN_RGB), (state.dest, DEST_RGB))
        if place is not None and place.zone is not None
    ]
    markers = map_layers.marker_data(state)
    zones = {"A": state.origin, "B": state.dest}
    # each marker names its zone: a click on a marker is a click on its zone (deck.gl's
    # markers are not pickable, so a click there picks the zone beneath)
    rows = [
        {
            "lat": r["lat"],
            "lon": r["lon"],
            "name": r["name"],
            "color": css(r["color"]),
            "zone": str(zones[r["name"]].zone),
        }
        for r in markers.to_dict(orient="records")
    ]
    return od, rows


# --------------------------------------------------------------------------------------
# Vega-Lite
# --------------------------------------------------------------------------------------


@st.cache_data(show_spinner=False)
def _static_layers(_area: ServiceArea, zones_key: str) -> tuple[list, dict]:
    del zones_key
    return zone_features(_area), styled_boundaries(_area)


def vega_lite_spec(area: ServiceArea, state: ODState, *, height: int, key: str) -> dict:
    """The zone map as a Vega-Lite spec (see the module's docstring)."""
    zones, boundaries = _static_layers(area, key)
    od, markers = _od_rows(state)
    view = area.view
    import pandas as pd

    geo = {"type": "geoshape"}
    layers = []
    datasets = {"zones": zones}
    if boundaries.get("areas"):
        datasets["areas"] = boundaries["areas"]
        layers.append(
            {
                "data": {"name": "areas"},
                "mark": {**geo, "strokeWidth": 1.5},
                "encoding": {
                    "fill": {"field": "properties._fill", "type": "nominal", "scale": None},
                    "stroke": {"field": "properties._line", "type": "nominal", "scale": None},
                },
            }
        )
    layers.append(
        {
            "data": {"name": "zones"},
            "transform": [{"calculate": "datum.properties.zone", "as": "zone"}],
            "params": [
                {"name": PICK, "select": {"type": "point", "fields": ["zone"]}},
                {
                    "name": "hover",
                    "select": {
                        "type": "point",
                        "fields": ["zone"],
                        "on": "pointerover",
                        "clear": "pointerout",
                    },
                },
            ],
            "mark": {**geo, "stroke": "rgba(90,90,90,0.43)", "strokeWidth": 1},
            "encoding": {
                "fill": {
                    "condition": {
                        "param": "hover",
                        "empty": False,
                        "value": "rgba(255,214,0,0.55)",
                    },
                    "field": "properties.fill",
                    "type": "nominal",
                    "scale": None,
                },
                "tooltip": [
                    {"field": "properties.label", "title": "zone"},
                    {"field": "properties.tip", "title": " "},
                ],
            },
        }
    )
    if boundaries.get("lines"):
        datasets["lines"] = boundaries["lines"]
        layers.append(
            {
                "data": {"name": "lines"},
                "mark": {**geo, "filled": False},
                "encoding": {
                    "stroke": {"field": "properties._line", "type": "nominal", "scale": None},
                    "strokeWidth": {
                        "field": "properties._width",
                        "type": "quantitative",
                        "scale": None,
                    },
                },
            }
        )
    layers.append(
        {
            "data": {"name": "zones"},
            "transform": [
                {"calculate": "datum.properties.zone", "as": "zone"},
                {
                    "lookup": "zone",
                    "from": {"data": {"name": "od"}, "key": "zone", "fields": ["line", "odfill"]},
                },
                {"filter": "isValid(datum.line)"},
            ],
            "mark": {**geo, "strokeWidth": 4, "tooltip": None},
            "encoding": {
                "fill": {"field": "odfill", "type": "nominal", "scale": None},
                "stroke": {"field": "line", "type": "nominal", "scale": None},
                "tooltip": None,
            },
        }
    )
    position = {
        "longitude": {"field": "lon", "type": "quantitative"},
        "latitude": {"field": "lat", "type": "quantitative"},
    }
    layers.append(
        {
            "data": {"name": "markers"},
            "mark": {
                "type": "circle",
                "tooltip": None,
                "size": 380,
                "opacity": 1,
                "stroke": "white",
                "strokeWidth": 2,
            },
            "encoding": {
                **position,
                "fill": {"field": "color", "type": "nominal", "scale": None},
                "tooltip": None,
            },
        }
    )
    layers.append(
        {
            "data": {"name": "markers"},
            "mark": {
                "type": "text",
                "tooltip": None,
                "color": "white",
                "fontSize": 14,
                "fontWeight": 700,
                "baseline": "middle",
                "align": "center",
            },
            "encoding": {**position, "text": {"field": "name"}, "tooltip": None},
        }
    )
    datasets["od"] = pd.DataFrame(od, columns=["zone", "line", "odfill"])
    datasets["markers"] = pd.DataFrame(markers, columns=["lat", "lon", "name", "color", "zone"])
    return {
        "height": height,
        "padding": 0,
        "autosize": {"type": "none"},
        "config": {"view": {"stroke": None}},
        "usermeta": {"embedOptions": {"renderer": "canvas"}},
        "projection": {
            "type": "mercator",
            # deck.gl's view: a 512-pixel world at zoom z is d3's scale 512 * 2^z / (2 pi)
            "scale": 512.0 * 2.0**view.zoom / (2.0 * math.pi),
            "center": [view.longitude, view.latitude],
            "translate": {"expr": "[width / 2, height / 2]"},
        },
        "datasets": datasets,
        "layer": layers,
    }


def vega_lite_key(key: str, area: ServiceArea) -> str:
    return od_picker.map_key(key, area) + "_vl"


def handle_vega_lite_click(key: str, area: ServiceArea) -> ODState:
    """Apply the Vega-Lite map's selection (a clicked zone) to the state, once."""
    event = st.session_state.get(vega_lite_key(key, area)) or {}
    picks = (event.get("selection") or {}).get(PICK) or []
    zone = picks[0].get("zone") if picks and isinstance(picks[0], dict) else None
    state = od_picker.get_state(key, area)
    if zone is None or zone not in area.zone_index:
        if state.last_selection:
            state = replace(state, last_selection=None)
    elif zone != state.last_selection:
        state = apply_map_click(replace(state, last_selection=zone), place_from_zone(area, zone))
    od_picker.set_state(key, state)
    return state


def show_vega_lite(key: str, area: ServiceArea, *, height: int = 460) -> None:
    state = od_picker.get_state(key, area)
    spec = vega_lite_spec(area, state, height=height, key=od_picker.map_key(key, area))
    st.vega_lite_chart(
        spec,
        key=vega_lite_key(key, area),
        on_select="rerun",
        selection_mode=[PICK],
        width="stretch",
        theme=None,
    )


# --------------------------------------------------------------------------------------
# Leaflet (streamlit-folium)
# --------------------------------------------------------------------------------------


def _folium_base(area: ServiceArea, height: int):
    import folium

    view = area.view
    base = folium.Map(
        location=[view.latitude, view.longitude],
        zoom_start=view.zoom + 1.0,  # Leaflet's world is 256 pixels at zoom 0, deck.gl's 512
        zoom_snap=0,
        tiles=None,
        prefer_canvas=True,
        double_click_zoom=False,
        attribution_control=False,
        height=height,
    )
    base.default_js = [("leaflet", LEAFLET_JS)]  # served by Streamlit: no network
    base.default_css = [("leaflet_css", LEAFLET_CSS)]
    boundaries = styled_boundaries(area)

    def boundary_style(feature):
        p = feature["properties"]
        return {
            "color": p["_line"],
            "weight": p["_width"],
            "fillColor": p["_fill"],
            "fillOpacity": 1,
            "opacity": 1,
        }

    for kind in ("areas",):
        if boundaries.get(kind):
            folium.GeoJson(
                {"type": "FeatureCollection", "features": boundaries[kind]},
                style_function=boundary_style,
                interactive=False,
            ).add_to(base)
    folium.GeoJson(
        {"type": "FeatureCollection", "features": zone_features(area)},
        style_function=lambda f: {
            "fillColor": f["properties"]["fill"],
            "fillOpacity": 1,
            "color": "rgba(90,90,90,0.43)",
            "weight": 1,
        },
        highlight_function=lambda f: {"fillColor": "rgba(255,214,0,0.55)"},
        tooltip=folium.GeoJsonTooltip(fields=["label", "tip"], labels=False),
    ).add_to(base)
    if boundaries.get("lines"):
        folium.GeoJson(
            {"type": "FeatureCollection", "features": boundaries["lines"]},
            style_function=boundary_style,
            interactive=False,
        ).add_to(base)
    return base


def _rings(area: ServiceArea, i: int) -> list:
    """The exterior rings ``[[lon, lat], ...]`` of zone row ``i``."""
    if area.shapes is None:
        return [area.grid["boundary"].iloc[i]]
    geometry = area.shapes[i]
    polygons = geometry["coordinates"]
    if geometry["type"] == "Polygon":
        polygons = [polygons]
    return [polygon[0] for polygon in polygons]


def _folium_od(area: ServiceArea, state: ODState):
    import folium

    group = folium.FeatureGroup(name="od")
    od, markers = _od_rows(state)
    index = area.zone_index
    for row in od:
        for ring in _rings(area, index[row["zone"]]):
            folium.Polygon(
                [[lat, lon] for lon, lat in ring],
                color=row["line"],
                weight=4,
                fill=True,
                fill_color=row["odfill"],
                fill_opacity=1,
                interactive=False,
            ).add_to(group)
    for m in markers:
        folium.CircleMarker(
            [m["lat"], m["lon"]],
            radius=11,
            color="white",
            weight=2,
            fill=True,
            fill_color=m["color"],
            fill_opacity=1,
            interactive=False,
        ).add_to(group)
        folium.Marker(
            [m["lat"], m["lon"]],
            icon=folium.DivIcon(
                html=f"<div style='color:white;font:700 14px sans-serif;text-align:center;"
                f"width:22px;line-height:22px;margin:-11px 0 0 -11px'>{m['name']}</div>",
                icon_size=(0, 0),
            ),
            interactive=False,
        ).add_to(group)
    return group


@st.cache_resource(show_spinner=False)
def _cached_base(_area: ServiceArea, zones_key: str, height: int):
    del zones_key
    return _folium_base(_area, height)


def folium_key(key: str, area: ServiceArea) -> str:
    return od_picker.map_key(key, area) + "_leaflet"


def handle_folium_click(key: str, area: ServiceArea) -> ODState:
    """Apply the Leaflet map's last click to the state, once; call before drawing.

    ``streamlit-folium`` copies the map's value to ``st.session_state[key]`` in its
    change callback, which runs before the script: a click is known from the start of
    the run it caused, as a deck.gl chart's selection is.
    """
    state = od_picker.get_state(key, area)
    clicked = (st.session_state.get(folium_key(key, area)) or {}).get("last_object_clicked")
    if clicked:
        fingerprint = f"{clicked['lat']:.7f},{clicked['lng']:.7f}"
        if fingerprint != state.last_selection:
            row = int(area.zone_rows(clicked["lat"], clicked["lng"])[0])
            state = replace(state, last_selection=fingerprint)
            if row >= 0:
                zone = str(area.grid["zone"].iloc[row])
                state = apply_map_click(state, place_from_zone(area, zone))
            od_picker.set_state(key, state)
    return state


def show_folium(key: str, area: ServiceArea, *, height: int = 460) -> None:
    """Draw the Leaflet map (its clicks: :func:`handle_folium_click`)."""
    from streamlit_folium import st_folium

    state = od_picker.get_state(key, area)
    # a copy: streamlit-folium renames the map's children as it renders them, and a
    # map rendered twice refers to names it no longer defines
    base = copy.deepcopy(_cached_base(area, od_picker.map_key(key, area), height))
    st_folium(
        base,
        key=folium_key(key, area),
        height=height,
        use_container_width=True,
        feature_group_to_add=_folium_od(area, state),
        returned_objects=["last_object_clicked"],
    )
