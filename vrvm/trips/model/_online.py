"""Online updates of a TravelTimeModel: members' bases that grow with the stream, the
distance and twin scales of the spread refitted on the stream's own test-then-train
predictions, and the location stage refreshed on the trips learned.

Three things kept a trip-by-trip update from matching a periodic refit (BENCHMARKS.md,
issue 16). First, each member's relevance vectors were fixed, so what the stream taught
outside their span was lost; here each member keeps the statistics of its active
functions and a reserve of candidates (:class:`vrvm.engine.growing.GrowingBasis`) and
re-solves its basis over them every ``online_every`` trips it learns. Second, the
distance scale was fitted against members trained on the fit's trips only: as members
learn, their own noise estimate moves and the fit-time scale over-widens the mixture
(90 % intervals covered 93-94 % of the Chicago stream). Every trip an update receives is
first predicted by the members (before they learn it, so the prediction is genuinely
held out); the scale is refitted on the latest such predictions every
``SCALE_REFIT_TRIPS`` trips, by the same maximum likelihood as at fit time
(:func:`vrvm.engine.calibration.fit_scale_model`).

Third, a location stage fitted before the members (:mod:`vrvm.trips.model.location`)
kept the trees of the fit's trips while a periodic refit renewed them on five times as
many (+1.8 % CRPS on the Chicago stream). Here a model keeps the trips it learns
(:class:`KeptTrips`, the training trips first) and, whenever the trips learned since
the stage's last fit reach :data:`STAGE_REFRESH_FRACTION` of those it was fitted on,
refreshes it (:meth:`OnlineState.refresh`): the trees are fitted again on every kept
trip, out of fold; each member's sufficient statistics over its candidates are formed
again on its own kept trips with the new residuals as targets and its basis re-solved
(the batch posterior of those trips: with precisions A and noise e, f,
V^-1 = A + G and mu = V h, G = Phi^T W Phi, h = Phi^T W r, W the trips each stood
for; Bishop 2006, eq. 3.53-3.54, Drugowitsch 2013, eq. 9-12); the pair offsets are
fitted again on the members' out-of-shard residuals. On a stream of N trips after a fit
on n, the refreshes cost O(N) in all (a geometric series: the stage is fitted on n,
2n, 4n, ... trips), a bounded time per trip.

The state lives in memory only, like the members' reserves: it is not saved with the
model (the candidates and kept trips are trips' inputs). A model fitted in this process
grows its bases and refreshes its stage; a loaded one updates the posterior of its fixed
bases and still refits the scale on the stream.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pandas as pd

from vrvm.engine.growing import GrowingBasis
from vrvm.trips.model._ensemble import member_loc_scale
from vrvm.trips.model.location import MEDIAN_WEIGHTS
from vrvm.trips.model.pair_offsets import fit_model_offsets

__all__ = [
    "KEPT_TRIPS_MAX",
    "REFRESH_FOLDS",
    "REFRESH_LEARNING_RATE",
    "SCALE_REFIT_TRIPS",
    "SCALE_STREAM_ROWS",
    "STAGE_REFRESH_FRACTION",
    "KeptTrips",
    "OnlineState",
    "record_history",
]

#: Trips learned between two refits of the distance scale on the stream (and the
#: fewest predictions it is first refitted on). 1,000: the same prequential CRPS on
#: Chicago as 500 (158.35 against 158.32), at half the refits' cost (0.4 ms a trip;
#: a refit with the PIT map's cross-validation takes about 0.4 s; issue 34).
SCALE_REFIT_TRIPS = 1000

#: The latest streamed trips whose held-out predictions the scale is refitted on.
SCALE_STREAM_ROWS = 4000

#: The location stage is refreshed when the trips learned since it was last fitted reach
#: this fraction of the trips it was fitted on: a geometric schedule, so the refreshes'
#: cost per trip stays bounded however long the stream (1: whenever the trips double).
STAGE_REFRESH_FRACTION = 1.0

#: Folds and learning rate of a refresh's trees: a third of the fit's boosting work
#: (five folds at 0.05), for the same prequential CRPS on Chicago (BENCHMARKS.md,
#: issue 34).
REFRESH_FOLDS = 3
REFRESH_LEARNING_RATE = 0.1

#: The most trips a refresh is fitted on (the latest). Beyond it refreshes recur every
#: ``STAGE_REFRESH_FRACTION * KEPT_TRIPS_MAX`` trips on that window, and the kept trips
#: never exceed ``(1 + STAGE_REFRESH_FRACTION) * KEPT_TRIPS_MAX``: 400,000 trips of 32
#: numbers (the default features), 102 MB, whatever the length of the stream.
KEPT_TRIPS_MAX = 200_000


class KeptArrays(NamedTuple):
    """The kept trips as arrays: stage inputs ``F``, kernel inputs ``X``, distance column
    ``d``, log target ``y`` (before the stage), ``raw`` ends (lat, lon, lat, lon) and the
    member that learned each (``shard_of_row``; -1: every member). Field names follow the
    model's ``FitData``, whose readers (:func:`fit_model_offsets`) they serve."""

    F: np.ndarray
    X: np.ndarray
    d: np.ndarray
    y: np.ndarray
    raw: np.ndarray
    shard_of_row: np.ndarray


class KeptTrips:
    """The trips a model has learned, kept in column buffers that double when full, so a
    one-trip update appends in O(1) amortised."""

    def __init__(self, arrays: KeptArrays):
        self._buffers = [np.array(a, copy=True) for a in arrays]
        self.n = arrays.y.size

    def add(self, arrays: KeptArrays) -> None:
        k = arrays.y.size
        if self.n + k > self._buffers[0].shape[0]:
            size = max(2 * self._buffers[0].shape[0], self.n + k)
            for i, buffer in enumerate(self._buffers):
                grown = np.empty((size, *buffer.shape[1:]), dtype=buffer.dtype)
                grown[: self.n] = buffer[: self.n]
                self._buffers[i] = grown
        for buffer, new in zip(self._buffers, arrays, strict=True):
            buffer[self.n : self.n + k] = new
        self.n += k

    def trim(self, most: int) -> None:
        """Keep the latest ``most`` trips only."""
        if self.n > most:
            self._buffers = [b[self.n - most : self.n].copy() for b in self._buffers]
            self.n = most

    def arrays(self) -> KeptArrays:
        return KeptArrays(*(b[: self.n] for b in self._buffers))

    @property
    def nbytes(self) -> int:
        """Bytes held by the buffers."""
        return int(sum(b.nbytes for b in self._buffers))


class OnlineState:
    """What online updates keep beside a fitted :class:`TravelTimeModel`.

    Parameters
    ----------
    fit_rows : list of (X, y, d, weight) or None
        Each member's training rows (features, target, distance column) and the trips
        each of them stood for in its fit (its ``sample_weight``), from which
        its :class:`~vrvm.engine.growing.GrowingBasis` is built at the first update;
        None: members keep their fixed bases (a loaded model, a two-stage fit).
    kept : KeptArrays or None
        The training trips, kept with every trip learned after them for the refreshes
        of the location stage (:meth:`refresh`); None: no refreshes (no stage, no
        growing bases).
    """

    def __init__(self, fit_rows=None, kept: KeptArrays | None = None):
        self._fit_rows = fit_rows
        self.weights = None if fit_rows is None else [float(w) for *_, w in fit_rows]
        self.kept = None if kept is None or fit_rows is None else KeptTrips(kept)
        self.stage_trips = 0 if self.kept is None else self.kept.n
        self.since_stage = 0
        self.n_refreshes = 0
        self.bases: list[GrowingBasis] | None = None
        self.since_resolve: np.ndarray | None = None
        # held-out predictions of the latest streamed trips: members' loc and scale
        # (before the distance scale), target, distance column, and the move toward the
        # median trees per unit of their weight (zeros without them)
        self._loc: list[np.ndarray] = []
        self._scale: list[np.ndarray] = []
        self._y: list[np.ndarray] = []
        self._d: list[np.ndarray] = []
        self._toward: list[np.ndarray] = []
        self.since_scale = 0

    def _start(self, members, online_reserve: int) -> None:
        if self.since_resolve is not None:
            return
        self.since_resolve = np.zeros(len(members), dtype=np.int64)
        if self._fit_rows is not None and online_reserve > 0:
            self.bases = [
                GrowingBasis(member, X, y, d[:, None], weight=weight)
                for member, (X, y, d, weight) in zip(members, self._fit_rows, strict=True)
            ]
        self._fit_rows = None  # the statistics hold what is needed of them

    def record(self, model, loc, scale, y: np.ndarray, d: np.ndarray, toward=None) -> None:
        """Keep the members' predictions of new trips (``loc``, ``scale``: see
        :func:`predictions`), made before they learn them, their targets ``y`` (after the
        stage and the pair offsets) and ``toward``: the median trees' location minus
        the members' mean, what a weight ``w`` moves the trips' location by per unit
        (None: no median trees)."""
        if not model.spread_.learns:
            return
        y = np.asarray(y, dtype=np.float64)
        self._loc.append(loc)
        self._scale.append(scale)
        self._y.append(y)
        self._d.append(np.asarray(d, dtype=np.float64))
        self._toward.append(np.zeros(y.size) if toward is None else np.asarray(toward, float))
        self.since_scale += y.size

    @staticmethod
    def predictions(model, X: np.ndarray, d: np.ndarray):
        """The members' locations and scales of new trips, (M, n) each, or ``(None,
        None)`` when neither the spread model nor the pair offsets need them."""
        if not model.spread_.learns and model.pair_offsets_ is None:
            return None, None
        return member_loc_scale(model.member_predictors(), X, d)

    def learn(self, model, m: int, X, y, d, forgetting: float) -> None:
        """Member ``m`` learns rows; its basis is re-solved every ``online_every`` of them."""
        self._start(model.members_, model.online_reserve)
        member = model.members_[m]
        if self.bases is None:
            member.partial_fit(X, y, d[:, None], forgetting=forgetting, check_input=False)
            return
        basis = self.bases[m]
        basis.add(X, y, d[:, None], forgetting=forgetting)
        self.since_resolve[m] += y.size
        if self.since_resolve[m] >= model.online_every:
            basis.resolve()
            self.since_resolve[m] = 0

    def refit_scale(self, model) -> bool:
        """Refit the distance and twin scales on the latest held-out predictions, when
        due. With median trees, their weight is first chosen again among
        :data:`~vrvm.trips.model.location.MEDIAN_WEIGHTS` by the same criterion as at fit
        time, on these predictions: as the members learn the stream, the weight chosen
        among the fit's trips (0.7 on the first 2,812 of the Chicago stream) can pull
        them back toward trees grown before it (BENCHMARKS.md, issue 34)."""
        if self.since_scale < SCALE_REFIT_TRIPS:
            return False
        loc = np.concatenate(self._loc, axis=1)[:, -SCALE_STREAM_ROWS:]
        scale = np.concatenate(self._scale, axis=1)[:, -SCALE_STREAM_ROWS:]
        y = np.concatenate(self._y)[-SCALE_STREAM_ROWS:]
        d = np.concatenate(self._d)[-SCALE_STREAM_ROWS:]
        toward = np.concatenate(self._toward)[-SCALE_STREAM_ROWS:]
        self._loc, self._scale, self._y, self._d = [loc], [scale], [y], [d]
        self._toward = [toward]
        self.since_scale = 0
        predictives = model.member_predictors()
        held_out = np.ones(loc.shape, bool)  # each predicted before any member learned it
        stage = model.location_
        if stage is not None and stage.median_trees_ is not None and len(predictives) > 1:
            scores = model.spread_.scores_by_shift(
                predictives, loc, scale, y, held_out, d, toward, MEDIAN_WEIGHTS
            )
            stage.median_weight_ = max(scores, key=scores.get)
            stage.median_scores_ = scores
        weight = 0.0 if stage is None else stage.median_weight_
        model.spread_.refit(
            predictives, loc, scale, y - weight * toward, held_out, d, source="stream"
        )
        return True

    def keep(self, arrays: KeptArrays, forgetting: float) -> None:
        """Keep learned trips for the next refresh. An update that forgets
        (``forgetting < 1``) ends the refreshes: a refit on the kept trips, all counted
        alike, would undo the forgetting."""
        if self.kept is None:
            return
        if forgetting < 1.0:
            self.kept = None
            return
        self.kept.add(arrays)
        self.since_stage += arrays.y.size

    def refresh(self, model) -> bool:
        """When due, refit the location stage on the kept trips and every member's
        posterior on what it leaves of them, then the pair offsets.

        Due when the trips learned since the stage was last fitted reach
        :data:`STAGE_REFRESH_FRACTION` of those it was fitted on (at most
        :data:`KEPT_TRIPS_MAX`, the latest). As at fit time: the stage's trees out of fold
        (:meth:`LocationStage.refit <vrvm.trips.model.location.LocationStage.refit>`), each
        member's statistics over its candidates on its own kept trips (those dealt to it,
        each standing for the trips it stood for at fit time) with the new out-of-fold
        residuals, re-solved (:meth:`GrowingBasis.resolve
        <vrvm.engine.growing.GrowingBasis.resolve>`), and the pair offsets on the
        members' out-of-shard residuals (:func:`fit_model_offsets`), and the forest's
        trees where it is pooled (:meth:`ForestDurations.regrow
        <vrvm.trips.model.forest_durations.ForestDurations.regrow>`). The distance scale
        keeps being refitted on the stream (:meth:`refit_scale`).
        """
        if self.kept is None or self.since_stage < STAGE_REFRESH_FRACTION * self.stage_trips:
            return False
        if self.bases is None:  # fixed bases: nothing to re-solve the members over
            self.kept = None
            return False
        self.kept.trim(KEPT_TRIPS_MAX)
        kept = self.kept.arrays()
        target = kept.y - model.location_.refit(
            kept.F, kept.y, n_folds=REFRESH_FOLDS, learning_rate=REFRESH_LEARNING_RATE
        )
        for m, member in enumerate(model.members_):
            rows = (kept.shard_of_row == m) | (kept.shard_of_row < 0)
            self.bases[m] = GrowingBasis(
                member, kept.X[rows], target[rows], kept.d[rows, None], weight=self.weights[m]
            )
            self.bases[m].resolve()
            self.since_resolve[m] = 0
        if model.pair_offsets_ is not None:
            model.pair_offsets_, _ = fit_model_offsets(
                model, kept._replace(y=target), model.h3_resolution_
            )
        if (forest := getattr(model, "forest_durations_", None)) is not None and forest.active:
            # the forest's neighbours from the kept trips too (its pool as fitted)
            forest.regrow(kept.F, kept.y, random_state=self.n_refreshes + 1, n_jobs=model.n_jobs)
        self.stage_trips, self.since_stage = self.kept.n, 0
        self.n_refreshes += 1
        return True


def record_history(history: list, trips: pd.DataFrame, forgetting: float, assign: str) -> list:
    """``update_history_`` with ``trips`` appended; consecutive updates with the same
    settings are merged into one entry (trip count and time range), so a stream of
    single-trip updates costs no bookkeeping and the saved history stays short."""
    times = trips["start_time"]
    first, last = times.iloc[0], times.iloc[-1]
    if len(trips) > 1:
        first, last = times.min(), times.max()
    entry = history[-1] if history else None
    if entry and entry["forgetting"] == float(forgetting) and entry["assign"] == assign:
        entry["n_trips"] += len(trips)
        if first < _timestamp(entry["start"]):
            entry["start"] = first.isoformat()
        if last > _timestamp(entry["end"]):
            entry["end"] = last.isoformat()
    else:
        history.append(
            {
                "n_trips": len(trips),
                "start": first.isoformat(),
                "end": last.isoformat(),
                "forgetting": float(forgetting),
                "assign": assign,
            }
        )
    return history


@functools.lru_cache(maxsize=8)
def _timestamp(iso: str) -> pd.Timestamp:
    """An ISO time of the history, parsed once: a stream of one-trip updates compares
    every trip with the same entry."""
    return pd.Timestamp(iso)
