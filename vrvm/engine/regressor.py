"""The variational relevance vector machine regressor (scikit-learn compatible)."""

from __future__ import annotations

import logging

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.model_selection import KFold
from sklearn.utils.validation import check_is_fitted

from vrvm.engine._refit import BasisAccumulator, choose_reserve, set_fitted, stage_columns
from vrvm.engine._state import export_state, restore_state
from vrvm.engine._watchdog import watched_parallel
from vrvm.engine.kernels import (
    BasisSpec,
    SufficientStatistics,
    choose_centres,
    sufficient_statistics,
    width_grid,
)
from vrvm.engine.predictor import CoreFit, Predictor
from vrvm.engine.validation import (
    FORGETTING,
    SEED,
    as_float_array,
    as_sample_weight,
    as_targets,
    check_finite,
    check_params,
    integer,
    one_of,
    positive_widths,
    real,
    weighted_std,
)
from vrvm.engine.variational import (
    FAMILIES,
    Priors,
    fit_coordinate,
    fit_fast,
    log_evidence,
)

__all__ = ["VRVMRegressor"]

logger = logging.getLogger(__name__)


# Declarative parameter table: name -> (predicate, description of the allowed values).
_PARAMETER_CONSTRAINTS = {
    "kernel_widths": (positive_widths, '"auto", a positive number or a sequence of them'),
    "kernel_mode": (one_of("stacked", "summed"), '"stacked" or "summed"'),
    "width_selection": (one_of("evidence", "cv"), '"evidence" or "cv"'),
    "n_widths": (integer(1), "an integer >= 1"),
    "max_basis": (integer(1), "an integer >= 1"),
    "factorization": (one_of(*FAMILIES), '"structured" or "meanfield"'),
    "solver": (one_of("fast", "coordinate"), '"fast" or "coordinate"'),
    "max_iter": (integer(1), "an integer >= 1"),
    "tol": (real(0, strict=True), "a number > 0"),
    "a0": (real(0, strict=False), "a number >= 0"),
    "b0": (real(0, strict=False), "a number >= 0"),
    "e0": (real(0, strict=True), "a number > 0"),
    "f0": (real(0, strict=True), "a number > 0"),
    "alpha_max": (real(0, strict=True), "a number > 0"),
    "span_tol": (real(0, strict=False, high=1), "a number in [0, 1]"),
    "chunk_size": (integer(1, allow_none=True), "None or an integer >= 1"),
    "selection_size": (integer(10), "an integer >= 10"),
    "selection_max_basis": (integer(1), "an integer >= 1"),
    "cv_folds": (integer(2), "an integer >= 2"),
    "n_jobs": (lambda v: integer(allow_none=True)(v) and v != 0, "None or a non-zero integer"),
    "n_reserve": (integer(0), "an integer >= 0"),
    "random_state": SEED,
}


class VRVMRegressor(RegressorMixin, BaseEstimator):
    r"""Variational relevance vector machine with a Gaussian multi-kernel.

    Basis phi(x) = [1, d(x), k(x, c_1), ..., k(x, c_m)]: a bias, optional
    user-supplied "linear" columns d(x) (for trips: the origin-destination
    great-circle distance) and Gaussian kernels on centres c_j taken from the
    training inputs. The normal-gamma ARD model

        y ~ N(Phi w, 1/lambda),  w ~ N(0, (lambda diag(alpha))^-1),
        lambda ~ Gam(e0, f0),    alpha_k ~ Gam(a0, b0)

    is fitted by variational Bayes (Bishop & Tipping 2000; Drugowitsch 2013),
    with the fast add/re-estimate/delete scheme of Shutin et al. (2011) so that
    irrelevant basis functions are pruned exactly instead of crawling.

    Parameters
    ----------
    kernel_widths : "auto", float or sequence of float, default="auto"
        Gaussian widths l in exp(-||x - c||^2 / l^2). ``"auto"`` chooses a window of
        ``n_widths`` consecutive values of a geometric grid scaled to the spacing of the
        centres (:func:`vrvm.engine.kernels.width_grid`), by ``width_selection``.
    kernel_mode : {"stacked", "summed"}, default="stacked"
        ``"stacked"``: one column per (centre, width) so ARD picks the width of each
        centre; ``"summed"``: one column per centre with the kernels added.
    width_selection : {"evidence", "cv"}, default="evidence"
        How ``"auto"`` widths are chosen: the converged log evidence log p(y | alpha)
        (the bound with q(alpha) collapsed to its mean), or ``cv_folds``-fold
        cross-validated mean log predictive density (the paper's cross-validation).
        Both run on a random subsample of at most ``selection_size`` rows.
    n_widths : int, default=2
        Number of widths per candidate set for ``"auto"``.
    max_basis : int, default=1000
        Maximum number of kernel centres: all training rows when n <= max_basis,
        otherwise k-means++ seeding on a subsample (:func:`vrvm.engine.kernels.choose_centres`).
    factorization : {"structured", "meanfield"}, default="structured"
        ``"structured"``: q(w, lambda) q(alpha), Student-t predictive with 2e' degrees of
        freedom; ``"meanfield"``: q(w) q(lambda) q(alpha), Gaussian predictive (the paper's).
    solver : {"fast", "coordinate"}, default="fast"
        The fast sequential solver or plain coordinate ascent (slow; reference).
    max_iter : int, default=5000
        Maximum iterations (single-function steps for ``"fast"``, sweeps for
        ``"coordinate"``).
    tol : float, default=1e-6
        Stop when the relative change of the ELBO (for ``"fast"``: the largest change any
        single step could still bring, relative to max(|ELBO|, N), since the bound of
        standardised data is of order N but can pass close to zero) falls below ``tol``.
    a0, b0 : float, default=0.0
        Gamma prior of each alpha_k. 0, 0 is Tipping's (2001) scale-invariant prior,
        under which irrelevant weights are pruned exactly.
    e0, f0 : float, default=1e-6
        Gamma prior of the noise precision lambda (on the scale of ``y``).
    alpha_max : float, default=1e12
        A basis function whose E[alpha_k] exceeds this is pruned (the bias never is).
    span_tol : float, default=1e-6
        ``solver="fast"`` only: a candidate whose part outside the span of the active
        functions is below this fraction of its norm is treated as redundant (never
        added). Smaller values let the evidence add ever more nearly collinear
        functions: slower and closer to the unthresholded optimum. Measured on the 6-D
        benchmark at N = 1e5 (noise 0.2): 1e-6 gives test RMSE 0.2106 in a 0.2 s solve,
        1e-8 0.2077 in 3.9 s, 1e-10 0.2019 in 24 s (see BENCHMARKS.md).
    chunk_size : int or None, default=None
        Rows per chunk when accumulating Phi^T Phi (default: a 64 MiB block).
    selection_size : int, default=2000
        Rows used for automatic width selection.
    selection_max_basis : int, default=500
        Kernel centres (at most ``max_basis``) of the candidate models scored during
        width selection: enough to judge a length scale, and 2-4x cheaper than the
        final model's basis.
    cv_folds : int, default=5
        Folds for ``width_selection="cv"``.
    n_jobs : int or None, default=None
        Processes (joblib) that score the candidate width sets of ``"auto"`` in
        parallel; None or 1 scores them in turn, -1 uses all cores.
    n_reserve : int, default=0
        For a two-stage fit: :meth:`fit` also keeps the ``n_reserve`` inactive
        candidates the evidence came closest to adding (highest E[lambda] q_k^2 / s_k),
        whose statistics :meth:`basis_statistics` then accumulates too, so that
        :meth:`refit_statistics` can add them. Transient: not saved with the model
        (:meth:`export_state`); ignored by ``solver="coordinate"``.
    random_state : int, numpy Generator or None, default=None
        Seed for centre selection and subsampling.

    Attributes
    ----------
    coef_ : ndarray of shape (n_active,)
        Posterior mean weights of the active basis functions (scale of ``y``).
    active_ : ndarray of int
        Columns of the candidate design that survived pruning (0 is the bias,
        1..n_linear the linear columns, the rest kernel columns).
    alpha_ : ndarray of shape (n_active,)
        E[alpha_k] of the active columns.
    relevance_indices_ : ndarray of int
        Training-row indices of the surviving kernel centres.
    relevance_vectors_ : ndarray of shape (n_relevance, n_features)
        Their input rows.
    n_relevance_ : int
        Number of relevance vectors.
    basis_centre_index_, basis_width_ : ndarray of shape (n_active,)
        Training row (-1 for bias/linear) and kernel width (NaN where not applicable)
        of each active column.
    kernel_widths_ : ndarray
        Widths used.
    width_scores_ : dict
        Score of every candidate width set when widths were chosen automatically.
    noise_std_ : float
        Posterior noise standard deviation sqrt(f'/e').
    e_, f_ : float
        Parameters of q(lambda) = Gam(e', f') on the scale of ``y``.
    elbo_ : ndarray
        ELBO after every iteration (nats, on the scale of ``y``).
    log_evidence_ : float
        log p(y | E[alpha]) of the final model.
    n_iter_ : int
        Iterations run.
    converged_ : bool
    stop_reason_ : str
        Why the solver stopped.

    See Also
    --------
    vrvm.engine.variational : the update equations, the ELBO and both solvers.

    Notes
    -----
    Structured updates (Drugowitsch 2013, eqs. 9-12): V = (A + G)^-1, mu = V h,
    e' = e0 + N/2, f' = f0 + (y^T y - mu^T V^-1 mu)/2, b'_k = b0 + (E[lambda] mu_k^2 + V_kk)/2.
    Mean-field updates: Sigma = (f'/e')(A + G)^-1, e' = e0 + (N + K)/2,
    f' = f0 + E[||y - Phi w||^2 + w^T A w]/2 (trace terms included),
    b'_k = b0 + E[lambda](mu_k^2 + Sigma_kk)/2. G = Phi^T Phi and h = Phi^T y are
    accumulated in chunks, so memory is O(M^2 + chunk M) whatever the number of rows.
    ``y`` is divided by its standard deviation internally (with f0 rescaled
    accordingly, which leaves the model unchanged).

    References
    ----------
    .. [1] C. M. Bishop and M. E. Tipping, "Variational relevance vector machines", UAI 2000.
    .. [2] J. Drugowitsch, "Variational Bayesian inference for linear and logistic
       regression", arXiv:1310.5438, 2013.
    .. [3] D. Shutin, T. Buchgraber, S. R. Kulkarni and H. V. Poor, "Fast variational
       sparse Bayesian learning with automatic relevance determination for superimposed
       signals", IEEE Trans. Signal Processing 59(12), 2011.
    .. [4] M. E. Tipping and A. C. Faul, "Fast marginal likelihood maximisation for
       sparse Bayesian models", AISTATS 2003.

    Examples
    --------
    >>> import numpy as np
    >>> from vrvm import VRVMRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = np.linspace(-10, 10, 100)[:, None]
    >>> y = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.1, 100)
    >>> m = VRVMRegressor(kernel_widths=3.0, random_state=0).fit(X, y)
    >>> m.n_relevance_ < 15, 0.05 < m.noise_std_ < 0.15
    (True, True)
    >>> mean, std = m.predict(X[:3], return_std=True)
    >>> lo, hi = m.predict_dist(X[:3]).interval(0.9)
    >>> bool(np.all(lo < mean) and np.all(mean < hi))
    True
    """

    def __init__(
        self,
        *,
        kernel_widths="auto",
        kernel_mode: str = "stacked",
        width_selection: str = "evidence",
        n_widths: int = 2,
        max_basis: int = 1000,
        factorization: str = "structured",
        solver: str = "fast",
        max_iter: int = 5000,
        tol: float = 1e-6,
        a0: float = 0.0,
        b0: float = 0.0,
        e0: float = 1e-6,
        f0: float = 1e-6,
        alpha_max: float = 1e12,
        span_tol: float = 1e-6,
        chunk_size: int | None = None,
        selection_size: int = 2000,
        selection_max_basis: int = 500,
        cv_folds: int = 5,
        n_jobs: int | None = None,
        n_reserve: int = 0,
        random_state=None,
    ):
        self.kernel_widths = kernel_widths
        self.kernel_mode = kernel_mode
        self.width_selection = width_selection
        self.n_widths = n_widths
        self.max_basis = max_basis
        self.factorization = factorization
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.a0 = a0
        self.b0 = b0
        self.e0 = e0
        self.f0 = f0
        self.alpha_max = alpha_max
        self.span_tol = span_tol
        self.chunk_size = chunk_size
        self.selection_size = selection_size
        self.selection_max_basis = selection_max_basis
        self.cv_folds = cv_folds
        self.n_jobs = n_jobs
        self.n_reserve = n_reserve
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def validate_params(self) -> None:
        """Check every parameter as :meth:`fit` does, without fitting.

        Raises
        ------
        ValueError
            Naming the parameter and the values it allows.
        """
        check_params(self, _PARAMETER_CONSTRAINTS)

    @property
    def predictor_(self) -> Predictor:
        """The fitted member's compact predictive model
        (:class:`~vrvm.engine.predictor.Predictor`): what an ensemble evaluates for many
        members side by side."""
        predictor = getattr(self, "_predictor", None)
        if predictor is None:  # scikit-learn's error; its check costs ~50 us a call
            check_is_fitted(self, "_predictor")
        return predictor

    @staticmethod
    def _as_matrix(value, name: str, n_rows: int | None = None) -> np.ndarray:
        """``X`` or ``linear`` as 2-D float64 (a 1-D ``linear`` is one column)."""
        arr = as_float_array(value, name)
        if arr.ndim == 1 and name == "linear":
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError(
                f"{name} must be a 2-D array (n_samples, n_features), got shape {arr.shape}"
            )
        if n_rows is not None and arr.shape[0] != n_rows:
            raise ValueError(f"{name} has {arr.shape[0]} rows but X has {n_rows}")
        return check_finite(arr, name)

    def _check_predict_input(self, X, linear):
        check_is_fitted(self, "coef_")
        X = self._as_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but the model was fitted with {self.n_features_in_}"
            )
        if self.n_linear_:
            if linear is None:
                raise ValueError(
                    f"the model was fitted with {self.n_linear_} linear column(s): "
                    "pass linear= to predict"
                )
            linear = self._as_matrix(linear, "linear", X.shape[0])
            if linear.shape[1] != self.n_linear_:
                raise ValueError(f"linear has {linear.shape[1]} columns, expected {self.n_linear_}")
        elif linear is not None:
            raise ValueError("the model was fitted without linear columns; do not pass linear=")
        return X, linear

    # ------------------------------------------------------------------ fitting
    def _priors(self, y_scale: float) -> Priors:
        # lambda_scaled = lambda * s^2 ~ Gam(e0, f0 / s^2): the same model on y / s
        return Priors(a0=self.a0, b0=self.b0, e0=self.e0, f0=self.f0 / y_scale**2)

    def _core_fit(self, X, y, linear, widths, centre_rows, weight=None) -> CoreFit:
        # weighted standard deviation (the plain one for uniform weights)
        y_scale = float(np.std(y) if np.ndim(weight) == 0 else weighted_std(y, weight))
        priors = self._priors(y_scale)
        spec = BasisSpec(
            centres=X[centre_rows],
            widths=np.asarray(widths, dtype=np.float64),
            mode=self.kernel_mode,
            n_linear=0 if linear is None else linear.shape[1],
        )
        stats = sufficient_statistics(
            spec, X, y / y_scale, linear, chunk_size=self.chunk_size, weight=weight
        )
        options = {"tol": self.tol, "max_iter": self.max_iter, "alpha_max": self.alpha_max}
        if self.solver == "fast":
            result = fit_fast(stats, self.factorization, priors, span_tol=self.span_tol, **options)
        else:
            result = fit_coordinate(stats, self.factorization, priors, **options)
        if not result.converged:
            logger.warning("VRVM did not converge: %s", result.stop_reason)
        # evidence of the scaled data, moved to the scale of y by the Jacobian -N log s
        evidence = log_evidence(stats.subset(result.active), result.alpha, priors)
        evidence -= stats.n * np.log(y_scale)
        return CoreFit(spec, centre_rows, result, y_scale, priors, float(evidence))

    def _select_widths(self, X, y, linear, rng, weight=None):
        n = X.shape[0]
        rows = np.arange(n)
        if n > self.selection_size:
            rows = np.sort(rng.choice(n, size=self.selection_size, replace=False))
        Xs, ys = X[rows], y[rows]
        ls = None if linear is None else linear[rows]
        ws = weight if np.ndim(weight) == 0 else weight[rows]
        # grid: the final model's centre spacing; scored on <= selection_max_basis of them
        centres = Xs[choose_centres(Xs, self.max_basis, rng)]
        candidates = width_grid(centres, self.n_widths, rng)
        plan = self._selection_plan(Xs, rng)
        tasks = [(Xs, ys, ls, widths, plan, ws) for widths in candidates]
        if self.n_jobs in (None, 1):
            outcomes = [self._score_widths(*task) for task in tasks]
        else:
            from joblib import delayed

            outcomes = watched_parallel(self.n_jobs)(  # workers die with this process
                delayed(self._score_widths)(*task) for task in tasks
            )
        scores, fits = {}, {}
        for widths, (score, fit) in zip(candidates, outcomes, strict=True):
            key = tuple(float(w) for w in widths)
            scores[key] = score
            if fit is not None:
                fits[key] = fit
        best = max(scores, key=scores.get)
        # the selection fit is the final model when it saw every row with the same centres
        same_basis = min(n, self._selection_basis()) == min(n, self.max_basis)
        reuse = fits.get(best) if rows.size == n and same_basis else None
        return np.array(best), scores, reuse

    def _selection_basis(self) -> int:
        return min(self.max_basis, self.selection_max_basis)

    def _selection_plan(self, Xs, rng):
        """(training rows, test rows, centre rows) of every fit that scores a candidate.

        Drawn once, so every candidate width set is scored on the same folds with the
        same centres (common random numbers: the scores differ only by the widths) and
        k-means++ runs once instead of once per candidate.
        """
        basis = self._selection_basis()
        if self.width_selection == "evidence":
            return [(None, None, choose_centres(Xs, basis, rng))]
        folds = KFold(self.cv_folds, shuffle=True, random_state=int(rng.integers(2**31)))
        return [(tr, te, choose_centres(Xs[tr], basis, rng)) for tr, te in folds.split(Xs)]

    def _score_widths(self, Xs, ys, ls, widths, plan, ws=None):
        """Score one candidate width set: (log evidence, fit) or (CV log density, None),
        both weighted by the rows' weights ``ws`` (a number or one per row) if given."""
        if self.width_selection == "evidence":
            ((_, _, centre_rows),) = plan
            fit = self._core_fit(Xs, ys, ls, widths, centre_rows, ws)
            return fit.log_evidence, fit
        per_row = np.broadcast_to(np.float64(1.0 if ws is None else ws), ys.shape)
        total = 0.0
        for tr, te, centre_rows in plan:
            w_tr = ws if np.ndim(ws) == 0 else ws[tr]
            fit = self._core_fit(
                Xs[tr], ys[tr], None if ls is None else ls[tr], widths, centre_rows, w_tr
            )
            pred = fit.predictor()
            loc, scale = pred.loc_scale(Xs[te], None if ls is None else ls[te])
            total += float(per_row[te] @ pred.dist(loc, scale).logpdf(ys[te]))
        return total / per_row.sum(), None

    def fit(self, X, y, linear=None, sample_weight=None):
        """Fit the VRVM.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Kernel inputs.
        y : array-like of shape (n_samples,)
            Targets.
        linear : array-like of shape (n_samples,) or (n_samples, k), optional
            Extra columns entering the basis linearly (the paper's d(x)).
        sample_weight : float or array-like of shape (n_samples,), optional
            How many observations each row stands for in the likelihood: a row of
            weight w counts as w identical rows (G = Phi^T W Phi, h = Phi^T W y,
            N = sum w). A single number weighs every row alike: a uniform subsample
            of n rows standing for N rows (weight N / n) gets the evidence, and so
            the number of basis functions, of N rows (the first stage of a
            two-stage fit). Default: 1 for every row.

        Returns
        -------
        self : VRVMRegressor
        """
        self.validate_params()
        X = self._as_matrix(X, "X")
        y = as_targets(y, X.shape[0])
        if X.shape[0] < 3:
            raise ValueError(f"VRVMRegressor needs at least 3 rows, got {X.shape[0]}")
        if np.ptp(y) == 0:
            raise ValueError("y is constant: there is nothing to learn (and no noise to estimate)")
        if linear is not None:
            linear = self._as_matrix(linear, "linear", X.shape[0])
        weight = as_sample_weight(sample_weight, X.shape[0])
        rng = np.random.default_rng(self.random_state)

        self.width_scores_ = {}
        fit = None
        if isinstance(self.kernel_widths, str):
            widths, self.width_scores_, fit = self._select_widths(X, y, linear, rng, weight)
        else:
            widths = np.atleast_1d(np.asarray(self.kernel_widths, dtype=np.float64))
        if fit is None:
            centres = choose_centres(X, self.max_basis, rng)
            fit = self._core_fit(X, y, linear, widths, centres, weight)
        self._set_fitted(fit, X, linear, weight)
        return self

    def _set_fitted(self, fit: CoreFit, X, linear, weight=None):
        self.n_features_in_ = X.shape[1]
        self.n_linear_ = 0 if linear is None else linear.shape[1]
        self.kernel_widths_ = fit.spec.widths.copy()
        self.centre_indices_ = fit.centre_rows
        n_rows = X.shape[0] if weight is None else float(np.sum(np.broadcast_to(weight, len(X))))
        set_fitted(self, fit, n_rows, fit.result.active)
        # the second stage's candidates (module vrvm.engine._refit), never saved
        self._reserve = choose_reserve(fit, self.n_reserve)

    # ------------------------------------------------------------------ two-stage fits
    def basis_statistics(self, X, y, linear=None) -> SufficientStatistics:
        """Sufficient statistics of the fitted basis functions on more data.

        G = Phi^T Phi, h = Phi^T y, y^T y and n over the rows of ``X`` for the active
        columns (``active_``, in that order) and, after a :meth:`fit` with
        ``n_reserve > 0``, the reserve: then the active and reserve columns in
        ascending order of their candidate column. On the unit scale of the fit (y
        divided by the scale fixed at :meth:`fit`). Statistics of disjoint row sets
        add up (``a + b``), so they can be accumulated over batches, files and
        machines and passed to :meth:`refit_statistics`; over many batches in one
        process, :meth:`statistics_accumulator` does it without an M x M array per batch.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        linear : array-like of shape (n_samples,) or (n_samples, k), optional

        Returns
        -------
        SufficientStatistics
        """
        acc = self.statistics_accumulator()
        acc.add(X, y, linear)
        return acc.result()

    def statistics_accumulator(self) -> BasisAccumulator:
        """An accumulator of :meth:`basis_statistics` over batches of rows.

        ``acc.add(X, y, linear)`` for each batch, then ``acc.result()``: the statistics
        of all the batches' rows, as :meth:`basis_statistics` of them all at once.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-3, 3, size=(400, 1)); y = np.sinc(X[:, 0])
        >>> model = VRVMRegressor(kernel_widths=[1.0], max_basis=30).fit(X, y)
        >>> acc = model.statistics_accumulator()
        >>> acc.add(X[:150], y[:150]); acc.add(X[150:], y[150:])
        >>> bool(np.allclose(acc.result().G, model.basis_statistics(X, y).G))
        True
        """
        check_is_fitted(self, "_predictor")
        return BasisAccumulator(self, stage_columns(self))

    def zero_statistics(self) -> SufficientStatistics:
        """The statistics of no rows for the columns of :meth:`basis_statistics` (the
        start of a sum over parts)."""
        check_is_fitted(self, "_predictor")
        return SufficientStatistics.zeros(stage_columns(self).columns.size)

    def refit_statistics(self, stats: SufficientStatistics, *, prune: bool = True):
        """Re-estimate weights, ARD precisions and noise from the statistics of more data.

        The second stage of a two-stage fit: :meth:`fit` on a subsample chooses the
        widths, centres and active set; :meth:`basis_statistics` summed over all rows
        gives G, h, y^T y and n of those columns, from which the variational posterior
        q(w) q(alpha) q(lambda) is fitted again (the same updates as :meth:`fit`, on
        the same priors and unit scale). ``prune=True`` runs the fast solver from the
        bias alone over the active columns and the reserve (``n_reserve``), so
        functions the larger data does not support drop out and reserve candidates it
        supports come in; ``prune=False`` keeps every active column, re-estimates its
        alpha_k and ignores the reserve. Fitted attributes are set as by :meth:`fit`
        (``active_`` indexes the candidate columns of the first stage,
        ``relevance_indices_`` its training rows) and the reserve is forgotten.

        Parameters
        ----------
        stats : SufficientStatistics
            Statistics of the columns of :meth:`basis_statistics`.
        prune : bool, default=True

        Returns
        -------
        self : VRVMRegressor

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-3, 3, size=(3000, 1)); y = np.sinc(X[:, 0]) + rng.normal(0, 0.1, 3000)
        >>> model = VRVMRegressor(kernel_widths=[1.0], max_basis=50, random_state=0)
        >>> model = model.fit(X[:500], y[:500])
        >>> stats = model.basis_statistics(X[:1500], y[:1500]) + model.basis_statistics(
        ...     X[1500:], y[1500:])
        >>> model = model.refit_statistics(stats)
        >>> round(model.noise_std_, 1), bool(model.n_relevance_ > 0)
        (0.1, True)
        """
        check_is_fitted(self, "_predictor")
        stage = stage_columns(self)
        k = stage.columns.size
        if not isinstance(stats, SufficientStatistics) or stats.h.shape != (k,):
            raise ValueError(
                f"stats must be the SufficientStatistics of the {k} columns of "
                "basis_statistics (the active columns and the reserve)"
            )
        if stats.n < 3:
            raise ValueError(f"refit_statistics needs statistics of at least 3 rows, got {stats.n}")
        if not prune and stage.columns.size != self.active_.size:  # the reserve is not used
            positions = np.flatnonzero(np.isin(stage.candidate, self.active_))
            stage, stats = stage.subset(positions), stats.subset(positions)
        s = self._predictor.y_scale
        priors = self._priors(s)
        # column 0 of the statistics is the bias (columns in ascending candidate order)
        keep = (0,) if prune else tuple(range(stage.columns.size))
        options = {"tol": self.tol, "max_iter": self.max_iter, "alpha_max": self.alpha_max}
        if self.solver == "fast":
            # pruning starts from the first stage's functions and precisions (a warm
            # start: the data mostly re-estimates them) rather than from the bias alone
            start = None
            if prune:
                found = np.flatnonzero(np.isin(stage.candidate, self.active_))
                start = (found, self.alpha_) if found.size == self.alpha_.size else None
            res = fit_fast(
                stats,
                self.factorization,
                priors,
                span_tol=self.span_tol,
                keep=keep,
                start=start,
                **options,
            )
        else:
            res = fit_coordinate(stats, self.factorization, priors, keep=keep, **options)
        if not res.converged:
            logger.warning("VRVM refit did not converge: %s", res.stop_reason)
        local = res.active
        evidence = log_evidence(stats.subset(local), res.alpha, priors) - stats.n * np.log(s)
        res.active = stage.columns[local]
        fit = CoreFit(stage.spec, stage.centre_rows, res, s, priors, float(evidence))
        set_fitted(self, fit, stats.n, stage.candidate[local])
        self._reserve = None
        return self

    # ------------------------------------------------------------------ state (no pickle)
    def export_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """Fitted state as JSON-serialisable metadata plus numeric arrays.

        Together with :meth:`from_state` this stores a model without pickle (for
        :mod:`vrvm.trips.store.model_dir`); the arrays are plain float64/int64 ndarrays
        (:mod:`vrvm.engine._state`).

        Examples
        --------
        >>> X = np.linspace(0, 1, 30)[:, None]; y = np.sin(6 * X[:, 0])
        >>> m = VRVMRegressor(kernel_widths=0.3).fit(X, y)
        >>> meta, arrays = m.export_state()
        >>> m2 = VRVMRegressor.from_state(meta, arrays)
        >>> bool(np.array_equal(m.predict(X), m2.predict(X)))
        True
        """
        check_is_fitted(self, "coef_")
        return export_state(self)

    @classmethod
    def from_state(cls, meta: dict, arrays: dict) -> VRVMRegressor:
        """Rebuild a fitted regressor from :meth:`export_state` output."""
        return restore_state(cls, meta, arrays)

    # ------------------------------------------------------------------ online updates
    def partial_fit(self, X, y, linear=None, *, forgetting: float = 1.0, check_input: bool = True):
        """Update the fitted posterior with new observations (sequential Bayesian learning).

        The basis (the surviving relevance vectors) and every alpha_k are held fixed at
        their posterior means; then the posterior over the weights and the noise
        precision is conjugate normal-gamma, and "today's posterior is tomorrow's
        prior" (Bishop 2006, section 3.1.5, with the noise learned as well):

            Lambda_N = Lambda + Phi^T Phi,   m_N = Lambda_N^-1 (Lambda m + Phi^T y),
            e_N = e + n/2,   f_N = f + (y^T y + m^T Lambda m - m_N^T Lambda_N m_N)/2,

        with Lambda = A + G the unit-noise precision. Each row costs O(K^2) through a
        rank-one update of the Cholesky factor (:class:`vrvm.engine.blr.NormalGammaPosterior`).
        Without forgetting the result equals the batch posterior on all data seen with
        the same basis and alpha, whatever the order.

        Parameters
        ----------
        X, y, linear
            New observations, as for :meth:`fit`.
        forgetting : float in (0, 1], default=1.0
            Exponential forgetting: before each new row the accumulated evidence
            (precision, its mean term and the gamma parameters) is multiplied by
            ``forgetting``, so a row seen ``k`` rows ago has weight ``forgetting**k``
            (effective memory about 1 / (1 - forgetting) rows). 1 forgets nothing.
        check_input : bool, default=True
            Whether to check and convert the inputs (as scikit-learn's trees do). An
            ensemble that has checked them once passes False: float64 arrays of the
            right shapes and a valid ``forgetting`` are then the caller's promise.

        Returns
        -------
        self : VRVMRegressor

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-3, 3, (60, 1)); y = np.sin(X[:, 0]) + rng.normal(0, .1, 60)
        >>> m = VRVMRegressor(kernel_widths=1.0).fit(X[:40], y[:40])
        >>> m = m.partial_fit(X[40:], y[40:])
        >>> m.n_updates_
        20
        """
        if check_input:
            X, linear = self._check_predict_input(X, linear)
            y = as_targets(y, X.shape[0])
            check_params(self, {"forgetting": FORGETTING}, values={"forgetting": forgetting})
        return self._update(X, y, linear, forgetting)

    def _update(self, X, y, linear, forgetting: float):
        """:meth:`partial_fit` on inputs already validated (the ensemble's fast path)."""
        pred = self._predictor
        post = pred.online_posterior()
        phi = pred.basis.design(X, linear, pred.columns)
        post.update(phi, y / pred.y_scale, forgetting=forgetting)
        pred.sync_from_online()
        s = pred.y_scale
        self.coef_ = pred.mean * s
        self.e_, self.f_ = float(pred.e), float(pred.f * s**2)
        self.noise_std_ = float(np.sqrt(self.f_ / self.e_))
        self.n_updates_ += X.shape[0]
        return self

    # ------------------------------------------------------------------ prediction
    def predict_dist(self, X, linear=None):
        """Predictive distribution of every row.

        Returns
        -------
        StudentT or Normal
            Student-t with 2e' degrees of freedom, location mu^T phi(x) and
            scale^2 = (f'/e')(1 + phi^T V phi) (structured), or the Gaussian
            N(mu^T phi, f'/e' + phi^T Sigma phi) (mean-field).
        """
        X, linear = self._check_predict_input(X, linear)
        loc, scale = self._predictor.loc_scale(X, linear)
        return self._predictor.dist(loc, scale)

    def predict(self, X, linear=None, return_std: bool = False):
        """Predictive mean (and standard deviation).

        Returns
        -------
        mean : ndarray of shape (n,)
        std : ndarray of shape (n,), only if ``return_std``
        """
        dist = self.predict_dist(X, linear)
        if return_std:
            return dist.mean(), dist.std()
        return dist.mean()
