"""Streamlit UI components of the vrvm dashboard.

Layers: ``vrvm.dashboard`` (services, no Streamlit) <- ``app_ui.maps`` / ``app_ui.charts``
(pydeck and plotly figures, no Streamlit) <- the ``show(key, ...)`` components, which
own the session-state keys starting with their ``key`` <- ``app.py`` and ``pages/``.
"""
