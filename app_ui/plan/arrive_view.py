"""Plan page, section "arrive": when to leave to arrive by a deadline, or within a window.

"Arrive by": the latest departure from A that reaches B by the deadline with probability
p, the curve of P(arrive by the deadline) against departure time with the answer marked,
the travel time's quantiles then, the reliability indices and the curve as CSV.
"Leave within a window": the trip for a departure anywhere in a window, shown like a
single departure. Everything shown is computed by :mod:`vrvm.services.answers.schedule`.

State keys (prefixed with the section's ``key``): ``{key}_od`` (the
:class:`~vrvm.services.map.places.ODState`, with :mod:`app_ui.od_picker`'s keys
``{key}_od_*``), ``{key}_mode`` ("arrive" or "window"), ``{key}_date`` and
``{key}_time`` (the deadline), ``{key}_prob``, ``{key}_hours`` (searched window),
``{key}_wdate``, ``{key}_wstart``, ``{key}_wend`` (departure window) and
``{key}_threshold`` (minutes).
"""

from __future__ import annotations

from datetime import time

import streamlit as st

from app_ui import charts, forecast_view, indices_view, od_picker, trip_controls
from app_ui.context import ModelContext
from vrvm.services.answers import forecast, schedule
from vrvm.services.display.text import plain_markdown
from vrvm.services.map.places import ODState

MODES = {
    "arrive": ":material/alarm: Arrive by a deadline",
    "window": ":material/date_range: Leave within a window",
}
PROB_CHOICES = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999)
DEFAULT_PROB = 0.95
DEFAULT_WINDOW_THRESHOLD_MIN = 30.0


def _defaults(key: str, ctx: ModelContext) -> None:
    """First visit: a busy trip, 09:00 on the next weekday, p = 95 %, 08:00-09:00."""
    od = f"{key}_od"
    if od not in st.session_state:
        try:
            od_picker.set_state(od, ODState(*schedule.default_pair(ctx.area)))
        except ValueError:  # fewer than two zones: the user picks them
            od_picker.set_state(od, ODState())
    deadline = schedule.default_deadline(ctx.model.tz_)
    st.session_state.setdefault(f"{key}_mode", "arrive")
    st.session_state.setdefault(f"{key}_date", deadline.date())
    st.session_state.setdefault(f"{key}_time", deadline.time())
    st.session_state.setdefault(f"{key}_prob", DEFAULT_PROB)
    st.session_state.setdefault(f"{key}_hours", int(schedule.DEFAULT_SEARCH_HOURS))
    st.session_state.setdefault(f"{key}_wdate", deadline.date())
    st.session_state.setdefault(f"{key}_wstart", time(8, 0))
    st.session_state.setdefault(f"{key}_wend", time(9, 0))
    st.session_state.setdefault(f"{key}_threshold", DEFAULT_WINDOW_THRESHOLD_MIN)


def _arrive_inputs(key: str, tz: str):
    left, right = st.columns([3, 2])
    day = left.date_input("Arrive by (date)", key=f"{key}_date")
    clock = right.time_input("Time", key=f"{key}_time", step=300)
    prob = st.select_slider(
        "Probability of arriving in time",
        options=PROB_CHOICES,
        format_func=lambda p: f"{100 * p:g} %",
        key=f"{key}_prob",
        help="The latest departure whose chance of arriving by the deadline is at least this.",
    )
    hours = st.slider(
        "Search the hours before the deadline",
        min_value=1,
        max_value=12,
        step=1,
        key=f"{key}_hours",
        help="Departures are tried every minute over this many hours before the deadline.",
    )
    return forecast.combine_departure(day, clock, tz), float(prob), float(hours)


def _window_inputs(key: str, tz: str):
    day = st.date_input("Departure date", key=f"{key}_wdate")
    left, right = st.columns(2)
    start = left.time_input("Leave from", key=f"{key}_wstart", step=300)
    end = right.time_input("until", key=f"{key}_wend", step=300)
    threshold = trip_controls.threshold_input(key)
    return (
        forecast.combine_departure(day, start, tz),
        forecast.combine_departure(day, end, tz),
        threshold,
    )


def _show_arrive(key: str, ctx: ModelContext, state: ODState, deadline, prob, hours) -> None:
    try:
        answer = schedule.arrive_by(
            ctx.model, state.origin, state.dest, deadline, prob, search_hours=hours
        )
    except ValueError as exc:
        st.error(plain_markdown(exc))
        return
    if answer.found:
        st.success(plain_markdown(answer.sentence()), icon=":material/alarm:")
        cols = st.columns(4)
        cols[0].metric(
            "Latest departure",
            f"{answer.departure:%H:%M:%S}",
            help="Leaving later, the chance of arriving by the deadline drops below p.",
        )
        cols[1].metric("P(arrive in time) then", f"{100 * answer.prob_at_departure:.1f} %")
        cols[2].metric(
            "Time to allow",
            f"{answer.minutes_allowed:.1f} min",
            help="The deadline minus the latest departure.",
        )
        cols[3].metric("Median trip then", f"{answer.forecast.median_min:.1f} min")
    else:
        st.warning(plain_markdown(answer.reason), icon=":material/event_busy:")
    st.plotly_chart(
        charts.arrive_by_figure(answer, synthetic=ctx.synthetic),
        key=f"{key}_curve",
        width="stretch",
    )
    st.caption(
        f"Each point: leaving at that time, the probability of arriving by "
        f"{answer.deadline:%H:%M} (departures every {answer.step_s / 60:g} min over the "
        f"{answer.search_hours:g} h before; the answer refined to the second). Because the "
        "trip is slower at some times of day than at others, this is not the deadline minus "
        "one quantile." + (" Synthetic data." if ctx.synthetic else "")
    )
    table = answer.arrival_table()
    left, right = st.columns([2, 3])
    with left:
        if table is not None:
            st.markdown("**Leaving at the latest departure**")
            st.dataframe(table.round(1), hide_index=True, key=f"{key}_arrivals", width="stretch")
        st.download_button(
            "Download the curve (CSV)",
            schedule.curve_csv(answer, synthetic=ctx.synthetic),
            file_name=f"arrive_by_{answer.deadline:%Y%m%d_%H%M}_p{100 * answer.prob:g}.csv",
            mime="text/csv",
            key=f"{key}_csv",
            width="stretch",
        )
    with right:
        when = answer.departure if answer.found else answer.best_departure
        which = "latest departure" if answer.found else "best departure searched"
        st.markdown(f"**Reliability leaving at {when:%H:%M} ({which})**")
        indices_view.show(answer.indices)


def _show_window(key: str, ctx: ModelContext, state: ODState, start, end, threshold) -> None:
    try:
        window = schedule.depart_within(ctx.model, state.origin, state.dest, start, end, threshold)
    except ValueError as exc:
        st.error(plain_markdown(exc))
        return
    result = window.forecast
    eighty = result.intervals.set_index("level").loc[0.8]
    cols = st.columns(4)
    cols[0].metric("Median", f"{result.median_min:.1f} min")
    cols[1].metric("Mean", f"{result.mean_min:.1f} min")
    cols[2].metric("80 % interval", f"{eighty['lower_min']:.0f}-{eighty['upper_min']:.0f} min")
    cols[3].metric(f"P(arrive within {threshold:g} min)", f"{100 * result.prob_within:.0f} %")
    st.caption(window.sentence() + (" Synthetic data." if ctx.synthetic else ""))
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(
            charts.density_figure(window.density, result, synthetic=ctx.synthetic),
            key=f"{key}_density",
            width="stretch",
        )
    with right:
        forecast_view.show_quantiles(window.quantiles)
        st.caption(
            f"A departure drawn uniformly from the window: the equal-weight mixture of the "
            f"{result.dist.n_members} member distributions of {window.n_departures} "
            "departures (the middle of each minute of the window)."
        )
    indices_view.show(window.indices)


def show(key: str, ctx: ModelContext) -> None:
    """The arrive-by / departure-window section of the Plan page."""
    _defaults(key, ctx)
    od = f"{key}_od"
    tz = ctx.model.tz_
    mode = st.segmented_control(
        "Question", list(MODES), format_func=MODES.get, key=f"{key}_mode", required=True
    )
    od_picker.handle_map_event(od, ctx.area)
    map_column, control_column = st.columns([5, 2], gap="medium")
    with control_column:
        state = od_picker.show_controls(od, ctx.area)
        if mode == "window":
            inputs = _window_inputs(key, tz)
        else:
            inputs = _arrive_inputs(key, tz)
        # the day the planner set: the window's start, or the deadline
        trip_controls.day_caution(ctx.area.support, inputs[0], tz)
    with map_column:
        st.markdown(
            od_picker.legend_html("od")
            + "<small>Click a zone for the origin, then another for the destination.</small>",
            unsafe_allow_html=True,
        )
        od_picker.show_map(od, ctx.area, height=460)
    if not state.complete:
        missing = "an origin and a destination" if state.origin is None else "a destination"
        st.info(f"Choose {missing}: click two zones on the map, or pick them from the lists.")
        return
    if mode == "window":
        _show_window(key, ctx, state, *inputs)
    else:
        _show_arrive(key, ctx, state, *inputs)
