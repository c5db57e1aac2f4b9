"""Plan page, where data is missing: how much of each answer's spread is the model's own.

Every number comes from :mod:`vrvm.services.planning.data_gaps` (the same service as
``vrvm gaps``): per zone (or for the trips from one origin) the predictive variance is
split into the model's own uncertainty (its members disagree, or are unsure of their
weights) and trip-to-trip variation, with the training trips behind each zone beside
it, and the zones are ranked by how much more trips there would sharpen the answers.
This view picks the departure(s), every zone or one origin (a map click or the list),
what the map is coloured by, and says what the split cannot see.

State keys (all prefixed with the section's ``key``):

``{key}_when``         the departure (naive, local to the model's time zone)
``{key}_more``         more times of day on the same date, averaged over
``{key}_scope``        ``"zones"`` (every zone) or ``"origin"`` (the trips from one origin)
``{key}``              the :class:`~vrvm.services.map.places.ODState` whose origin is the
                       origin; ``{key}_map_<zones>`` its clickable map
                       (:func:`app_ui.od_picker.map_key`), ``{key}_place`` the zone list
``{key}_metric``       what the map is coloured by (:data:`METRICS`)
``{key}_csv``, ``{key}_geojson``  the downloads; ``{key}_table`` the top zones
"""

from __future__ import annotations

from datetime import datetime, time

import numpy as np
import pandas as pd
import streamlit as st

from app_ui import maps, od_picker, trip_controls
from app_ui.context import ModelContext
from vrvm import TravelTimeModel
from vrvm.services.answers import forecast
from vrvm.services.display.text import plain_markdown
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import ODState, Place
from vrvm.services.planning import data_gaps

SCOPES = {
    "zones": ":material/hexagon: Every zone",
    "origin": ":material/logout: From the chosen origin",
}
METRICS = {
    "epistemic_share": "Model's own uncertainty (share)",
    "sharpening": "Where more trips help most",
}
MORE_TIMES = (time(7, 0), time(8, 30), time(12, 0), time(17, 30), time(21, 0))
TOP_ZONES = 10
CANNOT_SEE = (
    "Read beside the training-trip counts: the ensemble cannot see the uncertainty of "
    "parts all its members share (the location trees, the zone-pair offsets), and far "
    "from any trip its members agree, so zones with almost no trips can show a *low* "
    "share. Thin zones are marked ⚠."
)


def _departures(key: str, tz: str) -> list[pd.Timestamp]:
    """The departure and the other times of day on its date, in the model's time zone."""
    if st.session_state.get(f"{key}_when") is None:  # first visit, or the field cleared
        now = forecast.default_departure(tz).tz_localize(None)
        st.session_state[f"{key}_when"] = now.to_pydatetime()
    st.session_state.setdefault(f"{key}_more", [])
    left, right = st.columns(2)
    when: datetime = left.datetime_input(
        f"Departure (local time, {tz})",
        key=f"{key}_when",
        step=300,
        help="The answers split are those leaving at this time.",
    )
    more = right.multiselect(
        "Also average over",
        MORE_TIMES,
        format_func=lambda t: f"{t:%H:%M}",
        key=f"{key}_more",
        help="More departures on the same date; each zone's parts are averaged over all.",
    )
    stamps = [forecast.combine_departure(when.date(), when.time(), tz)]
    stamps += [forecast.combine_departure(when.date(), t, tz) for t in more]
    return sorted(set(stamps))


def _origin(key: str, area: ServiceArea) -> Place:
    """The origin: a click's zone (which also shows the trips from it), the list's, or
    (first visit) the busiest zone."""
    before = od_picker.get_state(key, area)
    state = od_picker.place_state(key, area)
    if state.last_selection not in (None, before.last_selection):
        st.session_state[f"{key}_scope"] = "origin"  # a click asks for the trips from there
    return state.origin


@st.cache_data(show_spinner=False, max_entries=8)
def _gaps(
    fingerprint: tuple,
    departures: tuple[str, ...],
    origin: tuple | None,
    _model: TravelTimeModel,
    _area: ServiceArea,
    _place: Place | None,
) -> pd.DataFrame:
    del fingerprint, origin  # the cache key of _model, _area and _place
    if _place is None:
        return data_gaps.zone_gaps(_model, _area, list(departures))
    return data_gaps.origin_gaps(_model, _area, _place, list(departures))


def top_table(grid: pd.DataFrame, top: int = TOP_ZONES) -> pd.DataFrame:
    """The ``top`` zones by rank as shown: share of the spread, the two standard
    deviations (on log-seconds as ±% of the travel time, else in minutes) and the
    training trips; thin zones marked ⚠."""
    best = grid[np.isfinite(grid["epistemic_share"].to_numpy(float))].sort_values("rank")
    best = best.head(top)
    log = "epistemic_sd_log" in grid.columns
    suffix = "log" if log else "s"
    thin = best["thin"].to_numpy(bool) if "thin" in best else np.zeros(len(best), bool)
    shown = pd.DataFrame(
        {
            "rank": best["rank"].to_numpy(int),
            "zone": [
                ("⚠ " if t else "") + str(label)
                for label, t in zip(best["label"], thin, strict=True)
            ],
            "model's own share": best["epistemic_share"].to_numpy(float),
            f"{data_gaps.MORE_TRIPS} more trips here remove": best["sharpening"].to_numpy(float),
        }
    )
    for column, name in (("epistemic", "model's own sd"), ("noise", "trip-to-trip sd")):
        sd = best[f"{column}_sd_{suffix}"].to_numpy(float)
        if log:  # a factor e^sd on the travel time
            shown[f"{name} (±%)"] = 100.0 * np.expm1(sd)
        else:
            shown[f"{name} (min)"] = sd / 60.0
    if "support_trips" in best:
        shown["training trips"] = best["support_trips"].to_numpy(int)
    return shown


def _controls(key: str, ctx: ModelContext, place: Place):
    area = ctx.area
    departures = _departures(key, ctx.model.tz_)  # all on one date
    trip_controls.day_caution(area.support, departures[0], ctx.model.tz_)
    left, right = st.columns(2)
    st.session_state.setdefault(f"{key}_scope", "zones")
    scope = left.radio(
        "Split the answers of",
        list(SCOPES),
        format_func=SCOPES.get,
        key=f"{key}_scope",
        horizontal=True,
        help="Every zone: the trips from and to each zone (to the busiest zones). From "
        "the chosen origin: the trip from it to each zone.",
    )
    st.session_state.setdefault(f"{key}_metric", "epistemic_share")
    metric = right.radio(
        "Colour zones by",
        list(METRICS),
        format_func=METRICS.get,
        key=f"{key}_metric",
        horizontal=True,
    )
    if scope == "origin":
        od_picker.place_list(left, "Origin", key, area, place)
    return departures, scope, metric


def show(key: str, ctx: ModelContext) -> None:
    """The "where data is missing" section of the Plan page."""
    area = ctx.area
    place = _origin(key, area)
    departures, scope, metric = _controls(key, ctx, place)
    origin = place if scope == "origin" else None
    what = (
        f"the trips from {len(area.grid):,} zones to the busiest"
        if origin is None
        else f"the trips from {place.label}"
    )
    try:
        with st.spinner(f"Splitting the spread of {what}"):
            grid = _gaps(
                ctx.fingerprint,
                tuple(d.isoformat() for d in departures),
                None if origin is None else (place.zone, place.lat, place.lon, place.label),
                ctx.model,
                area,
                origin,
            )
        fill, tips, legend = data_gaps.gaps_map(grid, metric)
    except ValueError as exc:
        st.error(plain_markdown(exc), icon=":material/error:")
        return
    summary = data_gaps.gaps_summary(grid)
    st.markdown(
        f"The model's own uncertainty is **{100 * summary['epistemic_share']:.1f} %** of the "
        "spread of its answers (the rest is trip-to-trip variation that more data will "
        "not remove)."
    )
    hint = (
        "Click a zone to see the trips from it."
        if origin is None
        else "The dot is the origin; click a zone to move it."
    )
    st.markdown(
        f"<small>{hint} Hover a zone for its split and its training trips.</small>",
        unsafe_allow_html=True,
    )
    od_picker.draw_map(key, area, ODState(origin=origin), fill=fill, tips=tips, height=520)
    title = METRICS[metric] + ("" if origin is None else f", from {place.label}")
    st.markdown(maps.legend_html(legend, title), unsafe_allow_html=True)
    st.caption(CANNOT_SEE)
    _results(key, ctx, grid, departures, origin)


def _results(key: str, ctx: ModelContext, grid: pd.DataFrame, departures, origin) -> None:
    shown = top_table(grid)
    percent = st.column_config.NumberColumn(format="percent")
    config = {
        "zone": st.column_config.TextColumn(width="medium"),
        "model's own share": percent,
        f"{data_gaps.MORE_TRIPS} more trips here remove": st.column_config.NumberColumn(
            format="percent",
            help=f"The share of the demand-weighted spread of all answers that "
            f"{data_gaps.MORE_TRIPS} more trips from this zone would remove, if the model's "
            "own uncertainty there falls like 1 / (its trips): a busy zone gains little, a "
            "zone of high demand and few trips much.",
        ),
    }
    for column in shown.columns[4:]:
        if column != "training trips":
            config[column] = st.column_config.NumberColumn(format="%.1f")
    st.markdown(f"**The {len(shown)} zones where more trips would sharpen the answers most**")
    st.dataframe(shown, hide_index=True, key=f"{key}_table", width="stretch", column_config=config)
    when = pd.Timestamp(departures[0])
    stem = f"data_gaps_{when:%Y%m%d_%H%M}" + ("" if origin is None else "_from_origin")
    stem += "_synthetic" if ctx.synthetic else ""
    left, right = st.columns(2)
    left.download_button(
        "Download CSV",
        data_gaps.gaps_csv(grid, synthetic=ctx.synthetic),
        file_name=f"{stem}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        width="stretch",
    )
    right.download_button(
        "Download GeoJSON",
        data_gaps.gaps_geojson(grid, synthetic=ctx.synthetic),
        file_name=f"{stem}.geojson",
        mime="application/geo+json",
        key=f"{key}_geojson",
        width="stretch",
    )
    times = ", ".join(f"{pd.Timestamp(d):%H:%M}" for d in departures)
    unit = "±% of the travel time" if "epistemic_sd_log" in grid else "minutes"
    st.caption(
        f"Leaving {when:%Y-%m-%d} at {times}; standard deviations of the model's "
        f"{grid.attrs.get('scale', '')} answers, shown in {unit}. Zones ranked by their "
        "share of the demand-weighted spread of every answer (demand: "
        f"{plain_markdown(grid.attrs.get('demand', ''))}). "
        "The downloads hold per-zone figures and counts only, never a trip."
        + (" Synthetic data." if ctx.synthetic else "")
    )
