"""Floor of ``bench_ui.py --floors``: the Predict page's answer alone, as the page draws it
(its two charts by Vega-Lite on a canvas, :mod:`app_ui.vega_charts`).

The page's own trip controls and answer (``trip_controls.show``, ``forecast_view.show``)
for the page's first-visit trip, Swap exchanging origin and destination.
"""

import streamlit as st
from trip import trip_with_swap

from app_ui import context, forecast_view, trip_controls


@st.fragment
def section(ctx: context.ModelContext) -> None:
    state = trip_with_swap(ctx)
    departure, threshold = trip_controls.show("trip", ctx.model.tz_)
    forecast_view.show("forecast", ctx, state, departure, threshold)


section(context.get_context())
