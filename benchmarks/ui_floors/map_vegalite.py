"""Floor of ``bench_ui.py --floors``: the zone map drawn by Vega-Lite on a canvas (no WebGL).

As ``map_deck.py``, with :func:`zone_maps.show_vega_lite` for the deck.gl map: the same
zones, boundaries, A and B; a click selects a zone (a point selection,
``on_select="rerun"``), Swap exchanges A and B.
"""

import streamlit as st
from trip import OD, trip_with_swap
from zone_maps import handle_vega_lite_click, show_vega_lite, trip_line

from app_ui import context


@st.fragment
def section(ctx: context.ModelContext) -> None:
    trip_with_swap(ctx)
    state = handle_vega_lite_click(OD, ctx.area)
    st.code(trip_line(state), language=None)
    show_vega_lite(OD, ctx.area, height=460)


section(context.get_context())
