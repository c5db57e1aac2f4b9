"""What the dashboard, the CLI and the HTTP API show, grouped by what a user does.

Plain functions and small dataclasses over :mod:`vrvm.trips` and :mod:`vrvm.engine`,
each unit-tested without a user interface; nothing here imports streamlit, pydeck or
plotly. The pages' views (``app_ui/``), the CLI and the API call one service per step and
render what it returns. Packages, lowest first (each imports only those before it):

- :mod:`~vrvm.services.display`: numbers, units, user text and CSV cells as shown.
- :mod:`~vrvm.services.access`: roles, sign-in, the audit record, security settings.
- :mod:`~vrvm.services.versions`: model versions, the one publish and activate path.
- :mod:`~vrvm.services.analyst`: uploads, the trip store, retraining, the demo.
- :mod:`~vrvm.services.map`: the map's zones, boundary files, places, support.
- :mod:`~vrvm.services.answers`: one trip, many trips, arrive-by, matrices.
- :mod:`~vrvm.services.planning`: reach, isochrones, fleet coverage, shared views.
"""
