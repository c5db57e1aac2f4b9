"""What the dashboard, the CLI and (later) an HTTP API show: one module per concern.

Plain functions and small dataclasses over :mod:`vrvm.trips` and :mod:`vrvm.engine`,
each unit-tested without a user interface; nothing here imports streamlit, pydeck or
plotly. The pages' views (``app_ui/``) call one service per step and render what it
returns.

- :mod:`~vrvm.services.models`: model versions, captions, publishing and activating.
- :mod:`~vrvm.services.demo`: the built-in synthetic city and its model.
- :mod:`~vrvm.services.area`, :mod:`~vrvm.services.boundaries`,
  :mod:`~vrvm.services.places`: the map's zones, boundary files, origins and
  destinations.
- :mod:`~vrvm.services.forecast`: the answer for one trip.
- :mod:`~vrvm.services.coverage`: reach from an origin.
- :mod:`~vrvm.services.relevance`: what the model learned.
- :mod:`~vrvm.services.map_layers`, :mod:`~vrvm.services.colours`: layer data, palettes
  and legends.
- :mod:`~vrvm.services.url_state`: shareable views.
- :mod:`~vrvm.services.uploads`, :mod:`~vrvm.services.store_admin`,
  :mod:`~vrvm.services.retrain`, :mod:`~vrvm.services.evaluation`: the retrain flow,
  from upload to publishing.
- :mod:`~vrvm.services.predictions`: predictions for a file of queries.
"""
