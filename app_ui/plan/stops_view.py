"""Plan page, section "stops": a trip through ordered stops, each leg leaving on arrival.

An ambulance's call: base -> scene -> hospital, with time spent at the scene. The view
holds 2 to :data:`~vrvm.services.planning.stops.MAX_STOPS` stops, each a zone picked from
a searchable list, with a name and, at the intermediate stops, a dwell (none, fixed
minutes, or "usually m min, 9 in 10 within p" as a log-normal); the departure and T come
from :mod:`app_ui.trip_controls`. Every number shown is computed afresh on each run by
:func:`vrvm.services.planning.stops.trip_with_stops` for the inputs now selected: the
sentence, the metrics, the legs, a timeline of the legs and dwells over the total's
density, and the downloads (made when clicked).

State keys (prefixed with the section's ``key``): ``{key}_n`` (number of stops),
``{key}_stop{i}`` (the zone label of stop ``i``), ``{key}_name{i}``, ``{key}_dkind{i}``
("none", "fixed" or "lognormal"), ``{key}_dmin{i}``, ``{key}_dmed{i}``, ``{key}_dp90{i}``
(minutes), and :mod:`app_ui.trip_controls`' ``{key}_when``, ``{key}_threshold``.
"""

from __future__ import annotations

import html
import json
import shlex

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from app_ui import trip_controls
from app_ui.context import ModelContext
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.display.text import plain_markdown
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import busiest_zones, place_from_label, place_from_zone
from vrvm.services.planning.stops import (
    MAX_STOPS,
    NO_DWELL,
    Dwell,
    Stop,
    StopsTrip,
    trip_with_stops,
)

DEFAULT_NAMES = ("base", "scene", "hospital")
DWELL_KINDS = {
    "none": "None",
    "fixed": "Fixed",
    "lognormal": "Usually … min, 9 in 10 within … min",
}
DEFAULT_THRESHOLD_MIN = 45.0
ASSUMPTION = (
    "Each leg is predicted for when it actually leaves (a slower first leg means the second "
    "leaves later, into different traffic). Legs are otherwise taken as independent, and "
    "dwells as independent of the traffic. Checked against simulation in the tests."
)
DOWNLOAD_LEVELS = tuple(round(0.01 * i, 2) for i in range(1, 100))


def _default_name(i: int) -> str:
    return DEFAULT_NAMES[i] if i < len(DEFAULT_NAMES) else f"stop {i + 1}"


def _defaults(key: str, area: ServiceArea) -> list[str]:
    """First visit: three busy zones far apart (base, scene, hospital), the scene's dwell
    usually 10 min, 9 in 10 within 18; later visits: labels no longer on the map reset."""
    labels = list(area.grid["label"])
    busy = [place_from_zone(area, z).label for z in busiest_zones(area, 3)]
    busy = busy + [label for label in labels if label not in busy]
    st.session_state.setdefault(f"{key}_n", 3)
    st.session_state.setdefault(f"{key}_threshold", DEFAULT_THRESHOLD_MIN)
    known = set(labels)
    for i in range(MAX_STOPS):
        stop = f"{key}_stop{i}"
        if st.session_state.get(stop) not in known:
            st.session_state[stop] = busy[i % len(busy)]
        st.session_state.setdefault(f"{key}_name{i}", _default_name(i))
        st.session_state.setdefault(f"{key}_dkind{i}", "lognormal" if i == 1 else "none")
        st.session_state.setdefault(f"{key}_dmin{i}", 10.0)
        st.session_state.setdefault(f"{key}_dmed{i}", 10.0)
        st.session_state.setdefault(f"{key}_dp90{i}", 18.0)
    return labels


def _dwell_inputs(key: str, i: int) -> tuple:
    """The dwell at intermediate stop ``i``, as the widgets say: (kind, minutes...)."""
    kind = st.radio(
        "Dwell here",
        list(DWELL_KINDS),
        format_func=DWELL_KINDS.get,
        key=f"{key}_dkind{i}",
        horizontal=True,
    )
    if kind == "fixed":
        minutes = st.number_input(
            "Minutes", min_value=0.0, max_value=720.0, step=1.0, key=f"{key}_dmin{i}"
        )
        return (kind, float(minutes))
    if kind == "lognormal":
        left, right = st.columns(2)
        median = left.number_input(
            "Usually (min)", min_value=0.1, max_value=720.0, step=1.0, key=f"{key}_dmed{i}"
        )
        p90 = right.number_input(
            "9 in 10 within (min)",
            min_value=0.1,
            max_value=720.0,
            step=1.0,
            key=f"{key}_dp90{i}",
        )
        return (kind, float(median), float(p90))
    return ("none",)


def _dwell(spec: tuple) -> Dwell:
    kind, *minutes = spec
    if kind == "fixed":
        return Dwell.fixed(minutes[0])
    if kind == "lognormal":
        return Dwell.lognormal(*minutes)
    return NO_DWELL


def _stop_inputs(key: str, labels: list[str]) -> list[tuple[str, str, tuple]]:
    """Each stop as (zone label, name, dwell spec), in order."""
    n = int(
        st.number_input("Number of stops", min_value=2, max_value=MAX_STOPS, step=1, key=f"{key}_n")
    )
    chosen = []
    for i in range(n):
        first, last = i == 0, i == n - 1
        where = "first stop" if first else ("last stop" if last else f"stop {i + 1}")
        with st.container(border=True):
            left, right = st.columns([2, 1])
            label = left.selectbox(
                f"Stop {i + 1} ({where})", labels, key=f"{key}_stop{i}", placeholder="Zone"
            )
            name = right.text_input("Name", key=f"{key}_name{i}", max_chars=60)
            spec = ("none",) if first or last else _dwell_inputs(key, i)
        chosen.append((label, name.strip() or _default_name(i), spec))
    return chosen


def _timeline_figure(trip: StopsTrip, threshold_s: float, *, synthetic: bool) -> go.Figure:
    """Legs and dwells as bars from their median start to their median end (whiskers at
    the 5 % and 95 % clock times), over the total's density with T marked."""
    legs = trip.legs(0.9)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.45, 0.55], vertical_spacing=0.22)
    start = trip.departure.tz_localize(None)
    records = legs.to_dict("records")
    # user text: escaped for plotly's HTML-like labels, and no %{...} template fields
    for r in records:
        for part in ("from", "to", "dwell"):
            r[part] = html.escape(str(r[part])).replace("%", "&#37;")
    names = [f"{r['leg']}. {r['from']} → {r['to']}" for r in records]

    def ms(delta) -> float:
        return delta.total_seconds() * 1000.0 if not pd.isna(delta) else 0.0

    for name, r in zip(names, records, strict=True):
        depart, arrive = r["depart"].tz_localize(None), r["arrive"].tz_localize(None)
        fig.add_trace(
            go.Bar(
                y=[name],
                x=[ms(arrive - depart)],
                base=[depart],
                orientation="h",
                marker_color="#1f77b4",
                hovertemplate=(
                    f"{name}<br>leaves {depart:%H:%M}, arrives {arrive:%H:%M} "
                    f"(90 %: {r['arrive_lo']:%H:%M}-{r['arrive_hi']:%H:%M})<extra></extra>"
                ),
                showlegend=False,
            ),
            row=1,
            col=1,
        )
        # the arrival's 90 % range as a whisker (plotly draws no error bars on a date axis)
        fig.add_trace(
            go.Scatter(
                x=[r["arrive_lo"].tz_localize(None), r["arrive_hi"].tz_localize(None)],
                y=[name, name],
                mode="lines+markers",
                line={"color": "#333333", "width": 1.5},
                marker={"symbol": "line-ns-open", "size": 12, "color": "#333333"},
                hoverinfo="skip",
                showlegend=False,
            ),
            row=1,
            col=1,
        )
        if r["dwell_median_s"] > 0 and r["leg"] < len(records):
            fig.add_trace(
                go.Bar(
                    y=[name],
                    x=[r["dwell_median_s"] * 1000.0],
                    base=[arrive],
                    orientation="h",
                    marker_color="#ff7f0e",
                    hovertemplate=f"dwell at {r['to']}: {r['dwell']}<extra></extra>",
                    showlegend=False,
                ),
                row=1,
                col=1,
            )
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=names, row=1)
    fig.update_xaxes(type="date", title_text=f"clock time (leaving {start:%H:%M})", row=1)
    lo, hi = trip.interval(0.998) if trip.unresolved_probability < 1e-3 else trip.interval(0.98)
    top = max(hi, threshold_s) * 1.05 if np.isfinite(hi) else threshold_s * 1.5
    t = np.linspace(max(0.0, lo * 0.9), top, 300)
    density = trip.pdf(t) * 60.0
    minutes = t / 60.0
    fig.add_trace(
        go.Scatter(
            x=minutes,
            y=density,
            mode="lines",
            line={"color": "#1f77b4"},
            name="total",
            hovertemplate="%{x:.1f} min<extra></extra>",
            showlegend=False,
        ),
        row=2,
        col=1,
    )
    inside = minutes <= threshold_s / 60.0
    fig.add_trace(
        go.Scatter(
            x=minutes[inside],
            y=density[inside],
            fill="tozeroy",
            mode="none",
            fillcolor="rgba(44,160,44,0.3)",
            name=f"within {threshold_s / 60:g} min",
            hoverinfo="skip",
        ),
        row=2,
        col=1,
    )
    fig.add_vline(x=threshold_s / 60.0, line_dash="dash", line_color="#2ca02c", row=2, col=1)
    fig.update_xaxes(title_text="total time (minutes)", row=2)
    fig.update_yaxes(title_text="density per minute", row=2)
    title = "Legs (blue), dwells (orange), and the total time"
    if synthetic:
        title += " (synthetic data)"
    fig.update_layout(
        title=title,
        height=520,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        barmode="overlay",
        legend={"orientation": "h", "y": 1.0, "x": 1, "xanchor": "right", "yanchor": "bottom"},
    )
    return fig


def _legs_table(trip: StopsTrip) -> pd.DataFrame:
    legs = trip.legs(0.9)

    def clock(column):
        return [f"{t:%H:%M}" if not pd.isna(t) else "—" for t in legs[column]]

    def span(lo, hi):
        return [f"{a}-{b}" for a, b in zip(clock(lo), clock(hi), strict=True)]

    return pd.DataFrame(
        {
            "leg": legs["leg"],
            "from → to": [f"{a} → {b}" for a, b in zip(legs["from"], legs["to"], strict=True)],
            "leaves": clock("depart"),
            "leaves (90 %)": span("depart_lo", "depart_hi"),
            "minutes": (legs["median_s"] / 60).round(1),
            "minutes (90 %)": [
                f"{a / 60:.1f}-{b / 60:.1f}"
                for a, b in zip(legs["lo_s"], legs["hi_s"], strict=True)
            ],
            "arrives": clock("arrive"),
            "arrives (90 %)": span("arrive_lo", "arrive_hi"),
            "dwell at destination": [
                d if k < len(legs) else "—" for k, d in zip(legs["leg"], legs["dwell"], strict=True)
            ],
        }
    )


def _command(trip: StopsTrip, threshold_s: float) -> str:
    depart = trip.departure.tz_localize(None).isoformat(sep=" ", timespec="minutes")
    return (
        f"vrvm stops MODEL --stops stops.csv --depart {shlex.quote(depart)} "
        f"--within {threshold_s / 60:g}min --out trip.json"
    )


def _stops_csv(trip: StopsTrip) -> str:
    rows = []
    for s in trip.stops:
        dwell = s.dwell
        fixed = dwell.minutes[0] if dwell.kind == "fixed" and not dwell.is_zero else None
        median = dwell.minutes[0] if dwell.kind == "lognormal" else None
        p90 = dwell.minutes[1] if dwell.kind == "lognormal" else None
        rows.append(
            {
                "name": s.name,
                "lat": s.lat,
                "lon": s.lon,
                "dwell_min": fixed,
                "dwell_median_min": median,
                "dwell_p90_min": p90,
            }
        )
    return safe_cells(pd.DataFrame(rows)).to_csv(index=False)


def _quantiles_csv(trip: StopsTrip) -> str:
    table = trip.quantiles(DOWNLOAD_LEVELS)
    table["arrive"] = [t.isoformat() if not pd.isna(t) else "" for t in table["arrive"]]
    return safe_cells(table).to_csv(index=False)


def _answer_json(trip: StopsTrip, threshold_s: float) -> str:
    document = trip.to_dict(within_s=threshold_s, levels=DOWNLOAD_LEVELS)
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _show_answer(key: str, ctx: ModelContext, trip: StopsTrip, threshold_s: float) -> None:
    p = float(trip.prob_within(threshold_s))
    lo, hi = trip.interval(0.9)
    arrive = trip.arrival([0.5, 0.05, 0.95])
    st.success(plain_markdown(trip.sentence(threshold_s)), icon=":material/route:")
    cols = st.columns(4)
    cols[0].metric("Total (median)", f"{trip.median() / 60:.1f} min")
    cols[1].metric("90 % interval (min)", f"{lo / 60:.0f}-{hi / 60:.0f}")
    cols[2].metric(f"P(total within {threshold_s / 60:g} min)", f"{100 * p:.1f} %")
    last = plain_markdown(trip.stops[-1].name)
    cols[3].metric(
        f"Arrives at {last}",
        f"{arrive[0]:%H:%M}",
        help=f"90 % between {arrive[1]:%H:%M} and {arrive[2]:%H:%M}",
    )
    if trip.unresolved_probability > 1e-6:
        st.warning(
            f"{100 * trip.unresolved_probability:.2g} % of the probability lies beyond the "
            "resolved range (over 12 hours): the probabilities shown may be understated by "
            "that much.",
            icon=":material/warning:",
        )
    st.dataframe(_legs_table(trip), hide_index=True, key=f"{key}_legs", width="stretch")
    st.plotly_chart(
        _timeline_figure(trip, threshold_s, synthetic=ctx.synthetic),
        key=f"{key}_timeline",
        width="stretch",
    )
    st.caption(ASSUMPTION + (" Synthetic data." if ctx.synthetic else ""))
    left, middle, right = st.columns(3)
    left.download_button(
        "Stops (CSV)",
        _stops_csv(trip),
        file_name="stops.csv",
        mime="text/csv",
        key=f"{key}_stops_csv",
        width="stretch",
    )
    middle.download_button(
        "Quantiles (CSV)",
        lambda: _quantiles_csv(trip),
        file_name=f"trip_{trip.departure:%Y%m%d_%H%M}_quantiles.csv",
        mime="text/csv",
        key=f"{key}_csv",
        width="stretch",
    )
    right.download_button(
        "Answer (JSON)",
        lambda: _answer_json(trip, threshold_s),
        file_name=f"trip_{trip.departure:%Y%m%d_%H%M}.json",
        mime="application/json",
        key=f"{key}_json",
        width="stretch",
    )
    st.caption("The same from the command line, with the stops file above:")
    st.code(_command(trip, threshold_s), language="bash")


def show(key: str, ctx: ModelContext) -> None:
    """The trip-with-stops section of the Plan page."""
    if len(ctx.area.grid) < 2:
        st.info("The map needs at least two zones for a trip with stops.")
        return
    labels = _defaults(key, ctx.area)
    inputs, answer = st.columns([5, 9], gap="medium")
    with inputs:
        chosen = _stop_inputs(key, labels)
        departure, threshold_min = trip_controls.show(key, ctx.model.tz_, support=ctx.area.support)
    with answer:
        try:
            stops = [
                Stop(p.lat, p.lon, name, _dwell(spec))
                for p, name, spec in (
                    (place_from_label(ctx.area, label), name, spec) for label, name, spec in chosen
                )
            ]
            trip = trip_with_stops(ctx.model, stops, departure)
        except ValueError as exc:
            st.error(plain_markdown(exc), icon=":material/error:")
            return
        _show_answer(key, ctx, trip, threshold_min * 60.0)
