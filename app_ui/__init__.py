"""Streamlit views of the vrvm dashboard.

Layers: ``vrvm.services`` (what is shown, no Streamlit) <- ``app_ui.maps`` /
``app_ui.charts`` (pydeck and plotly figures, no Streamlit) <- the views, one module per
page section, each with ``show(key, ...)`` functions that own the session-state keys
starting with their ``key`` (``context`` loads the model, ``sidebar`` sets up the page)
<- ``app.py`` and ``pages/``, which only wire them together.
"""
