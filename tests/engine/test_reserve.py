"""The reserve of a two-stage fit: candidates carried into the second stage, which may add them."""

import numpy as np
import pytest

from vrvm.engine.kernels import BasisSpec, SufficientStatistics, sufficient_statistics
from vrvm.engine.regressor import VRVMRegressor
from vrvm.engine.variational import Priors, fit_fast


def _wiggly(n, seed, noise=0.3):
    """A sinc with a small fast wiggle: a few hundred noisy rows resolve the sinc only,
    tens of thousands the wiggle too (so the full data supports more functions)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-5, 5, size=(n, 1))
    f = np.sinc(X[:, 0]) + 0.15 * np.sin(4 * X[:, 0])
    return X, f + rng.normal(0.0, noise, n), f


PARAMS = {"kernel_widths": [0.3, 0.6], "max_basis": 100, "random_state": 0}
N_SUB = 300


@pytest.fixture(scope="module")
def data():
    return _wiggly(40_000, 0)


def _stage_one(data, n_reserve, **params):
    X, y, _ = data
    model = VRVMRegressor(**{**PARAMS, **params}, n_reserve=n_reserve)
    return model.fit(X[:N_SUB], y[:N_SUB])


def test_relevance_ratio_is_beta_q2_over_s_of_the_model_without_each_column():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(400, 1))
    y = np.sinc(X[:, 0]) + rng.normal(0, 0.1, 400)
    spec = BasisSpec(centres=X[:40], widths=np.array([0.5, 1.5]))
    stats = sufficient_statistics(spec, X, y / y.std())
    priors = Priors(e0=1e-6, f0=1e-6 / y.var())
    res = fit_fast(stats, "structured", priors)
    beta = res.e / res.f
    assert res.relevance_ratio.shape == (spec.n_columns,)
    # brute force: s_k = G_kk - g^T (A + G_aa)^-1 g, q_k = h_k - g^T (A + G_aa)^-1 h_a
    # over the active set without k (Tipping & Faul 2003)
    alpha = dict(zip(res.active.tolist(), res.alpha, strict=True))
    for k in range(spec.n_columns):
        others = np.array([a for a in res.active if a != k])
        A = np.diag([alpha[a] for a in others])
        g = stats.G[others, k]
        inv = np.linalg.inv(A + stats.G[np.ix_(others, others)])
        s = stats.G[k, k] - g @ inv @ g
        q = stats.h[k] - g @ inv @ stats.h[others]
        expected = beta * q**2 / s
        if k not in alpha and s <= 1e-6 * stats.G[k, k]:
            expected = 0.0  # in the span of the active columns: never added
        assert res.relevance_ratio[k] == pytest.approx(expected, rel=1e-6, abs=1e-9), k
    inactive = np.setdiff1d(np.arange(spec.n_columns), res.active)
    # at convergence the evidence wants every active column and no inactive one
    assert np.all(res.relevance_ratio[res.active[1:]] > 1)
    assert np.all(res.relevance_ratio[inactive] < 1.1)


def test_n_reserve_leaves_the_first_stage_unchanged_and_is_validated(data):
    X, _, _ = data
    plain, reserved = _stage_one(data, 0), _stage_one(data, 40)
    for name in ("active_", "coef_", "alpha_", "relevance_indices_", "relevance_vectors_"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(reserved, name))
    np.testing.assert_array_equal(plain.predict(X[:100]), reserved.predict(X[:100]))
    assert plain.log_evidence_ == reserved.log_evidence_
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="'n_reserve' parameter"):
            VRVMRegressor(n_reserve=bad).fit(X[:50], data[1][:50])


def test_statistics_of_active_and_reserve_columns_are_the_brute_force_ones(data):
    X, y, _ = data
    lin = X[:, :1] ** 2
    model = VRVMRegressor(**PARAMS, n_reserve=25).fit(X[:N_SUB], y[:N_SUB], linear=lin[:N_SUB])
    columns = model._reserve.columns
    # the active columns and 25 others, in ascending candidate order, bias first
    assert columns[0] == 0 and np.all(np.diff(columns) > 0)
    assert set(model.active_) < set(columns) and columns.size == model.active_.size + 25
    full = BasisSpec(
        centres=X[:N_SUB][model.centre_indices_], widths=model.kernel_widths_, n_linear=1
    )
    phi = full.design(X[:5000], lin[:5000])[:, columns]
    yu = y[:5000] / model._predictor.y_scale
    stats = model.basis_statistics(X[:2000], y[:2000], lin[:2000]) + model.basis_statistics(
        X[2000:5000], y[2000:5000], lin[2000:5000]
    )
    np.testing.assert_allclose(stats.G, phi.T @ phi, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(stats.h, phi.T @ yu, rtol=1e-10, atol=1e-9)
    assert stats.yy == pytest.approx(yu @ yu) and stats.n == 5000
    assert model.zero_statistics().h.shape == (columns.size,)
    # the reserve: the inactive candidates of highest relevance ratio in the first stage
    s = model._predictor.y_scale
    first = fit_fast(
        sufficient_statistics(full, X[:N_SUB], y[:N_SUB] / s, lin[:N_SUB]),
        "structured",
        Priors(e0=model.e0, f0=model.f0 / s**2),
        max_iter=model.max_iter,
    )
    np.testing.assert_array_equal(first.active, model.active_)
    ratio = first.relevance_ratio.copy()
    ratio[first.active] = -np.inf
    top = np.argsort(-ratio)[:25]
    np.testing.assert_array_equal(np.setdiff1d(columns, model.active_), np.sort(top))
    assert ratio[top].min() > 0


def test_the_second_stage_adds_reserve_functions_and_raises_the_evidence(data):
    X, y, _ = data
    Xt, _, ft = _wiggly(5000, 1)
    plain, reserved = _stage_one(data, 0), _stage_one(data, 60)
    first = set(reserved.active_)
    plain.refit_statistics(plain.basis_statistics(X, y))
    reserved.refit_statistics(reserved.basis_statistics(X, y))
    added = set(reserved.active_) - first
    assert added and reserved.active_.size > plain.active_.size
    assert reserved.log_evidence_ > plain.log_evidence_
    rmse = [np.sqrt(np.mean((m.predict(Xt) - ft) ** 2)) for m in (plain, reserved)]
    assert rmse[1] < rmse[0]
    # the added functions are candidates of the first stage: centres among its rows
    assert set(reserved.relevance_indices_) <= set(reserved.centre_indices_)
    assert reserved._reserve is None  # forgotten: the next statistics are the active ones
    assert reserved.basis_statistics(X[:10], y[:10]).h.shape == reserved.active_.shape


@pytest.mark.parametrize("linear", [False, True])
def test_refit_with_a_reserve_sets_every_attribute_as_a_fit_would(data, linear):
    X, y, _ = data
    lin = X[:, :1] ** 2 if linear else None
    sub = None if lin is None else lin[:N_SUB]
    model = VRVMRegressor(**PARAMS, n_reserve=60).fit(X[:N_SUB], y[:N_SUB], linear=sub)
    centres, widths = X[:N_SUB][model.centre_indices_], model.kernel_widths_
    model.refit_statistics(model.basis_statistics(X, y, lin))
    n = model.active_.size
    assert np.all(np.diff(model.active_) > 0) and model.active_[0] == 0
    assert model.coef_.shape == model.alpha_.shape == model.basis_width_.shape == (n,)
    # active_ indexes the first stage's candidate columns
    full = BasisSpec(centres=centres, widths=widths, n_linear=0 if lin is None else 1)
    centre = full.column_centre()[model.active_]
    np.testing.assert_array_equal(
        model.basis_centre_index_, np.where(centre >= 0, model.centre_indices_[centre], -1)
    )
    np.testing.assert_array_equal(model.basis_width_, full.column_width()[model.active_])
    kernel = model.basis_centre_index_ >= 0
    np.testing.assert_array_equal(
        model.relevance_indices_, np.unique(model.basis_centre_index_[kernel])
    )
    np.testing.assert_array_equal(model.relevance_vectors_, X[:N_SUB][model.relevance_indices_])
    assert model.n_relevance_ == model.relevance_indices_.size
    # the predictive mean rebuilt by hand from the attributes
    Xq = X[-200:]
    phi = np.ones((200, n))
    pairs = zip(model.basis_centre_index_, model.basis_width_, strict=True)
    for j, (row, width) in enumerate(pairs):
        if row >= 0:
            c = model.relevance_vectors_[np.searchsorted(model.relevance_indices_, row)]
            phi[:, j] = np.exp(-np.sum((Xq - c) ** 2, axis=1) / width**2)
        elif model.active_[j] == 1:
            phi[:, j] = lin[-200:, 0]
    q_lin = None if lin is None else lin[-200:]
    np.testing.assert_allclose(model.predict(Xq, q_lin), phi @ model.coef_, rtol=1e-10, atol=1e-12)
    assert model.noise_std_ == pytest.approx(np.sqrt(model.f_ / model.e_))
    # saved without the reserve option, and the saved state predicts the same
    meta, arrays = model.export_state()
    assert "n_reserve" not in meta["params"]
    again = VRVMRegressor.from_state(meta, arrays)
    np.testing.assert_allclose(again.predict(Xq, q_lin), model.predict(Xq, q_lin), rtol=1e-12)
    model.partial_fit(X[:10], y[:10], None if lin is None else lin[:10])
    assert model.n_updates_ == 10


def test_without_pruning_the_reserve_is_ignored(data):
    X, y, _ = data
    plain, reserved = _stage_one(data, 0), _stage_one(data, 60)
    plain.refit_statistics(plain.basis_statistics(X, y), prune=False)
    reserved.refit_statistics(reserved.basis_statistics(X, y), prune=False)
    np.testing.assert_array_equal(plain.active_, reserved.active_)
    np.testing.assert_allclose(plain.coef_, reserved.coef_, rtol=1e-8, atol=1e-10)
    assert plain.log_evidence_ == pytest.approx(reserved.log_evidence_, rel=1e-10)


def test_the_coordinate_solver_keeps_no_reserve_and_wrong_statistics_are_refused(data):
    X, y, _ = data
    model = VRVMRegressor(
        kernel_widths=[0.6], max_basis=20, solver="coordinate", n_reserve=10, random_state=0
    ).fit(X[:200], y[:200])
    assert model._reserve is None
    assert model.basis_statistics(X[:50], y[:50]).h.shape == model.active_.shape
    reserved = _stage_one(data, 30)
    k = reserved._reserve.columns.size
    with pytest.raises(ValueError, match=f"the {k} columns of basis_statistics"):
        reserved.refit_statistics(SufficientStatistics.zeros(reserved.active_.size))
