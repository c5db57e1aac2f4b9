"""Online updates of a TravelTimeModel: members' bases that grow with the stream, and the
distance and twin scales of the spread refitted on the stream's own test-then-train
predictions.

Two things kept a trip-by-trip update from matching a periodic refit (BENCHMARKS.md,
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

The state lives in memory only, like the members' reserves: it is not saved with the
model (the candidates are training trips' inputs). A model fitted in this process
grows its bases; a loaded one updates the posterior of its fixed bases and still
refits the scale on the stream.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vrvm.engine.growing import GrowingBasis
from vrvm.trips.model._ensemble import member_loc_scale

__all__ = ["SCALE_REFIT_TRIPS", "SCALE_STREAM_ROWS", "OnlineState", "record_history"]

#: Trips learned between two refits of the distance scale on the stream (and the
#: fewest predictions it is first refitted on).
SCALE_REFIT_TRIPS = 500

#: The latest streamed trips whose held-out predictions the scale is refitted on.
SCALE_STREAM_ROWS = 4000


class OnlineState:
    """What online updates keep beside a fitted :class:`TravelTimeModel`.

    Parameters
    ----------
    fit_rows : list of (X, y, d, weight) or None
        Each member's training rows (features, target, distance column) and the trips
        each of them stood for in its fit (its ``sample_weight``), from which
        its :class:`~vrvm.engine.growing.GrowingBasis` is built at the first update;
        None: members keep their fixed bases (a loaded model, a two-stage fit).
    """

    def __init__(self, fit_rows=None):
        self._fit_rows = fit_rows
        self.bases: list[GrowingBasis] | None = None
        self.since_resolve: np.ndarray | None = None
        # held-out predictions of the latest streamed trips: members' loc and scale
        # (before the distance scale), target, distance column
        self._loc: list[np.ndarray] = []
        self._scale: list[np.ndarray] = []
        self._y: list[np.ndarray] = []
        self._d: list[np.ndarray] = []
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

    def record(self, model, loc, scale, y: np.ndarray, d: np.ndarray) -> None:
        """Keep the members' predictions of new trips (``loc``, ``scale``: see
        :func:`predictions`), made before they learn them."""
        if not model.spread_.learns:
            return
        self._loc.append(loc)
        self._scale.append(scale)
        self._y.append(np.asarray(y, dtype=np.float64))
        self._d.append(np.asarray(d, dtype=np.float64))
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
        due."""
        if self.since_scale < SCALE_REFIT_TRIPS:
            return False
        loc = np.concatenate(self._loc, axis=1)[:, -SCALE_STREAM_ROWS:]
        scale = np.concatenate(self._scale, axis=1)[:, -SCALE_STREAM_ROWS:]
        y = np.concatenate(self._y)[-SCALE_STREAM_ROWS:]
        d = np.concatenate(self._d)[-SCALE_STREAM_ROWS:]
        self._loc, self._scale, self._y, self._d = [loc], [scale], [y], [d]
        self.since_scale = 0
        model.spread_.refit(
            model.member_predictors(), loc, scale, y, np.ones(loc.shape, bool), d, source="stream"
        )
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
        entry["start"] = min(pd.Timestamp(entry["start"]), first).isoformat()
        entry["end"] = max(pd.Timestamp(entry["end"]), last).isoformat()
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
