"""Plan page, OD matrix: travel times between sets of zones, to preview and download.

Every number comes from :mod:`vrvm.services.answers.matrix` (the same service as ``vrvm
matrix``); this view picks the origin and destination zones, the departure time, the
quantiles and thresholds, then shows the first pairs, a heat map of the median and the
downloads. Above :data:`~vrvm.services.answers.matrix.DASHBOARD_MAX_PAIRS` pairs it computes
nothing and gives the ``vrvm matrix`` command and the zone lists to run it with.

State keys (all prefixed with the section's ``key``):

``{key}_origins``, ``{key}_dests``  the chosen zones (ids; first visit: the 10 busiest)
``{key}_quantiles``                 quantiles besides the median
``{key}_more``                      thresholds (minutes) besides T
``{key}_trip_when``, ``{key}_trip_threshold``  departure and T
                                    (:mod:`app_ui.trip_controls`)
``{key}_csv``, ``{key}_parquet``    the downloads; ``{key}_table`` the preview
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_ui import charts, trip_controls
from app_ui.context import ModelContext
from vrvm import TravelTimeModel
from vrvm.services.answers import matrix
from vrvm.services.map import places
from vrvm.services.map.area import ServiceArea

QUANTILE_OPTIONS = (0.05, 0.1, 0.25, 0.75, 0.9, 0.95)
MORE_THRESHOLD_OPTIONS = (5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0)
DEFAULT_ZONES = 10


def _percent(q: float) -> str:
    return f"{100 * q:g} %"


def _choose(state_key: str, zones: list[str]) -> None:
    st.session_state[state_key] = zones


def _zone_picker(key: str, label: str, area: ServiceArea) -> list[str]:
    """A multiselect over the area's zones with the quick choices "All" and "Busiest"."""
    zones = area.grid["zone"].astype(str).tolist()
    labels = dict(zip(zones, area.grid["label"], strict=True))
    before = st.session_state.get(key)
    known = [z for z in before or [] if z in labels]  # the zones change with the zone file
    fresh = before is None or (before and not known)  # first visit, or other zones now
    st.session_state[key] = places.busiest_zones(area, DEFAULT_ZONES) if fresh else known
    chosen = st.multiselect(label, zones, format_func=labels.get, key=key)
    left, right = st.columns(2)
    left.button(
        f"All {len(zones):,} zones",
        key=f"{key}_all",
        on_click=_choose,
        args=(key, zones),
        type="tertiary",
    )
    right.button(
        f"{DEFAULT_ZONES} busiest",
        key=f"{key}_busiest",
        on_click=_choose,
        args=(key, places.busiest_zones(area, DEFAULT_ZONES)),
        type="tertiary",
        help="The zones with the most training trip ends",
    )
    return chosen


@st.cache_data(show_spinner="Predicting every pair", max_entries=8)
def _matrix(
    fingerprint: tuple,
    origins: tuple[str, ...],
    destinations: tuple[str, ...],
    departure: pd.Timestamp,
    quantiles: tuple[float, ...],
    thresholds_s: tuple[float, ...],
    _model: TravelTimeModel,
    _area: ServiceArea,
) -> pd.DataFrame:
    del fingerprint  # the cache key of _model and _area (ModelContext.fingerprint)
    return matrix.matrix_frame(
        _model,
        matrix.zone_points(_area, origins),
        matrix.zone_points(_area, destinations),
        departure,
        quantiles=quantiles,
        thresholds_s=thresholds_s,
    )


def _too_many(key: str, ctx: ModelContext, origins, destinations, departure, quantiles, thr):
    pairs = len(origins) * len(destinations)
    st.warning(
        f"{len(origins):,} origins by {len(destinations):,} destinations make {pairs:,} "
        f"pairs, more than the "
        f"{matrix.DASHBOARD_MAX_PAIRS:,} the dashboard computes. Choose fewer zones, or "
        "download the two zone lists and run the command below: it writes every pair to "
        "a file in batches, in constant memory.",
        icon=":material/grid_off:",
    )
    model_dir = matrix.model_reference(ctx.home, ctx.version)
    st.code(matrix.matrix_command(model_dir, departure, quantiles, thr), language="bash")
    st.caption(
        "`$VRVM_HOME` is the dashboard's data home (`./.vrvm` when it is not set); "
        "times are in the model's time zone."
    )
    left, right = st.columns(2)
    for column, name, zones in ((left, "origins", origins), (right, "destinations", destinations)):
        column.download_button(
            f"Download {name}.csv",
            matrix.points_csv(matrix.zone_points(ctx.area, zones)),
            file_name=f"{name}.csv",
            mime="text/csv",
            key=f"{key}_{name}_csv",
            width="stretch",
        )


def show(key: str, ctx: ModelContext) -> None:
    """The OD matrix section of the Plan page."""
    area = ctx.area
    st.caption(
        "Every pair of the chosen origin and destination zones at one departure time: "
        "mean, median, quantiles and P(arrive within t), from each pair's predictive "
        "distribution. The same table as `vrvm matrix`."
    )
    left, right = st.columns(2)
    with left:
        origins = _zone_picker(f"{key}_origins", "Origin zones", area)
    with right:
        destinations = _zone_picker(f"{key}_dests", "Destination zones", area)
    departure, threshold_min = trip_controls.show(
        f"{key}_trip", ctx.model.tz_, support=ctx.area.support
    )
    st.session_state.setdefault(f"{key}_quantiles", [0.9])
    st.session_state.setdefault(f"{key}_more", [])
    left, right = st.columns(2)
    chosen_q = left.multiselect(
        "Quantiles besides the median",
        QUANTILE_OPTIONS,
        format_func=_percent,
        key=f"{key}_quantiles",
    )
    more = right.multiselect(
        "More thresholds t (minutes)",
        MORE_THRESHOLD_OPTIONS,
        format_func=lambda m: f"{m:g} min",
        key=f"{key}_more",
        help="P(arrive within t) for each, besides T above",
    )
    quantiles = tuple(sorted(chosen_q))
    thresholds_s = tuple(sorted({60.0 * threshold_min, *(60.0 * m for m in more)}))
    if not origins or not destinations:
        st.info("Choose at least one origin zone and one destination zone.")
        return
    if len(origins) * len(destinations) > matrix.DASHBOARD_MAX_PAIRS:
        _too_many(key, ctx, origins, destinations, departure, quantiles, thresholds_s)
        return
    frame = _matrix(
        ctx.fingerprint,
        tuple(origins),
        tuple(destinations),
        departure,
        quantiles,
        thresholds_s,
        ctx.model,
        area,
    )
    st.metric(
        "Pairs",
        f"{len(frame):,}",
        f"{len(origins):,} origins by {len(destinations):,} destinations",
        delta_color="off",
        delta_arrow="off",
    )
    _results(key, ctx, frame, departure)


def _results(key: str, ctx: ModelContext, frame: pd.DataFrame, departure) -> None:
    pair_downloads(key, frame, f"od_matrix_{pd.Timestamp(departure):%Y%m%d_%H%M}")
    heat = matrix.median_heatmap(frame, ctx.area)
    if heat is not None:
        st.plotly_chart(
            charts.matrix_heatmap_figure(heat, synthetic=ctx.synthetic), key=f"{key}_heatmap"
        )
    else:
        st.caption(
            f"No heat map above {matrix.HEATMAP_MAX_SIDE} origins or destinations: "
            "the table and the downloads hold every pair."
        )
    preview = matrix.preview_table(frame, ctx.area)
    minutes = st.column_config.NumberColumn(format="%.1f")
    config = {
        column: (
            st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent")
            if column.startswith("P(")
            else minutes
        )
        for column in preview.columns[2:]
    }
    st.dataframe(preview, hide_index=True, height=300, key=f"{key}_table", column_config=config)
    st.caption(
        f"The first {len(preview):,} of {len(frame):,} pairs (the downloads hold all of "
        "them, times in seconds). Median and quantiles are exact quantiles of each pair's "
        "predictive mixture; P(≤ t) is its probability of arriving within t minutes."
        + (" Synthetic data." if ctx.synthetic else "")
    )


def pair_downloads(key: str, frame: pd.DataFrame, stem: str) -> None:
    """CSV and Parquet download buttons side by side for a long table of pairs."""
    left, right = st.columns(2)
    left.download_button(
        "Download CSV",
        matrix.matrix_csv(frame),
        file_name=f"{stem}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        width="stretch",
    )
    right.download_button(
        "Download Parquet",
        matrix.matrix_parquet(frame),
        file_name=f"{stem}.parquet",
        mime="application/vnd.apache.parquet",
        key=f"{key}_parquet",
        width="stretch",
    )
