"""Plan page, fleet coverage: bases on the map, P(best base) and P(any base) within T.

Every number comes from :mod:`vrvm.services.planning.fleet` (coverage, demand, ranking) and
:mod:`vrvm.services.planning.fleet_files` (files read and written); this view holds the bases,
places them (a map click toggles a base in a zone, the list picks zones, a CSV file
brings named bases) and draws the results. It opens on two bases at busy central zones.

State keys (all prefixed with the section's ``key``):

``{key}_bases``        the bases table (:data:`~vrvm.services.planning.fleet.BASE_COLUMNS`),
                       located on the current zones on every run
                       (:func:`~vrvm.services.planning.fleet.locate_bases`)
``{key}_moved``        the sentence naming the bases that relocating removed, shown once
``{key}_click``        a :class:`~vrvm.services.map.places.ODState`: the last map selection
                       acted upon
``{key}_map_<zones>``  the pydeck chart (a click toggles a base in the zone), keyed by its
                       zones (:func:`app_ui.od_picker.map_key`): a new chart on other zones
``{key}_pick``         the list of zones holding a base
``{key}_upload``, ``{key}_demand_upload``  the bases and demand files
``{key}_seen``         the last demand file read and its outcome (kept with :func:`context.keep`)
``{key}_error``        the last message about placing bases
``{key}_metric``       what the map is coloured by (``"best"`` or ``"any"``)
``{key}_objective``    what a new base is ranked by (``"any"`` or ``"best"``)
``{key}_ranking``      the last ranking and the inputs it was made for (:func:`context.keep`)
``{key}_trip_when``, ``{key}_trip_threshold``  departure and T
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_ui import maps, od_picker, trip_controls
from app_ui.context import ModelContext, keep, kept
from vrvm.services.display.text import plain_markdown
from vrvm.services.map import places
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import ODState
from vrvm.services.planning import fleet, fleet_files

TOP_CANDIDATES = 10
# the browser refuses a larger bases or demand file before sending it (viewers upload them)
_MAX_UPLOAD_MB = max(1, int(fleet_files.MAX_FILE_MB))
OBJECTIVE_LABELS = {
    "any": "Gain in P(any base within T)",
    "best": "Gain in P(best base within T)",
}


def _label(metric: str, threshold_min: float) -> str:
    return fleet.FLEET_METRICS[metric].replace("T)", f"{threshold_min:g} min)")


# ------------------------------------------------------------------------------ bases


def _bases(key: str, area: ServiceArea) -> pd.DataFrame:
    """The bases on ``area``'s zones; two at busy central zones on the first visit.

    Bases placed on another map (another zone file, boundaries or model version) are
    located on this one (:func:`vrvm.services.planning.fleet.locate_bases`), and those it
    removes are said once.
    """
    bases = st.session_state.get(f"{key}_bases")
    if bases is None:
        bases = fleet.default_bases(area)
        st.session_state[f"{key}_bases"] = bases
        return bases
    located, removed = fleet.locate_bases(area, bases)
    if located is not bases:
        st.session_state[f"{key}_bases"] = located
        if removed:
            st.session_state[f"{key}_moved"] = removed
    return located


def _set_bases(key: str, bases: pd.DataFrame) -> None:
    st.session_state[f"{key}_bases"] = bases
    st.session_state[f"{key}_error"] = None


def _apply_click(key: str, area: ServiceArea) -> None:
    """A new click on a zone adds a base there, or removes the bases in it."""
    before = st.session_state.get(f"{key}_click") or ODState()
    after = places.apply_map_selection(
        before, od_picker.map_selection(key, area), area, mode="origin"
    )
    st.session_state[f"{key}_click"] = after
    clicked = after.last_selection not in (None, before.last_selection)
    if clicked and after.origin is not None and after.origin is not before.origin:
        try:
            _set_bases(key, fleet.toggle_zone_base(area, _bases(key, area), after.origin.zone))
        except ValueError as exc:
            st.session_state[f"{key}_error"] = str(exc)


def _picked(key: str, area: ServiceArea) -> None:
    """The zone list changed: keep the bases still listed (and the file's), add the new."""
    labels = st.session_state.get(f"{key}_pick") or []
    bases = _bases(key, area)
    kept = bases[(bases["kind"] == "point") | bases["label"].isin(labels)]
    zone_of = dict(zip(area.grid["label"], area.grid["zone"], strict=True))
    new = [zone_of[label] for label in labels if label not in set(kept["label"])]
    try:
        _set_bases(key, fleet.combine_bases(kept, fleet.bases_from_zones(area, new)))
    except ValueError as exc:
        st.session_state[f"{key}_error"] = str(exc)


def _clear(key: str, area: ServiceArea) -> None:
    _set_bases(key, fleet.bases_from_zones(area, []))


def _uploaded_bases(key: str, area: ServiceArea) -> None:
    """A bases file was chosen: its bases replace the others (before any widget is drawn)."""
    upload = st.session_state.get(f"{key}_upload")
    if upload is None:  # the file was removed: the bases stay
        return
    try:
        _set_bases(key, fleet_files.read_bases_csv(upload.getvalue(), area, source=upload.name))
    except ValueError as exc:
        st.session_state[f"{key}_error"] = str(exc)


def _file_id(upload) -> str:
    """What tells an uploaded file from another (Streamlit's id, else name and size)."""
    return str(getattr(upload, "file_id", None) or f"{upload.name}:{upload.size}")


def _uploaded_demand(key: str, ctx: ModelContext):
    """The demand file's weights (read once per file and map), or None; its error shown.

    The weights are one per zone of the map they were read on: kept with the context's
    fingerprint, so that the file is read again on other zones, never applied to them.
    """
    upload = st.session_state.get(f"{key}_demand_upload")
    if upload is None:
        return None
    inputs = (ctx.fingerprint, _file_id(upload))
    seen = kept(f"{key}_seen", inputs)
    if seen is None:
        try:
            read = fleet_files.read_demand_csv(upload.getvalue(), ctx.area, source=upload.name)
            seen = keep(f"{key}_seen", inputs, (read, None))
        except ValueError as exc:
            seen = keep(f"{key}_seen", inputs, (None, str(exc)))
    if seen[1]:
        st.error(plain_markdown(seen[1]), icon=":material/error:")
    return seen[0]


def _base_controls(key: str, area: ServiceArea) -> None:
    bases = _bases(key, area)
    st.session_state[f"{key}_pick"] = bases.loc[bases["kind"] == "zone", "label"].tolist()
    st.multiselect(
        "Bases at zones",
        area.labels,
        key=f"{key}_pick",
        on_change=_picked,
        args=(key, area),
        max_selections=fleet.MAX_BASES,
        placeholder="Click zones on the map or type to search",
        help="A click on the map adds a base in the zone, or removes the bases in it.",
    )
    st.file_uploader(
        "Or a CSV of bases (name, lat, lon)",
        type=["csv", "txt"],
        key=f"{key}_upload",
        max_upload_size=_MAX_UPLOAD_MB,
        on_change=_uploaded_bases,
        args=(key, area),
        help="One row per base: name (optional), lat and lon in degrees, or zone (a zone "
        "id). The file's bases replace those placed before; at most "
        f"{fleet.MAX_BASES}.",
    )
    left, right = st.columns(2)
    left.download_button(
        "Example CSV",
        fleet_files.EXAMPLE_BASES_CSV,
        file_name="bases_example.csv",
        mime="text/csv",
        key=f"{key}_example",
        type="tertiary",
    )
    right.button(
        "Remove all bases", key=f"{key}_clear", on_click=_clear, args=(key, area), type="tertiary"
    )
    if st.session_state.get(f"{key}_error"):
        st.error(plain_markdown(st.session_state[f"{key}_error"]), icon=":material/error:")
    moved = st.session_state.pop(f"{key}_moved", None)  # said once, when it happened
    if moved:
        st.warning(plain_markdown(moved), icon=":material/location_off:")


def demand_control(key: str, ctx: ModelContext, *, used_in: str = "the coverage and the ranking"):
    """The demand file's uploader; returns the demand per zone (the file's, or the
    training-trip origins), where it comes from, and the file's id (None without one),
    which an answer kept for its inputs names. Shared by the fleet and siting sections
    (``used_in``: what the weights weigh there)."""
    st.file_uploader(
        "Demand per zone (optional CSV: zone or lat, lon, and demand)",
        type=["csv", "txt"],
        key=f"{key}_demand_upload",
        max_upload_size=_MAX_UPLOAD_MB,
        help=f"Weights of the zones in {used_in}. Without a file: the training trips "
        "starting in each zone.",
    )
    weights = _uploaded_demand(key, ctx)
    demand, source = fleet.zone_demand(ctx.area, weights)
    upload = st.session_state.get(f"{key}_demand_upload")
    file_id = None
    if weights is not None and upload is not None:
        file_id = (str(upload.name), _file_id(upload))
    return demand, source, file_id


# ---------------------------------------------------------------------------- results


def show(key: str, ctx: ModelContext) -> None:
    """The fleet-coverage section of the Plan page."""
    area = ctx.area
    _bases(key, area)
    _apply_click(key, area)
    map_column, control_column = st.columns([5, 2], gap="medium")
    with control_column:
        departure, threshold = trip_controls.show(
            f"{key}_trip", ctx.model.tz_, support=ctx.area.support
        )
        st.session_state.setdefault(f"{key}_metric", "best")
        metric = st.segmented_control(
            "Colour zones by",
            list(fleet.FLEET_METRICS),
            format_func=lambda m: fleet.FLEET_METRICS[m],
            key=f"{key}_metric",
            required=True,
        )
        _base_controls(key, area)
        demand, demand_source, _ = demand_control(key, ctx)
    bases = _bases(key, area)
    coverage = fleet.fleet_coverage(ctx.model, area, bases, departure, threshold)
    fill, tips, legend = fleet.fleet_map(coverage, metric)
    if st.session_state.pop(f"{key}_rank_asked", False):  # the button below, last run
        _rank(key, ctx, coverage, demand)
    ranking = _current_ranking(key, ctx, coverage, demand)
    with map_column:
        st.markdown(
            "<small>Numbered markers are the bases; + marks the best zone for one more base "
            "once ranked. Click a zone to add a base there, or to remove the bases in it."
            "</small>",
            unsafe_allow_html=True,
        )
        od_picker.draw_map(
            key,
            area,
            ODState(),
            fill=fill,
            tips=tips,
            markers=fleet.base_markers(bases, ranking),
            height=560,
        )
        st.markdown(maps.legend_html(legend, _label(metric, threshold)), unsafe_allow_html=True)
    if not len(bases):
        st.info("Place at least one base: click a zone, pick zones from the list or upload a CSV.")
    _summary(key, ctx, coverage, demand, demand_source)
    _one_more_base(key, ctx, coverage, demand, ranking)


def _summary(key, ctx: ModelContext, coverage: fleet.FleetCoverage, demand, demand_source) -> None:
    t = coverage.threshold_min
    summary = coverage.summary(demand)
    cols = st.columns(3)
    cols[0].metric("Bases", f"{len(coverage.bases)}")
    cols[1].metric(
        _label("best", t), f"{100 * summary['best']:.1f} %", help=fleet_files.DEFINITIONS["p_best"]
    )
    cols[2].metric(
        _label("any", t), f"{100 * summary['any']:.1f} %", help=fleet_files.DEFINITIONS["p_any"]
    )
    st.caption(
        f"Both averaged over the zones weighted by demand ({plain_markdown(demand_source)}). "
        "P(best base): the base dispatch would send, the one most likely to arrive in time, "
        "arrives within T. P(any base): at least one base would, were all to set off at "
        "once; the ensemble's members are equally likely scenarios of the city, and the "
        "bases' travel times independent given the scenario."
        + (" Synthetic data." if ctx.synthetic else "")
    )
    table = coverage.base_table(demand)
    st.dataframe(
        table[["name", "label", "zones", "demand_share", "p_best_served"]],
        hide_index=True,
        key=f"{key}_bases_table",
        width="stretch",
        column_config={
            "name": "base",
            "label": "zone",
            "zones": st.column_config.NumberColumn(
                "zones served", help="Zones it is the best base of."
            ),
            "demand_share": st.column_config.NumberColumn("demand served", format="percent"),
            "p_best_served": st.column_config.ProgressColumn(
                _label("best", t) + " there", min_value=0.0, max_value=1.0, format="percent"
            ),
        },
    )
    stem = f"fleet_{coverage.departure:%Y%m%d_%H%M}_{t:g}min"
    files = (
        ("Coverage CSV", fleet_files.fleet_csv, "csv", "text/csv", stem),
        ("Coverage GeoJSON", fleet_files.fleet_geojson, "geojson", "application/geo+json", stem),
        ("Bases CSV", fleet_files.bases_csv, "csv", "text/csv", f"{stem}_bases"),
        (
            "Bases GeoJSON",
            fleet_files.bases_geojson,
            "geojson",
            "application/geo+json",
            f"{stem}_bases",
        ),
    )
    for column, (label, write, suffix, mime, name) in zip(st.columns(4), files, strict=True):
        column.download_button(
            label,
            write(coverage, demand, synthetic=ctx.synthetic),
            file_name=f"{name}.{suffix}",
            mime=mime,
            key=f"{key}_{label.lower().replace(' ', '_')}",
            width="stretch",
        )


# --------------------------------------------------------------------- one more base


def _signature(ctx: ModelContext, coverage: fleet.FleetCoverage, demand, objective: str) -> tuple:
    """What a ranking depends on: a new one is needed when any of it changes (the model,
    its time zone and the map's zones: the context's fingerprint)."""
    bases = coverage.bases
    return (
        ctx.fingerprint,
        tuple(zip(bases["name"], bases["lat"], bases["lon"], bases["zone"], strict=True)),
        coverage.departure.isoformat(),
        coverage.threshold_min,
        demand.tobytes(),
        objective,
    )


def _current_ranking(key: str, ctx: ModelContext, coverage, demand) -> pd.DataFrame | None:
    """The last ranking if it was made for these bases, time, threshold, demand, objective."""
    objective = st.session_state.get(f"{key}_objective", "any")
    return kept(f"{key}_ranking", _signature(ctx, coverage, demand, objective))


def _rank(key: str, ctx: ModelContext, coverage, demand) -> None:
    objective = st.session_state.get(f"{key}_objective", "any")
    with st.spinner(f"Trying one more base in each of {len(ctx.area.grid):,} zones"):
        ranking = fleet.rank_new_base(
            ctx.model, ctx.area, coverage, demand, objective=objective, top=TOP_CANDIDATES
        )
    keep(f"{key}_ranking", _signature(ctx, coverage, demand, objective), ranking)


def _ask_rank(key: str) -> None:
    st.session_state[f"{key}_rank_asked"] = True


def _one_more_base(key: str, ctx: ModelContext, coverage, demand, ranking) -> None:
    st.subheader("Where should one more base go?")
    st.session_state.setdefault(f"{key}_objective", "any")
    objective = st.radio(
        "Rank candidate zones by",
        list(OBJECTIVE_LABELS),
        format_func=OBJECTIVE_LABELS.get,
        key=f"{key}_objective",
        horizontal=True,
        help="Any base: also values a second base near zones already reached (a backup). "
        "Best base: a new base counts only where it beats the best one.",
    )
    st.button(
        "Rank the zones for one more base",
        key=f"{key}_rank",
        type="primary",
        on_click=_ask_rank,
        args=(key,),
    )
    if ranking is None:
        st.caption(
            "Every zone without a base is tried as the site of one more base (at its point); "
            "the zones are ranked by how much it raises the demand-weighted coverage."
        )
        return
    t = coverage.threshold_min
    top = ranking.iloc[0]
    chosen = "any" if objective == "any" else "best"
    before, after = float(top[f"{chosen}_before"]), float(top[f"{chosen}_after"])
    st.metric(
        f"{_label(chosen, t)} with a base at {plain_markdown(top['label'])}",
        f"{100 * after:.1f} %",
        f"{100 * (after - before):+.1f} points (from {100 * before:.1f} %)",
    )
    shown = ranking[
        ["rank", "label", "any_before", "any_after", "any_gain", "best_after", "best_gain"]
    ]
    st.dataframe(
        shown.assign(any_gain=100 * shown["any_gain"], best_gain=100 * shown["best_gain"]),
        hide_index=True,
        key=f"{key}_candidates",
        width="stretch",
        column_config={
            "label": "zone",
            "any_before": st.column_config.NumberColumn(
                _label("any", t) + " now", format="percent"
            ),
            "any_after": st.column_config.NumberColumn(
                _label("any", t) + " after", format="percent"
            ),
            "any_gain": st.column_config.NumberColumn("gain (points)", format="%.2f"),
            "best_after": st.column_config.NumberColumn(
                _label("best", t) + " after", format="percent"
            ),
            "best_gain": st.column_config.NumberColumn("gain in P(best) (points)", format="%.2f"),
        },
    )
    stem = f"fleet_{coverage.departure:%Y%m%d_%H%M}_{t:g}min_candidates"
    left, right = st.columns(2)
    left.download_button(
        "Candidates CSV",
        fleet_files.candidates_csv(ranking, coverage, objective, synthetic=ctx.synthetic),
        file_name=f"{stem}.csv",
        mime="text/csv",
        key=f"{key}_candidates_csv",
        width="stretch",
    )
    right.download_button(
        "Candidates GeoJSON",
        fleet_files.candidates_geojson(
            ranking, coverage, objective, ctx.area, synthetic=ctx.synthetic
        ),
        file_name=f"{stem}.geojson",
        mime="application/geo+json",
        key=f"{key}_candidates_geojson",
        width="stretch",
    )
    st.caption(
        "Coverage: the demand-weighted mean of the probability over the zones, without "
        "and with one more base at the zone's point. Adding the top zone and ranking "
        "again places several bases one at a time (the greedy heuristic of maximal "
        "covering location)." + (" Synthetic data." if ctx.synthetic else "")
    )
