"""Floor of ``bench_ui.py --floors``: the Predict page's zone map alone.

The data home's zones drawn by the page's own map (``od_picker.show_map``) on the
page's first-visit trip; Swap exchanges A and B, so the map's selection layer changes
and deck.gl draws a new frame, as on the Predict page, without the answer.
"""

import streamlit as st

from app_ui import context, od_picker
from vrvm.services import schedule
from vrvm.services.places import ODState

OD = "od"


@st.fragment
def section(ctx: context.ModelContext) -> None:
    if st.session_state.get(OD) is None:
        od_picker.set_state(OD, ODState(*schedule.default_pair(ctx.area)))
    if st.button("Swap"):
        od_picker.set_state(OD, od_picker.get_state(OD).swapped())
    state = od_picker.get_state(OD)
    st.code(f"A trip typically goes {state.origin.label} to {state.dest.label}.", language=None)
    od_picker.show_map(OD, ctx.area, basemap=False, mode="od", height=460)


section(context.get_context())
