"""Floor of ``bench_ui.py --floors``: the Predict page's zone map drawn by deck.gl, clickable.

``map_vegalite.py`` with the sidebar's *Pan-and-zoom maps (WebGL)* setting on, so the
page's own code (``od_picker.handle_map_event``, ``od_picker.show_map``) draws deck.gl's
map: a zone click is timed on it as on the canvas map and the Leaflet stand-in
(``map_folium.py``): the line above the map names the trip.
"""

import streamlit as st
from trip import OD, trip_with_swap
from zone_maps import trip_line

from app_ui import context, od_picker, sidebar

st.session_state[sidebar.SETTINGS_WEBGL_MAP] = True


@st.fragment
def section(ctx: context.ModelContext) -> None:
    trip_with_swap(ctx)
    state = od_picker.handle_map_event(OD, ctx.area)
    st.code(trip_line(state), language=None)
    od_picker.show_map(OD, ctx.area, mode="od", height=460)


section(context.get_context())
