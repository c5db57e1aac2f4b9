"""What the map and answer floors share: the Predict page's first-visit trip and a Swap
button that exchanges its origin and destination (as the page's own does)."""

import streamlit as st

from app_ui import context, od_picker
from vrvm.services.answers import schedule
from vrvm.services.map.places import ODState

OD = "od"


def trip_with_swap(ctx: context.ModelContext) -> ODState:
    """The trip shown: the page's busy first-visit pair, swapped by each click on Swap."""
    if st.session_state.get(OD) is None:
        od_picker.set_state(OD, ODState(*schedule.default_pair(ctx.area)))
    if st.button("Swap"):
        od_picker.set_state(OD, od_picker.get_state(OD).swapped())
    return od_picker.get_state(OD)
