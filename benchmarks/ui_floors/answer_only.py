"""Floor of ``bench_ui.py --floors``: the Predict page's answer alone, without the map, its
two charts drawn by plotly as before issue 37 (:func:`answer_charts.use`).

The page's own trip controls and answer (``trip_controls.show``, ``forecast_view.show``:
metrics, the answer sentence, the density and the day's profile) for the page's
first-visit trip; Swap exchanges origin and destination.
"""

import streamlit as st
from answer_charts import use
from trip import trip_with_swap

from app_ui import context, forecast_view, trip_controls

use("plotly")


@st.fragment
def section(ctx: context.ModelContext) -> None:
    state = trip_with_swap(ctx)
    departure, threshold = trip_controls.show("trip", ctx.model.tz_)
    forecast_view.show("forecast", ctx, state, departure, threshold)


section(context.get_context())
