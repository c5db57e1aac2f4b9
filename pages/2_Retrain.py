"""Retrain page: add trips, check what was accepted, train, compare, publish, export.

Analysts only when a sign-in is configured (docs/security.md): a viewer sees how to sign
in and nothing else of the page; without any sign-in configured (a laptop demo) the
page says plainly that anyone who can open it can change the model.
"""

import streamlit as st

from app_ui import access_view, context, messages, sidebar
from app_ui.retrain import (
    audit_view,
    candidates_view,
    export_view,
    store_view,
    upload_view,
    versions_view,
)

KEY = "retrain"

sidebar.page_setup("Retrain & publish")
ctx = context.get_context()
context.page_header("Retrain and publish", ctx)
if not ctx.access.is_analyst:
    access_view.sign_in_panel(ctx.access, access_view.options())
    st.stop()
if ctx.access.how == "open":
    access_view.open_warning()
messages.show()

st.header("1 · Trip store", divider="gray")
n_stored = store_view.show(KEY, ctx)

st.header("2 · Add trips", divider="gray")
upload_view.show(KEY, ctx)

st.header("3 · Train a candidate", divider="gray")
candidates_view.train_panel(KEY, ctx, n_stored=n_stored)
candidates_view.evaluation_panel(KEY, ctx)

st.header("4 · Model versions", divider="gray")
versions_view.show(KEY, ctx)

st.header("5 · Export the model", divider="gray")
export_view.show(f"{KEY}_export", ctx)

with st.expander("Audit log: who changed what"):
    audit_view.show(KEY, ctx)
