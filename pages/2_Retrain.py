"""Retrain page: add trips, check what was accepted, train, compare, publish."""

import streamlit as st

from app_ui import (
    candidates_view,
    context,
    messages,
    sidebar,
    store_view,
    upload_view,
    versions_view,
)

KEY = "retrain"

sidebar.page_setup("Retrain & publish")
ctx = context.get_context()
context.page_header("Retrain and publish", ctx)
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
