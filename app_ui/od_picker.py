"""Origin and destination: the clickable zone map, searchable lists, typed coordinates.

State keys (all prefixed with the component's ``key``):

``{key}``            the :class:`vrvm.services.map.places.ODState`
``{key}_map_<zones>``  the zone map (its selection state, set by Streamlit), named
                     for the map's zones and renderer (:func:`map_key`)
``{key}_origin``     origin selectbox; ``{key}_dest`` destination selectbox
``{key}_typed_o``, ``{key}_typed_d``  typed "lat, lon" text inputs
``{key}_error``      the last message about typed coordinates
``{key}_moved``      what the last change of the map's zones did to the places

Map clicks and list choices go through :mod:`vrvm.services.map.places` (``apply_map_selection``,
``place_from_label``, ``place_from_latlon``), so the page works without a mouse and the
same code handles a real click and a test's injected selection.

The places are kept as picked, but every run reads them on the zones of the map it
draws (:meth:`~vrvm.services.map.places.ODState.located`, through ``get_state(key, area)``):
when the zone file, the boundaries naming the zones or the model change, the lists,
the markers and the answer all name the zones that now hold the two places (or the
place is dropped, and the page asks for it), never a zone of the map before.

A chart's selection names the clicked zone by its position in the map's data, and
Streamlit keeps a keyed chart's selection whatever data the chart is drawn with. So the
chart is keyed by its zones (:func:`map_key`): when they change, it is a new chart,
with no selection in the browser or on the server, and the last selection acted upon
(:attr:`~vrvm.services.map.places.ODState.last_selection`) is forgotten on the next run. A
click after the switch is always read on the zones it was made on, even at the
position of the last click.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import streamlit as st

from app_ui import maps, sidebar, vega_maps
from vrvm.services.display.colours import DEST_RGB, ORIGIN_RGB
from vrvm.services.display.text import plain_markdown
from vrvm.services.map import places
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import ODState


def get_state(key: str, area: ServiceArea | None = None) -> ODState:
    """The origin and destination; with ``area``, as zones of that area.

    When the places were picked on other zones (or under other labels), the state is
    replaced by the same places on ``area``'s zones, and what changed is kept under
    ``{key}_moved`` for :func:`show_controls` to say.
    """
    state = st.session_state.get(key) or ODState()
    if area is None:
        return state
    located = state.located(area)
    if located is not state:
        st.session_state[key] = located
        st.session_state[f"{key}_error"] = None  # it named the nearest zone of the old map
        st.session_state[f"{key}_moved"] = _moved_note(state, located)
    return located


def _moved_note(before: ODState, after: ODState) -> str:
    """What a change of the map's zones did to the places, in one sentence."""
    lost = [
        name
        for name, old, new in (
            ("origin", before.origin, after.origin),
            ("destination", before.dest, after.dest),
        )
        if old is not None and new is None
    ]
    note = "The map's zones changed: "
    if not lost:
        return note + "the places are now the zones that hold them."
    return note + f"the {' and the '.join(lost)} lie in none of the new zones; choose again."


def set_state(key: str, state: ODState) -> None:
    st.session_state[key] = state


def map_key(key: str, area: ServiceArea) -> str:
    """The widget key of the clickable map of ``key`` over ``area``'s zones.

    ``{key}_map_`` and a digest of the :func:`renderer` and the zone ids in the map's
    order: the positions a selection names mean the same zones exactly when the key is
    the same. New names for the same zones (boundaries) keep the chart; other zones (a
    zone file, another model's hexagons) or the other renderer make a new chart, which
    starts with no selection.

    Parameters
    ----------
    key : str
        The component's key (its state is ``st.session_state[key]``).
    area : ServiceArea
        The zones the map draws, in the order of its ``zones`` layer.

    Returns
    -------
    str
        The key to draw the chart with and to read its selection by.
    """
    ids = json.dumps(area.grid["zone"].astype(str).tolist())  # exact: no separator clash
    # and the renderer: its selections name zones otherwise (positions or ids)
    digest = hashlib.blake2b(f"{renderer(area)}{ids}".encode(), digest_size=8).hexdigest()
    return f"{key}_map_{digest}"


def map_selection(key: str, area: ServiceArea) -> dict | None:
    """The selection of the clickable map of ``key`` over ``area``'s zones (None: none).

    Only the chart of these zones is read (:func:`map_key`): a selection made on other
    zones names positions that now mean other zones.
    """
    return st.session_state.get(map_key(key, area))


def handle_map_event(key: str, area: ServiceArea, *, mode: str = "od") -> ODState:
    """Apply the map's current selection (a click) to the state; call before drawing.

    ``mode="od"``: clicks alternate origin, destination; ``"origin"``: a click sets the
    origin (coverage map). The selection is that of the chart of ``area``'s zones; on
    the first run after they change it has none, which forgets the last selection acted
    upon, so that the next click counts wherever it falls.
    """
    selection = map_selection(key, area)
    state = places.apply_map_selection(get_state(key, area), selection, area, mode=mode)
    set_state(key, state)
    return state


def _select(key: str, which: str, area: ServiceArea) -> None:
    label = st.session_state.get(f"{key}_{which}")
    state = get_state(key, area)
    place = None if label is None else places.place_from_label(area, label)
    set_state(key, replace(state, **{which: place}))


def _swap(key: str) -> None:
    set_state(key, get_state(key).swapped())


def _clear(key: str) -> None:
    set_state(key, get_state(key).cleared())


def _apply_typed(key: str, area: ServiceArea) -> None:
    state = get_state(key, area)
    typed = {}
    try:
        for which, field in (("origin", "typed_o"), ("dest", "typed_d")):
            text = (st.session_state.get(f"{key}_{field}") or "").strip()
            if text:
                typed[which] = places.place_from_latlon(area, *places.parse_latlon(text))
    except ValueError as exc:
        st.session_state[f"{key}_error"] = str(exc)
        return
    st.session_state[f"{key}_error"] = None
    set_state(key, replace(state, **typed))


def _sync_lists(key: str, state: ODState, area: ServiceArea) -> None:
    """Show the current places in the lists (a map click changes them too)."""
    index = area.zone_index
    for which, place in (("origin", state.origin), ("dest", state.dest)):
        label = None
        if place is not None and place.zone in index:
            label = area.grid["label"].iloc[index[place.zone]]
        st.session_state[f"{key}_{which}"] = label


def show_controls(key: str, area: ServiceArea, *, mode: str = "od") -> ODState:
    """The list, swap/clear and typed-coordinate controls; returns the state."""
    state = get_state(key, area)
    _sync_lists(key, state, area)
    moved = st.session_state.pop(f"{key}_moved", None)
    if moved:
        st.info(plain_markdown(moved), icon=":material/map:")
    labels = area.labels
    st.selectbox(
        "Origin (A)",
        labels,
        index=None,
        key=f"{key}_origin",
        placeholder="Click the map or type to search a zone",
        on_change=_select,
        args=(key, "origin", area),
    )
    if mode == "od":
        st.selectbox(
            "Destination (B)",
            labels,
            index=None,
            key=f"{key}_dest",
            placeholder="Click the map or type to search a zone",
            on_change=_select,
            args=(key, "dest", area),
        )
        left, right = st.columns(2)
        left.button(
            "Swap",
            icon=":material/swap_vert:",
            key=f"{key}_swap",
            on_click=_swap,
            args=(key,),
            width="stretch",
        )
        right.button(
            "Clear",
            icon=":material/close:",
            key=f"{key}_clear",
            on_click=_clear,
            args=(key,),
            width="stretch",
        )
    with st.expander("Type coordinates instead"):
        with st.form(f"{key}_typed_form", border=False):
            st.text_input("Origin (lat, lon)", key=f"{key}_typed_o", placeholder="-39.98, -30.01")
            if mode == "od":
                st.text_input(
                    "Destination (lat, lon)", key=f"{key}_typed_d", placeholder="-40.03, -29.95"
                )
            st.form_submit_button("Use these coordinates", on_click=_apply_typed, args=(key, area))
        if st.session_state.get(f"{key}_error"):
            st.error(plain_markdown(st.session_state[f"{key}_error"]))
    state = get_state(key, area)
    for place, name in (
        (state.origin, "Origin"),
        (state.dest if mode == "od" else None, "Destination"),
    ):
        if place is not None and place.kind == "point":
            st.caption(f"{name}: {plain_markdown(place.label)}")
    return state


def place_state(key: str, area: ServiceArea) -> ODState:
    """A one-place picker's state (``origin`` the place): a click's zone, the list's, or
    (first visit, or its zone gone) a central zone (:func:`places.central_place`)."""
    state = handle_map_event(key, area, mode="origin")  # on the map's zones
    st.session_state.pop(f"{key}_moved", None)  # said by the list's new label here
    if state.origin is None:
        state = replace(state, origin=places.central_place(area))
        set_state(key, state)
    return state


def place_list(container, label: str, key: str, area: ServiceArea, place) -> None:
    """The searchable list (``{key}_place``) beside a one-place map, showing ``place`` (a
    click on the map changes it too); choosing another moves the picker's place."""
    st.session_state[f"{key}_place"] = place.label
    container.selectbox(
        label,
        area.labels,
        key=f"{key}_place",
        on_change=_pick_place,
        args=(key, area),
        help="Click a zone on the map or type to search the list.",
    )


def _pick_place(key: str, area: ServiceArea) -> None:
    label = st.session_state.get(f"{key}_place")
    if label is not None:
        place = places.place_from_label(area, label)
        set_state(key, replace(get_state(key), origin=place))


def legend_html(mode: str) -> str:
    """Colour key of the origin and destination markers."""

    def swatch(colour: tuple[int, int, int], text: str) -> str:
        r, g, b = colour
        return (
            f"<span style='display:inline-block;width:14px;height:14px;border-radius:50%;"
            f"background:rgb({r},{g},{b});vertical-align:middle;margin:0 6px 0 12px'></span>"
            f"{text}"
        )

    parts = [swatch(ORIGIN_RGB, "A · origin")]
    if mode == "od":
        parts.append(swatch(DEST_RGB, "B · destination"))
    return "<div style='font-size:0.9rem'>" + "".join(parts) + "</div>"


def renderer(area: ServiceArea) -> str:
    """Which library draws the clickable zone maps of this session: ``"vega-lite"`` (a
    canvas, no WebGL: fast on any machine, a fixed view) unless the sidebar asks for the
    pan-and-zoom map or the basemap, or the zones are too many for one Vega-Lite spec
    (:data:`app_ui.vega_maps.MAX_ZONES`); then ``"deck.gl"``."""
    if sidebar.basemap_enabled() or sidebar.webgl_map_enabled():
        return "deck.gl"
    return "deck.gl" if len(area.grid) > vega_maps.MAX_ZONES else "vega-lite"


def draw_map(
    key: str,
    area: ServiceArea,
    state: ODState,
    *,
    fill=None,
    tips=None,
    markers=None,
    regions: list[dict] | None = None,
    height: int = 560,
    container=None,
) -> None:
    """Draw the clickable zone map of ``key`` (a click reruns the page; its selection is
    read by :func:`map_selection`) with the session's :func:`renderer`.

    ``state``: the A and B to outline and mark; ``fill``, ``tips``: a choropleth's RGBA
    fills and tooltip lines in grid order; ``markers`` (``lat``, ``lon``, ``name``,
    ``label``, ``color``): markers instead of A and B; ``regions``: GeoJSON features with
    RGBA ``fill`` and ``line`` properties drawn under the zones (isochrones).
    """
    target = st if container is None else container
    if renderer(area) == "vega-lite":
        spec = vega_maps.zone_spec(
            area, state, fill=fill, tips=tips, height=height, markers=markers, under=regions or ()
        )
        target.vega_lite_chart(
            spec,
            on_select="rerun",
            selection_mode=[vega_maps.PICK],
            key=map_key(key, area),
            width="stretch",
            theme=None,
        )
        return
    deck = maps.zone_deck(
        area,
        state,
        fill=fill,
        tips=tips,
        basemap=sidebar.basemap_enabled(),
        under=[maps.isochrone_layer(regions)] if regions else (),
        markers=markers,
    )
    target.pydeck_chart(
        deck,
        on_select="rerun",
        selection_mode="single-object",
        key=map_key(key, area),
        height=height,
    )


def show_map(
    key: str,
    area: ServiceArea,
    *,
    fill=None,
    tips=None,
    height: int = 560,
    mode: str = "od",
) -> None:
    """The clickable zone map of the origin and destination (a click reruns the page; see
    ``handle_map_event``).

    ``mode="origin"`` (coverage map) marks only the origin.
    """
    state = get_state(key, area)
    if mode != "od":
        state = replace(state, dest=None)
    draw_map(key, area, state, fill=fill, tips=tips, height=height)
