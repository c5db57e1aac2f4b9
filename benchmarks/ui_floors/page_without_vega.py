"""Floor of ``bench_ui.py --floors``: the Predict page itself with no Vega-Lite view.

``app.py`` as it is (header, sidebar, the map's lists and buttons, the trip bar, the
metrics, the sentence, the tables and every caption), except that each Vega-Lite view (the
zone map and the answer's two charts) is an empty box of the same height. Timed as the
page (Swap, a threshold step, new tabs), it is what Streamlit itself costs for the page's
own elements: the floor no choice of map or chart renderer can go under. (The
sidebar's four page links are left out too: they need ``app.py`` as the entry point.)
"""

import runpy
from pathlib import Path

import streamlit as st

REPO = Path(__file__).resolve().parents[2]


def _empty_box(spec=None, *, height=None, **kwargs) -> None:
    """An empty box where the page draws a Vega-Lite view."""
    size = height or (spec or {}).get("height") or 400
    st.container(height=int(size) if isinstance(size, int | float) else 400, border=False)


st.vega_lite_chart = _empty_box
st.page_link = lambda *args, **kwargs: None  # the sidebar's links need app.py as the entry
runpy.run_path(str(REPO / "app.py"), run_name="__main__")
