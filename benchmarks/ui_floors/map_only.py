"""Floor of ``bench_ui.py --floors``: the Predict page's zone map alone.

The data home's zones drawn by the page's own map (``od_picker.show_map``) on the
page's first-visit trip; Swap exchanges A and B, so the map's selection layer changes
and deck.gl draws a new frame, as on the Predict page with the pan-and-zoom setting
(deck.gl: the floor measured before the canvas map became the default), without the
answer.
"""

import streamlit as st
from trip import OD, trip_with_swap

from app_ui import context, od_picker, sidebar

st.session_state[sidebar.SETTINGS_WEBGL_MAP] = True


@st.fragment
def section(ctx: context.ModelContext) -> None:
    state = trip_with_swap(ctx)
    st.code(f"A trip typically goes {state.origin.label} to {state.dest.label}.", language=None)
    od_picker.show_map(OD, ctx.area, mode="od", height=460)


section(context.get_context())
