"""Planning over many zones: reach, isochrones, fleet coverage, shareable views.

:mod:`~vrvm.services.planning.coverage` (reach from an origin),
:mod:`~vrvm.services.planning.isochrones` (probability isochrones),
:mod:`~vrvm.services.planning.fleet` and :mod:`~vrvm.services.planning.fleet_files`
(fleet coverage, one more base, their files) and :mod:`~vrvm.services.planning.url_state`
(shareable views in the URL).
"""
