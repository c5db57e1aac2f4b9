"""vrvm dashboard: ``streamlit run app.py``. This is the Predict page.

The other pages are in ``pages/``. Pages only wire views from ``app_ui/``; every number
they show is computed in ``vrvm/services/``.

A first visit opens on a busy trip across the city with its answer shown (the Reach
map on its origin, the busiest zone). The map, the controls and the answer are one
fragment (``st.fragment``): a click on a zone, a swap, a new departure time or
threshold reruns that section only, not the page's header, sidebar and data access.
"""

from __future__ import annotations

import streamlit as st

from app_ui import (
    context,
    coverage_view,
    forecast_view,
    maps,
    od_picker,
    share,
    sidebar,
    trip_controls,
)
from vrvm.services.answers import schedule
from vrvm.services.map.places import ODState
from vrvm.services.planning import url_state

OD = "od"  # origin-destination picker
TRIP = "trip"  # departure time and threshold
COVERAGE = "coverage"  # coverage-map options
SHARE = "share"  # query parameters
MODE = "predict_mode"
OPENED = "predict_opened"  # the first-visit trip was set (once per session)
MAP_HEIGHT = 460  # px: the answer's numbers start above the fold of a 1000 px window
MODE_LABELS = {
    "od": ":material/route: Trip between two places",
    "coverage": ":material/radar: Reach from an origin",
}


def predict_page() -> None:
    ctx = context.get_context()
    context.page_header("Travel time, with its uncertainty", ctx)

    view = share.read_once(SHARE, ctx.area, ctx.model.tz_)
    if view is not None:
        if view.state.origin is not None or view.state.dest is not None:
            od_picker.set_state(OD, view.state)
        trip_controls.set_values(TRIP, departure=view.departure, threshold_min=view.threshold_min)
        coverage_view.set_values(COVERAGE, metric=view.metric, confidence=view.confidence)
        if view.mode is not None:
            st.session_state[MODE] = view.mode
    open_on_a_busy_trip(ctx)
    share.show_warnings(SHARE)

    st.session_state.setdefault(MODE, "od")
    mode = st.segmented_control(
        "What do you want to know?",
        list(MODE_LABELS),
        format_func=MODE_LABELS.get,
        key=MODE,
        required=True,
    )
    answer_section(ctx, mode)


def open_on_a_busy_trip(ctx: context.ModelContext) -> None:
    """On the session's first visit, a busy trip across the city (or, from a link, what
    it names): no empty map, no empty answer."""
    if st.session_state.get(OPENED):
        return
    st.session_state[OPENED] = True
    state = od_picker.get_state(OD)
    if state.origin is not None or len(ctx.area.grid) < 2:
        return  # a link named a place: it is kept
    origin, dest = schedule.default_pair(ctx.area)
    od_picker.set_state(OD, ODState(origin, dest))


def next_step(mode: str, state: ODState) -> str:
    """The one sentence above the map saying what to click next."""
    if mode != "od":
        return "Click a zone to set the origin; colours show every other zone from there."
    if state.complete:
        return (
            "Click any zone to start a new trip from there (then one for its destination), "
            "or press Swap for the way back."
        )
    if state.origin is not None:
        return "Now click a zone for the destination (B)."
    return "Click a zone for the origin, then another for the destination."


@st.fragment
def answer_section(ctx: context.ModelContext, mode: str) -> None:
    """Map and places, then the trip's time, threshold and answer: everything a click or
    a swap changes. The time, the threshold and the answer are a fragment of their own
    (:func:`trip_answer`) where the map does not depend on them, so that a new time or
    threshold reruns only that part (not the map, the lists and their 400-odd zones)."""
    od_picker.handle_map_event(OD, ctx.area, mode="od" if mode == "od" else "origin")

    map_column, control_column = st.columns([5, 2], gap="medium")
    with control_column:
        state = od_picker.show_controls(OD, ctx.area, mode=mode)
        metric, confidence = (None, None)
        if mode == "coverage":
            metric, confidence = coverage_view.show_options(COVERAGE)

    grid = fill = tips = legend = None  # without a coverage map: the zones' own tooltips
    departure = threshold = None
    if mode == "coverage":  # the map's colours depend on the time and the threshold
        departure, threshold = trip_controls.show(TRIP, ctx.model.tz_, row=True)
        if state.origin is not None:
            grid, fill, tips, legend = coverage_view.compute(
                ctx, state.origin, departure, threshold, metric
            )

    with map_column:
        st.markdown(
            od_picker.legend_html(mode) + f"<small>{next_step(mode, state)}</small>",
            unsafe_allow_html=True,
        )
        od_picker.show_map(
            OD,
            ctx.area,
            fill=fill,
            tips=tips,
            mode="od" if mode == "od" else "origin",
            height=MAP_HEIGHT,
        )
        if legend:
            title = (
                "Median travel time"
                if metric == "median"
                else f"P(arrive within {threshold:g} min)"
            )
            st.markdown(maps.legend_html(legend, title), unsafe_allow_html=True)

    if mode == "od":
        trip_answer(ctx)
        return
    if grid is None:
        st.info("Choose an origin: click a zone on the map or pick it from the list.")
    else:
        coverage_view.show_results(
            COVERAGE,
            ctx,
            grid,
            origin=state.origin,
            departure=departure,
            threshold_min=threshold,
            confidence=confidence,
            legend=legend,
            metric=metric,
        )
    share.write(
        url_state.to_query_params(
            ODState(state.origin, None),
            departure,
            threshold_min=threshold,
            mode=mode,
            metric=metric,
            confidence=confidence,
        )
    )


@st.fragment
def trip_answer(ctx: context.ModelContext) -> None:
    """The departure time and threshold, and the answer for the pair in the lists."""
    state = od_picker.get_state(OD, ctx.area)
    departure, threshold = trip_controls.show(TRIP, ctx.model.tz_, row=True)
    forecast_view.show("forecast", ctx, state, departure, threshold)
    share.write(url_state.to_query_params(state, departure, threshold_min=threshold, mode="od"))


sidebar.page_setup("Predict")
predict_page()
