"""A fitted regressor's basis that grows and shrinks with a stream of rows.

:meth:`VRVMRegressor.partial_fit <vrvm.engine.regressor.VRVMRegressor.partial_fit>`
updates the posterior over the weights of a *fixed* set of basis functions; what a
stream teaches outside their span it cannot learn. The fast solver (Tipping & Faul
2003) is itself sequential: it adds, re-estimates or deletes one function at a time,
needing only the sufficient statistics G = Phi^T Phi, h = Phi^T y, y^T y and n of the
candidate columns. :class:`GrowingBasis` keeps those statistics for the active columns
*and a reserve of candidates* (the inactive columns the fit's evidence came closest to
adding, :func:`vrvm.engine._refit.choose_reserve`), adds every new row to them in place
(a BLAS rank-k update), and re-runs the fast solver over them, warm-started from the
current functions, when asked (:meth:`GrowingBasis.resolve`): candidates the data now
supports come in, functions it no longer supports go out. Between re-solves every row
also updates the posterior of the current functions exactly (rank-one), so predictions
use each row at once.

After a re-solve the posterior is the one a fit on all rows seen would give over the
same candidates (the same solver, priors and unit scale), whatever the order of the rows.
"""

from __future__ import annotations

import numpy as np

from vrvm.engine._refit import stage_columns
from vrvm.engine.kernels import StatisticsAccumulator, SufficientStatistics
from vrvm.engine.validation import as_targets

__all__ = ["GrowingBasis"]


class GrowingBasis:
    """Sufficient statistics of a fitted regressor's candidates, updated row by row.

    Parameters
    ----------
    model : VRVMRegressor
        A fitted regressor; when fitted with ``n_reserve > 0`` its reserve of candidates
        is kept (otherwise only its active columns, so re-solves can only prune).
    X, y, linear
        The rows the model was fitted on (its statistics are computed once, here).
    weight : float, default=1.0
        How many rows each row stands for in the statistics, those of ``X`` and of every
        row added later: the ``sample_weight`` the model was fitted with. (Between
        re-solves the posterior of the current functions counts each added row once.)

    Attributes
    ----------
    n_candidates : int
        Columns whose statistics are kept (active and reserve, the bias included).
    n_rows : float
        Rows (weighted by forgetting) the statistics hold.
    n_resolves : int
        Re-solves done.

    Examples
    --------
    Sixty noisy rows choose the candidates; 1,940 more arrive as a stream. The
    posterior of the sixty-row functions alone learns part of what they teach, a
    re-solve the rest:

    >>> from vrvm.engine.regressor import VRVMRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (2000, 1)); y = np.sinc(X[:, 0]) + rng.normal(0, 0.2, 2000)
    >>> model = VRVMRegressor(kernel_widths=[0.3], max_basis=60, n_reserve=40,
    ...                       random_state=0).fit(X[:60], y[:60])
    >>> def error():  # RMS error against the true function
    ...     return round(float(np.sqrt(np.mean((model.predict(X) - np.sinc(X[:, 0])) ** 2))), 2)
    >>> grow = GrowingBasis(model, X[:60], y[:60])
    >>> error()
    0.12
    >>> grow.add(X[60:], y[60:])
    >>> error()
    0.07
    >>> _ = grow.resolve()
    >>> error(), model.n_updates_
    (0.02, 1940)
    """

    def __init__(self, model, X, y, linear=None, *, weight: float = 1.0):
        X, linear = model._check_predict_input(X, linear)
        y = as_targets(y, X.shape[0])
        if not (np.isfinite(weight) and weight > 0):
            raise ValueError(f"weight must be a finite number > 0, got {weight!r}")
        self._weight = float(weight)
        self._model = model
        self._stage = stage_columns(model)
        self._y_scale = model._predictor.y_scale
        self._stats = SufficientStatistics.zeros(self._stage.columns.size)
        self._pending = self._accumulator()
        self._pending.add(X, y / self._y_scale, linear, weight=self._row_weights(X.shape[0]))
        self.n_resolves = 0

    def _row_weights(self, k: int, forgetting: float = 1.0) -> np.ndarray | None:
        if self._weight == 1.0 and forgetting == 1.0:
            return None
        return self._weight * forgetting ** np.arange(k - 1, -1, -1, dtype=np.float64)

    def _accumulator(self) -> StatisticsAccumulator:
        return StatisticsAccumulator(
            self._stage.spec, self._stage.columns, chunk_size=self._model.chunk_size
        )

    @property
    def n_candidates(self) -> int:
        return int(self._stage.columns.size)

    @property
    def n_rows(self) -> float:
        return float(self._stats.n + self._pending.n)

    def statistics(self) -> SufficientStatistics:
        """The statistics of every row seen (on the fit's unit scale)."""
        if self._pending.n:
            self._stats = self._stats + self._pending.result()
            self._pending = self._accumulator()
        return self._stats

    def add(self, X, y, linear=None, *, forgetting: float = 1.0) -> None:
        """Learn rows: the current functions' posterior at once, the statistics in place.

        ``forgetting`` as in :meth:`VRVMRegressor.partial_fit
        <vrvm.engine.regressor.VRVMRegressor.partial_fit>`: the statistics of a row
        seen k rows ago count ``forgetting**k`` times.
        """
        model = self._model
        X, linear = model._check_predict_input(X, linear)
        y = as_targets(y, X.shape[0])
        if X.shape[0] == 0:
            return
        n_updates = model.n_updates_
        model._update(X, y, linear, forgetting)
        model.n_updates_ = n_updates + X.shape[0]
        if forgetting < 1.0:
            self._stats = self.statistics().scaled(forgetting ** X.shape[0])
        weight = self._row_weights(X.shape[0], forgetting)
        self._pending.add(X, y / self._y_scale, linear, weight=weight)

    def resolve(self):
        """Re-run the fast solver over the candidates on the statistics of all rows seen.

        Warm-started from the current functions and precisions; sets the model's fitted
        attributes as :meth:`VRVMRegressor.refit_statistics
        <vrvm.engine.regressor.VRVMRegressor.refit_statistics>` does, keeping its count
        of updates and the reserve for the next re-solve. Returns the model.
        """
        model = self._model
        n_updates = model.n_updates_
        model._reserve = self._stage
        try:
            model.refit_statistics(self.statistics(), prune=True)
        finally:
            model._reserve = self._stage
        model.n_updates_ = n_updates
        self.n_resolves += 1
        return model
