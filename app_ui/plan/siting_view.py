"""Plan page, where to put k bases: the sites reaching the most demand within T, proven optimal.

Every number comes from :mod:`vrvm.services.planning.siting` (the probabilities, the exact
programme and the greedy answer beside it); the map's colours from
:func:`vrvm.services.planning.coverage.coverage_colors` and its base markers from
:func:`vrvm.services.planning.fleet.base_markers`, as in the fleet section. A solve takes
seconds, so it runs on a button press; the answer is kept with the inputs it was made for
(:func:`app_ui.context.keep`) and shown only while they are the inputs selected, with
those inputs named beside it.

The demand is every zone weighted by an uploaded demand file (read as the fleet
section reads its own, :func:`app_ui.plan.fleet_view.demand_control`) or, without one, by
the training trips starting there (:func:`vrvm.services.planning.fleet.zone_demand`);
the fixed bases are the fleet section's, when it has any and "Keep the fleet section's
bases" is ticked.

State keys (all prefixed with the section's ``key``):

``{key}_question``     ``"k"`` (k bases, most demand) or ``"fewest"`` (fewest bases)
``{key}_k``, ``{key}_p``, ``{key}_q``  k; the probability p and the share q (percent)
``{key}_trip_when``, ``{key}_trip_threshold``  departure and T
``{key}_extra``        extra times of day (``HH:MM``) the probabilities are averaged over
``{key}_where``        ``"all"`` (every zone a candidate) or ``"chosen"``
``{key}_chosen``       the candidate zones' labels
``{key}_keep``         keep the fleet section's bases open
``{key}_demand_upload``, ``{key}_seen``  the demand file and the last one read
``{key}_answer``       the last answer (a result or a message) and the inputs it was made for
``{key}_asked``        the button was pressed: solve on this run
"""

from __future__ import annotations

import datetime as dt

import pandas as pd
import streamlit as st

from app_ui import maps, sidebar, trip_controls
from app_ui.context import ModelContext, keep, kept
from app_ui.plan.fleet_view import demand_control
from vrvm.services.display.colours import DEST_RGB, rgba
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.display.text import plain_markdown
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import ODState
from vrvm.services.planning import fleet, siting
from vrvm.services.planning.coverage import coverage_colors

MAX_K = 10
MAX_PAIRS = 250_000
"""Most (candidate, zone, departure) probabilities one solve on the page predicts: every
zone of the demo model to every zone at one departure (463 x 463, measured 33 s of
prediction and 1.4 s of solving on two busy cores); above it the page gives the command."""
QUESTIONS = {
    "k": "Most demand reached by k bases",
    "fewest": "Fewest bases reaching demand with probability p",
}
MAX_DEPARTURES = 24
TIMES = [f"{h:02d}:{m:02d}" for h in range(24) for m in (0, 30)]


def _fleet_bases(key: str, area: ServiceArea) -> pd.DataFrame:
    """The fleet section's bases (its ``_bases`` state), located on these zones."""
    found = st.session_state.get(f"{key.rsplit('_', 1)[0]}_fleet_bases")
    if found is None or not len(found):
        return fleet.bases_from_zones(area, [])
    located, _ = fleet.locate_bases(area, found)
    return located


def _departures(when: pd.Timestamp, extra: list[str]) -> tuple[pd.Timestamp, ...]:
    """The departure and the extra times of day on the same date (sorted, distinct)."""
    stamps = {when}
    for text in extra:
        clock = dt.time.fromisoformat(text)
        stamps.add(when.normalize() + pd.Timedelta(hours=clock.hour, minutes=clock.minute))
    return tuple(sorted(stamps))


def _ask(key: str) -> None:
    st.session_state[f"{key}_asked"] = True


def _inputs(key: str, ctx: ModelContext):
    """The controls; returns what an answer depends on, as a hashable tuple."""
    area = ctx.area
    st.session_state.setdefault(f"{key}_question", "k")
    question = st.radio(
        "Question", list(QUESTIONS), format_func=QUESTIONS.get, key=f"{key}_question"
    )
    when, threshold = trip_controls.show(f"{key}_trip", ctx.model.tz_, support=ctx.area.support)
    extra = st.multiselect(
        "Also average over these times of day",
        TIMES,
        key=f"{key}_extra",
        max_selections=MAX_DEPARTURES - 1,
        help="The probabilities are averaged over the departure and these times, same date.",
    )
    if question == "k":
        st.session_state.setdefault(f"{key}_k", 3)
        k = int(st.number_input("Number of bases k", 1, MAX_K, step=1, key=f"{key}_k"))
        target = ("k", k)
    else:
        st.session_state.setdefault(f"{key}_p", 0.8)
        st.session_state.setdefault(f"{key}_q", 100)
        p = float(st.number_input("Probability at least p", 0.01, 1.0, step=0.05, key=f"{key}_p"))
        q = int(st.slider("Share of demand q (%)", 1, 100, key=f"{key}_q"))
        target = ("fewest", p, q / 100.0)
    st.session_state.setdefault(f"{key}_where", "all")
    where = st.radio(
        "Candidate sites",
        ["all", "chosen"],
        format_func={"all": "Every zone", "chosen": "Zones I choose"}.get,
        key=f"{key}_where",
        horizontal=True,
    )
    chosen = ()
    if where == "chosen":
        chosen = tuple(
            st.multiselect("Candidate zones", area.labels, key=f"{key}_chosen", placeholder="Type")
        )
    bases = _fleet_bases(key, area)
    keep_fixed = False
    if len(bases):
        st.session_state.setdefault(f"{key}_keep", True)
        keep_fixed = st.checkbox(
            f"Keep the fleet section's {len(bases)} bases open (counted in k)",
            key=f"{key}_keep",
        )
    fixed = bases if keep_fixed else bases.iloc[:0]
    fixed_key = tuple(zip(fixed["name"], fixed["lat"], fixed["lon"], strict=True))
    demand, source, file_id = demand_control(
        key, ctx, used_in="the share of demand each set of bases reaches"
    )
    departures = _departures(when, extra)
    demand_key = (source, file_id)
    inputs = (ctx.fingerprint, target, threshold, departures, where, chosen, fixed_key, demand_key)
    return inputs, fixed, demand


def _solve(ctx: ModelContext, inputs, fixed: pd.DataFrame, weights):
    """The service's answer for these inputs (``weights``: the demand per zone), or the
    message of its refusal."""
    _, target, threshold, departures, where, chosen, _, _ = inputs
    area = ctx.area
    label_to_zone = dict(zip(area.grid["label"], area.grid["zone"].astype(str), strict=True))
    zones = None if where == "all" else [label_to_zone[label] for label in chosen]
    try:
        if zones is not None and not zones:
            raise ValueError("choose at least one candidate zone, or take every zone")
        candidates = siting.area_points(area, zones)
        demand = siting.area_points(area, what="demand", demand=weights)
        pairs = (len(candidates) + len(fixed)) * len(demand) * len(departures)
        if pairs > MAX_PAIRS:
            return (
                f"{pairs:,} probabilities to predict is more than this page's limit of "
                f"{MAX_PAIRS:,}: choose fewer candidates or departures, or run `vrvm site` "
                "(see its --help) on the command line."
            )
        fixed_points = None
        if len(fixed):
            fixed_points = pd.DataFrame(
                {"id": fixed["name"].astype(str), "lat": fixed["lat"], "lon": fixed["lon"]}
            )
        with st.spinner(f"Predicting {pairs:,} probabilities and solving"):
            if target[0] == "k":
                return siting.site_bases(
                    ctx.model,
                    candidates,
                    demand,
                    target[1],
                    threshold * 60.0,
                    departures,
                    fixed=fixed_points,
                    time_limit_s=60.0,
                )
            return siting.fewest_bases(
                ctx.model,
                candidates,
                demand,
                threshold * 60.0,
                departures,
                target[1],
                share=target[2],
                fixed=fixed_points,
                time_limit_s=60.0,
            )
    except siting.InfeasibleTarget as exc:
        names = _labels(area, exc.unreachable)
        return (
            f"No set of bases reaches {100 * target[2]:g} % of the demand within "
            f"{threshold:g} min with probability {target[1]:g}: no candidate reaches these "
            f"zones with that probability: {', '.join(names[:20])}"
            + (" ..." if len(names) > 20 else "")
        )
    except ValueError as exc:
        return str(exc)


def _labels(area: ServiceArea, ids) -> list[str]:
    """Zone labels of ids (an id that is no zone, a fixed base's name, as it is)."""
    names = dict(zip(area.grid["zone"].astype(str), area.grid["label"].astype(str), strict=True))
    return [names.get(str(i), str(i)) for i in ids]


def _described(inputs, fixed: pd.DataFrame) -> str:
    _, target, threshold, departures, where, chosen, _, (source, file_id) = inputs
    times = ", ".join(f"{d:%H:%M}" for d in departures)
    asked = (
        f"{target[1]} bases"
        if target[0] == "k"
        else f"fewest bases, p ≥ {target[1]:g}, q = {100 * target[2]:g} %"
    )
    sites = "every zone" if where == "all" else f"{len(chosen)} chosen zones"
    return (
        f"For: {asked}; T = {threshold:g} min; departing {departures[0]:%Y-%m-%d} at {times}; "
        f"candidates: {sites}; {len(fixed)} fixed bases; demand: "
        + (f"{source} ({file_id[0]})." if file_id else f"{source}.")
    )


def show(key: str, ctx: ModelContext) -> None:
    """The siting section of the Plan page."""
    map_column, control_column = st.columns([5, 2], gap="medium")
    with control_column:
        inputs, fixed, weights = _inputs(key, ctx)
        st.button(
            "Find the best sites", key=f"{key}_solve", type="primary", on_click=_ask, args=(key,)
        )
    if st.session_state.pop(f"{key}_asked", False):
        keep(f"{key}_answer", inputs, _solve(ctx, inputs, fixed, weights))
    answer = kept(f"{key}_answer", inputs)  # forgotten when any input changed
    result = answer if isinstance(answer, siting.SitingResult) else None
    with map_column:
        _map(key, ctx, result, fixed)
    st.caption(plain_markdown(_described(inputs, fixed)))
    if answer is None:
        st.info(
            "Press **Find the best sites**: every candidate's probability of reaching each "
            "zone within T is predicted, and the exact programme solved (seconds)."
        )
        return
    if result is None:
        st.error(plain_markdown(answer), icon=":material/error:")
        return
    _result(key, ctx, result)


def _map(key: str, ctx: ModelContext, result, fixed: pd.DataFrame) -> None:
    area = ctx.area
    fill = tips = None
    markers = fleet.base_markers(fixed)
    legend = None
    if result is not None:
        table = result.demand_table()  # every zone, in the area's order
        fill, legend = coverage_colors(
            pd.DataFrame({"prob_within": table["probability"].to_numpy()}), "probability"
        )
        names = _labels(area, table["site"])
        t = f"{result.within_s / 60:g} min"
        tips = [
            f"P(best site ≤ {t}) = {100 * p:.0f} % ({plain_markdown(n)})"
            for p, n in zip(table["probability"], names, strict=True)
        ]
        new = result.sites[~result.sites["fixed"]]
        extra = pd.DataFrame(
            {
                "lat": new["lat"].to_numpy(float),
                "lon": new["lon"].to_numpy(float),
                "name": ["+"] * len(new),
                "label": _labels(area, new["id"]),
                "color": [rgba(DEST_RGB, 255)] * len(new),
            }
        )
        markers = pd.concat([markers, extra], ignore_index=True)
    st.markdown(
        "<small>Numbered markers are the fleet section's bases kept open; + marks a chosen "
        "new site.</small>",
        unsafe_allow_html=True,
    )
    deck = maps.zone_deck(
        area, ODState(), fill=fill, tips=tips, basemap=sidebar.basemap_enabled(), markers=markers
    )
    st.pydeck_chart(deck, key=f"{key}_map", height=520)
    if legend is not None:
        st.markdown(
            maps.legend_html(legend, f"P(best site within {result.within_s / 60:g} min)"),
            unsafe_allow_html=True,
        )


def _result(key: str, ctx: ModelContext, result: siting.SitingResult) -> None:
    t = f"{result.within_s / 60:g} min"
    proven = (
        "proven optimal by HiGHS"
        if result.status in ("optimal", "no choice")
        else f"best found ({result.status}); proven bound {result.bound:.4f}"
    )
    cols = st.columns(3)
    if result.problem == "coverage":
        cols[0].metric(f"Optimal: demand reached within {t}", f"{100 * result.objective:.1f} %")
        cols[1].metric("Greedy", f"{100 * result.greedy_objective:.1f} %")
        cols[2].metric("Greedy is worse by", f"{100 * result.gap:.2f} %")
        st.caption(
            f"Maximised: the demand-weighted probability that the best of the "
            f"{len(result.sites)} bases reaches each zone within {t}, averaged over "
            f"{len(result.departures)} departure(s); dispatch sends the best open base, one "
            f"vehicle per base, always available. Solver: {proven}. Greedy adds the site "
            "with the largest gain, one at a time." + (" Synthetic data." if ctx.synthetic else "")
        )
    else:
        cols[0].metric("Fewest bases", f"{int(result.objective)}")
        cols[1].metric("Greedy needs", f"{int(result.greedy_objective)}")
        cols[2].metric(
            f"Demand reached with p ≥ {result.min_probability:g}",
            f"{100 * result.covered_share:.1f} %",
        )
        st.caption(
            f"Minimised: the number of bases such that {100 * result.share:g} % of the demand "
            f"is reached within {t} with probability at least {result.min_probability:g} by "
            f"some base. Solver: {proven}." + (" Synthetic data." if ctx.synthetic else "")
        )
    sites = result.sites.assign(zone=_labels(ctx.area, result.sites["id"]))
    st.dataframe(
        sites[["zone", "id", "fixed", "zones", "demand_share", "p_served"]],
        hide_index=True,
        key=f"{key}_sites",
        width="stretch",
        column_config={
            "zone": "site",
            "zones": st.column_config.NumberColumn("zones served"),
            "demand_share": st.column_config.NumberColumn("demand served", format="percent"),
            "p_served": st.column_config.ProgressColumn(
                f"P(within {t}) there", min_value=0.0, max_value=1.0, format="percent"
            ),
        },
    )
    stamp = f"{result.departures[0]:%Y%m%d_%H%M}"
    st.download_button(
        "Sites CSV (id, lat, lon)",
        safe_cells(result.sites[["id", "lat", "lon"]]).to_csv(index=False).encode(),
        file_name=f"sites_{stamp}_{result.within_s / 60:g}min.csv",
        mime="text/csv",
        key=f"{key}_csv",
    )
