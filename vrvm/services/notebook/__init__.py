"""vrvm in a notebook: answers as DataFrames and GeoDataFrames, in r5py's and geopandas' ways.

The top-level functions :func:`vrvm.travel_time_matrix`, :func:`vrvm.isochrones`,
:func:`vrvm.reach`, :func:`vrvm.arrive_by` and :func:`vrvm.coverage_matrix` take a fitted
:class:`~vrvm.TravelTimeModel` and places as analysts hold them (GeoDataFrames with an
``id`` column in any CRS, tables of ``id``, ``lat``, ``lon``, or H3 cell ids) and return
long tables (``from_id``, ``to_id``, ``travel_time_p50`` in minutes, ``p_within_10min``)
and GeoDataFrames in EPSG:4326. Each calls the service the CLI, the HTTP API and the
dashboard call for the same answer (:mod:`vrvm.services.answers.matrix`,
:mod:`vrvm.services.planning.isochrones`, :mod:`vrvm.services.planning.fleet`,
:mod:`vrvm.services.answers.schedule`, :mod:`vrvm.services.planning.siting`); see
``docs/notebook.md``.
"""

from vrvm.services.notebook.arrivals import ArriveByPlan, arrive_by
from vrvm.services.notebook.inputs import PLACE_COLUMNS, place_table
from vrvm.services.notebook.regions import isochrones, reach
from vrvm.services.notebook.tables import coverage_matrix, travel_time_matrix

__all__ = [
    "PLACE_COLUMNS",
    "ArriveByPlan",
    "arrive_by",
    "coverage_matrix",
    "isochrones",
    "place_table",
    "reach",
    "travel_time_matrix",
]
