"""Two-stage fits: statistics of chosen columns that add up, and the refit on them."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from vrvm.engine.kernels import BasisSpec, SufficientStatistics, sufficient_statistics
from vrvm.engine.regressor import VRVMRegressor
from vrvm.engine.variational import Priors, fit_fast


def _sinc(n, seed, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-5, 5, size=(n, 1))
    return X, np.sinc(X[:, 0]) + rng.normal(0.0, noise, n)


def test_statistics_of_chosen_columns_are_the_columns_of_the_full_statistics():
    rng = np.random.default_rng(0)
    X, y, lin = rng.normal(size=(300, 3)), rng.normal(size=300), rng.normal(size=(300, 1))
    spec = BasisSpec(centres=X[:20], widths=np.array([0.7, 1.4]), n_linear=1)
    columns = np.array([0, 1, 5, 9, 30, 41])
    full = sufficient_statistics(spec, X, y, lin)
    chosen = sufficient_statistics(spec, X, y, lin, columns=columns, chunk_size=37)
    np.testing.assert_allclose(chosen.G, full.G[np.ix_(columns, columns)], rtol=1e-12)
    np.testing.assert_allclose(chosen.h, full.h[columns], rtol=1e-12)
    assert chosen.yy == pytest.approx(full.yy) and chosen.n == 300


def test_statistics_add_up_over_disjoint_rows_and_refuse_other_columns():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(200, 2)), rng.normal(size=200)
    spec = BasisSpec(centres=X[:10], widths=np.array([1.0]))
    parts = [sufficient_statistics(spec, X[a:b], y[a:b]) for a, b in ((0, 70), (70, 71), (71, 200))]
    total = SufficientStatistics.zeros(spec.n_columns) + parts[0] + parts[1] + parts[2]
    whole = sufficient_statistics(spec, X, y)
    np.testing.assert_allclose(total.G, whole.G, rtol=1e-12)
    np.testing.assert_allclose(total.h, whole.h, rtol=1e-12)
    assert total.n == 200 and total.yy == pytest.approx(whole.yy)
    other = sufficient_statistics(BasisSpec(centres=X[:3], widths=np.array([1.0])), X, y)
    with pytest.raises(ValueError, match="cannot add statistics"):
        _ = whole + other
    empty = sufficient_statistics(spec, X[:0], y[:0])
    assert empty.n == 0 and not empty.G.any()


def test_refit_equals_the_solver_on_the_explicit_design_of_the_chosen_columns():
    # closed form of the second stage: G = Phi^T Phi, h = Phi^T y of the chosen columns
    # over all rows, fed to the same solver with the same priors and unit scale
    X, y = _sinc(4000, 0)
    model = VRVMRegressor(kernel_widths=[1.0], max_basis=60, random_state=0).fit(X[:400], y[:400])
    pred = model._predictor
    phi = pred.basis.design(X, None, pred.columns)
    yu = y / pred.y_scale
    stats = SufficientStatistics(phi.T @ phi, phi.T @ yu, float(yu @ yu), y.size)
    priors = Priors(a0=0.0, b0=0.0, e0=model.e0, f0=model.f0 / pred.y_scale**2)
    # the solver starts from the first stage's functions and precisions (a warm start)
    start = (np.arange(pred.columns.size), model.alpha_.copy())
    direct = fit_fast(stats, "structured", priors, span_tol=model.span_tol, start=start)
    cold = fit_fast(stats, "structured", priors, span_tol=model.span_tol)
    refit = model.refit_statistics(model.basis_statistics(X, y))
    np.testing.assert_allclose(refit.coef_, direct.post.mean * pred.y_scale, rtol=1e-8)
    assert refit.noise_std_ == pytest.approx(np.sqrt(direct.f / direct.e) * pred.y_scale)
    assert refit.active_.size == direct.active.size
    # a fixed point as good as the solver's from the bias alone, in fewer steps
    assert direct.elbo[-1] >= cold.elbo[-1] - 1e-6 * abs(cold.elbo[-1])
    assert direct.n_iter < cold.n_iter


def test_refit_in_batches_equals_refit_at_once_and_learns_the_noise():
    X, y = _sinc(20_000, 2)
    first = VRVMRegressor(kernel_widths=[1.0], max_basis=80, random_state=0)
    a = first.fit(X[:500], y[:500])
    b = VRVMRegressor(kernel_widths=[1.0], max_basis=80, random_state=0).fit(X[:500], y[:500])
    stats = sum(
        (b.basis_statistics(X[i : i + 3000], y[i : i + 3000]) for i in range(0, 20_000, 3000)),
        SufficientStatistics.zeros(b.active_.size),
    )
    a.refit_statistics(a.basis_statistics(X, y))
    b.refit_statistics(stats)
    Xt, _ = _sinc(2000, 3)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=1e-8, atol=1e-10)
    # 20,000 rows pin the noise level (0.1) far better than the 500 of the first stage
    assert abs(a.noise_std_ - 0.1) < 0.005
    assert set(a.relevance_indices_) <= set(first.centre_indices_)
    truth = np.sinc(Xt[:, 0])
    assert np.sqrt(np.mean((a.predict(Xt) - truth) ** 2)) < 0.03


@pytest.mark.parametrize("prune", [True, False])
def test_refit_keeps_attributes_consistent_and_the_state_round_trips(prune):
    X, y = _sinc(6000, 4)
    lin = X[:, :1] ** 2
    model = VRVMRegressor(kernel_widths=[0.8, 1.6], max_basis=50, random_state=0)
    model.fit(X[:600], y[:600], linear=lin[:600])
    k = model.active_.size
    model.refit_statistics(model.basis_statistics(X, y, lin), prune=prune)
    assert model.active_.size <= k if prune else model.active_.size == k
    n = model.active_.size
    assert model.coef_.shape == model.alpha_.shape == model.basis_width_.shape == (n,)
    assert model.relevance_vectors_.shape == (model.n_relevance_, 1)
    kernel = model.basis_centre_index_ >= 0
    np.testing.assert_array_equal(
        model.relevance_indices_, np.unique(model.basis_centre_index_[kernel])
    )
    meta, arrays = model.export_state()
    again = VRVMRegressor.from_state(meta, arrays)
    Xt = X[:50]
    np.testing.assert_allclose(again.predict(Xt, lin[:50]), model.predict(Xt, lin[:50]), rtol=1e-12)
    # online updates continue from the refitted posterior
    model.partial_fit(X[:10], y[:10], lin[:10])
    assert model.n_updates_ == 10


def test_refit_refuses_what_it_cannot_use():
    X, y = _sinc(500, 5)
    with pytest.raises(NotFittedError):
        VRVMRegressor().basis_statistics(X, y)
    model = VRVMRegressor(kernel_widths=[1.0], max_basis=30, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="active columns"):
        model.refit_statistics(SufficientStatistics.zeros(model.active_.size + 1))
    with pytest.raises(ValueError, match="at least 3 rows"):
        model.refit_statistics(model.basis_statistics(X[:2], y[:2]))


def test_a_warm_start_must_hold_the_kept_columns_and_positive_precisions():
    X, y = _sinc(500, 5)
    model = VRVMRegressor(kernel_widths=[1.0], max_basis=40, random_state=0).fit(X, y)
    stats = model.basis_statistics(X, y)
    priors = Priors(a0=0.0, b0=0.0, e0=1e-6, f0=1e-6)
    k = stats.h.size
    with pytest.raises(ValueError, match="holding keep"):
        fit_fast(stats, "structured", priors, start=(np.arange(1, k), np.ones(k - 1)))
    with pytest.raises(ValueError, match="finite and positive"):
        fit_fast(stats, "structured", priors, start=(np.arange(k), np.zeros(k)))
