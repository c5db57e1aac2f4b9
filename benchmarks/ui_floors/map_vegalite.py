"""Floor of ``bench_ui.py --floors``: the Predict page's zone map as drawn by default, by
Vega-Lite on a canvas (no WebGL), clickable.

The page's own code (``od_picker.handle_map_event``, ``od_picker.show_map``; the map of
:mod:`app_ui.vega_maps`): the same zones, boundaries, A and B as ``map_deck.py``; a
click selects a zone, Swap exchanges A and B; the line above the map names the trip.
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
    od_picker.show_map(OD, ctx.area, mode="od", height=460)


section(context.get_context())
