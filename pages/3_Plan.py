"""Plan page: the questions a planner asks of a travel-time distribution.

Arrive by a deadline, fleet coverage from several bases, where to put k bases (proven
optimal sites), a trip with stops (base ->
scene -> hospital), probability isochrones,
origin-destination matrices, what changed between two model versions and where data is
missing; one section at a time, each a view in ``app_ui/`` over a
service in ``vrvm/services/``. Only the chosen section's view is imported and run.
"""

import importlib

import streamlit as st

from app_ui import context, sidebar

KEY = "plan"
SECTIONS = {  # key: (label, view module in app_ui.plan)
    "arrive": (":material/alarm: Arrive by", "arrive_view"),
    "fleet": (":material/local_hospital: Fleet coverage", "fleet_view"),
    "site": (":material/add_location_alt: Where to put k bases", "siting_view"),
    "stops": (":material/route: Trip with stops", "stops_view"),
    "isochrone": (":material/blur_circular: Probability isochrones", "isochrone_view"),
    "matrix": (":material/grid_on: OD matrix", "matrix_view"),
    "compare": (":material/compare_arrows: What changed", "compare_view"),
    "gaps": (":material/help_center: Where data is missing", "gaps_view"),
}

sidebar.page_setup("Plan")
ctx = context.get_context()
context.page_header("Plan with the whole distribution", ctx)
st.session_state.setdefault(f"{KEY}_section", "arrive")
section = st.segmented_control(
    "What do you want to plan?",
    list(SECTIONS),
    format_func=lambda key: SECTIONS[key][0],
    key=f"{KEY}_section",
    required=True,
)
view = importlib.import_module(f"app_ui.plan.{SECTIONS[section][1]}")
view.show(f"{KEY}_{section}", ctx)
