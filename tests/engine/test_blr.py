"""Tests for vrvm.engine.blr: the streaming normal-gamma posterior and BayesianLinearRegression."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import BayesianRidge, Ridge

from vrvm.engine import posterior
from vrvm.engine.blr import BayesianLinearRegression, NormalGammaPosterior
from vrvm.engine.distributions import Normal, StudentT


# --------------------------------------------------------------------------- helpers
def _data(n=120, m=5, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    Phi = rng.normal(size=(n, m)) * rng.uniform(0.5, 3.0, size=m)
    w = rng.normal(size=m)
    y = Phi @ w + 2.0 + noise * rng.normal(size=n)
    return Phi, y


def _prior(m, seed=1):
    """A non-trivial normal-gamma prior: full precision matrix and non-zero mean."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    precision = A @ A.T / m + 0.5 * np.eye(m)
    mean = rng.normal(size=m)
    return precision, mean, 2.0, 3.0


def _closed_form(Phi, y, precision, mean, a, b, weights=None, prior_weight=1.0):
    """Conjugate update by direct matrix algebra (with optional likelihood weights)."""
    w = np.ones(len(y)) if weights is None else weights
    lam0 = prior_weight * precision
    lam = lam0 + (Phi.T * w) @ Phi
    eta = lam0 @ mean + Phi.T @ (w * y)
    m_n = np.linalg.solve(lam, eta)
    a_n = prior_weight * a + w.sum() / 2
    b_n = prior_weight * b + (w @ y**2 + mean @ lam0 @ mean - m_n @ lam @ m_n) / 2
    return lam, m_n, a_n, b_n


def _rel(a, b):
    """Largest absolute difference relative to the largest entry of the reference."""
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300)


def _assert_posterior(post, lam, m_n, a_n, b_n, rtol=1e-8):
    assert _rel(post.precision, lam) <= rtol
    assert _rel(post.mean, m_n) <= rtol
    assert post.a == pytest.approx(a_n, rel=rtol)
    assert post.b == pytest.approx(b_n, rel=rtol)


def _ng(precision, mean, a, b):
    return NormalGammaPosterior(precision, mean, a=a, b=b)


# --------------------------------------------------------------------------- conjugate update
def test_sequential_equals_batch_and_closed_form():
    Phi, y = _data()
    prior = _prior(Phi.shape[1])
    seq = _ng(*prior)
    for phi, t in zip(Phi, y, strict=True):
        seq.update(phi, t)
    batch = _ng(*prior).update(Phi, y)
    expected = _closed_form(Phi, y, *prior)
    _assert_posterior(seq, *expected)
    _assert_posterior(batch, *expected)
    assert seq.n_seen == batch.n_seen == len(y)
    np.testing.assert_allclose(seq.eta, batch.eta, rtol=1e-10)
    assert seq.log_evidence == pytest.approx(batch.log_evidence, rel=1e-10)


def test_row_order_does_not_matter_without_forgetting():
    Phi, y = _data(seed=3)
    prior = _prior(Phi.shape[1])
    perm = np.random.default_rng(0).permutation(len(y))
    a = _ng(*prior)
    b = _ng(*prior)
    for i in range(len(y)):
        a.update(Phi[i], y[i])
        b.update(Phi[perm[i]], y[perm[i]])
    _assert_posterior(b, a.precision, a.mean, a.a, a.b, rtol=1e-10)
    assert b.log_evidence == pytest.approx(a.log_evidence, rel=1e-10)


def test_chunked_batches_match(monkeypatch):
    Phi, y = _data(n=50)
    prior = _prior(Phi.shape[1])
    whole = _ng(*prior).update(Phi, y)
    monkeypatch.setattr(posterior, "_QR_CHUNK", 7)
    chunked = _ng(*prior).update(Phi, y)
    _assert_posterior(chunked, whole.precision, whole.mean, whole.a, whole.b, rtol=1e-11)
    assert chunked.log_evidence == pytest.approx(whole.log_evidence, rel=1e-11)


def test_log_evidence_is_the_multivariate_t_marginal():
    # Under the normal-gamma prior, y ~ St(Phi m0, (b0/a0)(I + Phi Lambda0^-1 Phi^T), 2 a0).
    Phi, y = _data(n=25, m=4, seed=5)
    precision, mean, a, b = _prior(4)
    shape = (b / a) * (np.eye(len(y)) + Phi @ np.linalg.solve(precision, Phi.T))
    expected = stats.multivariate_t(Phi @ mean, shape, df=2 * a).logpdf(y)
    post = _ng(precision, mean, a, b).update(Phi, y)
    assert post.log_evidence == pytest.approx(expected, rel=1e-10)


def test_predictive_student_t_is_the_normal_gamma_marginal():
    Phi, y = _data(n=30, m=4, seed=7)
    precision, mean, a, b = _prior(4)
    rng = np.random.default_rng(1)
    phi_new, y_new = rng.normal(size=4), 1.7
    post = _ng(precision, mean, a, b).update(Phi, y)
    dist = post.predict(phi_new)
    assert isinstance(dist, StudentT)

    # p(y_new | y) = p(y, y_new) / p(y), both multivariate t under the prior
    def joint(P, t):
        shape = (b / a) * (np.eye(len(t)) + P @ np.linalg.solve(precision, P.T))
        return stats.multivariate_t(P @ mean, shape, df=2 * a).logpdf(t)

    expected = joint(np.vstack([Phi, phi_new]), np.append(y, y_new)) - joint(Phi, y)
    assert dist.logpdf(y_new)[0] == pytest.approx(expected, rel=1e-9)
    # and the closed form of its parameters
    lam = post.precision
    assert dist.df[0] == pytest.approx(2 * post.a)
    scale2 = post.b / post.a * (1 + phi_new @ np.linalg.solve(lam, phi_new))
    assert dist.scale[0] ** 2 == pytest.approx(scale2, rel=1e-10)
    # one-step-ahead log predictive = log evidence increment
    before = post.log_evidence
    post.update(phi_new, y_new)
    assert post.log_evidence - before == pytest.approx(expected, rel=1e-9)


def test_covariance_and_cholesky_views():
    Phi, y = _data(n=40, m=3)
    post = _ng(*_prior(3)).update(Phi, y)
    R = post.cholesky
    np.testing.assert_allclose(R.T @ R, post.precision, rtol=1e-12)
    assert np.all(np.diag(R) > 0) and np.allclose(R, np.triu(R))
    np.testing.assert_allclose(post.covariance_unit(), np.linalg.inv(post.precision), rtol=1e-9)
    assert post.noise_precision == pytest.approx(post.a / post.b)
    assert post.log_det_precision == pytest.approx(np.linalg.slogdet(post.precision)[1])


def test_rank_one_updates_stay_accurate_over_10000_rows():
    rng = np.random.default_rng(42)
    m, n = 30, 10_000
    Phi = rng.normal(size=(n, m)) * np.logspace(-1, 1, m)
    y = Phi @ rng.normal(size=m) + rng.normal(size=n)
    post = NormalGammaPosterior(np.full(m, 1e-2), a=1e-3, b=1e-3)
    for phi, t in zip(Phi, y, strict=True):
        post.update(phi, t)
    precision = np.full(m, 1e-2)
    lam, m_n, a_n, b_n = _closed_form(Phi, y, np.diag(precision), np.zeros(m), 1e-3, 1e-3)
    _assert_posterior(post, lam, m_n, a_n, b_n, rtol=1e-9)
    assert _rel(post.cholesky, np.linalg.cholesky(lam).T) < 1e-9


# --------------------------------------------------------------------------- forgetting
def test_forgetting_one_forgets_nothing():
    Phi, y = _data()
    prior = _prior(Phi.shape[1])
    plain = _ng(*prior).update(Phi, y)
    rowwise = _ng(*prior)
    for phi, t in zip(Phi, y, strict=True):
        rowwise.update(phi, t, forgetting=1.0)
        rowwise.forget(1.0)
    _assert_posterior(rowwise, plain.precision, plain.mean, plain.a, plain.b, rtol=1e-10)


def test_forgetting_is_exponentially_weighted_likelihood():
    # Documented scheme: after n rows, row i (1-based) has weight rho^(n-i), the prior rho^n.
    Phi, y = _data(n=60)
    prior = _prior(Phi.shape[1])
    rho = 0.9
    weights = rho ** np.arange(len(y) - 1, -1, -1)
    expected = _closed_form(Phi, y, *prior, weights=weights, prior_weight=rho ** len(y))
    batch = _ng(*prior).update(Phi, y, forgetting=rho)
    _assert_posterior(batch, *expected)
    seq = _ng(*prior)
    for phi, t in zip(Phi, y, strict=True):
        seq.update(phi, t, forgetting=rho)
    _assert_posterior(seq, *expected)
    # the decay alone leaves the mean and the noise estimate b/a unchanged
    mean, ratio = seq.mean, seq.b / seq.a
    seq.forget(0.5)
    np.testing.assert_allclose(seq.mean, mean, rtol=1e-12)
    assert seq.b / seq.a == pytest.approx(ratio, rel=1e-12)


def test_forgetting_tracks_a_drifting_mean():
    rng = np.random.default_rng(0)
    n = 1500
    X = rng.normal(size=(n, 2))
    drift = np.linspace(0.0, 10.0, n)  # the intercept drifts; the slopes do not
    y = drift + X @ [1.0, -1.0] + 0.2 * rng.normal(size=n)

    def prequential_mae(forgetting):
        model = BayesianLinearRegression(forgetting=forgetting)
        errors = []
        for xi, yi in zip(X, y, strict=True):
            x = {"u": xi[0], "v": xi[1]}
            errors.append(abs(model.predict_one(x) - yi))
            model.learn_one(x, yi)
        return np.mean(errors[n // 2 :])

    forget, keep = prequential_mae(0.97), prequential_mae(1.0)
    assert forget < 0.2 * keep, (forget, keep)


# --------------------------------------------------------------------------- fixed noise
def test_fixed_noise_posterior_matches_bishop_equations():
    # Bishop (2006) eqs. 3.50/3.51 with a general Gaussian prior N(m0, S0) and eq. 3.59.
    Phi, y = _data(n=40, m=3, seed=11)
    beta = 4.0
    S0_inv, m0, _, _ = _prior(3)
    SN = np.linalg.inv(S0_inv + beta * Phi.T @ Phi)
    mN = SN @ (S0_inv @ m0 + beta * Phi.T @ y)
    # same model in unit-noise form: Lambda0 = S0^-1 / beta
    post = NormalGammaPosterior(S0_inv / beta, m0)
    for phi, t in zip(Phi, y, strict=True):
        post.update(phi, t)
    np.testing.assert_allclose(post.mean, mN, rtol=1e-10)
    np.testing.assert_allclose(post.covariance_unit() / beta, SN, rtol=1e-9)
    X_new = np.random.default_rng(0).normal(size=(5, 3))
    dist = post.predict_fixed_noise(X_new, beta)
    assert isinstance(dist, Normal)
    np.testing.assert_allclose(dist.mean(), X_new @ mN, rtol=1e-10)
    var = 1 / beta + np.einsum("ij,jk,ik->i", X_new, SN, X_new)
    np.testing.assert_allclose(dist.var(), var, rtol=1e-9)


def test_fixed_noise_estimator_matches_bishop_isotropic_prior():
    Phi, y = _data(n=50, m=3, seed=2)
    alpha, beta = 0.7, 3.0
    SN = np.linalg.inv(alpha * np.eye(3) + beta * Phi.T @ Phi)  # eq. 3.54
    mN = beta * SN @ Phi.T @ y  # eq. 3.53
    model = BayesianLinearRegression(
        alpha=alpha, beta=beta, learn_noise=False, fit_intercept=False
    ).fit(Phi, y)
    np.testing.assert_allclose(model.coef_, mN, rtol=1e-10)
    assert model.intercept_ == 0.0 and model.beta_ == beta and model.alpha_ == alpha
    mean, std = model.predict(Phi[:4], return_std=True)
    np.testing.assert_allclose(mean, Phi[:4] @ mN, rtol=1e-10)
    np.testing.assert_allclose(
        std**2, 1 / beta + np.einsum("ij,jk,ik->i", Phi[:4], SN, Phi[:4]), rtol=1e-9
    )


def test_matches_river_fixed_noise_stream():
    river_lm = pytest.importorskip("river.linear_model")
    Phi, y = _data(n=60, m=3, seed=4)
    alpha, beta = 2.0, 5.0  # river: alpha = prior precision, beta = noise precision
    theirs = river_lm.BayesianLinearRegression(alpha=alpha, beta=beta)
    ours = BayesianLinearRegression(alpha=alpha, beta=beta, learn_noise=False, fit_intercept=False)
    probe = {0: 0.3, 1: -1.0, 2: 2.0}
    for i, (phi, t) in enumerate(zip(Phi, y, strict=True)):
        x = dict(enumerate(phi))
        theirs.learn_one(x, t)
        ours.learn_one(x, t)
        if i % 10 == 9:
            d_theirs = theirs.predict_one(probe, with_dist=True)
            d_ours = ours.predict_one(probe, with_dist=True)
            assert d_ours.mean()[0] == pytest.approx(d_theirs.mu, rel=1e-9)
            assert d_ours.var()[0] == pytest.approx(d_theirs.sigma**2, rel=1e-9)
            assert ours.predict_one(probe) == pytest.approx(theirs.predict_one(probe), rel=1e-9)


# --------------------------------------------------------------------------- evidence / sklearn
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_evidence_maximisation_matches_bayesian_ridge(fit_intercept):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    y = 1.5 + X @ [1.0, -0.5, 0.0, 2.0] + 0.7 * rng.normal(size=150)
    # BayesianRidge without hyperpriors maximises the same evidence; it calls the noise
    # precision alpha_ and the weight precision lambda_.
    ref = BayesianRidge(
        alpha_1=0.0,
        alpha_2=0.0,
        lambda_1=0.0,
        lambda_2=0.0,
        tol=1e-12,
        max_iter=10_000,
        fit_intercept=fit_intercept,
    ).fit(X, y)
    model = BayesianLinearRegression(
        learn_noise=False, tol=1e-12, max_iter=10_000, fit_intercept=fit_intercept
    ).fit(X, y)
    assert model.alpha_ == pytest.approx(ref.lambda_, rel=1e-4)
    assert model.beta_ == pytest.approx(ref.alpha_, rel=1e-4)
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-4, atol=1e-8)
    assert model.intercept_ == pytest.approx(ref.intercept_, rel=1e-4, abs=1e-8)
    np.testing.assert_allclose(model.predict(X), ref.predict(X), rtol=1e-4)
    assert model.n_iter_ >= 2


def test_evidence_maximisation_warns_when_not_converged():
    X, y = _data(n=40, m=3)
    with pytest.warns(UserWarning, match="did not converge"):
        BayesianLinearRegression(learn_noise=False, max_iter=1).fit(X, y)


def test_learned_noise_mean_is_ridge():
    X, y = _data(n=80, m=4, seed=9)
    model = BayesianLinearRegression(alpha=3.0).fit(X, y)
    ref = Ridge(alpha=3.0).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-7)
    assert model.intercept_ == pytest.approx(ref.intercept_, rel=1e-7)
    dist = model.predict_dist(X[:3])
    assert isinstance(dist, StudentT)
    assert dist.df[0] == pytest.approx(2 * (1e-6 + len(y) / 2))


# --------------------------------------------------------------------------- streaming API
def test_learn_one_equals_fit_and_key_order_is_fixed_at_first_sight():
    X, y = _data(n=70, m=3, seed=8)
    names = ["dist", "hour", "zone"]
    batch = BayesianLinearRegression().fit(pd.DataFrame(X, columns=names), y)
    online = BayesianLinearRegression()
    for i, (xi, yi) in enumerate(zip(X, y, strict=True)):
        x = dict(zip(names, xi, strict=True))
        if i % 2:  # key order after the first dict does not matter
            x = dict(reversed(list(x.items())))
        online.learn_one(x, yi)
    assert list(online.feature_names_in_) == names
    np.testing.assert_allclose(online.coef_, batch.coef_, rtol=1e-8)
    assert online.intercept_ == pytest.approx(batch.intercept_, rel=1e-8)
    x0 = dict(zip(names, X[0], strict=True))
    assert online.predict_one(x0) == pytest.approx(batch.predict(X[:1])[0], rel=1e-8)
    dist = online.predict_one(x0, with_dist=True)
    assert isinstance(dist, StudentT) and len(dist) == 1


def test_learn_many_and_partial_fit_reorder_dataframe_columns():
    X, y = _data(n=60, m=3, seed=12)
    names = ["a", "b", "c"]
    df = pd.DataFrame(X, columns=names)
    full = BayesianLinearRegression().fit(df, y)
    streamed = BayesianLinearRegression()
    streamed.learn_many(df.iloc[:20], pd.Series(y[:20]))
    streamed.learn_many(df.iloc[20:40][["c", "a", "b"]], y[20:40])
    streamed.partial_fit(X[40:], y[40:])  # arrays are positional
    np.testing.assert_allclose(streamed.coef_, full.coef_, rtol=1e-8)
    np.testing.assert_allclose(streamed.predict(df[["b", "c", "a"]]), full.predict(X), rtol=1e-8)


def test_predict_one_before_any_data_is_the_prior_predictive():
    model = BayesianLinearRegression(fit_intercept=False, alpha=2.0, a0=3.0, b0=6.0)
    assert model.predict_one({"x": 1.5}) == 0.0
    dist = model.predict_one({"x": 1.5}, with_dist=True)
    assert dist.df[0] == 6.0 and dist.scale[0] ** 2 == pytest.approx(2.0 * (1 + 1.5**2 / 2))
    assert not hasattr(model, "posterior_")
    fixed = BayesianLinearRegression(learn_noise=False, beta=4.0, alpha=2.0, fit_intercept=False)
    assert fixed.predict_one({"x": 1.0}, with_dist=True).var()[0] == pytest.approx(0.25 + 0.5)


def test_fixed_and_evidence_modes_stream_with_fixed_hyperparameters():
    X, y = _data(n=80, m=2, seed=13)
    model = BayesianLinearRegression(learn_noise=False).partial_fit(X[:40], y[:40])
    alpha, beta = model.alpha_, model.beta_
    for xi, yi in zip(X[40:], y[40:], strict=True):
        model.partial_fit(xi[None, :], [yi])
    assert (model.alpha_, model.beta_) == (alpha, beta)
    ref = BayesianLinearRegression(learn_noise=False, alpha=alpha, beta=beta).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-8)
    assert isinstance(model.predict_dist(X[:2]), Normal)


def test_get_params_and_clone():
    model = BayesianLinearRegression(alpha=2.0, forgetting=0.99)
    assert model.get_params()["forgetting"] == 0.99
    X, y = _data(n=30, m=2)
    fitted = clone(model).fit(X, y)
    assert fitted.score(X, y) > 0.9 and not hasattr(model, "posterior_")


# --------------------------------------------------------------------------- state helpers
def test_from_cholesky_copy_and_state_round_trip():
    Phi, y = _data(n=30, m=3)
    post = _ng(*_prior(3)).update(Phi, y)
    rebuilt = NormalGammaPosterior.from_cholesky(
        post.cholesky.T, post.mean, a=post.a, b=post.b, lower=True
    )
    _assert_posterior(rebuilt, post.precision, post.mean, post.a, post.b, rtol=1e-12)
    upper = NormalGammaPosterior.from_cholesky(-post.cholesky, post.mean, a=1.0, b=1.0, lower=False)
    np.testing.assert_allclose(upper.precision, post.precision, rtol=1e-12)

    twin = post.copy()
    twin.update(Phi[:3], y[:3])
    assert post.n_seen == 30 and twin.n_seen == 33

    meta, arrays = post.export_state()
    back = NormalGammaPosterior.from_state(meta, arrays)
    _assert_posterior(back, post.precision, post.mean, post.a, post.b, rtol=0)
    assert back.log_evidence == post.log_evidence
    with pytest.raises(ValueError, match="invalid NormalGammaPosterior state"):
        NormalGammaPosterior.from_state({"a": 1.0}, arrays)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("forgetting", [0.0, -0.5, 1.5, np.nan, True, "0.9"])
def test_forgetting_outside_unit_interval_is_rejected(forgetting):
    post = NormalGammaPosterior(np.ones(2))
    with pytest.raises(ValueError, match=r"forgetting must be a number in \(0, 1\]"):
        post.update(np.ones(2), 1.0, forgetting=forgetting)
    with pytest.raises(ValueError, match=r"forgetting must be a number in \(0, 1\]"):
        post.forget(forgetting)
    with pytest.raises(ValueError, match="'forgetting' parameter"):
        BayesianLinearRegression(forgetting=forgetting).fit(np.ones((3, 1)), [1.0, 2.0, 3.0])


def test_posterior_rejects_bad_data():
    post = NormalGammaPosterior(np.ones(3))
    with pytest.raises(ValueError, match="Phi has 2 columns, expected 3"):
        post.update(np.ones((4, 2)), np.ones(4))
    with pytest.raises(ValueError, match="y has 3 values but there are 4 rows"):
        post.update(np.ones((4, 3)), np.ones(3))
    Phi = np.ones((4, 3))
    Phi[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"Phi contains NaN or infinity \(first at row 2\)"):
        post.update(Phi, np.ones(4))
    with pytest.raises(ValueError, match="y contains NaN"):
        post.update(np.ones((2, 3)), [1.0, np.inf])
    with pytest.raises(ValueError, match="must be a 2-D array"):
        post.predict(np.ones(5))
    with pytest.raises(ValueError, match="beta must be a finite number > 0"):
        post.predict_fixed_noise(np.ones(3), 0.0)
    assert post.n_seen == 0  # nothing was absorbed by the failed calls


def test_posterior_rejects_bad_priors():
    with pytest.raises(ValueError, match="positive definite"):
        NormalGammaPosterior(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="strictly positive"):
        NormalGammaPosterior(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="symmetric"):
        NormalGammaPosterior(np.array([[1.0, 0.1], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="b must be a finite number > 0"):
        NormalGammaPosterior(np.ones(2), b=0.0)
    with pytest.raises(ValueError, match=r"mean has shape \(3,\), expected \(2,\)"):
        NormalGammaPosterior(np.ones(2), np.zeros(3))


def test_estimator_rejects_bad_input():
    X, y = _data(n=20, m=2)
    with pytest.raises(ValueError, match="y has 19 values but there are 20 rows"):
        BayesianLinearRegression().fit(X, y[:-1])
    Xn = X.copy()
    Xn[5, 0] = np.nan
    with pytest.raises(ValueError, match=r"X contains NaN or infinity \(first at row 5\)"):
        BayesianLinearRegression().fit(Xn, y)
    with pytest.raises(ValueError, match="contradicts learn_noise=True"):
        BayesianLinearRegression(beta=2.0).fit(X, y)
    with pytest.raises(ValueError, match="'alpha' parameter"):
        BayesianLinearRegression(alpha=0.0).fit(X, y)
    with pytest.raises(NotFittedError):
        BayesianLinearRegression().predict(X)
    with pytest.raises(ValueError, match="needs a batch"):
        BayesianLinearRegression(learn_noise=False).learn_one({"a": 1.0}, 2.0)

    model = BayesianLinearRegression().fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but the model was fitted with 2"):
        model.predict(np.ones((2, 3)))
    with pytest.raises(ValueError, match="without feature names"):
        model.learn_one({"a": 1.0, "b": 2.0}, 1.0)

    online = BayesianLinearRegression()
    online.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    with pytest.raises(ValueError, match=r"missing \[\], unexpected \['c'\]"):
        online.learn_one({"a": 1.0, "b": 2.0, "c": 3.0}, 1.0)
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        online.predict_one({"a": 1.0})
    with pytest.raises(ValueError, match="x contains NaN"):
        online.learn_one({"a": np.nan, "b": 2.0}, 1.0)
    with pytest.raises(ValueError, match="y contains NaN"):
        online.learn_one({"a": 1.0, "b": 2.0}, np.nan)
    assert online.posterior_.n_seen == 1
