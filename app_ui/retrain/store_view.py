"""The trip store: what it holds, adding the synthetic demo trips, deleting every trip.

State keys (prefixed with the component's ``key``): ``{key}_parts`` (the batches
table), ``{key}_demo`` and ``{key}_clear`` (buttons), ``{key}_clear_confirm`` (the box
that must be ticked before deleting). Messages for the next run go to
:func:`app_ui.messages.say`. Every change is made as the signed-in analyst
(``ctx.access``), who the audit log records.
"""

from __future__ import annotations

import streamlit as st

from app_ui import messages
from app_ui.context import ModelContext
from vrvm.services.analyst import store_admin


def show(key: str, ctx: ModelContext) -> int:
    """The store's totals, batches and buttons; returns the number of stored trips."""
    overview = store_admin.store_overview(ctx.home)
    summary = overview.summary
    cols = st.columns(4)
    cols[0].metric("Trips in the store", f"{summary.n_trips:,}")
    cols[1].metric("Batches", summary.n_parts)
    cols[2].metric("Size on disk", f"{summary.size_bytes / 2**20:.1f} MB")
    if overview.days_covered is not None:
        cols[3].metric("Days covered", f"{overview.days_covered:.0f}")
        st.caption(
            f"Trips from {summary.start_min:%Y-%m-%d %H:%M} to {summary.start_max:%Y-%m-%d %H:%M}"
            f" ({summary.tz})."
        )
    else:
        cols[3].metric("Days covered", "-")
        if overview.dateless:
            st.caption("The stored trips have no calendar date: only a weekday and a clock.")
    if summary.synthetic:
        st.caption(":material/science: The store holds synthetic demo trips (Synthetica).")
    if summary.n_parts:
        with st.expander("Batches in the store"):
            st.dataframe(overview.parts, hide_index=True, key=f"{key}_parts", width="stretch")
    left, right = st.columns(2)
    with left:
        if st.button(
            "Add 2,000 synthetic demo trips",
            key=f"{key}_demo",
            help="To try the flow without data of your own (labelled synthetic).",
        ):
            messages.say(store_admin.add_demo_trips(ctx.home, by=ctx.access))
            st.rerun()
    with right, st.popover("Clear the store…", disabled=summary.n_trips == 0):
        st.write(f"Delete all {summary.n_trips:,} stored trips? Models are not affected.")
        sure = st.checkbox(
            f"Yes, delete all {summary.n_trips:,} trips: this cannot be undone",
            key=f"{key}_clear_confirm",
        )
        if st.button(
            "Delete all stored trips", key=f"{key}_clear", type="primary", disabled=not sure
        ):
            messages.say(store_admin.clear_trips(ctx.home, by=ctx.access))
            st.session_state.pop(f"{key}_clear_confirm", None)
            st.rerun()
    return summary.n_trips
