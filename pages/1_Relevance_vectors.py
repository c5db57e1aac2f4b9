"""Relevance vectors page: which training trips the ensemble kept, and how it converged."""

import streamlit as st

from app_ui import context, relevance_view

context.page_setup("Relevance vectors")
ctx = context.get_context()
st.title("Relevance vectors")
st.caption(context.model_caption(ctx))
context.synthetic_banner(ctx)
relevance_view.show("relevance", ctx)
