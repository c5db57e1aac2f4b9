"""The travel-time model: :class:`TravelTimeModel` and the parts it owns.

:mod:`~vrvm.trips.model.travel_time` holds the model: VRVM members fitted on shards and
combined as a uniform mixture. What it owns sits in private modules beside it: the
members' ensemble (parallel fitting with loky or Dask, their predictions side by side),
the spread around them, online updates and the out-of-core sums of a two-stage fit.
Public beside it: :mod:`~vrvm.trips.model.features` (kernel inputs),
:mod:`~vrvm.trips.model.pair_offsets` (per-pair shrunk residual offsets),
:mod:`~vrvm.trips.model.round_trips` (round trips from their start cells' rides),
:mod:`~vrvm.trips.model.pair_durations` (pairs seen before from their own trips),
:mod:`~vrvm.trips.model.own_durations` (what those two regimes share),
:mod:`~vrvm.trips.model.training` (fitting from a file or store, part by part),
:mod:`~vrvm.trips.model.model_format` (the saved form), :mod:`~vrvm.trips.model.snapping`
(relevance vectors moved to zone centres) and :mod:`~vrvm.trips.model.split` (the one
hold-out split). Uses :mod:`vrvm.trips.places`, :mod:`vrvm.trips.files` and
:mod:`vrvm.trips.store` (model directories).
"""

from vrvm.trips.model.features import TripFeaturizer, raw_distance_km
from vrvm.trips.model.split import split_holdout
from vrvm.trips.model.travel_time import ProgressCallback, TravelTimeModel

__all__ = [
    "ProgressCallback",
    "TravelTimeModel",
    "TripFeaturizer",
    "raw_distance_km",
    "split_holdout",
]
