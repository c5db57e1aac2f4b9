"""The second stage of a two-stage fit: a fitted regressor's basis re-fitted on more rows.

:meth:`VRVMRegressor.fit <vrvm.engine.regressor.VRVMRegressor.fit>` on a subsample
chooses the widths, the candidate centres and the active columns; the second stage
accumulates the sufficient statistics of a few columns over all rows
(:meth:`~vrvm.engine.regressor.VRVMRegressor.basis_statistics`) and fits the
variational posterior again on them
(:meth:`~vrvm.engine.regressor.VRVMRegressor.refit_statistics`). Those columns are the
active ones and, with ``n_reserve > 0``, a *reserve* of the inactive candidates the
first stage's evidence came closest to adding, so that the second stage can add
functions as well as drop them. This module holds that bookkeeping and the setting of
the fitted attributes shared by both stages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vrvm.engine.kernels import BasisSpec, StatisticsAccumulator, SufficientStatistics
from vrvm.engine.predictor import CoreFit
from vrvm.engine.validation import as_targets

__all__ = ["BasisAccumulator", "StageColumns", "choose_reserve", "set_fitted", "stage_columns"]


@dataclass(frozen=True)
class StageColumns:
    """The columns whose statistics the second stage uses, and how to compute them.

    Attributes
    ----------
    spec : BasisSpec
        Basis the columns belong to: the first stage's candidate basis (with a
        reserve) or the fitted model's compact basis (without).
    centre_rows : ndarray of int
        Training row (of the first stage's data) of every centre of ``spec``.
    columns : ndarray of int
        Columns of ``spec``, in ascending order of their candidate column (the bias
        first): the order of the statistics.
    candidate : ndarray of int
        The first stage's candidate column of each (what ``active_`` indexes).
    """

    spec: BasisSpec
    centre_rows: np.ndarray
    columns: np.ndarray
    candidate: np.ndarray

    def subset(self, positions: np.ndarray) -> StageColumns:
        """The same basis restricted to ``columns[positions]``."""
        return StageColumns(
            self.spec, self.centre_rows, self.columns[positions], self.candidate[positions]
        )


def choose_reserve(fit: CoreFit, n_reserve: int) -> StageColumns | None:
    """Active columns plus the ``n_reserve`` inactive candidates of highest relevance ratio.

    The ratio is E[lambda] q_k^2 / s_k of :attr:`VBResult.relevance_ratio
    <vrvm.engine.variational.VBResult>` (Tipping & Faul 2003: the evidence adds
    candidate k iff beta q_k^2 > s_k); candidates in the span of the active columns
    (ratio 0) are never chosen. None when there is no reserve to keep (``n_reserve``
    is 0, or the solver gives no ratio: ``solver="coordinate"``).
    """
    ratio = fit.result.relevance_ratio
    if n_reserve <= 0 or ratio is None:
        return None
    active = fit.result.active
    score = np.where(np.isfinite(ratio), ratio, 0.0)
    score[active] = 0.0
    eligible = np.flatnonzero(score > 0)
    # highest ratio first; ties by column, so the choice is reproducible
    best = eligible[np.argsort(-score[eligible], kind="stable")[:n_reserve]]
    columns = np.union1d(active, best).astype(np.intp)
    return StageColumns(fit.spec, fit.centre_rows, columns, columns.copy())


def stage_columns(model) -> StageColumns:
    """The columns of ``model``'s second stage: its reserve if it holds one, otherwise
    the active columns of its compact predictive basis (``active_`` order)."""
    reserve = getattr(model, "_reserve", None)
    if reserve is not None:
        return reserve
    pred = model._predictor
    basis = pred.basis
    rows = np.full(basis.n_centres, -1)
    head = 1 + basis.n_linear
    kern = pred.columns >= head
    rows[(pred.columns[kern] - head) % basis.n_centres] = model.basis_centre_index_[kern]
    return StageColumns(basis, rows, pred.columns, model.active_)


def set_fitted(model, fit: CoreFit, n_rows: int, active: np.ndarray) -> None:
    """Set every fitted attribute that ``fit`` determines (both stages).

    ``fit.result.active`` indexes ``fit.spec``; ``active`` gives the same columns as
    candidate columns of the first stage (``active_``). The relevance vectors are the
    centres' inputs, which ``fit.spec`` holds (``spec.centres[j]`` is training row
    ``fit.centre_rows[j]``).
    """
    res, s, spec = fit.result, fit.y_scale, fit.spec
    model._predictor = fit.predictor()
    model.active_ = np.array(active, copy=True)
    model.coef_ = res.post.mean * s
    model.alpha_ = res.alpha.copy()
    col_centre = spec.column_centre()[res.active]
    model.basis_centre_index_ = np.where(col_centre >= 0, fit.centre_rows[col_centre], -1)
    model.basis_width_ = spec.column_width()[res.active]
    used = np.unique(col_centre[col_centre >= 0])
    rows = fit.centre_rows[used]
    order = np.argsort(rows, kind="stable")
    model.relevance_indices_ = rows[order]
    model.relevance_vectors_ = spec.centres[used[order]]
    model.n_relevance_ = int(model.relevance_indices_.size)
    model.e_ = float(res.e)
    model.f_ = float(res.f * s**2)
    model.noise_std_ = float(np.sqrt(model.f_ / model.e_))
    # the bound of the scaled data, moved to the scale of y by the Jacobian -N log s
    model.elbo_ = np.asarray(res.elbo) - n_rows * np.log(s)
    model.log_evidence_ = float(fit.log_evidence)
    model.n_iter_ = res.n_iter
    model.converged_ = res.converged
    model.stop_reason_ = res.stop_reason
    model.n_updates_ = 0


class BasisAccumulator:
    """The second stage's statistics of a fitted regressor, added batch by batch
    (:meth:`VRVMRegressor.statistics_accumulator
    <vrvm.engine.regressor.VRVMRegressor.statistics_accumulator>`): the batches are
    checked and put on the fit's unit scale as :meth:`basis_statistics
    <vrvm.engine.regressor.VRVMRegressor.basis_statistics>` does, and summed in place
    (:class:`~vrvm.engine.kernels.StatisticsAccumulator`)."""

    def __init__(self, model, stage: StageColumns):
        self._model = model
        self._y_scale = model._predictor.y_scale
        self._acc = StatisticsAccumulator(stage.spec, stage.columns, chunk_size=model.chunk_size)

    def add(self, X, y, linear=None) -> None:
        """Add the rows ``X`` with targets ``y`` (and linear columns)."""
        X, linear = self._model._check_predict_input(X, linear)
        y = as_targets(y, X.shape[0]) if X.shape[0] else np.empty(0)
        self._acc.add(X, y / self._y_scale, linear)

    def result(self) -> SufficientStatistics:
        """The statistics of every row added so far."""
        return self._acc.result()
