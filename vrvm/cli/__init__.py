"""Command-line interface: ``vrvm demo | demo-data | train | predict | arrive-by | matrix |
evaluate | update | versions | inspect | serve | export | audit | hash-passphrase``.

Conventions (Unix):

* results go to **stdout** (the training summary, the metrics, predictions written to
  ``-``); diagnostics go to **stderr** (cleaning reports, the progress bar, warnings);
* exit status 0 on success, 1 for runtime and data errors (unreadable file, damaged
  model, ...), 2 for usage errors (unknown option, invalid value), 75 when a model
  store stayed busy with another writer (nothing changed: try again), 130 when
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
    $ vrvm update .vrvm/models new-trips.csv   # a new active version of a store
    $ vrvm versions .vrvm --lineage            # the active version's chain of parents
    $ vrvm export .vrvm --out shared-model/    # relevance vectors snapped to zone centres
    $ vrvm audit .vrvm                         # who uploaded, published, deleted what

Commands that change a data home's model store (``update``, ``versions --activate``,
``export``) record the OS user in the home's audit log; a publish or an activation
records it in the same durable step as the change. A read-only home
(:func:`vrvm.trips.home.read_only_reason`) is listed as committed and never written:
what a crash left is reported on stderr, not repaired.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import pandas as pd

from vrvm._version import __version__
from vrvm.cli._access import add_parsers as add_access_parsers
from vrvm.cli._args import (
    UsageError,
    evidence,
    forgetting_factor,
    fraction,
    jobs_int,
    positive_int,
    seconds,
    seed_int,
    widths_list,
)
from vrvm.cli._compare import add_parser as add_compare_parser
from vrvm.cli._gaps import add_parser as add_gaps_parser
from vrvm.cli._matrix import add_parser as add_matrix_parser
from vrvm.cli._output import (
    format_demo_table,
    format_metrics,
    print_report,
    write_table,
)
from vrvm.cli._reading import (
    cli_hints,
    cmd_inspect,
    predict_in_batches,
    predict_progress,
    reading_options,
    reading_parser,
)
from vrvm.cli._schedule import add_arrive_by_parser
from vrvm.cli._serve import add_parser as add_serve_parser
from vrvm.cli._site import add_parser as add_site_parser
from vrvm.cli._stops import add_parser as add_stops_parser
from vrvm.cli._train import check_model_target, cmd_train, fit_with_progress
from vrvm.services.access.policy import cli_access, home_of
from vrvm.services.analyst.area_check import check_same_area
from vrvm.services.analyst.demo import demo_predictions
from vrvm.services.answers.predictions import PREDICTION_COLUMNS, SCORE_COLUMNS
from vrvm.services.display.progress import format_seconds
from vrvm.services.map.support import day_kinds_warning
from vrvm.services.versions.models import (
    activate_version,
    model_name,
    store_versions_table,
    update_active_version,
)
from vrvm.trips.files.reader import read_trips
from vrvm.trips.home import MODELS_DIR, Home
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.settings import KEEP_VERSIONS_ENV, keep_versions
from vrvm.trips.store.durable import StorageError, StoreBusyError, refuse_writes, storage_error
from vrvm.trips.store.model_store import DEFAULT_WAIT_S, VERSIONS_DIR, ModelStore
from vrvm.trips.synthetic import SYNTHETIC_CITY_NAME, synthetic_city
from vrvm.trips.table import trips_sha256

__all__ = ["build_parser", "main"]

PROG = "vrvm"


# --------------------------------------------------------------------------- output


# --------------------------------------------------------------------------- argument types


# --------------------------------------------------------------------------- commands


def _cmd_train(args, stdout: IO[str], stderr: IO[str]) -> int:
    if args.backend != "dask" and args.scheduler is not None:
        raise UsageError("--scheduler needs --backend dask")
    return cmd_train(args, stdout, stderr)


def _store_root(path: Path) -> Path | None:
    """The model store at ``path``: a store root, or a data home holding one; else None."""
    for root in (path, path / MODELS_DIR):
        if (root / VERSIONS_DIR).is_dir():
            return root
    return None


def _open_store(root: Path, wait_s: float | None) -> ModelStore:
    """The store at ``root``, healed: what a killed writer left is finished or rolled
    back (each repair is logged, so it shows on stderr). A read-only home is not
    written at all: what would be repaired is logged instead, and any later write
    this process tries there is refused with the reason."""
    home = home_of(root)
    store = ModelStore(root, keep_last=keep_versions(), wait_s=wait_s, audit_log=Home(home).audit)
    reason = Home(home).read_only_reason()
    if reason is None:
        store.heal()
        return store
    if not reason.startswith("the data home is read-only"):  # not yet refused here
        refuse_writes(home, f"the data home is read-only ({reason})")
    for line in store.pending_repairs():
        logging.getLogger(__name__).warning("%s not repaired (%s): %s", root, reason, line)
    return store


def _cmd_update(args, stdout: IO[str], stderr: IO[str]) -> int:
    """Sequential Bayesian update of a saved model (or of a store's active version)."""
    target = Path(args.model)
    root = _store_root(target)
    if root is None:
        check_model_target(Path(args.out or target))
    trips, report = read_trips(args.trips, **reading_options(args))
    if not args.quiet:
        print_report(report, "update data", stderr)
    if len(trips) == 0:
        raise ValueError(f"{args.trips}: no trips left after cleaning")
    if root is None:
        model = TravelTimeModel.load(target)
        elapsed = _update(model, trips, args, training=None)
        where = str(model.save(args.out or target))
    else:
        home = home_of(root)
        elapsed = 0.0  # set by update(), which runs under the store's lock

        def update(model: TravelTimeModel) -> dict:
            nonlocal elapsed
            elapsed = _update(model, trips, args, training=Home(home).load_training_trips(model))
            return {
                "kind": "update",
                "data": {
                    "source": Path(args.trips).name,
                    "n_trips": len(trips),
                    "sha256": trips_sha256(trips),
                    "dropped": report.dropped,
                },
                "n_trips": len(trips),
                "forgetting": args.forgetting,
                "assign": args.assign,
            }

        version, parent, model = update_active_version(
            home, update, by=cli_access(), store=_open_store(root, args.wait)
        )
        where = f"version {version} of {root} (parent {parent}), now active"
    stdout.write(
        f"updated {len(model.members_)} members with {len(trips):,} trips in "
        f"{elapsed * 1e3:.0f} ms (forgetting {args.forgetting}, assign {args.assign}); "
        f"saved to {where}\n"
    )
    return 0


def _update(model: TravelTimeModel, trips: pd.DataFrame, args, training) -> float:
    """Check the trips' area and update ``model`` in place; returns the seconds taken."""
    check = check_same_area(model, trips, training_trips=training)
    if not check.ok and not args.allow_new_area:
        raise ValueError(f"update refused: {check.reason} (--allow-new-area updates it anyway)")
    started = time.perf_counter()
    model.update(trips, forgetting=args.forgetting, assign=args.assign)
    return time.perf_counter() - started


def _cmd_versions(args, stdout: IO[str], stderr: IO[str]) -> int:
    """List a model store's versions with their lineage; re-activate one by hand."""
    root = _store_root(Path(args.store))
    if root is None:
        raise ValueError(
            f"{args.store} is not a model store (no {VERSIONS_DIR}/ folder in it or in "
            f"its {MODELS_DIR}/ folder)"
        )
    store = _open_store(root, args.wait)
    if args.activate is not None:
        activate_version(home_of(root), args.activate, by=cli_access(), store=store)
        stderr.write(f"version {args.activate} of {root} is active (activated by hand)\n")
    if args.lineage is not None:
        chain = store.lineage(None if args.lineage == 0 else args.lineage)
        stdout.write(" <- ".join(f"v{v}" for v in chain) + "\n")
        return 0
    table = store_versions_table(store)
    if args.json:
        stdout.write(table.to_json(orient="records", indent=2) + "\n")
        return 0
    shown = table.drop(columns=["active", "synthetic"]).astype(object)
    shown = shown.where(shown.notna(), "")  # no parent, no score: blank, not <NA>
    stdout.write(shown.to_string(index=False) + "\n" if len(shown) else "no versions\n")
    pruned = len(store.pruned())
    if pruned:
        stderr.write(
            f"{pruned} older version(s) were removed by retention (keeping the newest "
            f"{store.keep_last}, the active one and those activated by hand; "
            f"{KEEP_VERSIONS_ENV} sets how many)\n"
        )
    return 0


def _cmd_predict(args, stdout: IO[str], stderr: IO[str]) -> int:
    model = TravelTimeModel.load(args.model)
    # Read, predicted and written in batches: memory does not grow with the file.
    started = time.perf_counter()
    bar = None if args.quiet else predict_progress(args.queries, stderr)
    try:
        n_predicted, report, thin_days = predict_in_batches(
            model, args.queries, reading_options(args), args.out, stdout, progress=bar
        )
    finally:
        if bar is not None:
            bar.close()
    elapsed_s = time.perf_counter() - started
    if report.dropped:
        stderr.write(
            f"vrvm: warning: {report.dropped:,} of {report.n_input:,} query rows could not "
            "be used; their predictions are empty:\n"
        )
        stderr.write("\n".join(report.summary().splitlines()[1:]) + "\n")
    if warning := day_kinds_warning(model, thin_days, n_predicted):
        stderr.write(f"vrvm: warning: {warning}\n")
    if args.out != "-":
        rate = f"{n_predicted / elapsed_s:,.0f} queries/s" if n_predicted else "no queries"
        stderr.write(
            f"wrote {n_predicted:,} predictions to {args.out} "
            f"in {format_seconds(elapsed_s)} ({rate})\n"
        )
    return 0


def _cmd_evaluate(args, stdout: IO[str], stderr: IO[str]) -> int:
    model = TravelTimeModel.load(args.model)
    options = reading_options(args)
    options["tz"] = options["tz"] or model.tz_
    trips, report = read_trips(args.test, **options)
    if not args.quiet:
        print_report(report, "test data", stderr)
    if len(trips) == 0:
        raise ValueError(f"{args.test}: no trips left after cleaning")
    metrics = model.evaluate(trips)
    if args.json:
        stdout.write(json.dumps(metrics, indent=2) + "\n")
    else:
        label = f"{args.model} (“{model_name(model)}”)"
        stdout.write(format_metrics(metrics, label, args.test, model, args.units) + "\n")
    return 0


def _cmd_demo_data(args, stdout: IO[str], stderr: IO[str]) -> int:
    trips = synthetic_city(args.n, seed=args.seed)
    write_table(trips, args.out, stdout)
    city = trips.attrs.get("city", "a synthetic city")
    stderr.write(
        f"wrote {len(trips):,} trips of {city} to {'stdout' if args.out == '-' else args.out}"
        " - SYNTHETIC data generated by vrvm, not real trips\n"
    )
    return 0


# --------------------------------------------------------------------------- demo


def _cmd_demo(args, stdout: IO[str], stderr: IO[str]) -> int:
    check_model_target(Path(args.out))  # before the fit, not after it
    if not args.quiet:
        stderr.write(
            f"generating {args.trips:,} trips of {SYNTHETIC_CITY_NAME} (SYNTHETIC data, "
            f"seed {args.seed}) ...\n"
        )
        stderr.flush()
    trips = synthetic_city(args.trips, seed=args.seed)
    model = TravelTimeModel(n_members=args.members, n_jobs=args.n_jobs, random_state=args.seed)
    fit_with_progress(model, trips, args.quiet, stderr)
    model.save(args.out)
    stdout.write(
        f"trained {len(model.members_)} members on {len(trips):,} synthetic trips in "
        f"{model.fit_time_s_:.1f} s; saved to {args.out}\n\n"
    )
    stdout.write(format_demo_table(demo_predictions(model)) + "\n\n")
    stdout.write(
        f"Next: vrvm predict {args.out} QUERIES.csv  (columns origin_lat, origin_lon, "
        "dest_lat, dest_lon, start_time)\n"
        "      vrvm train TRIPS.csv --out DIR --holdout 0.2  (your own trips)\n"
    )
    return 0


# --------------------------------------------------------------------------- parser
def _wait_option(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """``--wait SECONDS``: how long a store's writer waits for another (exit 75 after)."""
    parser.add_argument(
        "--wait",
        type=seconds,
        default=DEFAULT_WAIT_S,
        metavar="SECONDS",
        help=f"{prefix}how long to wait for another writer before giving up "
        f"({DEFAULT_WAIT_S:g}; then exit 75, nothing changed)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``vrvm`` command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Probabilistic travel-time prediction with ensembles of variational "
        "relevance vector machines.",
        epilog="Results go to stdout, diagnostics to stderr. Exit status: 0 success, "
        "1 runtime or data error, 2 usage error, 75 a store busy with another writer (nothing "
        "changed: try again). Set VRVM_DEBUG=1 or pass --debug for "
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
    reading = reading_parser()
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
    demo.add_argument("--trips", type=positive_int, default=20_000, help="synthetic trips (20000)")
    demo.add_argument("--seed", type=seed_int, default=0, help="seed of data and model (0)")
    demo.add_argument("--members", type=positive_int, default=8, help="ensemble size (8)")
    demo.add_argument(
        "--n-jobs", type=jobs_int, default=2, help="parallel members, -1 for all cores (2)"
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
    train.add_argument(
        "trips",
        metavar="TRIPS",
        help="trip file (CSV or Parquet) or a folder of Parquet files; a folder, or a "
        "Parquet file with more than MEMBERS x SUBSAMPLE rows, is read part by part "
        "(out of core) and fitted in two stages",
    )
    train.add_argument("--out", required=True, metavar="DIR", help="model directory to write")
    train.add_argument(
        "--name",
        default=None,
        help="the model's name, a city or data-set name shown in every caption "
        "(default: from the file name)",
    )
    train.add_argument(
        "--units", choices=("s", "min"), default="s", help="unit of printed times (s)"
    )
    train.add_argument("--members", type=positive_int, default=8, help="ensemble size (8)")
    train.add_argument(
        "--widths",
        type=widths_list,
        default="auto",
        metavar="auto|W1,W2,...",
        help="kernel widths in standardised feature units (auto)",
    )
    train.add_argument(
        "--max-basis", type=positive_int, default=1000, help="kernel centres per member (1000)"
    )
    train.add_argument(
        "--n-jobs", type=jobs_int, default=1, help="parallel members, -1 for all cores (1)"
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
        type=fraction,
        default=0.0,
        metavar="FRACTION",
        help="hold out this random fraction of the trips (split by --seed), score the "
        "model on it and store the metrics with the model (0: train on all)",
    )
    train.add_argument(
        "--subsample-size",
        type=positive_int,
        default=20_000,
        metavar="SUBSAMPLE",
        help="trips per member on which its basis is chosen; beyond it the members are "
        "refitted on all their trips from sufficient statistics (20000)",
    )
    train.add_argument(
        "--stage-one-evidence",
        type=evidence,
        default=3.0,
        metavar="{all,sample,W}",
        help="the trips each sampled trip counts for when a two-stage fit chooses its "
        "basis: at most W (more functions for more trips up to a bound that keeps "
        "predictions fast), 'all' (the trips it stands for: no bound) or 'sample' (once: "
        "smaller, less accurate) (3)",
    )
    train.add_argument(
        "--pair-offsets",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="learn each pair of zones' offset from its trips' residuals (a sharper "
        "model; a two-stage fit reads the data a third time for them) (on)",
    )
    train.add_argument(
        "--location-stage",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="learn each trip's location with boosted trees first (log distance, bearing, "
        "rotated ends, hour, weekday) and the members what they leave, with 2,000 trips "
        "or more (a sharper model; a few seconds more per fit) (on)",
    )
    train.add_argument(
        "--median-trees",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with the location stage, also learn a quantile forest's median as boosted "
        "trees and move the members' location toward it by a weight chosen out of shard "
        "(a sharper model; predictions take 1.5x as long) (on)",
    )
    train.add_argument(
        "--forest-durations",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with the location stage, pool every prediction with a quantile forest's "
        "neighbours of the trip (64 trees on the stage's inputs) where that beats the "
        "members by 0.5 %% CRPS on training trips out of bag; the median trees are then "
        "dropped (on)",
    )
    train.add_argument(
        "--recalibration",
        choices=("auto", "none"),
        default="auto",
        help="auto: read the predictive through a map of its out-of-shard PIT values when "
        "that gains more than 0.01 nats per trip (intervals that cover what they say); "
        "none: never (auto)",
    )
    train.add_argument("--seed", type=seed_int, default=None, help="random seed")
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
    add_arrive_by_parser(commands, [common])
    add_matrix_parser(commands, common)
    add_site_parser(commands, common)
    add_stops_parser(commands, common)
    add_compare_parser(commands, common)
    add_gaps_parser(commands, common)
    add_serve_parser(commands, common)
    add_access_parsers(commands, common, reading)

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
        "--allow-new-area",
        action="store_true",
        help="update even when the trips lie mostly outside the model's area "
        "(refused by default: train a new model instead)",
    )
    update.add_argument(
        "--forgetting",
        type=forgetting_factor,
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
    _wait_option(update, "for a store: ")
    update.set_defaults(handler=_cmd_update)

    versions = commands.add_parser(
        "versions",
        parents=[common],
        help="list a model store's versions and their lineage; re-activate one",
        description="List the versions of a model store (a store root, or a data home "
        "such as .vrvm): which is active, which were activated by hand, which were never "
        "activated, each one's parent and lineage, its data and hold-out scores. Opening "
        "the store finishes or rolls back what a crashed writer left (said on stderr); "
        "a read-only home (VRVM_READ_ONLY=1, a read-only mount, no write bits) is listed "
        "as committed, never written, and what a repair would do is said instead.",
    )
    versions.add_argument("store", metavar="STORE", help="model store root or data home")
    versions.add_argument(
        "--lineage",
        type=int,
        nargs="?",
        const=0,
        metavar="VERSION",
        help="print the chain of parents of VERSION (default: the active one)",
    )
    versions.add_argument(
        "--activate", type=positive_int, metavar="VERSION", help="make VERSION active (by hand)"
    )
    versions.add_argument("--json", action="store_true", help="print the table as JSON")
    _wait_option(versions)
    versions.set_defaults(handler=_cmd_versions)

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
    evaluate.add_argument(
        "--units", choices=("s", "min"), default="s", help="unit of printed times (s)"
    )
    evaluate.set_defaults(handler=_cmd_evaluate)

    inspect = commands.add_parser(
        "inspect",
        parents=[common, reading],
        help="show how a trip file is read: layout, roles, parsed rows, cleaning",
        description="Print the detected layout, the role of every column, how dates, "
        "clocks and weekdays were read, the first ten trips as read and the cleaning "
        "report. Exit status 0 when the file can be trained on, 1 with the reason when "
        "not. Try the reading options here before training.",
    )
    inspect.add_argument("trips", metavar="TRIPS", help="trip file (CSV or Parquet)")
    inspect.set_defaults(handler=cmd_inspect)

    demo_data = commands.add_parser(
        "demo-data",
        parents=[common],
        help="write synthetic demo trips",
        description="Write trips of Synthetica, a synthetic city (not real data), as a "
        "canonical CSV file, or Parquet by extension.",
    )
    demo_data.add_argument("--out", required=True, metavar="FILE", help="output file; - for stdout")
    demo_data.add_argument("--n", type=positive_int, default=20_000, help="number of trips (20000)")
    demo_data.add_argument("--seed", type=seed_int, default=0, help="random seed (0)")
    demo_data.set_defaults(handler=_cmd_demo_data)
    return parser


# --------------------------------------------------------------------------- main
# Lines of a multi-line error message worth keeping in the one-line summary.
_KEY_LINES = ("Columns found", "Closest match", "Proposed")


def _one_line(exc: BaseException, out: str | None = None) -> str:
    """The message of ``exc`` on one line.

    An error writing ``out`` (the command's ``--out``; a full disk or a read-only file
    system anywhere) reads ``cannot write <path>: <why>; <what to do>``. Of a
    multi-line message (such as read_trips' list of known schemas) the first line and
    the key lines are kept, with a pointer to ``--debug`` for the rest.
    """
    if isinstance(exc, OSError):
        storage = _storage_error(exc, out)
        if storage is not None:
            return str(storage)
        if exc.strerror and exc.filename:
            return f"{exc.filename}: {exc.strerror}"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    kept = [lines[0], *(line for line in lines[1:] if line.startswith(_KEY_LINES))]
    if len(kept) < len(lines):
        kept.append("(--debug shows the full message)")
    return " ".join(kept)


# Errors that only a write raises, whatever path they name.
_NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG})
_WRITE_ONLY = _NO_SPACE | {errno.EROFS}


def _storage_error(exc: OSError, out: str | None) -> StorageError | None:
    """``exc`` as an error writing ``out``, with the command line's advice, if it is one.

    It is one when it names ``out`` or a path inside it, a file in the way of its
    folder, or when only a write raises it (a full disk, a read-only file system).
    """
    advice = "free space or choose another --out" if exc.errno in _NO_SPACE else None
    target = Path(os.path.abspath(out)) if out and out != "-" else None
    path = Path(os.path.abspath(exc.filename)) if exc.filename else None
    if target is not None and path is not None:
        # a raw error may be of a read; one that only a write raises is not
        written = isinstance(exc, StorageError) or exc.errno in _WRITE_ONLY
        inside = (path == target or target in path.parents) and (
            written or exc.errno not in (None, errno.ENOENT)
        )
        in_the_way = path in target.parents and (
            written or exc.errno in (errno.ENOTDIR, errno.EEXIST)
        )
        if exc.errno is not None and (inside or in_the_way):
            error = storage_error(exc, exc.filename)
            return error.advise(advice or "choose another --out", filename=out)
    if isinstance(exc, StorageError):
        return exc if advice is None or target is None else exc.advise(advice)
    if exc.errno in _WRITE_ONLY and exc.filename:
        return storage_error(exc, exc.filename, advice=advice if target else None)
    return None


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
        0 on success, 1 on a runtime or data error, 2 on a usage error, 75 when a
        store stayed busy with another writer (nothing changed), 130 when interrupted,
        141 when the reader of the standard output closed it (``| head``).
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
            with cli_hints(getattr(args, "command", None) or "train"):
                status = args.handler(args, stdout, stderr)
    except KeyboardInterrupt:
        stderr.write(f"{PROG}: interrupted\n")
        return 130
    except UsageError as exc:
        stderr.write(f"{PROG} {args.command}: error: {_one_line(exc)}\n")
        return 2
    except BrokenPipeError:  # `vrvm ... --out - | head`: the reader has what it wanted
        if stdout is sys.stdout:  # no second error when Python flushes stdout at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a process ended by SIGPIPE (128 + 13)
    except StoreBusyError as exc:  # nothing was changed: EX_TEMPFAIL, try again
        stderr.write(f"{PROG}: error: {_one_line(exc)}\n")
        return 75
    except Exception as exc:
        if debug:
            traceback.print_exc(file=stderr)  # ends with the full message
        stderr.write(f"{PROG}: error: {_one_line(exc, getattr(args, 'out', None))}\n")
        return 1
    logging.getLogger(__name__).debug("done in %.1f s", time.perf_counter() - started)
    return status
