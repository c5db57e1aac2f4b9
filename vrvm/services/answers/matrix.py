"""Origin-destination matrices: every pair's travel-time summaries at one departure time.

For origins O_1..O_m and destinations D_1..D_n, :func:`iter_matrix` gives the m x n
pairs in long format, origin by origin (all destinations of O_1 first), one row per
pair: ``origin`` and ``destination`` (the point's name, zone id or row number),
``mean_s``, ``median_s``, one ``q<q>_s`` per quantile (``q0.9_s``) and one
``p_within_<t>s`` per threshold (``p_within_600s``), all from the pair's predictive
distribution (:meth:`vrvm.TravelTimeModel.predict_dist`, the ensemble's mixture) at the
departure time. The pairs are predicted in batches of :data:`MATRIX_BATCH_PAIRS`, one
batch per core in threads (:func:`vrvm.engine.in_threads`, as ``vrvm
predict`` does), so memory stays bounded whatever m x n. The quantiles are solved for a
whole batch at once by the mixture's vectorised root finder
(:meth:`vrvm.MixtureDistribution.ppf`: bracketed by the members' quantiles, safeguarded
Halley steps).

Points come from a table with columns ``lat``, ``lon`` (degrees) and an optional
``name``, or a ``zone`` column of zone ids (:func:`points_table`, :func:`read_points`):
the ids of a zone file's polygons (their representative points) when one is given,
else H3 cell ids (their centres), as in :func:`vrvm.read_trips` and the map's hexagons.
In the dashboard the points are the zones of a :class:`ServiceArea`
(:func:`zone_points`), each at the point its answers use.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING

import h3
import numpy as np
import pandas as pd

from vrvm.engine import in_threads
from vrvm.services.answers.schedule import window_departures
from vrvm.services.answers.summaries import (
    INDEX_SUMMARY_COLUMNS,
    SUPPORT_COLUMNS,
    summary_columns,
    trip_summaries,
)
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.display.formatting import format_number
from vrvm.services.map.area import ServiceArea
from vrvm.trips.home import HOME_ENV, Home
from vrvm.trips.model.travel_time import ProgressCallback, TravelTimeModel

if TYPE_CHECKING:
    from vrvm.trips.places.zone_files import ZoneFile

__all__ = [
    "DASHBOARD_MAX_PAIRS",
    "MATRIX_BATCH_PAIRS",
    "iter_matrix",
    "iter_pair_batches",
    "matrix_columns",
    "matrix_command",
    "matrix_csv",
    "matrix_frame",
    "matrix_parquet",
    "median_heatmap",
    "model_reference",
    "points_csv",
    "points_table",
    "preview_table",
    "read_points",
    "read_table",
    "zone_points",
]

MATRIX_BATCH_PAIRS = 16_384
"""Pairs predicted at once by one thread: their (members, pairs) arrays take a few MB."""
DASHBOARD_MAX_PAIRS = 40_000
"""Most pairs the dashboard computes (a few seconds); beyond, it offers the CLI command."""
HEATMAP_MAX_SIDE = 50
"""Most origins (and destinations) the median heat map draws."""

_ALIASES = {  # column role: accepted header names (compared stripped, case-insensitive)
    "lat": ("lat", "latitude"),
    "lon": ("lon", "lng", "long", "longitude"),
    "name": ("name",),
    "zone": ("zone", "zone_id"),
}
_SHOWN_ROWS = 5  # bad rows named in an error message


# ------------------------------------------------------------------------------ points
def _column(frame: pd.DataFrame, role: str) -> str | None:
    wanted = _ALIASES[role]
    return next((c for c in frame.columns if str(c).strip().lower() in wanted), None)


def _bad_rows(source: str, column: str, rows: np.ndarray, values, expected: str) -> ValueError:
    """An error naming the first bad rows (file lines, header = line 1) and their values."""
    shown = ", ".join(
        f"row {int(row) + 2} ({value!r})"
        for row, value in zip(rows[:_SHOWN_ROWS], values[:_SHOWN_ROWS], strict=False)
    )
    more = f" and {rows.size - _SHOWN_ROWS:,} more" if rows.size > _SHOWN_ROWS else ""
    return ValueError(f"{source}: column {column!r}: {shown}{more}: expected {expected}")


def _coordinate(frame: pd.DataFrame, column: str, source: str, limit: float) -> np.ndarray:
    raw = frame[column]
    if not pd.api.types.is_numeric_dtype(raw):  # text as written: " 41.9 " is a number
        raw = raw.astype("string").str.strip()
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero(~(np.abs(values) <= limit))
    if bad.size:
        what = "latitude" if limit == 90.0 else "longitude"
        raise _bad_rows(
            source,
            column,
            bad,
            raw.to_numpy()[bad].tolist(),
            f"a {what} in degrees between -{limit:g} and {limit:g}",
        )
    return values


def _labels(frame: pd.DataFrame, column: str, source: str) -> np.ndarray:
    text = frame[column].astype("string").str.strip()
    missing = text.isna().to_numpy() | (text == "").fillna(True).to_numpy()
    if missing.any():
        rows = np.flatnonzero(missing)
        raise _bad_rows(source, column, rows, frame[column].to_numpy()[rows].tolist(), "a value")
    return text.to_numpy(dtype=object)


def _zone_locations(
    ids: np.ndarray, column: str, source: str, zones: ZoneFile | None
) -> tuple[np.ndarray, np.ndarray]:
    """The point of each zone id: a zone file's representative point, else an H3 centre."""
    if zones is not None:
        lat, lon = zones.representative_points(ids)
        bad = np.flatnonzero(~np.isfinite(lat))
        if bad.size:
            raise _bad_rows(
                source, column, bad, ids[bad].tolist(), f"an id of the zone file {zones.source}"
            )
        return lat, lon
    valid = np.array([h3.is_valid_cell(str(z)) for z in ids], dtype=bool)
    if not valid.all():
        bad = np.flatnonzero(~valid)
        raise _bad_rows(
            source,
            column,
            bad,
            ids[bad].tolist(),
            "an H3 cell id (for the ids of a zone file's polygons, give that file: "
            "zones=ZoneFile.read(path, id_property=...); --zones FILE.geojson:ID in the CLI)",
        )
    centres = np.array([h3.cell_to_latlng(str(z)) for z in ids], dtype=np.float64)
    return centres[:, 0], centres[:, 1]


def points_table(
    frame: pd.DataFrame, *, source: str = "points", zones: ZoneFile | None = None
) -> pd.DataFrame:
    """Origins or destinations from a table: ``label``, ``lat`` and ``lon`` per row.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``lat`` and ``lon`` (degrees; also ``latitude``, ``lng``, ``longitude``)
        and an optional ``name``; or a ``zone`` column (also ``zone_id``) of zone ids.
        Names are compared stripped and case-insensitive. With both, the coordinates
        place the points and the zone names them when there is no ``name``.
    source : str, default="points"
        The file's name, for the messages.
    zones : ZoneFile, optional
        The zone file whose polygons the ids name (a point is its representative
        point); without it, ids are H3 cell ids (a point is the cell's centre).

    Returns
    -------
    pandas.DataFrame
        ``label`` (the name, the zone id, or else the row number: the line in the
        file, header = line 1, int64), ``lat`` and ``lon``, one row per input row.

    Raises
    ------
    ValueError
        Naming the file, the column and the first bad rows (lines in the file) with
        their values: a missing or out-of-range coordinate, an empty name or zone id,
        an unknown zone id; or the columns expected when none of them is there.

    Examples
    --------
    >>> points_table(pd.DataFrame({"lat": [41.88, 41.9], "lon": [-87.63, -87.64]}))
       label    lat    lon
    0      2  41.88 -87.63
    1      3  41.90 -87.64
    >>> bad = pd.DataFrame({"lat": ["41.88", "north"], "lon": [-87.6, -87.6]})
    >>> try:
    ...     points_table(bad, source="O.csv")
    ... except ValueError as error:
    ...     message = str(error)
    >>> message.split(": ")[:3]
    ['O.csv', "column 'lat'", "row 3 ('north')"]
    >>> message.split(": ")[3]
    'expected a latitude in degrees between -90 and 90'
    """
    lat_col, lon_col = _column(frame, "lat"), _column(frame, "lon")
    name_col, zone_col = _column(frame, "name"), _column(frame, "zone")
    if len(frame) == 0:
        raise ValueError(f"{source}: no rows: expected one origin or destination per row")
    if lat_col is not None and lon_col is not None:
        lat = _coordinate(frame, lat_col, source, 90.0)
        lon = _coordinate(frame, lon_col, source, 180.0)
        label_col = name_col or zone_col
        labels = (
            _labels(frame, label_col, source)
            if label_col is not None
            else np.arange(2, len(frame) + 2, dtype=np.int64)
        )
    elif zone_col is not None:
        labels = _labels(frame, zone_col, source)
        lat, lon = _zone_locations(labels, zone_col, source, zones)
        if name_col is not None:
            labels = _labels(frame, name_col, source)
    else:
        found = ", ".join(map(str, frame.columns)) or "none"
        raise ValueError(
            f"{source}: expected columns lat and lon (degrees) with an optional name, or a "
            f"zone column of zone ids; found: {found}"
        )
    return pd.DataFrame({"label": labels, "lat": lat, "lon": lon})


def read_table(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes],
    *,
    source: str | None = None,
    expected: str = "lat, lon and an optional name, or zone",
) -> tuple[pd.DataFrame, str]:
    """A small CSV or Parquet file of places as a frame, and the name to quote it by.

    A Parquet file is told by its first bytes; anything else is read as CSV, every
    cell as text (so a message quotes it as written). ``expected`` says what the header
    should hold when the file cannot be read.
    """
    if isinstance(path_or_buffer, bytes | bytearray):
        data = bytes(path_or_buffer)
        name = source or "<bytes>"
    elif hasattr(path_or_buffer, "read"):
        data = path_or_buffer.read()
        name = source or str(getattr(path_or_buffer, "name", "<buffer>"))
    else:
        name = source or os.fspath(path_or_buffer)
        if not os.path.isfile(path_or_buffer):
            raise FileNotFoundError(f"{name}: no such file")
        with open(path_or_buffer, "rb") as handle:
            data = handle.read()
    try:
        if data[:4] == b"PAR1":
            frame = pd.read_parquet(io.BytesIO(data))
        else:
            frame = pd.read_csv(
                io.BytesIO(data), dtype=str, keep_default_na=False, skipinitialspace=True
            )
    except (ValueError, OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"{name} could not be read ({first}): expected a CSV file with a header row "
            f"({expected}), or a Parquet file"
        ) from None
    return frame, name


def read_points(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes],
    *,
    zones: ZoneFile | None = None,
    source: str | None = None,
) -> pd.DataFrame:
    """Read origins or destinations from a CSV or Parquet file (see :func:`points_table`
    and :func:`read_table`)."""
    frame, name = read_table(path_or_buffer, source=source)
    return points_table(frame, source=name, zones=zones)


def zone_points(area: ServiceArea, zones: Sequence[str]) -> pd.DataFrame:
    """The given zones of the area as points (``label`` = zone id, ``lat``, ``lon``).

    Each at the point its answers use everywhere (the hexagon's centre, the polygon's
    representative point, to 6 decimals as :func:`vrvm.services.map.places.place_from_zone`).
    """
    rows = pd.Index(area.grid["zone"]).get_indexer(list(zones))
    if (rows < 0).any():
        unknown = [z for z, r in zip(zones, rows, strict=True) if r < 0]
        raise ValueError(f"zones not in the service area: {unknown[:_SHOWN_ROWS]}")
    grid = area.grid.iloc[rows]
    return pd.DataFrame(
        {
            "label": grid["zone"].astype(str).to_numpy(dtype=object),
            "lat": grid["lat"].to_numpy(dtype=np.float64).round(6),
            "lon": grid["lon"].to_numpy(dtype=np.float64).round(6),
        }
    )


# ------------------------------------------------------------------------------ matrix
def matrix_columns(
    quantiles: Sequence[float] = (),
    thresholds_s: Sequence[float] = (),
    *,
    indices: bool = False,
    support: bool = False,
) -> list[str]:
    """The columns of a matrix: the pair, then those of
    :func:`~vrvm.services.answers.summaries.trip_summaries`.

    Examples
    --------
    >>> matrix_columns([0.9], [600])
    ['origin', 'destination', 'mean_s', 'median_s', 'q0.9_s', 'p_within_600s']
    """
    names = ["origin", "destination", *summary_columns(quantiles, thresholds_s)]
    if indices:
        names.extend(INDEX_SUMMARY_COLUMNS)
    if support:
        names.extend(SUPPORT_COLUMNS)
    return names


def _pair_queries(
    origins: pd.DataFrame,
    destinations: pd.DataFrame,
    i: np.ndarray,
    j: np.ndarray,
    departures: pd.DatetimeIndex,
) -> pd.DataFrame:
    """The model's queries of the pairs (origin i, destination j) at aware departures:
    one block of every pair per departure, in order (as ``trip_summaries`` pools them)."""
    k = len(departures)
    stamps = np.repeat(departures.tz_convert("UTC").tz_localize(None).to_numpy(), i.size)
    return pd.DataFrame(
        {
            "origin_lat": np.tile(origins["lat"].to_numpy()[i], k),
            "origin_lon": np.tile(origins["lon"].to_numpy()[i], k),
            "dest_lat": np.tile(destinations["lat"].to_numpy()[j], k),
            "dest_lon": np.tile(destinations["lon"].to_numpy()[j], k),
            "start_time": pd.DatetimeIndex(stamps).tz_localize("UTC").tz_convert(departures.tz),
        }
    )


class _Batch:
    """Predicts the pairs [start, stop) of a matrix (called by a worker thread)."""

    def __init__(self, model, origins, destinations, departures, options: dict):
        self.model = model
        self.origins = origins
        self.destinations = destinations
        self.departures = departures
        self.options = options

    def __call__(self, bounds: tuple[int, int]) -> pd.DataFrame:
        pairs = np.arange(*bounds, dtype=np.int64)
        i, j = np.divmod(pairs, len(self.destinations))
        queries = _pair_queries(self.origins, self.destinations, i, j, self.departures)
        table = trip_summaries(self.model, queries, departures=len(self.departures), **self.options)
        table.insert(0, "origin", self.origins["label"].to_numpy()[i])
        table.insert(1, "destination", self.destinations["label"].to_numpy()[j])
        return table


def iter_matrix(
    model: TravelTimeModel,
    origins: pd.DataFrame,
    destinations: pd.DataFrame,
    departure,
    *,
    quantiles: Sequence[float] = (),
    thresholds_s: Sequence[float] = (),
    indices: bool = False,
    area: ServiceArea | None = None,
    window_min: float = 0.0,
    batch_pairs: int | None = None,
    threads: int | None = None,
    progress: ProgressCallback | None = None,
) -> Iterator[pd.DataFrame]:
    """Every origin-destination pair's travel-time summaries, batch by batch.

    Parameters
    ----------
    model : TravelTimeModel
        The fitted model.
    origins, destinations : pandas.DataFrame
        Points with columns ``label``, ``lat`` and ``lon`` (:func:`points_table`,
        :func:`zone_points`).
    departure : datetime-like
        The departure time of every pair; a naive time is a wall-clock time in the
        model's time zone (as :meth:`~vrvm.TravelTimeModel.predict_dist` reads it).
    quantiles : sequence of float, default=()
        Levels q in (0, 1) of the extra quantile columns ``q<q>_s``.
    thresholds_s : sequence of float, default=()
        Times t > 0 in seconds of the columns ``p_within_<t>s`` = P(T <= t).
    indices : bool, default=False
        Also each pair's free-flow time, 95th percentile and reliability indices
        (:data:`~vrvm.services.answers.summaries.INDEX_SUMMARY_COLUMNS`; about four times the
        work: the night departures of every pair are predicted too).
    area : ServiceArea, optional
        With an area that indexes its training trips, also the training trips behind
        each pair (:data:`~vrvm.services.answers.summaries.SUPPORT_COLUMNS`).
    window_min : float, default=0
        With a window of w > 0 minutes, each pair's answer is the travel time of a
        departure drawn uniformly from [departure, departure + w]: the equal-weight
        mixture of the members at the midpoints of the window's one-minute slices
        (:func:`~vrvm.services.answers.schedule.window_departures`, as the Predict
        page's departure window); about w times the work. Not with ``indices``.
    batch_pairs : int, optional
        Pairs per batch (per table yielded); default :data:`MATRIX_BATCH_PAIRS`
        (divided by the window's departures).
    threads : int, optional
        Threads predicting batches at once (default: one per core, at most 8).
    progress : callable, optional
        Called as ``progress(pairs_done, pairs_total, elapsed_s, "pairs")`` before the
        first batch and after each.

    Yields
    ------
    pandas.DataFrame
        The pairs in order (origin by origin, each with every destination in order),
        columns :func:`matrix_columns`; times in seconds, probabilities in [0, 1]. A
        batch's values do not depend on how the pairs are batched.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> points = synthetic_city(3, seed=1).rename(
    ...     columns={"origin_lat": "lat", "origin_lon": "lon"})
    >>> places = points_table(points[["lat", "lon"]])
    >>> frames = list(iter_matrix(model, places, places, "2024-03-12 08:00",
    ...                           quantiles=[0.9], thresholds_s=[600], batch_pairs=4))
    >>> [len(f) for f in frames], list(frames[0].columns)
    ([4, 4, 1], ['origin', 'destination', 'mean_s', 'median_s', 'q0.9_s', 'p_within_600s'])
    """
    for name, points in (("origins", origins), ("destinations", destinations)):
        if not {"label", "lat", "lon"} <= set(points.columns):
            raise ValueError(f"{name} must have columns label, lat and lon (points_table)")
        if len(points) == 0:
            raise ValueError(f"no {name}")
    batch_pairs = MATRIX_BATCH_PAIRS if batch_pairs is None else batch_pairs
    if batch_pairs < 1:
        raise ValueError(f"batch_pairs must be a positive integer, got {batch_pairs!r}")
    stamp = pd.Timestamp(departure)
    if stamp is pd.NaT:
        raise ValueError(f"departure must be a time, got {departure!r}")
    if stamp.tz is None:
        stamp = stamp.tz_localize(model.tz_, ambiguous=True, nonexistent="shift_forward")
    matrix_columns(quantiles, thresholds_s)  # distinct columns, before any work
    window_min = float(window_min)
    if not (np.isfinite(window_min) and window_min >= 0):
        raise ValueError(f"window_min must be 0 or a positive number of minutes, got {window_min}")
    if window_min > 0 and indices:
        raise ValueError("reliability indices are for one departure time, not a window")
    departures = (
        window_departures(stamp, stamp + pd.Timedelta(minutes=window_min))
        if window_min > 0
        else pd.DatetimeIndex([stamp])
    )
    batch_pairs = max(1, batch_pairs // len(departures))
    options = {
        "quantiles": quantiles,
        "thresholds_s": thresholds_s,
        "indices": indices,
        "area": area,
    }
    predict = _Batch(model, origins, destinations, departures, options)
    total = len(origins) * len(destinations)
    yield from iter_pair_batches(predict, total, batch_pairs, threads, progress)


def iter_pair_batches(batch, total: int, batch_pairs: int, threads, progress):
    """The tables ``batch((start, stop))`` makes of pairs ``[start, stop)``, for ``total``
    pairs in steps of ``batch_pairs``, computed ``threads`` at a time and yielded in
    order, with ``progress(done, total, elapsed_s, "pairs")`` after each."""
    bounds = ((s, min(s + batch_pairs, total)) for s in range(0, total, batch_pairs))
    started = time.perf_counter()
    done = 0
    if progress is not None:
        progress(0, total, 0.0, "pairs")
    for table in in_threads(batch, bounds, threads=threads):
        done += len(table)
        if progress is not None:
            progress(done, total, time.perf_counter() - started, "pairs")
        yield table


def matrix_frame(
    model: TravelTimeModel,
    origins: pd.DataFrame,
    destinations: pd.DataFrame,
    departure,
    *,
    quantiles: Sequence[float] = (),
    thresholds_s: Sequence[float] = (),
    indices: bool = False,
    area: ServiceArea | None = None,
    max_pairs: int = DASHBOARD_MAX_PAIRS,
    threads: int | None = None,
) -> pd.DataFrame:
    """The whole matrix as one table (:func:`iter_matrix`), for at most ``max_pairs``."""
    total = len(origins) * len(destinations)
    if total > max_pairs:
        raise ValueError(
            f"{total:,} pairs is more than {max_pairs:,}: use iter_matrix (vrvm matrix), "
            "which writes them batch by batch"
        )
    tables = list(
        iter_matrix(
            model,
            origins,
            destinations,
            departure,
            quantiles=quantiles,
            thresholds_s=thresholds_s,
            indices=indices,
            area=area,
            threads=threads,
        )
    )
    return pd.concat(tables, ignore_index=True)


# ----------------------------------------------------------------------- what is shown
def matrix_csv(frame: pd.DataFrame) -> bytes:
    """The matrix as CSV bytes (UTF-8, a header row, full precision), its names safe in a
    spreadsheet (:func:`~vrvm.services.display.csv_cells.safe_cells`)."""
    return safe_cells(frame).to_csv(index=False).encode("utf-8")


def matrix_parquet(frame: pd.DataFrame) -> bytes:
    """The matrix as Parquet bytes."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def points_csv(points: pd.DataFrame) -> bytes:
    """Points as the CSV ``vrvm matrix`` reads back: ``name``, ``lat``, ``lon``."""
    frame = points.rename(columns={"label": "name"})[["name", "lat", "lon"]]
    return safe_cells(frame).to_csv(index=False).encode("utf-8")


def _display_labels(area: ServiceArea | None, values: pd.Series) -> pd.Series:
    if area is None:
        return values.astype(str)
    labels = dict(zip(area.grid["zone"].astype(str), area.grid["label"], strict=True))
    return values.astype(str).map(lambda z: labels.get(z, z))


def preview_table(
    frame: pd.DataFrame, area: ServiceArea | None = None, rows: int = 200
) -> pd.DataFrame:
    """The first ``rows`` pairs as shown: zone labels, times in minutes, percentages.

    Columns ``origin``, ``destination``, ``mean (min)``, ``median (min)``, one
    ``q<q> (min)`` per quantile and one ``P(≤ <t> min)`` per threshold (a fraction).
    """
    head = frame.head(rows)
    shown = pd.DataFrame(
        {
            "origin": _display_labels(area, head["origin"]),
            "destination": _display_labels(area, head["destination"]),
        }
    )
    for column in frame.columns[2:]:
        if column.startswith("p_within_"):
            minutes = float(column[len("p_within_") : -1]) / 60.0
            shown[f"P(≤ {format_number(round(minutes, 2))} min)"] = head[column].to_numpy()
        else:
            stem = column[: -len("_s")]
            shown[f"{stem} (min)"] = head[column].to_numpy() / 60.0
    return shown


def median_heatmap(
    frame: pd.DataFrame, area: ServiceArea | None = None, max_side: int = HEATMAP_MAX_SIDE
) -> pd.DataFrame | None:
    """Median minutes as a grid: origins as rows, destinations as columns, in order.

    None when there are more than ``max_side`` origins or destinations (too many to
    read on a heat map). Labels are the zones' labels when ``area`` is given.
    """
    origins = pd.unique(frame["origin"])
    destinations = pd.unique(frame["destination"])
    if len(origins) > max_side or len(destinations) > max_side:
        return None
    grid = frame.pivot_table(
        index="origin", columns="destination", values="median_s", aggfunc="first", sort=False
    )
    grid = grid.reindex(index=origins, columns=destinations) / 60.0
    grid.index = _display_labels(area, pd.Series(origins)).to_numpy()
    grid.columns = _display_labels(area, pd.Series(destinations)).to_numpy()
    return grid


def matrix_command(
    model_dir: str,
    departure,
    quantiles: Sequence[float] = (),
    thresholds_s: Sequence[float] = (),
) -> str:
    """The ``vrvm matrix`` command for the same matrix (origins.csv, destinations.csv).

    Examples
    --------
    >>> command = matrix_command("m", pd.Timestamp("2024-03-12 08:00"), [0.9], [600])
    >>> print(command.replace(" --", chr(10) + "  --"))
    vrvm matrix m
      --origins origins.csv
      --destinations destinations.csv
      --depart "2024-03-12 08:00"
      --quantiles 0.9
      --prob-within 600
      --out matrix.parquet
    """
    words = [
        "vrvm matrix",
        model_dir,
        "--origins origins.csv --destinations destinations.csv",
        f'--depart "{pd.Timestamp(departure):%Y-%m-%d %H:%M}"',
    ]
    if len(quantiles):
        words.append("--quantiles " + ",".join(format_number(q) for q in quantiles))
    if len(thresholds_s):
        words.append("--prob-within " + ",".join(format_number(t) for t in thresholds_s))
    words.append("--out matrix.parquet")
    return " ".join(words)


def model_reference(home: str | os.PathLike[str], version: int) -> str:
    """A model version's directory as a command names it: ``$VRVM_HOME/models/...``.

    Relative to the data home, so that a page never shows the server's paths.
    """
    path = Home(home).models.path(version)
    return f"${HOME_ENV}/{path.relative_to(home).as_posix()}"
