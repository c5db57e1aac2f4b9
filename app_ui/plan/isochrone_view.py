"""Plan page, probability isochrones: where a place reaches, or who reaches it, within t.

The regions and every number come from :mod:`vrvm.services.planning.isochrones`; this view
picks the place (a map click or the zone list), the direction, the departure time,
t and the probabilities, and draws the nested regions under the clickable zones.

State keys (all prefixed with the section's ``key``):

``{key}``              the :class:`vrvm.services.map.places.ODState` whose origin is the place
``{key}_map_<zones>``  the pydeck chart (a click sets the place), named for the map's
                       zones (:func:`app_ui.od_picker.map_key`)
``{key}_place``        the zone list
``{key}_direction``    ``"from"`` or ``"to"`` the place
``{key}_levels``       the probabilities p
``{key}_trip_when``, ``{key}_trip_threshold``  departure and t
                       (:mod:`app_ui.trip_controls`)
``{key}_geojson``      the download; ``{key}_table`` the table of regions
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_ui import maps, od_picker, trip_controls
from app_ui.context import ModelContext
from vrvm.services.map.places import ODState, Place
from vrvm.services.planning import isochrones

LEVEL_OPTIONS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
DIRECTION_LABELS = {
    "from": ":material/logout: From this place",
    "to": ":material/login: To this place",
}


def _percent(p: float) -> str:
    return f"{100 * p:g} %"


def _controls(key: str, ctx: ModelContext, place: Place):
    area = ctx.area
    od_picker.place_list(st, "Place", key, area, place)
    st.session_state.setdefault(f"{key}_direction", "from")
    direction = st.segmented_control(
        "Direction",
        list(DIRECTION_LABELS),
        format_func=DIRECTION_LABELS.get,
        key=f"{key}_direction",
        required=True,
        help="From: where trips leaving the place arrive in time. To: from where trips "
        "reach the place in time (who can reach the hospital within 15 minutes).",
    )
    departure, within_min = trip_controls.show(
        f"{key}_trip", ctx.model.tz_, support=ctx.area.support
    )
    st.session_state.setdefault(f"{key}_levels", list(isochrones.DEFAULT_PROBABILITIES))
    levels = st.multiselect(
        "Probabilities p",
        LEVEL_OPTIONS,
        key=f"{key}_levels",
        format_func=_percent,
        help="One region per p: the zones reached within T with probability at least p.",
    )
    return direction or "from", departure, within_min, levels


def show(key: str, ctx: ModelContext) -> None:
    """The isochrone section of the Plan page."""
    place = od_picker.place_state(key, ctx.area).origin
    map_column, control_column = st.columns([5, 2], gap="medium")
    with control_column:
        direction, departure, within_min, levels = _controls(key, ctx, place)
    result = drawn = None
    if levels:
        result = isochrones.probability_isochrones(
            ctx.model, ctx.area, place, departure, within_min, levels, direction=direction
        )
        drawn = isochrones.isochrone_map(result)
    with map_column:
        marker = "A · the origin" if direction == "from" else "B · the destination"
        st.markdown(
            f"<small>The place is {marker}. Click a zone to move it; hover a zone for its "
            "probability.</small>",
            unsafe_allow_html=True,
        )
        state = ODState(origin=place) if direction == "from" else ODState(dest=place)
        od_picker.draw_map(
            key,
            ctx.area,
            state,
            fill=None if drawn is None else drawn.zone_fill,
            tips=None if drawn is None else drawn.tips,
            regions=None if drawn is None else drawn.features,
            height=560,
        )
        if drawn is not None:
            title = f"From {place.label}" if direction == "from" else f"To {place.label}"
            st.markdown(maps.legend_html(drawn.legend, title), unsafe_allow_html=True)
    if result is None:
        st.info("Choose at least one probability p to draw the regions.")
        return
    _results(key, ctx, result)


def _results(key: str, ctx: ModelContext, result: isochrones.Isochrones) -> None:
    table = isochrones.isochrone_table(result)
    left, right = st.columns([3, 2], gap="medium")
    left.dataframe(
        table.rename(columns={"area_km2": "area (km²)"}),
        hide_index=True,
        key=f"{key}_table",
        width="stretch",
        column_config={
            "p": st.column_config.NumberColumn("p", format="percent"),
            "zones": st.column_config.NumberColumn("zones"),
            "area (km²)": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    when = pd.Timestamp(result.departure)
    right.download_button(
        "Download GeoJSON",
        isochrones.isochrones_geojson(result, synthetic=ctx.synthetic),
        file_name=f"isochrones_{result.direction}_{when:%Y%m%d_%H%M}_"
        f"{result.within_min:g}min.geojson",
        mime="application/geo+json",
        key=f"{key}_geojson",
        width="stretch",
    )
    t = f"{result.within_min:g}"
    trips = (
        "a trip from the place to the zone"
        if result.direction == "from"
        else "a trip from the zone to the place"
    )
    st.caption(
        f"Each region is the set of zones where the probability that {trips}, leaving at "
        f"{when:%Y-%m-%d %H:%M}, takes at most {t} minutes is at least p, dissolved into "
        f"polygons; a larger p gives a region inside the smaller one's. Areas are geodesic "
        f"(WGS84). {len(result.reach)} zones in all."
        + (" Synthetic data." if ctx.synthetic else "")
    )
