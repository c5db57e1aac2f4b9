"""Floor of ``bench_ui.py --floors``: the Predict page's answer alone, its two charts drawn
by Streamlit's native charts (``st.line_chart``) instead of Vega-Lite (issue 37).

As ``answer_only.py``: the page's own trip controls and answer (``trip_controls.show``,
``forecast_view.show``) for the page's first-visit trip, Swap exchanging origin and
destination; only the two charts are drawn otherwise
(:func:`answer_charts.use`).
"""

import streamlit as st
from answer_charts import use
from trip import trip_with_swap

from app_ui import context, forecast_view, trip_controls

use("native")


@st.fragment
def section(ctx: context.ModelContext) -> None:
    state = trip_with_swap(ctx)
    departure, threshold = trip_controls.show("trip", ctx.model.tz_)
    forecast_view.show("forecast", ctx, state, departure, threshold)


section(context.get_context())
