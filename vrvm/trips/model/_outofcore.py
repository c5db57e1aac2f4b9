"""The two passes of a two-stage fit over a :class:`~vrvm.trips.files.dataset.TripDataset`.

Both passes run part by part, in any process (loky workers, Dask workers or the
calling process), and return small results:

1. :func:`sample_part` reads and cleans a part and keeps a uniform sample of its
   trips (and, for a hold-out, a sample of the held-out ones);
2. :func:`part_statistics` reads and cleans the part again, computes the features,
   deals every trip to a member and adds each member's sufficient statistics
   (G = Phi^T Phi, h = Phi^T y, y^T y, n over its chosen basis functions) and what the
   model records of its training trips;
3. with zone-pair offsets, :func:`part_pair_sums` reads it a third time and sums the
   trips' out-of-shard residuals under the final members per pair of cells.

Which trips are sampled, held out and dealt to which member is decided per trip by
:func:`row_uniforms` from the seed, the file and the trip's row number, so the result
does not depend on how the data is cut into parts and batches, nor on where a part is
read. A sampled trip goes to the member whose subsample it was in.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from vrvm.engine.kernels import SufficientStatistics
from vrvm.trips.files.cleaning import CleaningReport, combine_reports
from vrvm.trips.model.pair_offsets import ENDS, PairOffsets, add_pair_sums, out_of_shard_residual
from vrvm.trips.table import CANONICAL_COLUMNS, DAY_KINDS, day_kind_counts

__all__ = [
    "OffsetPlan",
    "PairSums",
    "PartSample",
    "PartStatistics",
    "SampleSpec",
    "StatisticsPlan",
    "TripSummary",
    "part_pair_sums",
    "part_statistics",
    "row_uniforms",
    "sample_part",
]

# streams of row_uniforms: one independent uniform per trip and purpose
HOLDOUT, SAMPLE, MEMBER, OFFSETS = 0, 1, 2, 3

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def row_uniforms(seed: int, file: int, rows: np.ndarray, stream: int) -> np.ndarray:
    """A uniform number in [0, 1) per trip, a function of (seed, file, row, stream) only.

    SplitMix64 (Steele, Lea & Flood 2014) of the packed key: a bijective 64-bit mixer,
    so distinct keys give independent-looking values; the top 53 bits make the double.

    Examples
    --------
    >>> u = row_uniforms(0, 0, np.arange(100_000), 0)
    >>> bool(0.49 < u.mean() < 0.51), bool((row_uniforms(0, 0, np.arange(5), 0) == u[:5]).all())
    (True, True)
    """
    rows = np.asarray(rows, dtype=np.uint64)
    key = np.uint64(
        (
            int(seed) * 0x9E3779B97F4A7C15
            + (int(file) + 1) * 0xBF58476D1CE4E5B9
            + int(stream) * 0x94D049BB133111EB
        )
        & 0xFFFFFFFFFFFFFFFF
    )
    with np.errstate(over="ignore"):
        z = (rows * np.uint64(0x9E3779B97F4A7C15) + key) & _MASK
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)


@dataclass(frozen=True)
class SampleSpec:
    """What the first pass keeps: trips with u_sample < ``train_rate`` (not held out),
    held-out trips (u_holdout < ``holdout``) with u_sample < ``test_rate``."""

    seed: int
    train_rate: float
    holdout: float = 0.0
    test_rate: float = 0.0


@dataclass
class PartSample:
    """The first pass's result for one part."""

    index: int
    train: pd.DataFrame
    test: pd.DataFrame
    n_kept: int
    n_holdout: int
    report: CleaningReport | None


def _holdout_mask(spec_seed: int, holdout: float, file: int, rows: np.ndarray) -> np.ndarray:
    if holdout <= 0:
        return np.zeros(rows.size, dtype=bool)
    return row_uniforms(spec_seed, file, rows, HOLDOUT) < holdout


def sample_part(dataset, part, spec: SampleSpec) -> PartSample:
    """Pass 1: read and clean ``part`` (no radius check) and keep its sampled trips.

    The trips keep their ``row`` number and get ``file``, which identify them in
    the second pass.
    """
    train, test, reports = [], [], []
    n_kept = n_holdout = 0
    for trips, report in dataset.read(part, center=None):
        reports.append(report)
        rows = trips["row"].to_numpy(np.int64)
        held = _holdout_mask(spec.seed, spec.holdout, part.file, rows)
        u = row_uniforms(spec.seed, part.file, rows, SAMPLE)
        n_kept += len(trips)
        n_holdout += int(held.sum())
        for keep, out in (
            (~held & (u < spec.train_rate), train),
            (held & (u < spec.test_rate), test),
        ):
            if keep.any():
                chosen = trips.loc[keep]
                chosen.insert(0, "file", part.file)
                out.append(chosen)
    return PartSample(
        part.index,
        _concat(train),
        _concat(test),
        n_kept,
        n_holdout,
        None if None in reports or not reports else combine_reports(reports),
    )


def _trip_hashes(trips: pd.DataFrame) -> np.ndarray:
    """A 64-bit hash of each trip's canonical values (start time as a UTC instant)."""
    values = trips[list(CANONICAL_COLUMNS)].copy(deep=False)
    times = values["start_time"]
    if times.dt.tz is not None:
        values["start_time"] = times.dt.tz_convert("UTC").dt.tz_localize(None)
    return pd.util.hash_pandas_object(values, index=False).to_numpy(np.uint64)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame(columns=["file", "row", *CANONICAL_COLUMNS])
    return pd.concat(frames, ignore_index=True)


@dataclass
class TripSummary:
    """What a model records of its training trips, accumulated part by part."""

    n: int = 0
    start_min: pd.Timestamp | None = None
    start_max: pd.Timestamp | None = None
    bbox: list[float] = field(default_factory=lambda: [np.inf, np.inf, -np.inf, -np.inf])
    time_min: float = np.inf
    time_max: float = -np.inf
    hash_sum: int = 0  # sum and xor of the trips' 64-bit hashes: order-free digests
    hash_xor: int = 0
    n_weekend: int = 0  # trips departing on a weekend, local time (the rest: weekdays)

    def add(self, trips: pd.DataFrame, travel_time_s: np.ndarray, tz: str | None = None) -> None:
        if not len(trips):
            return
        self.n += len(trips)
        self.n_weekend += day_kind_counts(trips["start_time"], tz)[DAY_KINDS[1]]
        times = trips["start_time"]
        lo, hi = times.min(), times.max()
        self.start_min = lo if self.start_min is None else min(self.start_min, lo)
        self.start_max = hi if self.start_max is None else max(self.start_max, hi)
        for j, (a, b) in enumerate((("origin_lat", "dest_lat"), ("origin_lon", "dest_lon"))):
            values = np.concatenate([trips[a].to_numpy(float), trips[b].to_numpy(float)])
            self.bbox[j] = min(self.bbox[j], float(values.min()))
            self.bbox[j + 2] = max(self.bbox[j + 2], float(values.max()))
        self.time_min = min(self.time_min, float(travel_time_s.min()))
        self.time_max = max(self.time_max, float(travel_time_s.max()))
        hashes = _trip_hashes(trips)
        self.hash_sum = (self.hash_sum + int(hashes.sum(dtype=np.uint64))) % 2**64
        self.hash_xor ^= int(np.bitwise_xor.reduce(hashes))

    def merge(self, other: TripSummary) -> TripSummary:
        """Both summaries in order (``self``'s trips first)."""
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        return TripSummary(
            self.n + other.n,
            min(self.start_min, other.start_min),
            max(self.start_max, other.start_max),
            [
                *np.minimum(self.bbox[:2], other.bbox[:2]),
                *np.maximum(self.bbox[2:], other.bbox[2:]),
            ],
            min(self.time_min, other.time_min),
            max(self.time_max, other.time_max),
            (self.hash_sum + other.hash_sum) % 2**64,
            self.hash_xor ^ other.hash_xor,
            self.n_weekend + other.n_weekend,
        )

    def as_dict(self, median_s: float) -> dict:
        """The ``training_summary_`` fields (see :func:`vrvm.trips.table.summarise_trips`).

        ``sha256`` digests the count and the sum and xor of the trips' 64-bit hashes:
        it identifies the trips whatever their order and however they were cut into
        parts (unlike :func:`~vrvm.trips.table.trips_sha256`, which follows row order).
        """
        digest = hashlib.sha256(b"vrvm.trips.rows.v1")
        digest.update(f"{self.n}:{self.hash_sum}:{self.hash_xor}".encode())
        return {
            "n_trips": self.n,
            "start_time_min": self.start_min.isoformat(),
            "start_time_max": self.start_max.isoformat(),
            "bbox": [float(v) for v in self.bbox],
            "travel_time_s": {
                "min": self.time_min,
                "median": float(median_s),
                "max": self.time_max,
            },
            "sha256": digest.hexdigest(),
            "day_kind_trips": {DAY_KINDS[0]: self.n - self.n_weekend, DAY_KINDS[1]: self.n_weekend},
        }


@dataclass(frozen=True)
class StatisticsPlan:
    """What the second pass needs: the fitted features and members, and the deal.

    ``forced`` maps a file to ``(rows, members)``: its sampled trips (sorted row
    numbers) and the member each was dealt to in the first stage.
    """

    featurizer: object
    members: list
    log_target: bool
    seed: int
    holdout: float
    center: tuple[float, float] | None
    forced: dict[int, tuple[np.ndarray, np.ndarray]]
    location: object = None  # the model's location stage (the members learn what it leaves)


@dataclass
class PartStatistics:
    """The second pass's result for one part (or the sum over several)."""

    stats: list[SufficientStatistics]
    summary: TripSummary
    reports: list[CleaningReport]

    def __add__(self, other: PartStatistics) -> PartStatistics:
        return PartStatistics(
            [a + b for a, b in zip(self.stats, other.stats, strict=True)],
            self.summary.merge(other.summary),
            self.reports + other.reports,
        )


def part_statistics(dataset, part, plan: StatisticsPlan) -> PartStatistics:
    """Pass 2: every member's sufficient statistics over the trips of ``part`` dealt to it."""
    # one accumulator per member: its batches are summed in place (an M x M array per
    # member for the whole part, not one per batch)
    sums = [m.statistics_accumulator() for m in plan.members]
    summary, reports = TripSummary(), []
    for batch in _dealt_batches(dataset, part, plan, reports):
        for m, acc in enumerate(sums):
            sel = batch.member == m
            if sel.any():
                acc.add(batch.X[sel], batch.y[sel], batch.d[sel, None])
        summary.add(batch.trips, batch.seconds, plan.featurizer.tz_)
    return PartStatistics([acc.result() for acc in sums], summary, reports)


@dataclass
class _Batch:
    """A batch of a part's training trips with their targets, features and members."""

    trips: pd.DataFrame
    seconds: np.ndarray
    y: np.ndarray
    X: np.ndarray
    d: np.ndarray
    member: np.ndarray


def _dealt_batches(dataset, part, plan: StatisticsPlan, reports=None, keep=None):
    """The training trips of ``part`` (held-out ones dropped), batch by batch, dealt to
    the members as in pass 2; ``keep(rows, sampled)`` may drop more (``sampled``: which
    rows are in the first stage's sample). Cleaning reports go to ``reports``."""
    forced = plan.forced.get(part.file, (np.empty(0, np.int64), None))
    for trips, report in dataset.read(part, center=plan.center):
        if report is not None and reports is not None:
            reports.append(report)
        rows = trips["row"].to_numpy(np.int64)
        train = ~_holdout_mask(plan.seed, plan.holdout, part.file, rows)
        if keep is not None:
            train &= keep(rows, _sampled(rows, forced[0])[0])
        trips, rows = trips.loc[train], rows[train]
        if not len(trips):
            continue
        seconds = trips["travel_time_s"].to_numpy(np.float64)
        y = np.log(seconds) if plan.log_target else seconds
        X, d = plan.featurizer.transform(trips)
        if plan.location is not None:
            y = y - plan.location.offset(plan.featurizer, trips, X, d)
        yield _Batch(trips, seconds, y, X, d, _dealt(plan, part.file, rows, forced))


def _dealt(plan: StatisticsPlan, file: int, rows: np.ndarray, forced) -> np.ndarray:
    """The member each trip (row number ``rows`` of ``file``) is dealt to: a sampled
    trip's member of the first stage (``forced``: its sorted rows and their members),
    any other by its own uniform."""
    n_members = len(plan.members)
    member = np.minimum(
        (row_uniforms(plan.seed, file, rows, MEMBER) * n_members).astype(np.intp),
        n_members - 1,
    )
    forced_rows, forced_members = forced
    hit, pos = _sampled(rows, forced_rows)
    member[hit] = forced_members[pos[hit]]
    return member


def _sampled(rows: np.ndarray, sampled_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which ``rows`` are among the (sorted) ``sampled_rows``, and where."""
    pos = np.searchsorted(sampled_rows, rows)
    hit = pos < sampled_rows.size
    hit[hit] = sampled_rows[pos[hit]] == rows[hit]
    return hit, pos


@dataclass(frozen=True)
class OffsetPlan:
    """What the pass of the zone-pair offsets needs: the second pass's plan with the
    final members, the levels' resolutions and the fraction of the trips it sums."""

    statistics: StatisticsPlan
    resolutions: tuple[int, ...]
    rate: float


@dataclass
class PairSums:
    """The offsets pass's result for one part (or the sum over several)."""

    frame: pd.DataFrame

    def __add__(self, other: PairSums) -> PairSums:
        return PairSums(add_pair_sums(self.frame, other.frame))


def part_pair_sums(dataset, part, plan: OffsetPlan) -> PairSums:
    """Pass 3 (models with zone-pair offsets): the out-of-shard residuals of a uniform
    ``plan.rate`` of the trips of ``part`` (and of all its sampled trips) summed per
    combination of cell pairs (:meth:`PairOffsets.pair_sums`); one member's location
    per trip."""
    stats = plan.statistics
    predictives = [member.predictor_ for member in stats.members]

    def keep(rows, sampled):  # a uniform rate, and the sample (its leave-one-out offsets)
        return (row_uniforms(stats.seed, part.file, rows, OFFSETS) < plan.rate) | sampled

    frames = []
    for batch in _dealt_batches(dataset, part, stats, keep=keep if plan.rate < 1 else None):
        residual = out_of_shard_residual(predictives, batch.X, batch.d, batch.y, batch.member)
        ends = [batch.trips[column].to_numpy(np.float64) for column in ENDS]
        frames.append(PairOffsets.pair_sums(plan.resolutions, ends, residual))
    if not frames:
        empty = PairOffsets.pair_sums(plan.resolutions, [np.empty(0)] * 4, np.empty(0))
        return PairSums(empty)
    return PairSums(functools.reduce(add_pair_sums, frames))
