"""Floor of ``bench_ui.py --floors``: the Predict page's deck.gl zone map alone, clickable.

``map_only.py`` with the page's click handling (``od_picker.handle_map_event``), so that
a zone click is timed on the deck.gl map as on the Vega-Lite and Leaflet stand-ins
(``map_vegalite.py``, ``map_folium.py``): the line above the map names the trip.
"""

import streamlit as st
from trip import OD, trip_with_swap
from zone_maps import trip_line

from app_ui import context, od_picker


@st.fragment
def section(ctx: context.ModelContext) -> None:
    trip_with_swap(ctx)
    state = od_picker.handle_map_event(OD, ctx.area)
    st.code(trip_line(state), language=None)
    od_picker.show_map(OD, ctx.area, basemap=False, mode="od", height=460)


section(context.get_context())
