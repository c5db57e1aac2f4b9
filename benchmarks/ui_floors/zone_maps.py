"""The zone map drawn by Leaflet, for the floors of ``bench_ui.py --floors`` (issue 37).

A stand-in for the page's zone map (:func:`app_ui.od_picker.draw_map`), from the same
data (:mod:`vrvm.services.map.map_layers`, the area's boundaries styled by
:func:`app_ui.maps.styled_boundaries`) and in the same initial view: Leaflet's canvas
renderer (``prefer_canvas``) through ``streamlit-folium``, no tiles, Leaflet served by
Streamlit's static file serving from ``static/`` beside these scripts (no network).
The zones are the map's own script (drawn once); the origin and destination a feature
group that ``streamlit-folium`` replaces without drawing the map anew. A click is read
as a zone and applied as the page does (:func:`vrvm.services.map.places.apply_map_click`:
first click the origin, second the destination).

The page's own maps (Vega-Lite on a canvas, the default, and deck.gl) are timed by
``map_vegalite.py`` and ``map_deck.py`` through ``od_picker`` itself.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import streamlit as st

from app_ui import maps, od_picker
from app_ui.vega_maps import css, for_d3
from vrvm.services.display.colours import DEST_RGB, ORIGIN_RGB
from vrvm.services.map import map_layers
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.boundaries import boundary_layers
from vrvm.services.map.places import ODState, apply_map_click, place_from_zone

LEAFLET_JS = "/app/static/leaflet.js"
LEAFLET_CSS = "/app/static/leaflet.css"


def trip_line(state: ODState) -> str:
    """The floors' answer line (what the bench waits for to change)."""
    origin = state.origin.label if state.origin else "-"
    dest = state.dest.label if state.dest else "-"
    return f"A trip typically goes {origin} to {dest}."


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
    """The area's boundary ``areas`` and ``lines`` with CSS ``_fill``, ``_line``, ``_width``
    (the deck.gl map's styles)."""
    out = {}
    for kind, collection in boundary_layers(area.boundaries).items():
        if kind == "points":
            continue
        features = []
        for feature in maps.styled_boundaries(collection, kind)["features"]:
            props = dict(feature["properties"])
            props.update(_fill=css(props["_fill"]), _line=css(props["_line"]))
            geometry = for_d3(feature.get("geometry") or {})
            features.append({**feature, "geometry": geometry, "properties": props})
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
