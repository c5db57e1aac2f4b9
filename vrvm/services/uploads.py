"""Uploaded trip files: size guards, one read-and-clean call, and what the report shows.

An upload is untrusted: :func:`check_upload` refuses empty files, files above the
upload limit and compressed files that expand too much (a zip bomb); :func:`read_upload`
then reads and cleans it with :func:`vrvm.read_trips` - only ever parsing CSV text or
Parquet - and never raises: the :class:`UploadOutcome` holds the trips and the cleaning
report, or the message, or, when the columns are not understood, the file's columns
for a form that lets the user say which column holds which role.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from vrvm.trips.cleaning import CleaningReport
from vrvm.trips.layouts import ROLE_LABELS, UnknownLayoutError, guess_column_map
from vrvm.trips.reader import TripFileError, expanded_size, read_rows, read_trips

__all__ = [
    "MAPPING_ROLES",
    "MAX_DECOMPRESSED_MB",
    "MAX_UPLOAD_MB",
    "UPLOAD_TYPES",
    "UploadError",
    "UploadOutcome",
    "check_upload",
    "example_rows",
    "guess_column_map",
    "read_upload",
    "report_table",
]

MAX_UPLOAD_MB = 200
MAX_DECOMPRESSED_MB = 2000
UPLOAD_TYPES = ("csv", "txt", "tsv", "parquet", "pq", "gz", "bz2", "xz", "zip")
MAPPING_ROLES: tuple[tuple[str, str], ...] = tuple(ROLE_LABELS.items())
"""``(role, label)`` pairs of the column-mapping form, in the order it asks for them."""


class UploadError(ValueError):
    """An upload that cannot be used; the message is meant for the user."""


@dataclass
class UploadOutcome:
    """Result of reading one uploaded file.

    Attributes
    ----------
    name : str
        The file's name.
    trips : pandas.DataFrame or None
        The clean trips, when at least one row passed.
    report : CleaningReport or None
        What happened to every row, when the file could be read.
    reasons : pandas.DataFrame
        The report's reasons that fired (:func:`report_table`).
    examples : pandas.DataFrame
        The rejected rows behind the report's examples, as written in the file.
    error : str or None
        Why the file cannot be used.
    needs_mapping : bool
        The columns were not understood: ask the user which column holds each role.
    columns : list of str
        The file's columns (for that form).
    """

    name: str
    trips: pd.DataFrame | None = None
    report: CleaningReport | None = None
    reasons: pd.DataFrame = field(default_factory=pd.DataFrame)
    examples: pd.DataFrame = field(default_factory=pd.DataFrame)
    error: str | None = None
    needs_mapping: bool = False
    columns: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.trips is not None and self.error is None


def check_upload(name: str, data: bytes, *, max_mb: float = MAX_UPLOAD_MB) -> None:
    """Refuse uploads that are empty, too large, or expand too much (raises UploadError)."""
    size = len(data)
    if size == 0:
        raise UploadError(f"{name} is empty")
    if size > max_mb * 2**20:
        raise UploadError(
            f"{name} is {size / 2**20:.0f} MB, above the {max_mb:g} MB upload limit; split it "
            "into several files"
        )
    cap = int(MAX_DECOMPRESSED_MB * 2**20)
    if expanded_size(data, cap, name=name) > cap:
        raise UploadError(f"{name} expands to more than {MAX_DECOMPRESSED_MB} MB when decompressed")


def read_upload(
    name: str,
    data: bytes,
    *,
    column_map: Mapping[str, str] | None = None,
    max_mb: float = MAX_UPLOAD_MB,
) -> UploadOutcome:
    """Read one uploaded file into clean trips and a cleaning report, never raising.

    The file is only parsed as CSV text or Parquet (nothing is executed or
    unpickled). Columns that no known layout (nor ``column_map``) explains yield
    ``needs_mapping=True`` and the file's ``columns``, so the user can name them; any
    other problem yields ``error``.
    """
    outcome = UploadOutcome(name=name)
    try:
        check_upload(name, data, max_mb=max_mb)
        trips, report = read_trips(
            data, column_map=dict(column_map) if column_map else None, source=name
        )
    except UnknownLayoutError as exc:
        outcome.error, outcome.needs_mapping, outcome.columns = str(exc), True, exc.columns
        return outcome
    except (UploadError, TripFileError, ValueError) as exc:
        outcome.error = str(exc)
        return outcome
    except Exception as exc:  # any parser failure is the file's fault
        outcome.error = f"{name} could not be read as a trip table ({type(exc).__name__}: {exc})"
        return outcome
    outcome.report = report
    outcome.reasons = report_table(report)
    outcome.examples = example_rows(data, report)
    if len(trips) == 0:
        outcome.error = f"{name}: no row passed the cleaning checks (see the report)"
        return outcome
    outcome.trips = trips
    return outcome


def example_rows(data: bytes, report: CleaningReport, *, per_reason: int = 3) -> pd.DataFrame:
    """The raw rows behind the report's examples, as text, with their reason and row number.

    Row numbers follow :mod:`vrvm.trips.cleaning` (line numbers with the header as
    line 1; position + 2 for Parquet), so a row can be found in the file.
    """
    wanted: dict[int, str] = {}
    for reason, rows in report.examples.items():
        for row in rows[:per_reason]:
            wanted.setdefault(int(row), reason)
    if not wanted:
        return pd.DataFrame(columns=["reason", "row"])
    try:
        picked = read_rows(data, wanted, source=report.source)
    except (TripFileError, ValueError, OSError):  # examples are a courtesy
        return pd.DataFrame(columns=["reason", "row"])
    picked.insert(0, "reason", [wanted[r] for r in picked["row"]])
    return picked


def report_table(report: CleaningReport) -> pd.DataFrame:
    """The cleaning report per reason, only the reasons that fired, share in percent."""
    frame = report.to_frame()
    frame = frame.loc[frame["count"] > 0].copy()
    frame["share"] = (100 * frame["share"]).round(2)
    return frame.rename(columns={"share": "share_pct"}).reset_index(drop=True)
