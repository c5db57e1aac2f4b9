"""Floor of ``bench_ui.py --floors``: the zone map drawn by Leaflet's canvas renderer
through ``streamlit-folium`` (no WebGL, no tiles; Leaflet from ``static/``).

As ``map_deck.py``, with :func:`zone_maps.show_folium` for the deck.gl map. Needs
``pip install streamlit-folium`` and Streamlit's static file serving
(``STREAMLIT_SERVER_ENABLE_STATIC_SERVING=true``, which the bench sets).
"""

import streamlit as st
from trip import OD, trip_with_swap
from zone_maps import handle_folium_click, show_folium, trip_line

from app_ui import context


@st.fragment
def section(ctx: context.ModelContext) -> None:
    trip_with_swap(ctx)
    state = handle_folium_click(OD, ctx.area)
    st.code(trip_line(state), language=None)
    show_folium(OD, ctx.area, height=460)


section(context.get_context())
