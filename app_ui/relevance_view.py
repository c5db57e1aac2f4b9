"""Relevance vectors: the training trips the ensemble kept, as arcs, curves and a table.

In private mode (``ctx.privacy``) the trips never reach the page: they are shown only
per pair of zones their ends lie in, and only pairs of at least k trips (arcs between
the zones' centres; a table and its download of those pairs, the smaller pairs together
in one last row), and the member and hour filters are not drawn, so that no two views
can be subtracted to single a trip out (:mod:`vrvm.services.map.privacy`).

State keys: ``{key}_members``, ``{key}_hours`` (raw view only), ``{key}_color``.
"""

from __future__ import annotations

import streamlit as st

from app_ui import charts, maps
from app_ui.context import ModelContext, privacy_note
from app_ui.sidebar import basemap_enabled
from vrvm.services.analyst import relevance
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.map import privacy

COLOR_LABELS = {"weight": "|weight|", "width": "kernel width"}


def show(key: str, ctx: ModelContext) -> None:
    table = relevance.relevance_table(ctx.model)
    n_members = len(ctx.model.members_)
    private, k = ctx.privacy.private, ctx.privacy.min_trips
    controls = st.columns([3, 3, 2])
    members, hours = None, None
    if not private:  # filters over aggregates could be subtracted to single out a trip
        members = controls[0].multiselect(
            "Ensemble members",
            list(range(n_members)),
            default=list(range(n_members)),
            key=f"{key}_members",
            format_func=lambda m: f"member {m}",
        )
        hours = controls[1].slider("Departure hour", 0, 23, (0, 23), key=f"{key}_hours")
    colour_by = controls[2].segmented_control(
        "Colour arcs by",
        list(COLOR_LABELS),
        format_func=COLOR_LABELS.get,
        default="weight",
        key=f"{key}_color",
        required=True,
    )
    chosen = relevance.filter_relevance(table, members=members, hours=hours)
    colours, legend = relevance.relevance_colors(chosen, by=colour_by or "weight")
    if private:
        arcs = privacy.relevance_arcs(chosen, ctx.area, min_trips=k)
        colours, legend = relevance.relevance_colors(arcs, by=colour_by or "weight")

    stats = st.columns(4)
    if private:
        stats[0].metric(
            f"Zone pairs of {k}+ trips",
            f"{len(arcs):,}",
            f"{int(arcs['n'].sum()):,} of {len(table):,} trips",
            delta_color="off",
            delta_arrow="off",
        )
    else:
        stats[0].metric(
            "Relevance vectors shown",
            f"{len(chosen):,}",
            f"of {len(table):,}",
            delta_color="off",
            delta_arrow="off",
        )
    stats[1].metric("Members", n_members)
    stats[2].metric(
        "Kernel widths",
        ", ".join(f"{w:.3g}" for w in ctx.model.kernel_widths_),
        help="In units of the standardised features (one standard deviation each).",
    )
    members_frame = relevance.member_table(ctx.model)
    if ctx.model.target == "log":
        stats[3].metric(
            "Noise (median member)",
            f"±{members_frame['noise_pct'].median():.0f} %",
            help=relevance.noise_sentence(ctx.model),
        )
    else:
        stats[3].metric("Noise (median member)", f"{members_frame['noise_std'].median():.0f} s")
    st.caption(relevance.noise_sentence(ctx.model))

    if private:
        deck = maps.zone_arc_deck(arcs, colours, ctx.area, basemap=basemap_enabled())
    else:
        deck = maps.arc_deck(chosen, colours, ctx.area, basemap=basemap_enabled())
    st.pydeck_chart(deck, key=f"{key}_map", height=520)
    st.markdown(
        maps.legend_html(legend, f"Arc colour: {COLOR_LABELS[colour_by or 'weight']}"),
        unsafe_allow_html=True,
    )
    what = (
        "Each arc joins the centres of two zones and stands for the relevance vectors "
        f"(training trips whose kernel columns kept a non-zero weight) between them, "
        f"drawn only where at least {k} trips join the two zones"
        if private
        else "Each arc is a training trip that became a relevance vector: its kernel columns "
        "kept a non-zero weight"
    )
    st.caption(
        f"{what}. |weight| sums the absolute posterior mean weights of the trips' columns "
        "(log-seconds); the width is that of the strongest column."
        + (" Synthetic data." if ctx.synthetic else "")
    )
    privacy_note(ctx)

    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(
            charts.elbo_figure(relevance.elbo_curves(ctx.model)), key=f"{key}_elbo", width="stretch"
        )
    with right:
        st.markdown("**Members**")
        shown_members = members_frame.rename(columns=relevance.member_columns(ctx.model))
        st.dataframe(
            shown_members.round(3), hide_index=True, key=f"{key}_members_table", width="stretch"
        )

    if private:
        st.markdown(f"**Relevance vectors per zone pair (at least {k} trips)**")
        shown = privacy.private_relevance_table(chosen, ctx.area, min_trips=k)
        download = shown
        n_shown = int(shown["trips"].sum())
        st.caption(
            f"{n_shown:,} of {len(chosen):,} relevance-vector trips are shown: one row per "
            f"pair of zones with at least {k} of them, then the trips of the smaller pairs "
            f"together in one row ({privacy.OTHER_PAIRS}) when they are {k} or more. Start "
            "hours are the middle half of the pair's; travel times are quartiles in whole "
            "minutes."
        )
    else:
        st.markdown("**Relevance-vector trips**")
        shown = chosen.drop(columns=["travel_time_s"]).copy()
        shown["start_time"] = shown["start_time"].astype(str)
        download = chosen
    st.dataframe(shown.round(4), hide_index=True, height=300, key=f"{key}_table", width="stretch")
    st.download_button(
        "Download CSV",
        safe_cells(download).to_csv(index=False).encode("utf-8"),
        file_name=f"relevance_vectors_v{ctx.version}{'_zones' if private else ''}.csv",
        mime="text/csv",
        key=f"{key}_csv",
    )
