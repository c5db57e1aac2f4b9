"""The map: zones and view, boundary files, places, trips by zone, support, layers, privacy.

:mod:`~vrvm.services.map.area` (``ServiceArea``: the clickable zones, their labels and
the initial view), :mod:`~vrvm.services.map.boundaries` (GeoJSON boundary files kept in
the home), :mod:`~vrvm.services.map.places` (origins and destinations from clicks, lists
and coordinates), :mod:`~vrvm.services.map.trip_index` (the zones and trips indexed by
them, derived once), :mod:`~vrvm.services.map.support` (training trips behind an
answer), :mod:`~vrvm.services.map.map_layers` (layer data with escaped tooltips) and
:mod:`~vrvm.services.map.privacy` (what viewers see of the trips in private mode).
"""
