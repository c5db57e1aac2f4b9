"""'From this origin': every zone coloured by median travel time or P(T <= threshold).

State keys: ``{key}_metric`` ("median" or "probability"), ``{key}_conf`` (required
probability for the reachable-zone count).

The map downloads as CSV, GeoJSON and PNG (drawn on the server, :mod:`app_ui.map_image`);
each file is made when its button is clicked, not on every rerun.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_ui import map_image
from app_ui.context import ModelContext
from vrvm.services.answers import indices
from vrvm.services.map.places import Place
from vrvm.services.planning import coverage

METRIC_LABELS = {"median": "Median travel time", "probability": "P(arrive within T)"}
INDEX_LABELS = {  # reliability indices of the table (vrvm.services.answers.indices)
    "planning_time_index": "planning time index",
    "buffer_index": "buffer index",
    "misery_index": "misery index",
}


def set_values(key: str, *, metric: str | None = None, confidence: float | None = None) -> None:
    """Preset the options (from a shared link); call before :func:`show_options`."""
    if metric is not None:
        st.session_state[f"{key}_metric"] = metric
    if confidence is not None:
        st.session_state[f"{key}_conf"] = float(confidence)


def show_options(key: str) -> tuple[str, float]:
    st.session_state.setdefault(f"{key}_metric", "probability")
    st.session_state.setdefault(f"{key}_conf", 0.9)
    # a radio, one option a line: the narrow control column cut a segmented control's
    # label and first option off
    metric = st.radio(
        "Colour zones by", list(METRIC_LABELS), format_func=METRIC_LABELS.get, key=f"{key}_metric"
    )
    confidence = st.slider(
        "Required probability",
        min_value=0.5,
        max_value=0.99,
        step=0.01,
        key=f"{key}_conf",
        help="Count the zones reached within T with at least this probability.",
    )
    return metric or "probability", float(confidence)


def compute(ctx: ModelContext, origin: Place, departure, threshold_min: float, metric: str):
    """The coverage grid and the map's fill colours, tooltips and legend."""
    grid = coverage.coverage_grid(
        ctx.model, ctx.area, origin, departure, threshold_min, indices=True
    )
    near = ctx.area.kind != "polygons"  # polygons: trips from the origin's zone only
    fill, tips, legend = coverage.coverage_map(grid, metric, threshold_min, near=near)
    return grid, fill, tips, legend


def show_results(
    key: str,
    ctx: ModelContext,
    grid: pd.DataFrame,
    *,
    origin: Place,
    departure,
    threshold_min: float,
    confidence: float,
    legend: list[tuple[str, str]] | None = None,
    metric: str = "probability",
) -> None:
    summary = coverage.reachable_summary(grid, confidence)
    st.metric(
        f"Zones reached within {threshold_min:g} min with ≥ {100 * confidence:.0f} % probability",
        f"{summary['n_reached']} of {summary['n_zones']}",
        f"{100 * summary['share']:.0f} % of the area",
        delta_color="off",
        delta_arrow="off",
    )
    when = pd.Timestamp(departure)
    stem = f"coverage_{when:%Y%m%d_%H%M}_{threshold_min:g}min"
    synthetic = ctx.synthetic
    left, middle, right = st.columns(3)
    left.download_button(
        "Download CSV",
        lambda: coverage.coverage_csv(grid, origin, departure, threshold_min, synthetic=synthetic),
        file_name=f"{stem}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        width="stretch",
        on_click="ignore",
    )
    middle.download_button(
        "Download GeoJSON",
        lambda: coverage.coverage_geojson(
            grid, origin, departure, threshold_min, synthetic=synthetic
        ),
        file_name=f"{stem}.geojson",
        mime="application/geo+json",
        key=f"{key}_geojson",
        width="stretch",
        on_click="ignore",
    )
    right.download_button(
        "Download PNG",
        lambda: map_png(ctx, grid, origin, when, threshold_min, metric, legend or []),
        file_name=f"{stem}.png",
        mime="image/png",
        key=f"{key}_png",
        width="stretch",
        on_click="ignore",
        help="The map as a picture for a slide: colours, legend and the origin.",
    )
    nearest = grid.sort_values("median_min").head(200)
    shown = ["label", "median_min", "lower80_min", "upper80_min", "prob_within"]
    shown += [name for name in INDEX_LABELS if name in grid.columns]
    table = nearest[shown].rename(
        columns={
            "label": "zone",
            "median_min": "median (min)",
            "lower80_min": "80 % from",
            "upper80_min": "80 % to",
            "prob_within": f"P(≤ {threshold_min:g} min)",
            **INDEX_LABELS,
        }
    )
    minutes = st.column_config.NumberColumn(format="%.1f")
    ratio = st.column_config.NumberColumn(format="%.2f")
    st.dataframe(
        table,
        hide_index=True,
        height=260,
        key=f"{key}_table",
        width="stretch",
        column_config={
            "median (min)": minutes,
            "80 % from": minutes,
            "80 % to": minutes,
            **{label: ratio for label in INDEX_LABELS.values()},
            f"P(≤ {threshold_min:g} min)": st.column_config.ProgressColumn(
                min_value=0.0, max_value=1.0, format="percent"
            ),
        },
    )
    thin = ""
    if summary.get("day_note"):
        thin = f" Every zone is faded. {summary['day_note']}"
    elif summary.get("n_thin"):
        where = "from near the origin" if ctx.area.kind != "polygons" else "from the origin's zone"
        thin = (
            f" {summary['n_thin']} of {summary['n_zones']} zones are faded: fewer than "
            f"{summary['thin_trips']} training trips went there {where}, so "
            "their answers rest on thin data."
        )
    st.caption(
        "Probability-of-coverage map (Westgate et al. 2013): from the origin, for the departure "
        "time shown, each zone's chance of being reached within T minutes. "
        + indices.definitions()
        + thin
        + (" Synthetic data." if ctx.synthetic else "")
    )


def map_png(
    ctx: ModelContext,
    grid: pd.DataFrame,
    origin: Place,
    when: pd.Timestamp,
    threshold_min: float,
    metric: str,
    legend: list[tuple[str, str]],
) -> bytes:
    """The reach map as the page colours it, as a PNG (drawn when the button is clicked)."""
    near = ctx.area.kind != "polygons"
    fill, _, _ = coverage.coverage_map(grid, metric, threshold_min, near=near)
    what = "Median travel time" if metric == "median" else f"P(arrive within {threshold_min:g} min)"
    title = f"{what} from {origin.label}, leaving {when:%a %d %b %Y %H:%M}"
    footnote = "vrvm: probabilistic travel times" + (
        " · SYNTHETIC DATA (Synthetica, a fictional city)" if ctx.synthetic else ""
    )
    return map_image.reach_map_png(
        ctx.area, fill, origin=origin, legend=legend, title=title, footnote=footnote
    )
