"""Plan page, what changed: two versions of the model store side by side, with P(slower).

Every number comes from :mod:`vrvm.services.planning.compare` (the same service as
``vrvm compare``); this view picks the two versions (A, before: by default the active
version's parent; B, after: by default the active one), loads them (cached by version,
:func:`version_model`), and compares them for one trip, a base's reach over the map's
zones, or a matrix of zones. With one version in the store it says how to make a second.
Models that cannot be compared (other time zones, zones outside a training area) are
said in one message.

State keys (all prefixed with the section's ``key``):

``{key}_a``, ``{key}_b``   the versions compared (A before, B after)
``{key}_mode``             ``"trip"``, ``"reach"`` or ``"matrix"``
``{key}_trip_when``, ``{key}_trip_threshold``  departure and T (:mod:`app_ui.trip_controls`)
``{key}_od``               the trip's :class:`~vrvm.services.map.places.ODState`, with
                           :mod:`app_ui.od_picker`'s keys ``{key}_od_*``
``{key}_base``             the base's ODState (its origin), ``{key}_base_map_<zones>`` its
                           clickable map, ``{key}_base_place`` the zone list
``{key}_metric``           what the reach map is coloured by
``{key}_origins``, ``{key}_dests``  the matrix's zones (first visit: the busiest)
``{key}_reach_csv``, ``{key}_csv``, ``{key}_parquet``  the downloads
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from app_ui import maps, od_picker, trip_controls
from app_ui.context import ModelContext
from app_ui.plan import matrix_view
from vrvm import ModelFormatError, TravelTimeModel
from vrvm.services.answers import matrix, schedule
from vrvm.services.display.colours import ORIGIN_RGB, rgba
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.display.text import plain_markdown
from vrvm.services.map import places
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import ODState, Place
from vrvm.services.planning import compare
from vrvm.services.versions import models

MODES = {
    "trip": ":material/route: A trip",
    "reach": ":material/local_hospital: Reach from a base",
    "matrix": ":material/grid_on: Matrix",
}
METRICS = {
    "median": "Change of the median",
    "probability": "Change of P(within T)",
    "slower": "P(slower under B)",
}
COMPARE_MAX_PAIRS = matrix.DASHBOARD_MAX_PAIRS // 10
"""Most pairs the dashboard compares: a compared pair costs about ten plain answers (the
same share of the matrix limit as ``POST /v1/compare`` allows)."""
DEFAULT_ZONES = 5
INDEPENDENCE = (
    "P(slower) compares A's and B's answers for the same trip as two independent travel "
    "times (two beliefs about one trip, not two trips): read it as how far B's "
    "distribution has moved, not as a forecast of one trip."
)
ONE_VERSION = (
    "The model store holds one version, so there is nothing to compare yet. Make a second: "
    "retrain on new or more trips on the **Retrain & publish** page, or run `vrvm train` "
    "on the trips of another period and publish the model into this data home; then "
    "compare the two versions here (before: A, after: B)."
)


# ---------------------------------------------------------------------------- versions


@st.cache_resource(show_spinner="Loading a model version", max_entries=4)
def version_model(home: str, version: int, created: str) -> TravelTimeModel:
    """A committed version's model, loaded once per version (``created`` tells a version
    from another one that reused its number after the store was cleared)."""
    del created  # part of the cache key
    return models.load_version(Path(home), version)


def _versions(ctx: ModelContext) -> list[dict]:
    """The store's committed versions, newest first
    (:func:`~vrvm.services.versions.models.version_records`)."""
    return models.version_records(ctx.home)


def _option_label(record: dict) -> str:
    state = f" · {record['state']}" if record["state"] else ""
    return f"v{record['version']} · {record['name']}{state}"


def _defaults(key: str, ctx: ModelContext, listing: list[dict]) -> None:
    """A: the active version's parent (else the newest other version); B: the active."""
    numbers = [r["version"] for r in listing]
    parent = next((r["parent"] for r in listing if r["version"] == ctx.version), None)
    others = [n for n in numbers if n != ctx.version]
    before = parent if parent in others else (others[0] if others else ctx.version)
    if st.session_state.get(f"{key}_a") not in numbers:  # first visit, or pruned
        st.session_state[f"{key}_a"] = before
    if st.session_state.get(f"{key}_b") not in numbers:
        st.session_state[f"{key}_b"] = ctx.version if ctx.version in numbers else numbers[0]


def _model(ctx: ModelContext, created: str, version: int) -> TravelTimeModel:
    if version == ctx.version:
        return ctx.model  # the page's own cached object
    return version_model(str(ctx.home), version, created)


def _pick_versions(key: str, ctx: ModelContext, listing: list[dict]):
    """The two pickers; the versions (each with its commit time, so that a number reused
    after the store was cleared is another cache entry) and the chosen models (None when
    they cannot be loaded)."""
    _defaults(key, ctx, listing)
    labels = {r["version"]: _option_label(r) for r in listing}
    created = {r["version"]: r["created"] for r in listing}
    left, right = st.columns(2)
    a = left.selectbox("Before (A)", list(labels), format_func=labels.get, key=f"{key}_a")
    b = right.selectbox("After (B)", list(labels), format_func=labels.get, key=f"{key}_b")
    versions = ((a, created[a]), (b, created[b]))
    try:
        model_a, model_b = _model(ctx, created[a], a), _model(ctx, created[b], b)
    except (ModelFormatError, ValueError, OSError) as exc:
        st.error(plain_markdown(f"A model version cannot be loaded: {exc}"))
        return versions, None, None
    left.caption(plain_markdown(models.model_caption(a, model_a)))
    right.caption(plain_markdown(models.model_caption(b, model_b)))
    if a == b:
        st.info(
            "A and B are the same version: every P(slower) is 50 % and nothing changed. "
            "Choose another version for A or B.",
            icon=":material/compare_arrows:",
        )
    return versions, model_a, model_b


# ---------------------------------------------------------------------------- numbers


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _signed(seconds: float) -> str:
    return f"{seconds / 60:+.1f} min"


def change_sentence(row: pd.Series) -> str:
    """The change of the median in one line (Markdown), with the members' interval."""
    verdict = "within" if bool(row["within_uncertainty"]) else "beyond"
    return (
        f"Median **{_signed(row['median_change_s'])}** under B (90 % from the members: "
        f"{_signed(row['median_change_lower90_s'])} to "
        f"{_signed(row['median_change_upper90_s'])}): **{verdict} the models' own "
        "uncertainty**"
    )


# -------------------------------------------------------------------------------- trip


def _show_trip(key: str, ctx: ModelContext, model_a, model_b) -> None:
    od = f"{key}_od"
    if od not in st.session_state:
        try:
            od_picker.set_state(od, ODState(*schedule.default_pair(ctx.area)))
        except ValueError:  # fewer than two zones: the user picks them
            od_picker.set_state(od, ODState())
    od_picker.handle_map_event(od, ctx.area)
    map_column, control_column = st.columns([5, 2], gap="medium")
    with control_column:
        state = od_picker.show_controls(od, ctx.area)
        departure, threshold_min = trip_controls.show(f"{key}_trip", ctx.model.tz_)
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
    threshold_s = 60.0 * threshold_min
    try:
        table = compare.compare_trip(
            model_a, model_b, state.origin, state.dest, departure, threshold_s=threshold_s
        )
    except ValueError as exc:
        st.error(plain_markdown(exc), icon=":material/error:")
        return
    row = table.iloc[0]
    within = compare.compare_columns(threshold_s)[-3:]
    t = f"{threshold_min:g} min"
    for side, column in zip("ab", st.columns(2, gap="medium"), strict=True):
        name = side.upper()
        cells = column.columns(3)
        cells[0].metric(f"{name} · median", _minutes(row[f"median_{side}_s"]))
        cells[1].metric(
            f"{name} · 90 % (min)",
            f"{row[f'lower90_{side}_s'] / 60:.0f}-{row[f'upper90_{side}_s'] / 60:.0f}",
        )
        cells[2].metric(f"{name} · P(≤ {t})", f"{100 * row[within[0 if side == 'a' else 1]]:.0f} %")
    st.markdown(change_sentence(row))
    st.markdown(
        f"P(slower under B) = **{100 * row['p_slower']:.0f} %** · T\\_B \u2212 T\\_A, 90 %: "
        f"{row['diff_lower90_s'] / 60:+.0f} to {row['diff_upper90_s'] / 60:+.0f} min"
    )
    st.caption(
        f"From {plain_markdown(state.origin.label)} to {plain_markdown(state.dest.label)}, "
        f"leaving {pd.Timestamp(departure):%Y-%m-%d %H:%M}. The members' interval is the "
        "change of the median that re-fitting both models on other trips could give "
        "(Welch's, from the ensemble members' medians)."
        + (" Synthetic data." if ctx.synthetic else "")
    )


# ------------------------------------------------------------------------------- reach


@st.cache_data(show_spinner=False, max_entries=8)
def _reach(
    fingerprint: tuple,
    versions: tuple,
    origin: tuple,
    departure: pd.Timestamp,
    threshold_s: float,
    _model_a: TravelTimeModel,
    _model_b: TravelTimeModel,
    _area: ServiceArea,
    _place: Place,
) -> pd.DataFrame:
    del fingerprint, versions, origin  # the cache key of _model_a, _model_b, _area, _place
    return compare.compare_reach(
        _model_a, _model_b, _area, _place, departure, threshold_s=threshold_s
    )


def _show_reach(key: str, ctx: ModelContext, versions, model_a, model_b) -> None:
    area = ctx.area
    place = od_picker.place_state(f"{key}_base", area).origin
    map_column, control_column = st.columns([5, 2], gap="medium")
    od_picker.place_list(control_column, "Base", f"{key}_base", area, place)
    st.session_state.setdefault(f"{key}_metric", "median")
    with control_column:
        metric = st.radio(
            "Colour zones by", list(METRICS), format_func=METRICS.get, key=f"{key}_metric"
        )
        departure, threshold_min = trip_controls.show(f"{key}_trip", ctx.model.tz_)
    threshold_s = 60.0 * threshold_min
    try:
        with st.spinner(f"Comparing the trips from the base to {len(area.grid):,} zones"):
            table = _reach(
                ctx.fingerprint,
                versions,
                (place.zone, place.lat, place.lon, place.label),
                departure,
                threshold_s,
                model_a,
                model_b,
                area,
                place,
            )
        fill, tips, legend = compare.compare_map(table, metric, threshold_s)
    except ValueError as exc:
        map_column.error(plain_markdown(exc), icon=":material/error:")
        return
    t = f"{threshold_min:g} min"
    marker = pd.DataFrame(
        {
            "lat": [place.lat],
            "lon": [place.lon],
            "name": [""],
            "label": [place.label],
            "color": [rgba(ORIGIN_RGB, 255)],
        }
    )
    map_column.markdown(
        "<small>The dot is the base. Click a zone to move it; hover a zone for both "
        "answers.</small>",
        unsafe_allow_html=True,
    )
    od_picker.draw_map(
        f"{key}_base",  # a new chart when the zones change
        area,
        ODState(),
        fill=fill,
        tips=tips,
        markers=marker,
        height=520,
        container=map_column,
    )
    title = METRICS[metric].replace("T)", f"{t})") + f" from {place.label}"
    map_column.markdown(maps.legend_html(legend, title), unsafe_allow_html=True)
    summary = compare.compare_summary(table)
    cols = st.columns(4)
    cols[0].metric(
        "Zones slower under B",
        f"{summary['n_slower']:,}",
        help=f"P(slower under B) above {100 * summary['confident']:.0f} %",
    )
    cols[1].metric(
        "Zones faster under B",
        f"{summary['n_faster']:,}",
        help=f"P(slower under B) below {100 * (1 - summary['confident']):.0f} %",
    )
    cols[2].metric("Median change of the median", _signed(summary["median_change_s"]))
    cols[3].metric(
        "Within uncertainty",
        f"{100 * summary['share_within_uncertainty']:.0f} %",
        help="Zones whose change of the median the members' spread could give (faded).",
    )
    out = table.drop(columns=["boundary", "geometry"], errors="ignore")
    st.download_button(
        "Download the comparison (CSV)",
        safe_cells(out).to_csv(index=False).encode("utf-8"),
        file_name=f"compare_v{versions[0][0]}_v{versions[1][0]}_reach_"
        f"{pd.Timestamp(departure):%Y%m%d_%H%M}.csv",
        mime="text/csv",
        key=f"{key}_reach_csv",
    )
    st.caption(
        f"Trips from {plain_markdown(place.label)} to every zone's point, leaving "
        f"{pd.Timestamp(departure):%Y-%m-%d %H:%M}, under A and B. Red: worse under B, "
        "blue: better; faded zones changed within the models' own uncertainty."
        + (" Synthetic data." if ctx.synthetic else "")
    )


# ------------------------------------------------------------------------------ matrix


def _zones(key: str, label: str, area: ServiceArea) -> list[str]:
    zones = area.grid["zone"].astype(str).tolist()
    labels = dict(zip(zones, area.grid["label"], strict=True))
    before = st.session_state.get(key)
    known = [z for z in before or [] if z in labels]  # the zones change with the zone file
    fresh = before is None or (before and not known)
    st.session_state[key] = places.busiest_zones(area, DEFAULT_ZONES) if fresh else known
    return st.multiselect(label, zones, format_func=labels.get, key=key)


@st.cache_data(show_spinner="Comparing every pair", max_entries=8)
def _matrix(
    fingerprint: tuple,
    versions: tuple,
    origins: tuple[str, ...],
    destinations: tuple[str, ...],
    departure: pd.Timestamp,
    threshold_s: float,
    _model_a: TravelTimeModel,
    _model_b: TravelTimeModel,
    _area: ServiceArea,
) -> pd.DataFrame:
    del fingerprint, versions  # the cache key of _model_a, _model_b and _area
    return compare.compare_matrix(
        _model_a,
        _model_b,
        matrix.zone_points(_area, origins),
        matrix.zone_points(_area, destinations),
        departure,
        threshold_s=threshold_s,
        max_pairs=COMPARE_MAX_PAIRS,
    )


def compare_command(ref_a: str, ref_b: str, departure, threshold_s: float) -> str:
    """The ``vrvm compare`` command for the same comparison (origins.csv, destinations.csv)."""
    return (
        f"vrvm compare {ref_a} {ref_b} --origins origins.csv --destinations destinations.csv "
        f'--depart "{pd.Timestamp(departure):%Y-%m-%d %H:%M}" --within {threshold_s:g}s '
        "--out changes.parquet"
    )


def preview(frame: pd.DataFrame, area: ServiceArea, threshold_s: float) -> pd.DataFrame:
    """The compared pairs as shown: zone labels, minutes and probabilities."""
    labels = dict(zip(area.grid["zone"].astype(str), area.grid["label"], strict=True))
    a, b, _ = compare.compare_columns(threshold_s)[-3:]
    t = f"{threshold_s / 60:g} min"
    return pd.DataFrame(
        {
            "origin": frame["origin"].astype(str).map(lambda z: labels.get(z, z)),
            "destination": frame["destination"].astype(str).map(lambda z: labels.get(z, z)),
            "median A (min)": frame["median_a_s"] / 60,
            "median B (min)": frame["median_b_s"] / 60,
            "change (min)": frame["median_change_s"] / 60,
            "within uncertainty": frame["within_uncertainty"].astype(bool),
            "P(slower under B)": frame["p_slower"],
            f"P(≤ {t}) A": frame[a],
            f"P(≤ {t}) B": frame[b],
        }
    )


def _show_matrix(key: str, ctx: ModelContext, versions, model_a, model_b) -> None:
    area = ctx.area
    left, right = st.columns(2)
    with left:
        origins = _zones(f"{key}_origins", "Origin zones", area)
    with right:
        destinations = _zones(f"{key}_dests", "Destination zones", area)
    with st.columns(2)[0]:
        departure, threshold_min = trip_controls.show(f"{key}_trip", ctx.model.tz_)
    threshold_s = 60.0 * threshold_min
    if not origins or not destinations:
        st.info("Choose at least one origin zone and one destination zone.")
        return
    pairs = len(origins) * len(destinations)
    if pairs > COMPARE_MAX_PAIRS:
        st.warning(
            f"{len(origins):,} origins by {len(destinations):,} destinations make {pairs:,} "
            f"pairs, more than the {COMPARE_MAX_PAIRS:,} the dashboard compares. Choose "
            "fewer zones, or download the two zone lists and run the command below: it "
            "writes every pair to a file in batches.",
            icon=":material/grid_off:",
        )
        refs = [matrix.model_reference(ctx.home, v) for v, _ in versions]
        st.code(compare_command(*refs, departure, threshold_s), language="bash")
        st.caption(
            "`$VRVM_HOME` is the dashboard's data home (`./.vrvm` when it is not set); "
            "times are in the models' time zone."
        )
        cols = st.columns(2)
        for column, name, zones in (
            (cols[0], "origins", origins),
            (cols[1], "destinations", destinations),
        ):
            column.download_button(
                f"Download {name}.csv",
                matrix.points_csv(matrix.zone_points(area, zones)),
                file_name=f"{name}.csv",
                mime="text/csv",
                key=f"{key}_{name}_csv",
                width="stretch",
            )
        return
    try:
        frame = _matrix(
            ctx.fingerprint,
            versions,
            tuple(origins),
            tuple(destinations),
            departure,
            threshold_s,
            model_a,
            model_b,
            area,
        )
    except ValueError as exc:
        st.error(plain_markdown(exc), icon=":material/error:")
        return
    summary = compare.compare_summary(frame)
    cols = st.columns(4)
    cols[0].metric("Pairs", f"{summary['n_pairs']:,}")
    cols[1].metric("Slower under B", f"{summary['n_slower']:,}")
    cols[2].metric("Median change of the median", _signed(summary["median_change_s"]))
    cols[3].metric(
        "Within uncertainty",
        f"{100 * summary['share_within_uncertainty']:.0f} %",
        help="Pairs whose change of the median the members' spread could give.",
    )
    shown = preview(frame, area, threshold_s)
    percent = st.column_config.NumberColumn(format="percent")
    minutes = st.column_config.NumberColumn(format="%.1f")
    config = {c: percent if c.startswith("P(") else minutes for c in shown.columns[2:]}
    config["within uncertainty"] = st.column_config.CheckboxColumn()
    st.dataframe(shown, hide_index=True, height=300, key=f"{key}_table", column_config=config)
    stem = f"compare_v{versions[0][0]}_v{versions[1][0]}_{pd.Timestamp(departure):%Y%m%d_%H%M}"
    matrix_view.pair_downloads(key, frame, stem)
    st.caption(
        "Every pair of the chosen zones at one departure, under A and B; the downloads hold "
        "the same columns as `vrvm compare` (times in seconds)."
        + (" Synthetic data." if ctx.synthetic else "")
    )


# -------------------------------------------------------------------------------- show


def show(key: str, ctx: ModelContext) -> None:
    """The "what changed" section of the Plan page."""
    try:
        listing = _versions(ctx)
    except (ModelFormatError, OSError) as exc:
        st.error(plain_markdown(f"The model store cannot be read: {exc}"))
        return
    if len(listing) < 2:
        st.info(ONE_VERSION, icon=":material/compare_arrows:")
        return
    versions, model_a, model_b = _pick_versions(key, ctx, listing)
    st.caption(INDEPENDENCE)
    if model_a is None:
        return
    st.session_state.setdefault(f"{key}_mode", "trip")
    mode = st.segmented_control(
        "Compare", list(MODES), format_func=MODES.get, key=f"{key}_mode", required=True
    )
    if mode == "reach":
        _show_reach(key, ctx, versions, model_a, model_b)
    elif mode == "matrix":
        _show_matrix(key, ctx, versions, model_a, model_b)
    else:
        _show_trip(key, ctx, model_a, model_b)
