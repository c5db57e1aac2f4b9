"""``vrvm train``: a model from a trip file, in memory or out of core (two stages)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from vrvm.cli._output import ProgressBar, holdout_summary, print_report
from vrvm.cli._reading import reading_options, zone_origin
from vrvm.services.versions.models import default_model_name, model_name
from vrvm.trips.files.reader import read_layout, read_trips
from vrvm.trips.model.forest_durations import MIN_GAIN
from vrvm.trips.model.pair_durations import BANDS
from vrvm.trips.model.split import split_holdout
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store.model_dir import MODEL_FILE

__all__ = ["check_model_target", "cmd_train", "fit_with_progress"]


def fit_with_progress(model, trips: pd.DataFrame, quiet: bool, stderr: IO[str]) -> None:
    """Fit ``model`` on ``trips``, announcing it and drawing the progress of each phase
    (the fit's four-argument protocol), with the time left."""
    if not quiet:
        widths = model.kernel_widths
        how = (
            "choosing kernel widths on a subsample first"
            if isinstance(widths, str)
            else "kernel widths " + ", ".join(f"{w:g}" for w in np.atleast_1d(widths))
        )
        stderr.write(f"fitting {model.n_members} members on {len(trips):,} trips ({how}) ...\n")
        stderr.flush()
    progress = None if quiet else ProgressBar(stderr)
    try:
        model.fit(trips, progress=progress)
    finally:
        if progress is not None:
            progress.close()


def cmd_train(args, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm train``: read, fit (in memory or out of core), save, summarise."""
    check_model_target(Path(args.out))  # before the fit, not after it
    model = TravelTimeModel(
        name=args.name or default_model_name(Path(args.trips).name),
        n_members=args.members,
        target=args.target,
        kernel_widths=args.widths,
        max_basis=args.max_basis,
        factorization=args.factorization,
        noise_model=args.noise_model,
        n_jobs=args.n_jobs,
        backend=args.backend,
        client=args.scheduler,
        subsample_size=args.subsample_size,
        stage_one_evidence=args.stage_one_evidence,
        pair_offsets=args.pair_offsets,
        location_stage=args.location_stage,
        median_trees=args.median_trees,
        forest_durations=args.forest_durations,
        recalibration=args.recalibration,
        random_state=args.seed,
    )
    # Without --seed the split is still recorded, so it can be repeated.
    split_seed = args.seed
    if split_seed is None and args.holdout > 0:
        split_seed = int(np.random.SeedSequence().generate_state(1)[0])
    if Path(args.trips).is_file():  # the layout read with, said (a folder: per file)
        layout, _ = read_layout(args.trips, args.schema, dict(args.map) or None)
    else:
        layout = None
    if _out_of_core(Path(args.trips), model):
        n_train, metrics, report = _train_out_of_core(model, args, split_seed, stderr)
    else:
        n_train, metrics, report = _train_in_memory(model, args, split_seed, stderr)
    model.save(args.out, metrics=metrics)

    relevance = model.n_relevance_
    lines = [
        f"trained “{model_name(model)}”: {len(model.members_)} members on {n_train:,} "
        f"trips in {model.fit_time_s_:.1f} s (target: {args.target})",
        "kernel widths: " + ", ".join(f"{w:.4g}" for w in model.kernel_widths_),
        "relevance vectors per member: "
        + ", ".join(str(int(r)) for r in relevance)
        + f" (mean {relevance.mean():.1f})",
        f"time zone: {model.tz_}"
        + (f" ({zone_origin(report, bool(args.tz))})" if report is not None else ""),
        f"trips per member: {int(model.shard_sizes_.min()):,}-{int(model.shard_sizes_.max()):,}"
        + (
            f", stratified on H3 resolution {model.h3_resolution_} zones x hour"
            if model.h3_resolution_ is not None
            else ""
        ),
    ]
    if (stage := model.location_) is not None:
        lines.append(
            f"location stage: {stage.trees_.roots.size} boosted trees, out-of-fold RMSE "
            f"{stage.oof_rmse_:.3f} on log seconds"
        )
        if stage.median_trees_ is not None:
            lines.append(
                f"median trees: {stage.median_trees_.roots.size}, weight "
                f"{stage.median_weight_:g} after the members (chosen out of shard)"
            )
    if (record := model.spread_.score.get("pit_map")) is not None:
        # with the forest's pool, predictions read the pool through a map of its own
        whose = "PIT map of the members alone" if model.forest_pooled() else "PIT map"
        lines.append(
            f"{whose}: degree {record['degree']}, out-of-shard gain "
            f"{record['cv_gain']:.3f} nats per trip over {record['n_pit']:,} trips"
            if model.spread_.pit_map is not None
            else f"{whose}: none (the out-of-shard PITs are uniform to "
            f"{max(record['cv_gain'], 0.0):.3f} nats per trip)"
        )
    if (offsets := model.pair_offsets_) is not None:
        lines.append(
            "zone-pair offsets: "
            + ", ".join(
                f"{level['offset'].size:,} pairs at resolution {level['resolution']}"
                for level in offsets.levels
            )
        )
    if (regime := getattr(model, "round_trips_", None)) is not None:
        lines.append(
            f"round trips: {regime.log_s.size:,} from their start cells (h {regime.bandwidth:g}, "
            f"k {regime.shrinkage:g}, weight {regime.weight:g})"
            if regime.active
            else "round trips: off ("
            + str(regime.score.get("off", "the members predict them as well"))
            + ")"
        )
    if (pairs := getattr(model, "pair_durations_", None)) is not None:
        lines.append(
            "pairs seen before: their own trips blended in ("
            + ", ".join(
                f"{lo}{'+' if hi is None else f'-{hi - 1}'} trips: h {h:g}, k {k:g}"
                for lo, hi, h, k in zip(
                    BANDS, [*BANDS[1:], None], pairs.bandwidth, pairs.shrinkage, strict=True
                )
                if np.isfinite(k)
            )
            + ")"
            if pairs.active
            else "pairs seen before: the members' own predictive (no band gained 2 %)"
        )
    if (forest := getattr(model, "forest_durations_", None)) is not None:
        score = forest.score
        pool_map = (
            "no PIT map"
            if forest.pit_map is None
            else f"the pool's own PIT map (degree {forest.pit_map.degree})"
        )
        lines.append(
            f"forest neighbours: {forest.roots.size} trees on {forest.n_trips:,} trips pooled "
            f"with the members, read through {pool_map} (out-of-bag CRPS "
            f"{score['pool']:.1f} s against {score['model']:.1f} s; median trees dropped)"
            if forest.active
            else f"forest neighbours: off (out-of-bag CRPS {score['pool']:.1f} s against "
            f"the members' {score['model']:.1f} s: less than {MIN_GAIN:.1%} better)"
        )
    two_stage = model.training_summary_.get("two_stage")
    if two_stage:
        parts = two_stage["parts"]
        lines.append(
            f"two stages: basis chosen on a sample of {two_stage['sample_trips']:,} trips "
            f"with each sampled trip counted as {_weight(two_stage)}, "
            f"refitted on all of them ({parts:,} part{'s' if parts != 1 else ''} read "
            f"{_TIMES[two_stage.get('passes', 2)]})"
        )
    if layout is not None:
        lines.insert(1, f"layout: {layout.schema}" + (f" ({layout.label})" if layout.label else ""))
    if metrics is not None:
        lines.append(holdout_summary(metrics, args.units))
    lines.append(f"saved to {args.out}" + (" (with the held-out metrics)" if metrics else ""))
    stdout.write("\n".join(lines) + "\n")
    return 0


def _weight(two_stage: dict) -> str:
    """The first stage's weight of a sampled trip, as the training summary records it."""
    weight = float(two_stage.get("stage_one_weight", 1.0))
    return "one trip" if weight == 1.0 else f"{weight:.3g} trips"


_TIMES = {2: "twice", 3: "three times: the third for the zone-pair offsets"}


def _out_of_core(path: Path, model: TravelTimeModel) -> bool:
    """Train from the file part by part: a folder of Parquet files, or a Parquet file
    with more rows than the members' subsamples hold (its footer says)."""
    if path.is_dir():
        return True
    import pyarrow.parquet as pq  # a dependency; imported here for start-up speed

    try:
        n_rows = pq.ParquetFile(path).metadata.num_rows
    except Exception:  # not Parquet (or unreadable): the reader says what is wrong
        return False
    return n_rows > model.n_members * model.subsample_size


def _holdout_metrics(model, args, split_seed, test, n_train: int, n_test: int) -> dict:
    holdout = {
        "fraction": args.holdout,
        "how": "random",
        "seed": split_seed,
        "n_train": n_train,
        "n_test": n_test,
    }
    if len(test) < n_test:
        holdout["n_scored"] = len(test)  # a uniform sample of the held-out trips
    return {"holdout": holdout, **model.evaluate(test)}


def _train_in_memory(model, args, split_seed, stderr: IO[str]) -> tuple[int, dict | None, Any]:
    trips, report = read_trips(args.trips, **reading_options(args))
    if not args.quiet:
        print_report(report, "training data", stderr)
    if len(trips) == 0:
        raise ValueError(f"{args.trips}: no trips left after cleaning")
    test = None
    if args.holdout > 0:
        trips, test = split_holdout(trips, args.holdout, seed=split_seed)
    fit_with_progress(model, trips, args.quiet, stderr)
    if test is None:
        return len(trips), None, report
    metrics = _holdout_metrics(model, args, split_seed, test, len(trips), len(test))
    return len(trips), metrics, report


def _train_out_of_core(model, args, split_seed, stderr: IO[str]) -> tuple[int, dict | None, Any]:
    """Two passes over the data, part by part (:func:`vrvm.trips.model.training.fit_dataset`)."""
    from vrvm.trips.files.dataset import TripDataset
    from vrvm.trips.model.training import fit_dataset

    data = TripDataset(args.trips, **reading_options(args))
    if split_seed is not None and args.seed is None:
        model.set_params(random_state=split_seed)  # the held-out trips follow the seed
    if not args.quiet:
        stderr.write(
            f"fitting {model.n_members} members on {data.n_rows:,} rows of {data.name} in "
            f"{len(data.parts)} parts, out of core (two stages) ...\n"
        )
        stderr.flush()
    progress = None if args.quiet else ProgressBar(stderr)
    try:
        outcome = fit_dataset(model, data, progress=progress, holdout=args.holdout)
    finally:
        if progress is not None:
            progress.close()
    if not args.quiet and outcome.report is not None:
        print_report(outcome.report, "training data", stderr)
    n_train = int(model.shard_sizes_.sum())
    if args.holdout <= 0:
        return n_train, None, outcome.report
    if outcome.test is None or len(outcome.test) == 0:
        raise ValueError(f"{args.trips}: no trips were held out; use a larger --holdout")
    test = outcome.test.drop(columns=["file", "row"])
    metrics = _holdout_metrics(model, args, split_seed, test, n_train, outcome.n_test)
    return n_train, metrics, outcome.report


def check_model_target(path: Path) -> None:
    """Refuse early what saving would refuse: replacing something that is not a model,
    or a folder that cannot be made because a file stands in its way."""
    existing = next((p for p in path.parents if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    if path.is_file() or (
        path.is_dir() and not (path / MODEL_FILE).is_file() and any(path.iterdir())
    ):
        raise FileExistsError(
            f"{path} exists and is not a model directory; refusing to replace it "
            "(choose another --out)"
        )
