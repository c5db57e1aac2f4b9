"""A fitted VRVM's basis grown and pruned with a stream of rows (engine.growing)."""

import copy

import numpy as np
import pytest

from vrvm import VRVMRegressor
from vrvm.engine.growing import GrowingBasis


def _data(seed=0, n=1500):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-4, 4, (n, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.3 * X[:, 1] + rng.normal(0, 0.15, n)
    return X, y, X[:, :1] ** 2 / 10


def _fit(X, y, d, n_reserve=60):
    return VRVMRegressor(
        kernel_widths=[1.0], max_basis=120, n_reserve=n_reserve, random_state=0
    ).fit(X, y, linear=d)


def test_resolve_equals_a_refit_on_the_statistics_of_all_rows_in_any_order():
    X, y, d = _data()
    head = slice(0, 150)
    grown = _fit(X[head], y[head], d[head])
    reference = copy.deepcopy(grown)
    basis = GrowingBasis(grown, X[head], y[head], d[head])
    rest = np.arange(150, X.shape[0])
    for batch in np.array_split(np.random.default_rng(1).permutation(rest), 7):
        basis.add(X[batch], y[batch], d[batch])
    basis.resolve()
    # the same solver on the statistics of every row at once
    stats = reference.basis_statistics(X, y, d)
    reference.refit_statistics(stats, prune=True)
    np.testing.assert_array_equal(grown.active_, reference.active_)
    np.testing.assert_allclose(grown.predict(X, d), reference.predict(X, d), rtol=1e-7, atol=1e-9)
    assert grown.n_updates_ == X.shape[0] - 150 and basis.n_resolves == 1
    assert basis.n_rows == X.shape[0]


def test_the_stream_adds_functions_the_fixed_basis_could_not_learn():
    X, y, d = _data()
    truth = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.3 * X[:, 1]
    fixed = _fit(X[:120], y[:120], d[:120])
    grown = copy.deepcopy(fixed)
    fixed.partial_fit(X[120:], y[120:], linear=d[120:])
    basis = GrowingBasis(grown, X[:120], y[:120], d[:120])
    basis.add(X[120:], y[120:], d[120:])
    n_before = grown.active_.size
    basis.resolve()
    assert grown.active_.size > n_before  # reserve candidates came in

    def error(model):
        return np.sqrt(np.mean((model.predict(X, d) - truth) ** 2))

    assert error(grown) < 0.8 * error(fixed)
    # the next re-solve starts from the grown functions, with the same reserve
    basis.add(X[:10], y[:10], d[:10])
    basis.resolve()
    assert basis.n_candidates == grown._reserve.columns.size


def test_without_a_reserve_resolves_only_re_estimate_and_prune():
    X, y, d = _data()
    model = _fit(X[:300], y[:300], d[:300], n_reserve=0)
    active = set(model.active_.tolist())
    basis = GrowingBasis(model, X[:300], y[:300], d[:300])
    assert basis.n_candidates == model.active_.size
    basis.add(X[300:], y[300:], d[300:])
    basis.resolve()
    assert set(model.active_.tolist()) <= active


def test_forgetting_weighs_the_statistics_of_old_rows_down():
    X, y, d = _data(n=400)
    model = _fit(X[:200], y[:200], d[:200])
    basis = GrowingBasis(model, X[:200], y[:200], d[:200])
    basis.add(X[200:], y[200:], d[200:], forgetting=0.99)
    stats = basis.statistics()
    # the fit's rows count 0.99**200 each, the streamed ones 0.99**k (k rows ago)
    expected = 200 * 0.99**200 + np.sum(0.99 ** np.arange(200))
    assert stats.n == pytest.approx(expected)


def test_a_weighted_fit_keeps_counting_every_row_with_its_weight():
    X, y, d = _data(n=400)
    model = VRVMRegressor(kernel_widths=[1.0], max_basis=120, n_reserve=60, random_state=0)
    model.fit(X[:200], y[:200], linear=d[:200], sample_weight=2.0)
    weighted = GrowingBasis(copy.deepcopy(model), X[:200], y[:200], d[:200], weight=2.0)
    weighted.add(X[200:], y[200:], d[200:])
    # the statistics of every row given twice, unweighted
    twice = GrowingBasis(copy.deepcopy(model), *(np.concatenate([a[:200]] * 2) for a in (X, y, d)))
    twice.add(*(np.concatenate([a[200:]] * 2) for a in (X, y, d)))
    a, b = weighted.statistics(), twice.statistics()
    assert a.n == pytest.approx(2.0 * 400) and b.n == pytest.approx(2.0 * 400)
    np.testing.assert_allclose(a.G, b.G, rtol=1e-10)
    np.testing.assert_allclose(a.h, b.h, rtol=1e-10)
    assert a.yy == pytest.approx(b.yy, rel=1e-12)
    with pytest.raises(ValueError, match="weight"):
        GrowingBasis(model, X[:200], y[:200], d[:200], weight=0.0)
