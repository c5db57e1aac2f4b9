"""Retrain page: add trips, check what was accepted, train, compare, publish."""

import streamlit as st

from app_ui import context, retrain_view

KEY = "retrain"

context.page_setup("Retrain & publish")
ctx = context.get_context()
st.title("Retrain and publish")
st.caption(context.model_caption(ctx))
context.synthetic_banner(ctx)
retrain_view.show_message(KEY)

st.header("1 · Trip store", divider="gray")
retrain_view.store_panel(KEY, ctx)

st.header("2 · Add trips", divider="gray")
retrain_view.upload_panel(KEY, ctx)

st.header("3 · Train a candidate", divider="gray")
retrain_view.train_panel(KEY, ctx)
retrain_view.evaluation_panel(KEY, ctx)

st.header("4 · Model versions", divider="gray")
retrain_view.versions_panel(KEY, ctx)
