"""The trip store as the Retrain page shows and changes it: overview, additions, clearing.

Every change to the stored trips goes through here (the page only calls these): an
accepted upload, the synthetic demo trips, or deleting everything. Each returns the
sentence the page shows, refuses a viewer (``by``, :class:`vrvm.services.access.policy.Access`)
and records who did it in the home's audit log (file name and counts, never a trip).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vrvm.services.access.policy import Access, record
from vrvm.services.analyst.demo import demo_trips
from vrvm.services.analyst.uploads import UploadOutcome
from vrvm.services.versions.models import strip_paths
from vrvm.trips.home import Home
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.store.trip_store import StoreSummary
from vrvm.trips.table import dateless_mask

__all__ = [
    "FAR_FROM_STORE_KM",
    "StoreOverview",
    "add_demo_trips",
    "add_upload",
    "clear_trips",
    "distance_to_store_km",
    "store_overview",
]

FAR_FROM_STORE_KM = 100.0
"""New trips this far from the stored ones are probably another city."""


@dataclass(frozen=True)
class StoreOverview:
    """What the store holds: totals, and one row per stored batch (``parts``)."""

    summary: StoreSummary
    parts: pd.DataFrame

    @property
    def dateless(self) -> bool:
        """The stored trips carry no calendar date (only a weekday and a clock)."""
        start, end = self.summary.start_min, self.summary.start_max
        return start is not None and bool(
            dateless_mask(pd.Series([start, end]).dt.tz_localize(None)).all()
        )

    @property
    def days_covered(self) -> float | None:
        """Days between the first and the last start; None without trips or dates."""
        if self.summary.start_min is None or self.dateless:
            return None
        return (self.summary.start_max - self.summary.start_min).total_seconds() / 86400


def store_overview(home: Path) -> StoreOverview:
    """Totals and batches of the trip store, ready to show: ``added_utc`` as text and
    each batch's ``source`` as a file name (never a local path)."""
    store = Home(home).trips
    parts = store.parts()
    parts["added_utc"] = parts["added_utc"].astype(str)
    parts["source"] = parts["source"].astype(str).map(strip_paths)
    return StoreOverview(summary=store.summary(), parts=parts)


def distance_to_store_km(home: Path, trips: pd.DataFrame) -> float | None:
    """Distance between the median origins of new trips and of the stored ones.

    Hundreds of kilometres mean another city: training on both would spread the
    model's zones over everything in between. (Trips against a *model's* area are
    :func:`vrvm.services.analyst.area_check.check_same_area`.)
    """
    center = Home(home).trips.center()
    if center is None or len(trips) == 0:
        return None
    lat = float(trips["origin_lat"].median())
    lon = float(trips["origin_lon"].median())
    return float(haversine_km(lat, lon, *center))


def add_upload(home: Path, outcome: UploadOutcome, *, by: Access | None = None) -> str:
    """Store the trips of a read upload (those not already stored)."""
    if by is not None:
        by.require("upload")
    if not outcome.ok:
        raise ValueError(f"{outcome.name} has no trips to add: {outcome.error}")
    result = Home(home).trips.add(outcome.trips, source=outcome.name)
    report = outcome.report
    record(
        home,
        by,
        "upload",
        file=strip_paths(outcome.name),
        rows_read=None if report is None else int(report.n_input),
        kept=len(outcome.trips),
        dropped=None if report is None else int(report.dropped),
        added=int(result.n_added),
        duplicates=int(result.n_duplicates),
    )
    return (
        f"Added {result.n_added:,} new trips to the store; "
        f"{result.n_duplicates:,} were already there."
    )


def add_demo_trips(home: Path, *, by: Access | None = None) -> str:
    """Add the synthetic demo trips, to try the flow without data of one's own."""
    if by is not None:
        by.require("trip_store")
    result = Home(home).trips.add(demo_trips(), synthetic=True)
    record(
        home,
        by,
        "upload",
        file="synthetic demo trips",
        added=int(result.n_added),
        duplicates=int(result.n_duplicates),
    )
    return (
        f"Added {result.n_added:,} synthetic demo trips "
        f"({result.n_duplicates:,} already in the store)."
    )


def clear_trips(home: Path, *, by: Access | None = None) -> str:
    """Delete every stored trip (models are not affected)."""
    if by is not None:
        by.require("delete")
    n = Home(home).trips.clear()
    record(home, by, "delete", what="every stored trip", trips=int(n))
    return f"Deleted {n:,} trips from the store."
