"""Command-line interface: ``vrvm train | predict | evaluate | demo-data``.

Conventions (Unix):

* results go to **stdout** (the training summary, the metrics, predictions written to
  ``-``); diagnostics go to **stderr** (cleaning reports, the progress bar, warnings);
* exit status 0 on success, 1 for runtime and data errors (unreadable file, damaged
  model, ...), 2 for usage errors (unknown option, invalid value), 130 when
  interrupted;
* an error is reported as one line ``vrvm: error: ...`` on stderr, without a
  traceback unless ``--debug`` is given or ``VRVM_DEBUG=1`` is set.

Examples
--------
.. code-block:: console

    $ vrvm demo-data --out trips.csv --n 20000
    $ vrvm train trips.csv --out model/ --members 8 --seed 0
    $ vrvm predict model/ queries.csv --out predictions.csv
    $ vrvm evaluate model/ test.csv --json
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import logging
import os
import sys
import tempfile
import time
import traceback
import zoneinfo
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from vrvm import trips as trips_module
from vrvm.trips import SCHEMAS, CleaningConfig, CleaningReport, read_trips

__all__ = ["QueryTable", "main", "read_queries"]

PROG = "vrvm"
PREDICTION_COLUMNS = ("mean_s", "median_s", "std_s", "q05_s", "q25_s", "q75_s", "q95_s")
SCORE_COLUMNS = ("logpdf", "cdf", "crps")
_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
_INPUT_COLUMNS = ("origin_lat", "origin_lon", "dest_lat", "dest_lon", "start_time")

# Queries are only dropped when they cannot be predicted at all (unreadable time or
# coordinates): no plausibility thresholds, no duplicate removal, no distance limit.
QUERY_CLEANING = CleaningConfig(
    min_duration_s=None,
    max_duration_s=None,
    max_speed_kmh=None,
    max_radius_km=None,
    drop_duplicates=False,
)

# Helper columns added to a query table (see read_queries); their normalised names
# cannot clash with a real export's.
_ROW = "__vrvm_row__"
_ID_LAT = "__vrvm_id_lat__"
_ID_LON = "__vrvm_id_lon__"
_ID_BASE = 100_000


class UsageError(Exception):
    """A command line that parses but asks for something impossible (exit status 2)."""


# --------------------------------------------------------------------------- queries
@dataclasses.dataclass(frozen=True)
class QueryTable:
    """Queries read from a file by :func:`read_queries`.

    Attributes
    ----------
    queries : pandas.DataFrame
        One row per readable data row, in file order: ``row`` (line number in the
        file, header = line 1), the five input columns ``origin_lat, origin_lon,
        dest_lat, dest_lon, start_time`` and ``travel_time_s`` (NaN where the file
        has no usable travel time).
    rows : numpy.ndarray of int
        Line numbers of every data row of the file, readable or not.
    report : CleaningReport
        Rows that could not be read (time or coordinates missing or invalid), with
        reasons and example line numbers.
    has_travel_time : bool
        Whether the file carries travel times (some may still be missing).
    """

    queries: pd.DataFrame
    rows: np.ndarray
    report: CleaningReport
    has_travel_time: bool


@dataclasses.dataclass(frozen=True)
class _RawRows:
    frame: pd.DataFrame  # every column; CSV fields as text
    rows: np.ndarray  # line number of each row of frame
    n_blank: int  # blank lines skipped
    name: str


def _read_raw_strings(path, source: str | None) -> _RawRows:
    """Every column of a CSV (as text) or Parquet file, and the line number of each row.

    Uses the input checks of :func:`vrvm.read_trips` (compression, delimiter, binary
    or empty files), so that both accept and refuse the same files.
    """
    src = trips_module._open_input(path, source)
    if src.kind == "parquet":
        try:
            frame = pd.read_parquet(src.handle())
        except Exception as err:  # pyarrow raises several unrelated types
            raise ValueError(
                f"{src.name} could not be read as Parquet ({trips_module._short(err)})"
            ) from None
        rows = np.arange(len(frame)) + 2
        n_blank = 0
    else:
        _, sep = trips_module._read_csv_header(src)
        try:
            frame = pd.read_csv(
                src.handle(),
                sep=sep,
                dtype=str,
                keep_default_na=False,
                index_col=False,
                compression=src.compression,
                encoding_errors="replace",
                skipinitialspace=True,
                skip_blank_lines=False,
            )
        except trips_module._READ_ERRORS as err:
            raise ValueError(
                f"{src.name} could not be read as CSV ({trips_module._short(err)})"
            ) from None
        rows = np.arange(len(frame)) + 2
        blank = (frame.isna() | (frame == "")).all(axis=1).to_numpy()
        frame, rows = frame.loc[~blank].reset_index(drop=True), rows[~blank]
        n_blank = int(blank.sum())
    if len(frame) == 0:
        raise ValueError(f"{src.name} has no data rows")
    frame.columns = [str(c) for c in frame.columns]
    return _RawRows(frame, rows, n_blank, src.name)


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def read_queries(
    path_or_buffer, *, schema: str = "auto", tz: str | None = None, source: str | None = None
) -> QueryTable:
    """Read trip queries (and travel times, where present) from a CSV or Parquet file.

    Like :func:`vrvm.read_trips`, with the same schema detection and time handling,
    but a queries file needs only the five input columns (under the canonical names
    or those of a known schema), and a row is dropped only if it cannot be predicted:
    an unreadable start time or missing / invalid coordinates. Travel times, if the
    file has them, are returned where readable and positive, never used to drop rows.

    Parameters
    ----------
    path_or_buffer : str, path, bytes or file-like
        The file.
    schema : str, default="auto"
        ``"auto"`` or one of :data:`vrvm.trips.SCHEMAS`.
    tz : str or None, default=None
        Zone of times without an offset (default: the schema's city zone, else UTC);
        pass the model's ``tz_`` to read naive times as the model does.
    source : str or None, default=None
        Name used in messages.

    Returns
    -------
    QueryTable

    Notes
    -----
    :func:`vrvm.read_trips` insists on a travel time, so the file is read twice
    through it, with a helper column of line numbers added: once with the line number
    standing in for the travel time (every row has one, and with the plausibility
    checks off it passes through unchanged, so each kept row names its line), and,
    if the file has travel times, once with the destination replaced by a coordinate
    pair encoding the line number, so that each kept row's travel time is matched to
    its line exactly.

    Examples
    --------
    >>> import io
    >>> csv = io.StringIO(
    ...     "origin_lat,origin_lon,dest_lat,dest_lon,start_time\\n"
    ...     "41.88,-87.63,41.90,-87.65,2016-01-01 08:00\\n"
    ...     "41.88,-87.63,,-87.65,2016-01-01 09:00\\n"
    ... )
    >>> table = read_queries(csv, tz="America/Chicago", source="q.csv")
    >>> table.queries["row"].tolist(), table.rows.tolist(), table.has_travel_time
    ([2], [2, 3], False)
    >>> table.report.counts["missing_coordinates"]
    1
    """
    table = _read_raw_strings(path_or_buffer, source)
    raw, rows, name = table.frame, table.rows, table.name
    clashes = [c for c in (_ROW, _ID_LAT, _ID_LON) if c in raw.columns]
    if clashes:
        raise ValueError(f"{name}: column names {clashes} are reserved by vrvm")
    augmented = raw.assign(**{_ROW: rows.astype(np.float64)})

    # Pass 1: inputs, with the line number as the (required) travel time.
    try:
        found, report = read_trips(
            _parquet_bytes(augmented),
            schema=schema,
            tz=tz,
            column_map={"travel_time_s": _ROW},
            cleaning=QUERY_CLEANING,
            source=name,
        )
    except ValueError as err:
        if "could not recognise the trip schema" not in str(err):
            raise
        raise ValueError(
            f"{name}: could not find the query columns {list(_INPUT_COLUMNS)} (or a known "
            f"schema's names for them, schema={schema!r}); columns found: "
            f"{', '.join(map(repr, raw.columns[:40]))}"
        ) from None
    # Positions in `augmented` -> line numbers in the file, for the report's examples.
    examples = {
        reason: [int(rows[r - 2]) for r in listed] for reason, listed in report.examples.items()
    }
    report = dataclasses.replace(report, examples=examples, n_empty_rows=table.n_blank)
    queries = found[list(_INPUT_COLUMNS)].copy()
    queries.insert(0, "row", found["travel_time_s"].to_numpy().astype(np.int64))
    queries["travel_time_s"] = np.nan

    # Pass 2: travel times, matched to their lines through the destination columns,
    # read with the schema pass 1 found (the same start and origin columns).
    if report.schema not in SCHEMAS:  # "custom" needs a column_map: not for queries
        return QueryTable(queries.reset_index(drop=True), rows, report, False)
    ids = rows.astype(np.int64)
    augmented = raw.assign(
        **{_ID_LAT: 1.0 + (ids // _ID_BASE) * 1e-3, _ID_LON: 1.0 + (ids % _ID_BASE) * 1e-3}
    )
    try:
        timed, _ = read_trips(
            _parquet_bytes(augmented),
            schema=report.schema,
            tz=tz,
            column_map={"dest_lat": _ID_LAT, "dest_lon": _ID_LON},
            cleaning=QUERY_CLEANING,
            source=name,
        )
    except ValueError:
        has_travel_time = False  # no column of travel (or drop-off) times
    else:
        has_travel_time = True
        line = np.round((timed["dest_lat"].to_numpy() - 1.0) * 1e3).astype(np.int64) * _ID_BASE
        line += np.round((timed["dest_lon"].to_numpy() - 1.0) * 1e3).astype(np.int64)
        times = pd.Series(timed["travel_time_s"].to_numpy(), index=line)
        queries["travel_time_s"] = times.reindex(queries["row"].to_numpy()).to_numpy()
    return QueryTable(queries.reset_index(drop=True), rows, report, has_travel_time)


# --------------------------------------------------------------------------- output
def _atomic_write(path: Path, write) -> None:
    """Write through ``write(tmp_path)`` to a temporary file, then rename it to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_CSV_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}


def _write_table(frame: pd.DataFrame, out: str, stdout: IO[str]) -> None:
    """Write CSV (Parquet for ``.parquet``/``.pq``, compressed for ``.gz``...) atomically.

    ``out="-"`` writes CSV to ``stdout``.
    """
    if out == "-":
        frame.to_csv(stdout, index=False)
        return
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        _atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        compression = _CSV_COMPRESSION.get(suffix)
        _atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, compression=compression))


class _ProgressBar:
    """Plain-text progress on a stream: a redrawn bar on terminals, one line per step else."""

    def __init__(self, stream: IO[str], label: str, width: int = 30):
        self.stream = stream
        self.label = label
        self.width = width
        self.interactive = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int, elapsed_s: float) -> None:
        if self.interactive:
            filled = round(self.width * done / max(total, 1))
            bar = "#" * filled + "-" * (self.width - filled)
            end = "\n" if done >= total else ""
            self.stream.write(f"\r{self.label} [{bar}] {done}/{total}  {elapsed_s:6.1f} s{end}")
        else:
            self.stream.write(f"{self.label}: {done}/{total} done ({elapsed_s:.1f} s)\n")
        self.stream.flush()


# --------------------------------------------------------------------------- argument types
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _n_jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0:
        raise argparse.ArgumentTypeError(
            f"expected a non-zero integer (-1 for all cores), got {text!r}"
        )
    return value


def _widths(text: str) -> str | list[float]:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(np.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(
            f"expected 'auto' or comma-separated positive numbers such as 0.5,1,2; got {text!r}"
        )
    return values


def _time_zone(text: str) -> str:
    try:
        zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(
            f"unknown time zone {text!r}; use an IANA name such as America/Chicago or UTC"
        ) from None
    return text


# --------------------------------------------------------------------------- commands
def _print_report(report: CleaningReport, what: str, stderr: IO[str]) -> None:
    stderr.write(f"{what}: {report.summary()}\n")


def _cmd_train(args, stdout: IO[str], stderr: IO[str]) -> int:
    from vrvm.model import TravelTimeModel

    if args.backend != "dask" and args.scheduler is not None:
        raise UsageError("--scheduler needs --backend dask")
    _check_model_target(Path(args.out))  # before the fit, not after it
    trips, report = read_trips(args.trips, schema=args.schema, tz=args.tz)
    if not args.quiet:
        _print_report(report, "training data", stderr)
    if len(trips) == 0:
        raise ValueError(f"{args.trips}: no trips left after cleaning")
    model = TravelTimeModel(
        n_members=args.members,
        target=args.target,
        kernel_widths=args.widths,
        max_basis=args.max_basis,
        factorization=args.factorization,
        n_jobs=args.n_jobs,
        backend=args.backend,
        client=args.scheduler,
        random_state=args.seed,
    )
    if not args.quiet:
        how = (
            "choosing kernel widths on a subsample first"
            if args.widths == "auto"
            else "kernel widths " + ", ".join(f"{w:g}" for w in args.widths)
        )
        stderr.write(f"fitting {args.members} members on {len(trips):,} trips ({how}) ...\n")
        stderr.flush()
    progress = None if args.quiet else _ProgressBar(stderr, "members")
    model.fit(trips, progress=progress)
    model.save(args.out)

    relevance = model.n_relevance_
    lines = [
        f"trained {len(model.members_)} members on {len(trips):,} trips in "
        f"{model.fit_time_s_:.1f} s (target: {args.target})",
        "kernel widths: " + ", ".join(f"{w:.4g}" for w in model.kernel_widths_),
        "relevance vectors per member: "
        + ", ".join(str(int(r)) for r in relevance)
        + f" (mean {relevance.mean():.1f})",
        f"trips per member: {int(model.shard_sizes_.min()):,}-{int(model.shard_sizes_.max()):,}"
        + (
            f", stratified on H3 resolution {model.h3_resolution_} zones x hour"
            if model.h3_resolution_ is not None
            else ""
        ),
        f"saved to {args.out}",
    ]
    stdout.write("\n".join(lines) + "\n")
    return 0


def _check_model_target(path: Path) -> None:
    """Refuse early what saving would refuse: replacing something that is not a model."""
    if path.is_file() or (
        path.is_dir() and not (path / "model.json").is_file() and any(path.iterdir())
    ):
        raise FileExistsError(
            f"{path} exists and is not a model directory; refusing to replace it "
            "(choose another --out)"
        )


def _load_model(path: str):
    from vrvm.model import TravelTimeModel

    return TravelTimeModel.load(path)


def _cmd_predict(args, stdout: IO[str], stderr: IO[str]) -> int:
    model = _load_model(args.model)
    table = read_queries(args.queries, schema=args.schema, tz=args.tz or model.tz_)
    queries = table.queries
    if table.report.dropped:
        stderr.write(
            f"vrvm: warning: {table.report.dropped:,} of {len(table.rows):,} query rows could "
            "not be read; their predictions are empty:\n"
        )
        stderr.write("\n".join(table.report.summary().splitlines()[1:]) + "\n")
    # One output row per data row of the file; unreadable rows keep NaN (empty in CSV).
    columns = [*PREDICTION_COLUMNS]
    if table.has_travel_time:
        columns += ["travel_time_s", *SCORE_COLUMNS]
    out = pd.DataFrame(np.nan, index=np.arange(len(table.rows)), columns=columns)
    out.insert(0, "row", table.rows)
    at = np.searchsorted(table.rows, queries["row"].to_numpy())  # rows are increasing
    if len(queries):
        dist = model.predict_dist(queries)
        q05, q25, q50, q75, q95 = dist.ppf(np.array(_QUANTILES)[:, None])
        predicted = {
            "mean_s": dist.mean(),
            "median_s": q50,
            "std_s": dist.std(),
            "q05_s": q05,
            "q25_s": q25,
            "q75_s": q75,
            "q95_s": q95,
        }
        for column, values in predicted.items():
            out.loc[at, column] = values
        truth = queries["travel_time_s"].to_numpy()
        known = np.flatnonzero(np.isfinite(truth))
        if known.size:
            scored, y = dist[known], truth[known]
            out.loc[at[known], "travel_time_s"] = y
            out.loc[at[known], "logpdf"] = scored.logpdf(y)
            out.loc[at[known], "cdf"] = scored.cdf(y)
            out.loc[at[known], "crps"] = scored.crps(y)
    _write_table(out, args.out, stdout)
    if args.out != "-":
        stderr.write(f"wrote {len(queries):,} predictions to {args.out}\n")
    return 0


def _format_metrics(metrics: dict[str, Any], model_path: str, test_path: str, model) -> str:
    def num(value, fmt: str) -> str:
        return "n/a" if value is None else format(value, fmt)

    lines = [
        f"model: {model_path} ({len(model.members_)} members, target {model.target})",
        f"test data: {test_path} ({metrics['n']:,} trips)",
        "",
        f"{'point error':<22}{'median':>12}{'mean':>12}",
    ]
    for key, label, fmt in (
        ("rmse_s", "RMSE (s)", ".1f"),
        ("mae_s", "MAE (s)", ".1f"),
        ("mape_pct", "MAPE (%)", ".2f"),
        ("bias_s", "bias (s)", "+.1f"),
    ):
        lines.append(
            f"  {label:<20}{num(metrics['median'][key], fmt):>12}"
            f"{num(metrics['mean'][key], fmt):>12}"
        )
    lines += [
        "",
        f"{'NLL (nats)':<22}{num(metrics['nll'], '.4f'):>12}",
        f"{'CRPS (s)':<22}{num(metrics['crps_s'], '.1f'):>12}",
        "",
        f"{'central interval':<22}{'coverage':>12}{'mean width (s)':>16}",
    ]
    for entry in metrics["intervals"]:
        lines.append(
            f"  {entry['level']:<20.0%}{entry['coverage']:>12.1%}"
            f"{num(entry['mean_width_s'], '.1f'):>16}"
        )
    pit = metrics["pit"]
    lines += ["", "PIT histogram (flat = calibrated; 1.00 = expected share):"]
    edges = pit["bin_edges"]
    for i, (count, density) in enumerate(zip(pit["counts"], pit["density"], strict=True)):
        bar = "#" * round(20 * (density or 0.0))
        lines.append(
            f"  {edges[i]:.2f}-{edges[i + 1]:.2f} {count:>8,} {num(density, '.2f'):>6} {bar}"
        )
    return "\n".join(lines)


def _cmd_evaluate(args, stdout: IO[str], stderr: IO[str]) -> int:
    model = _load_model(args.model)
    trips, report = read_trips(args.test, schema=args.schema, tz=args.tz or model.tz_)
    if not args.quiet:
        _print_report(report, "test data", stderr)
    if len(trips) == 0:
        raise ValueError(f"{args.test}: no trips left after cleaning")
    metrics = model.evaluate(trips)
    if args.json:
        stdout.write(json.dumps(metrics, indent=2) + "\n")
    else:
        stdout.write(_format_metrics(metrics, args.model, args.test, model) + "\n")
    return 0


def _cmd_demo_data(args, stdout: IO[str], stderr: IO[str]) -> int:
    from vrvm.datasets import synthetic_city

    trips = synthetic_city(args.n, seed=args.seed)
    _write_table(trips, args.out, stdout)
    city = trips.attrs.get("city", "a synthetic city")
    stderr.write(
        f"wrote {len(trips):,} trips of {city} to {'stdout' if args.out == '-' else args.out}"
        " - SYNTHETIC data generated by vrvm, not real trips\n"
    )
    return 0


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``vrvm`` command."""
    from vrvm import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Probabilistic travel-time prediction with ensembles of variational "
        "relevance vector machines.",
        epilog="Results go to stdout, diagnostics to stderr. Exit status: 0 success, "
        "1 runtime or data error, 2 usage error. Set VRVM_DEBUG=1 or pass --debug for "
        "tracebacks.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logging")
    # Accept --debug and --quiet after the command too without overriding a value given
    # before it (SUPPRESS leaves the namespace alone when the flag is absent).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="as above")
    common.add_argument(
        "-q", "--quiet", action="store_true", default=False, help="no reports or progress"
    )
    reading = argparse.ArgumentParser(add_help=False)
    reading.add_argument(
        "--schema",
        choices=("auto", *SCHEMAS),
        default="auto",
        help="column layout of the input (default: detected from the header)",
    )
    reading.add_argument(
        "--tz",
        type=_time_zone,
        default=None,
        help="IANA zone of times without an offset",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    train = commands.add_parser(
        "train",
        parents=[common, reading],
        help="train a model on a trip file",
        description="Train a TravelTimeModel on a trip file (CSV or Parquet) and save it "
        "atomically to a model directory. The cleaning report and progress go to stderr, "
        "the summary to stdout.",
    )
    train.add_argument("trips", metavar="TRIPS", help="trip file (CSV or Parquet)")
    train.add_argument("--out", required=True, metavar="DIR", help="model directory to write")
    train.add_argument("--members", type=_positive_int, default=8, help="ensemble size (8)")
    train.add_argument(
        "--widths",
        type=_widths,
        default="auto",
        metavar="auto|W1,W2,...",
        help="kernel widths in standardised feature units (auto)",
    )
    train.add_argument(
        "--max-basis", type=_positive_int, default=1000, help="kernel centres per member (1000)"
    )
    train.add_argument(
        "--n-jobs", type=_n_jobs, default=1, help="parallel members, -1 for all cores (1)"
    )
    train.add_argument(
        "--target", choices=("log", "seconds"), default="log", help="modelled scale (log)"
    )
    train.add_argument(
        "--factorization",
        choices=("structured", "meanfield"),
        default="structured",
        help="variational family: Student-t or Gaussian members (structured)",
    )
    train.add_argument("--seed", type=_seed, default=None, help="random seed")
    train.add_argument(
        "--backend", choices=("loky", "dask"), default="loky", help="parallel backend (loky)"
    )
    train.add_argument(
        "--scheduler", metavar="ADDRESS", default=None, help="Dask scheduler address"
    )
    train.set_defaults(handler=_cmd_train)

    predict = commands.add_parser(
        "predict",
        parents=[common, reading],
        help="predict travel-time distributions for queries",
        description="Predict travel-time distributions for the queries of a file holding "
        "origin_lat, origin_lon, dest_lat, dest_lon, start_time (or a known schema's "
        "names for them). Writes one row per data row of the file: row (its line "
        f"number), {', '.join(PREDICTION_COLUMNS)}; plus travel_time_s, "
        f"{', '.join(SCORE_COLUMNS)} when the file has travel times. Rows that cannot "
        "be read get empty predictions (listed on stderr). Naive times are read in the "
        "model's time zone unless --tz is given.",
    )
    predict.add_argument("model", metavar="DIR", help="model directory")
    predict.add_argument("queries", metavar="QUERIES", help="query file (CSV or Parquet)")
    predict.add_argument(
        "--out",
        default="-",
        metavar="FILE",
        help="output CSV, or Parquet by extension; - for stdout (default)",
    )
    predict.set_defaults(handler=_cmd_predict)

    evaluate = commands.add_parser(
        "evaluate",
        parents=[common, reading],
        help="score a model on test trips",
        description="Score a model on a test trip file (cleaned like training data): "
        "errors of the median and mean, NLL, CRPS, interval coverage and the PIT "
        "histogram.",
    )
    evaluate.add_argument("model", metavar="DIR", help="model directory")
    evaluate.add_argument("test", metavar="TEST", help="test trip file (CSV or Parquet)")
    evaluate.add_argument("--json", action="store_true", help="print the metrics as JSON")
    evaluate.set_defaults(handler=_cmd_evaluate)

    demo = commands.add_parser(
        "demo-data",
        parents=[common],
        help="write synthetic demo trips",
        description="Write trips of Synthetica, a synthetic city (not real data), as a "
        "canonical CSV file, or Parquet by extension.",
    )
    demo.add_argument("--out", required=True, metavar="FILE", help="output file; - for stdout")
    demo.add_argument("--n", type=_positive_int, default=20_000, help="number of trips (20000)")
    demo.add_argument("--seed", type=_seed, default=0, help="random seed (0)")
    demo.set_defaults(handler=_cmd_demo_data)
    return parser


# --------------------------------------------------------------------------- main
# Lines of a multi-line error message worth keeping in the one-line summary.
_KEY_LINES = ("Columns found", "Closest match")


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line.

    Of a multi-line message (such as read_trips' list of known schemas) the first
    line and the key lines are kept, with a pointer to ``--debug`` for the rest.
    """
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    kept = [lines[0], *(line for line in lines[1:] if line.startswith(_KEY_LINES))]
    if len(kept) < len(lines):
        kept.append("(--debug shows the full message)")
    return " ".join(kept)


@contextlib.contextmanager
def _logging_to(stream: IO[str], level: int):
    logger = logging.getLogger("vrvm")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s: %(message)s"))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run the ``vrvm`` command line; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).
    stdout, stderr : text streams, optional
        Where results and diagnostics go (default: ``sys.stdout``, ``sys.stderr``).

    Returns
    -------
    int
        0 on success, 1 on a runtime or data error, 2 on a usage error, 130 when
        interrupted.
    """
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    parser = build_parser()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    debug = bool(getattr(args, "debug", False)) or os.environ.get("VRVM_DEBUG") == "1"
    started = time.perf_counter()
    try:
        with _logging_to(stderr, logging.DEBUG if debug else logging.WARNING):
            status = args.handler(args, stdout, stderr)
    except KeyboardInterrupt:
        stderr.write(f"{PROG}: interrupted\n")
        return 130
    except UsageError as exc:
        stderr.write(f"{PROG} {args.command}: error: {_one_line(exc)}\n")
        return 2
    except Exception as exc:
        if debug:
            traceback.print_exc(file=stderr)  # ends with the full message
        stderr.write(f"{PROG}: error: {_one_line(exc)}\n")
        return 1
    logging.getLogger(__name__).debug("done in %.1f s", time.perf_counter() - started)
    return status
