"""Relevance vectors page: which training trips the ensemble kept, and how it converged."""

from app_ui import context, relevance_view, sidebar

sidebar.page_setup("Relevance vectors")
ctx = context.get_context()
context.page_header("Relevance vectors", ctx)
relevance_view.show("relevance", ctx)
