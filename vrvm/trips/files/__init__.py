"""Reading trip files: from a file's bytes to the canonical trip table, under limits.

The whole read pipeline, one package: :mod:`~vrvm.trips.files.layouts` (the roles a
column can have and the known layouts), :mod:`~vrvm.trips.files.formats` and
:mod:`~vrvm.trips.files.parsing` (dates, clocks, weekdays and durations as files write
them), :mod:`~vrvm.trips.files.recipes` (how to read a file, kept per header),
:mod:`~vrvm.trips.files.reader` (the one reader for files and uploads),
:mod:`~vrvm.trips.files.cleaning` (every row kept or dropped for a named reason),
:mod:`~vrvm.trips.files.dataset` (a file or store cut into parts for out-of-core
training), :mod:`~vrvm.trips.files.small_csv` (bounded reads of small CSV inputs) and
:mod:`~vrvm.trips.files.time_range` (the departures a model can hold). Opening a file
under its limits, cutting it into batches and the whole-column survey of time formats
are private modules behind the reader. Uses :mod:`vrvm.trips.places`.
"""

from vrvm.trips.files._batches import PARQUET_BATCH_ROWS
from vrvm.trips.files.cleaning import (
    CLEANING_REASONS,
    CleaningConfig,
    CleaningReport,
    clean_trips,
)
from vrvm.trips.files.formats import FormatMismatchError, TimeFormatError
from vrvm.trips.files.layouts import ROLES, SCHEMAS, UnknownLayoutError, detect_schema
from vrvm.trips.files.reader import (
    ReadLimits,
    TripFileError,
    ZonesNeededError,
    iter_trips,
    propose_options,
    read_layout,
    read_trips,
)
from vrvm.trips.files.recipes import ReadOptions, RecipeBook

__all__ = [
    "CLEANING_REASONS",
    "PARQUET_BATCH_ROWS",
    "ROLES",
    "SCHEMAS",
    "CleaningConfig",
    "CleaningReport",
    "FormatMismatchError",
    "ReadLimits",
    "ReadOptions",
    "RecipeBook",
    "TimeFormatError",
    "TripFileError",
    "UnknownLayoutError",
    "ZonesNeededError",
    "clean_trips",
    "detect_schema",
    "iter_trips",
    "propose_options",
    "read_layout",
    "read_trips",
]
