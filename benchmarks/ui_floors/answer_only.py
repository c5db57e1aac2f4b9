"""Floor of ``bench_ui.py --floors``: the Predict page's answer alone, without the map.

The page's own trip controls and answer (``trip_controls.show``, ``forecast_view.show``:
metrics, the answer sentence, the density and the day's profile) for the page's
first-visit trip; Swap exchanges origin and destination.
"""

import streamlit as st

from app_ui import context, forecast_view, od_picker, trip_controls
from vrvm.services import schedule
from vrvm.services.places import ODState

OD = "od"


@st.fragment
def section(ctx: context.ModelContext) -> None:
    if st.session_state.get(OD) is None:
        od_picker.set_state(OD, ODState(*schedule.default_pair(ctx.area)))
    if st.button("Swap"):
        od_picker.set_state(OD, od_picker.get_state(OD).swapped())
    departure, threshold = trip_controls.show("trip", ctx.model.tz_)
    forecast_view.show("forecast", ctx, od_picker.get_state(OD), departure, threshold)


section(context.get_context())
