"""Command-line interface: ``vrvm demo | demo-data | train | predict | evaluate | update``.

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

    $ vrvm demo                      # synthetic city -> models/demo, example predictions
    $ vrvm demo-data --out trips.csv --n 20000
    $ vrvm train trips.csv --out model/ --members 8 --seed 0 --holdout 0.2
    $ vrvm predict model/ queries.csv --out predictions.csv
    $ vrvm evaluate model/ test.csv --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from vrvm._version import __version__
from vrvm.services.demo import DEMO_DAY, DEMO_DEPARTURES, DEMO_LEVEL, demo_predictions
from vrvm.services.predictions import (
    PREDICTION_COLUMNS,
    SCORE_COLUMNS,
    prediction_table,
    read_queries,
)
from vrvm.services.retrain import parse_widths
from vrvm.trips.cleaning import CleaningReport
from vrvm.trips.durable import atomic_write
from vrvm.trips.layouts import SCHEMAS
from vrvm.trips.model import TravelTimeModel
from vrvm.trips.model_dir import MODEL_FILE
from vrvm.trips.model_store import VERSIONS_DIR, ModelStore
from vrvm.trips.reader import read_trips
from vrvm.trips.split import split_holdout
from vrvm.trips.synthetic import SYNTHETIC_CITY_NAME, SYNTHETIC_CITY_TZ, synthetic_city
from vrvm.trips.table import trips_sha256
from vrvm.trips.timezones import check_zone

__all__ = ["build_parser", "main"]

PROG = "vrvm"


class UsageError(Exception):
    """A command line that parses but asks for something impossible (exit status 2)."""


# --------------------------------------------------------------------------- output
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
        atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        compression = _CSV_COMPRESSION.get(suffix)
        atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, compression=compression))


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
def _int_at_least(low: int, what: str):
    """argparse type: an integer >= ``low``, described as ``what`` in the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


_positive_int = _int_at_least(1, "a positive integer")
_seed = _int_at_least(0, "a non-negative integer")


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
    try:
        widths = parse_widths(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'auto' or comma-separated positive numbers such as 0.5,1,2; got {text!r}"
        ) from None
    return widths if isinstance(widths, str) else list(widths)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = np.nan
    if not (0 <= value < 1):
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1) such as 0.2, got {text!r}")
    return value


def _forgetting(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


def _time_zone(text: str) -> str:
    try:
        return check_zone(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# --------------------------------------------------------------------------- commands
def _print_report(report: CleaningReport, what: str, stderr: IO[str]) -> None:
    stderr.write(f"{what}: {report.summary()}\n")


def _fit_with_progress(model, trips: pd.DataFrame, quiet: bool, stderr: IO[str]) -> None:
    """Fit ``model`` on ``trips``, announcing it and drawing the members' progress bar."""
    if not quiet:
        widths = model.kernel_widths
        how = (
            "choosing kernel widths on a subsample first"
            if isinstance(widths, str)
            else "kernel widths " + ", ".join(f"{w:g}" for w in np.atleast_1d(widths))
        )
        stderr.write(f"fitting {model.n_members} members on {len(trips):,} trips ({how}) ...\n")
        stderr.flush()
    progress = None if quiet else _ProgressBar(stderr, "members")
    model.fit(trips, progress=progress)


def _holdout_summary(metrics: dict[str, Any]) -> str:
    coverage = {entry["level"]: entry["coverage"] for entry in metrics["intervals"]}
    nll = "n/a" if metrics["nll"] is None else f"{metrics['nll']:.3f} nats"
    crps = "n/a" if metrics["crps_s"] is None else f"{metrics['crps_s']:.1f} s"
    holdout = metrics["holdout"]
    return (
        f"held out {holdout['n_test']:,} trips ({holdout['fraction']:.0%}, split seed "
        f"{holdout['seed']}): CRPS {crps}, NLL {nll}, 90% interval coverage "
        f"{coverage[0.9]:.1%}"
    )


def _cmd_train(args, stdout: IO[str], stderr: IO[str]) -> int:
    if args.backend != "dask" and args.scheduler is not None:
        raise UsageError("--scheduler needs --backend dask")
    _check_model_target(Path(args.out))  # before the fit, not after it
    trips, report = read_trips(args.trips, schema=args.schema, tz=args.tz)
    if not args.quiet:
        _print_report(report, "training data", stderr)
    if len(trips) == 0:
        raise ValueError(f"{args.trips}: no trips left after cleaning")
    test = None
    if args.holdout > 0:
        # Without --seed the split is still recorded, so it can be repeated.
        split_seed = args.seed
        if split_seed is None:
            split_seed = int(np.random.SeedSequence().generate_state(1)[0])
        trips, test = split_holdout(trips, args.holdout, seed=split_seed)
    model = TravelTimeModel(
        n_members=args.members,
        target=args.target,
        kernel_widths=args.widths,
        max_basis=args.max_basis,
        factorization=args.factorization,
        noise_model=args.noise_model,
        n_jobs=args.n_jobs,
        backend=args.backend,
        client=args.scheduler,
        random_state=args.seed,
    )
    _fit_with_progress(model, trips, args.quiet, stderr)
    metrics = None
    if test is not None:
        metrics = {
            "holdout": {
                "fraction": args.holdout,
                "how": "random",
                "seed": split_seed,
                "n_train": len(trips),
                "n_test": len(test),
            },
            **model.evaluate(test),
        }
    model.save(args.out, metrics=metrics)

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
    ]
    if metrics is not None:
        lines.append(_holdout_summary(metrics))
    lines.append(f"saved to {args.out}" + (" (with the held-out metrics)" if metrics else ""))
    stdout.write("\n".join(lines) + "\n")
    return 0


def _check_model_target(path: Path) -> None:
    """Refuse early what saving would refuse: replacing something that is not a model."""
    if path.is_file() or (
        path.is_dir() and not (path / MODEL_FILE).is_file() and any(path.iterdir())
    ):
        raise FileExistsError(
            f"{path} exists and is not a model directory; refusing to replace it "
            "(choose another --out)"
        )


def _cmd_update(args, stdout: IO[str], stderr: IO[str]) -> int:
    """Sequential Bayesian update of a saved model (or of a store's active version)."""
    target = Path(args.model)
    is_store = (target / VERSIONS_DIR).is_dir()
    if is_store:
        store = ModelStore(target)
        parent = store.active_version()
        if parent is None:
            raise ValueError(f"{target}: the model store has no active version to update")
        source = store.active_path()
    else:
        source = target
        _check_model_target(Path(args.out or source))
    model = TravelTimeModel.load(source)
    trips, report = read_trips(args.trips, schema=args.schema, tz=args.tz)
    if not args.quiet:
        _print_report(report, "update data", stderr)
    if len(trips) == 0:
        raise ValueError(f"{args.trips}: no trips left after cleaning")
    started = time.perf_counter()
    model.update(trips, forgetting=args.forgetting, assign=args.assign)
    elapsed = time.perf_counter() - started
    info = {
        "kind": "update",
        "data": {
            "source": str(args.trips),
            "n_trips": len(trips),
            "sha256": trips_sha256(trips),
            "dropped": report.dropped,
        },
        "forgetting": args.forgetting,
        "assign": args.assign,
    }
    if is_store:
        info["parent"] = parent
        version = store.add(lambda path: model.save(path), info=info, activate=True)
        where = f"version {version} of {target} (parent {parent}), now active"
    else:
        where = str(model.save(args.out or source))
    stdout.write(
        f"updated {len(model.members_)} members with {len(trips):,} trips in "
        f"{elapsed * 1e3:.0f} ms (forgetting {args.forgetting}, assign {args.assign}); "
        f"saved to {where}\n"
    )
    return 0


def _cmd_predict(args, stdout: IO[str], stderr: IO[str]) -> int:
    model = TravelTimeModel.load(args.model)
    queries, report = read_queries(args.queries, model, schema=args.schema, tz=args.tz)
    if report.dropped:
        stderr.write(
            f"vrvm: warning: {report.dropped:,} of {report.n_input:,} query rows could not "
            "be used; their predictions are empty:\n"
        )
        stderr.write("\n".join(report.summary().splitlines()[1:]) + "\n")
    out = prediction_table(model, queries, report)
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
    model = TravelTimeModel.load(args.model)
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
    trips = synthetic_city(args.n, seed=args.seed)
    _write_table(trips, args.out, stdout)
    city = trips.attrs.get("city", "a synthetic city")
    stderr.write(
        f"wrote {len(trips):,} trips of {city} to {'stdout' if args.out == '-' else args.out}"
        " - SYNTHETIC data generated by vrvm, not real trips\n"
    )
    return 0


# --------------------------------------------------------------------------- demo
def _percent(p: float) -> str:
    """A probability as a whole percentage, never rounding to a certainty it is not."""
    if p > 0.995:
        return ">99%"
    if p < 0.005:
        return "<1%"
    return f"{p:.0%}"


def _format_demo_table(examples: pd.DataFrame) -> str:
    width = max(len("trip"), *(len(t) for t in examples["trip"]))
    weekday = pd.Timestamp(DEMO_DAY).day_name()
    tail = round(100 * (1 - DEMO_LEVEL) / 2)
    level = f"{DEMO_LEVEL:.0%}"
    lines = [
        f"Example predictions for {SYNTHETIC_CITY_NAME}: SYNTHETIC trips made up by vrvm,",
        f"not a real place. Departures on {weekday} {DEMO_DAY}, city clock "
        f"({SYNTHETIC_CITY_TZ}); in minutes:",
        f"median and {level} interval ({tail}th-{100 - tail}th percentile) of the "
        "predicted travel time;",
        "T: a deadline, the 08:15 median plus a minute, rounded up to whole 5 min;",
        "P(<=T): the chance to arrive within T; km: straight-line distance.",
        "",
        f"{'trip':<{width}}  {'km':>5}  {'departure':<13}{'median':>7}  "
        f"{f'{level} interval':>12}  {'T':>3}  P(<=T)",
    ]
    labels = dict(DEMO_DEPARTURES)
    previous = None
    for row in examples.itertuples():
        first = row.trip != previous
        previous = row.trip
        lines.append(
            f"{row.trip if first else '':<{width}}  "
            f"{f'{row.distance_km:.1f}' if first else '':>5}  "
            f"{f'{row.departure} ({labels[row.departure]})':<13}"
            f"{row.median_min:>7.1f}  {f'{row.lo_min:.1f}-{row.hi_min:.1f}':>12}  "
            f"{f'{row.deadline_min:.0f}' if first else '':>3}  {_percent(row.p_within):>6}"
        )
    return "\n".join(lines)


def _cmd_demo(args, stdout: IO[str], stderr: IO[str]) -> int:
    _check_model_target(Path(args.out))  # before the fit, not after it
    if not args.quiet:
        stderr.write(
            f"generating {args.trips:,} trips of {SYNTHETIC_CITY_NAME} (SYNTHETIC data, "
            f"seed {args.seed}) ...\n"
        )
        stderr.flush()
    trips = synthetic_city(args.trips, seed=args.seed)
    model = TravelTimeModel(n_members=args.members, n_jobs=args.n_jobs, random_state=args.seed)
    _fit_with_progress(model, trips, args.quiet, stderr)
    model.save(args.out)
    stdout.write(
        f"trained {len(model.members_)} members on {len(trips):,} synthetic trips in "
        f"{model.fit_time_s_:.1f} s; saved to {args.out}\n\n"
    )
    stdout.write(_format_demo_table(demo_predictions(model)) + "\n\n")
    stdout.write(
        f"Next: vrvm predict {args.out} QUERIES.csv  (columns origin_lat, origin_lon, "
        "dest_lat, dest_lon, start_time)\n"
        "      vrvm train TRIPS.csv --out DIR --holdout 0.2  (your own trips)\n"
    )
    return 0


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``vrvm`` command."""
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

    demo = commands.add_parser(
        "demo",
        parents=[common],
        help="train on a synthetic city and show example predictions",
        description="Generate trips of Synthetica, a SYNTHETIC city (not real data), "
        "train a TravelTimeModel on them, save it, and print example predictions: "
        "median minutes, 80% interval and P(arrive within T) for a few trips at 08:15 "
        "and 03:00 on a weekday. Needs no data and no arguments.",
    )
    demo.add_argument("--trips", type=_positive_int, default=20_000, help="synthetic trips (20000)")
    demo.add_argument("--seed", type=_seed, default=0, help="seed of data and model (0)")
    demo.add_argument("--members", type=_positive_int, default=8, help="ensemble size (8)")
    demo.add_argument(
        "--n-jobs", type=_n_jobs, default=2, help="parallel members, -1 for all cores (2)"
    )
    demo.add_argument(
        "--out", default="models/demo", metavar="DIR", help="model directory (models/demo)"
    )
    demo.set_defaults(handler=_cmd_demo)

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
    train.add_argument(
        "--noise-model",
        choices=("distance", "constant"),
        default="distance",
        help="predictive spread that varies with trip distance, fitted out of shard, or "
        "each member's constant noise level (distance)",
    )
    train.add_argument(
        "--holdout",
        type=_fraction,
        default=0.0,
        metavar="FRACTION",
        help="hold out this random fraction of the trips (split by --seed), score the "
        "model on it and store the metrics with the model (0: train on all)",
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
        f"{', '.join(SCORE_COLUMNS)} when some rows carry travel times (or drop-off "
        "times). Rows that cannot be used (unreadable time, missing or invalid "
        "coordinates, a travel time <= 0) get empty predictions and are listed on "
        "stderr. Naive times are read in the model's time zone unless --tz is given.",
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

    update = commands.add_parser(
        "update",
        parents=[common, reading],
        help="update a model with new trips (fast, no refit)",
        description="Sequential Bayesian update: every member keeps its relevance vectors "
        "and learns the new trips' evidence (weights and noise) in milliseconds. MODEL is a "
        "model directory (replaced, or written to --out) or a model store root, where the "
        "result becomes a new active version recording what it was updated with.",
    )
    update.add_argument("model", metavar="MODEL", help="model directory or model store root")
    update.add_argument("trips", metavar="TRIPS", help="new trips (CSV or Parquet)")
    update.add_argument("--out", metavar="DIR", help="write the updated model here instead")
    update.add_argument(
        "--forgetting",
        type=_forgetting,
        default=1.0,
        help="exponential forgetting per trip in (0, 1]; 1 keeps all evidence (default)",
    )
    update.add_argument(
        "--assign",
        choices=("shard", "all"),
        default="shard",
        help="trips are dealt to the members in turn (shard, default, as in training) or "
        "every member learns every trip (all)",
    )
    update.set_defaults(handler=_cmd_update)

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

    demo_data = commands.add_parser(
        "demo-data",
        parents=[common],
        help="write synthetic demo trips",
        description="Write trips of Synthetica, a synthetic city (not real data), as a "
        "canonical CSV file, or Parquet by extension.",
    )
    demo_data.add_argument("--out", required=True, metavar="FILE", help="output file; - for stdout")
    demo_data.add_argument(
        "--n", type=_positive_int, default=20_000, help="number of trips (20000)"
    )
    demo_data.add_argument("--seed", type=_seed, default=0, help="random seed (0)")
    demo_data.set_defaults(handler=_cmd_demo_data)
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
