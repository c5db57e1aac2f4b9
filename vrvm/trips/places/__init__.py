"""Where things are: distances, H3 zones, the map's zones fitted on trips, zone files, time zones.

Public modules: :mod:`~vrvm.trips.places.geo` (the one great-circle distance and local
projection), :mod:`~vrvm.trips.places.zones` (H3 zones: resolution, lookup, grids,
stratified shards), :mod:`~vrvm.trips.places.trip_zones` (zones sized and clustered on
where trips are), :mod:`~vrvm.trips.places.zone_files` (the planner's GeoJSON polygons,
read under limits) and :mod:`~vrvm.trips.places.timezones` (the one way to name a trip's
time zone). Imports :mod:`vrvm.engine` only, and nothing else of :mod:`vrvm.trips`.
"""

from vrvm.trips.places.geo import EARTH_RADIUS_KM, LocalProjection, haversine_km
from vrvm.trips.places.timezones import ZoneUnknownError, tz_name
from vrvm.trips.places.zone_files import ZoneFile, ZoneFileError
from vrvm.trips.places.zones import (
    choose_h3_resolution,
    latlng_to_zone,
    stratified_shards,
    zone_grid,
    zone_of,
    zones_geojson,
)

__all__ = [
    "EARTH_RADIUS_KM",
    "LocalProjection",
    "ZoneFile",
    "ZoneFileError",
    "ZoneUnknownError",
    "choose_h3_resolution",
    "haversine_km",
    "latlng_to_zone",
    "stratified_shards",
    "tz_name",
    "zone_grid",
    "zone_of",
    "zones_geojson",
]
