"""Floor of ``bench_ui.py --floors``: the Predict page as it is, its answers computed before.

``app.py`` with every Vega-Lite view, but each trip's answer already computed once in this
server process (:mod:`_kept_answers`; ``bench_ui.py`` asks every timed trip once before
timing): what the page costs when the server does nothing of ours for an answer, that is
Streamlit's own elements and its Vega-Lite views. (The sidebar's four page links are left
out: they need ``app.py`` as the entry point.)
"""

import runpy
from pathlib import Path

import streamlit as st
from _kept_answers import keep_answers

REPO = Path(__file__).resolve().parents[2]

keep_answers()
st.page_link = lambda *args, **kwargs: None  # the sidebar's links need app.py as the entry
runpy.run_path(str(REPO / "app.py"), run_name="__main__")
