"""VRVMRegressor: published benchmarks, API contract, determinism and input checks."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from vrvm import VRVMRegressor
from vrvm.engine.distributions import Normal, StudentT


def _sinc(seed, n=100, noise=0.1):
    rng = np.random.default_rng(seed)
    X = np.linspace(-10, 10, n)[:, None]
    return X, np.sinc(X[:, 0] / np.pi) + rng.normal(0, noise, n)


@pytest.mark.slow
@pytest.mark.parametrize("factorization", ["structured", "meanfield"])
def test_sinc_tipping_protocol(factorization):
    """Tipping (2001): 100 noisy sinc points, RMS on 1000 noise-free points, 20 draws."""
    X_test = np.linspace(-10, 10, 1000)[:, None]
    f_test = np.sinc(X_test[:, 0] / np.pi)
    rms, n_rv, noise = [], [], []
    for seed in range(20):
        X, y = _sinc(seed)
        m = VRVMRegressor(factorization=factorization, random_state=seed).fit(X, y)
        rms.append(np.sqrt(np.mean((m.predict(X_test) - f_test) ** 2)))
        n_rv.append(m.n_relevance_)
        noise.append(m.noise_std_)
    print(
        f"sinc {factorization}: RMS {np.mean(rms):.4f}, RVs {np.mean(n_rv):.1f}, "
        f"noise {np.mean(noise):.3f}"
    )
    assert np.mean(rms) <= 0.045  # Tipping's RVM 0.0326, SVM 0.0378
    assert np.mean(n_rv) <= 15
    assert 0.08 <= np.mean(noise) <= 0.12


@pytest.mark.slow
def test_boston_housing_published_error(shared_data):
    """Random 481/25 splits, standardised inputs; the paper reports MSE 9.84."""
    df = pd.read_csv(shared_data("boston_housing.csv"))
    X_all = df.drop(columns="medv").to_numpy(float)
    y_all = df["medv"].to_numpy(float)
    mse = []
    for split in range(10):
        perm = np.random.default_rng(split).permutation(len(df))
        tr, te = perm[:481], perm[481:]
        mu, sd = X_all[tr].mean(0), X_all[tr].std(0)
        m = VRVMRegressor(random_state=split).fit((X_all[tr] - mu) / sd, y_all[tr])
        mse.append(np.mean((m.predict((X_all[te] - mu) / sd) - y_all[te]) ** 2))
    print(f"Boston mean test MSE over 10 splits: {np.mean(mse):.2f}")
    assert np.mean(mse) <= 10.5


def test_api_shapes_and_distribution():
    X, y = _sinc(0)
    d = np.abs(X[:, 0]) / 10
    m = VRVMRegressor(kernel_widths=[2.0, 4.0], random_state=0).fit(X, y, linear=d)
    mean = m.predict(X[:5], linear=d[:5])
    mean2, std = m.predict(X[:5], linear=d[:5], return_std=True)
    assert mean.shape == std.shape == (5,)
    np.testing.assert_allclose(mean, mean2)
    dist = m.predict_dist(X[:5], linear=d[:5])
    assert isinstance(dist, StudentT)
    np.testing.assert_allclose(dist.df, 2 * m.e_)
    lo, hi = dist.interval(0.9)
    assert np.all(lo < mean) and np.all(mean < hi)
    q = np.array([0.01, 0.3, 0.5, 0.77, 0.99])
    np.testing.assert_allclose(dist.cdf(dist.ppf(q)), q, atol=1e-10)
    assert np.all(np.isfinite(dist.logpdf(y[:5])))
    assert m.relevance_vectors_.shape == (m.n_relevance_, 1)
    np.testing.assert_array_equal(m.relevance_vectors_, X[m.relevance_indices_])
    assert set(m.relevance_indices_) <= set(m.basis_centre_index_)
    assert m.active_[0] == 0  # the bias is always kept
    assert m.noise_std_ == pytest.approx(np.sqrt(m.f_ / m.e_))
    assert m.elbo_.ndim == 1 and m.n_iter_ == m.elbo_.size
    assert m.converged_ and m.stop_reason_.startswith("converged")
    widths = m.basis_width_[~np.isnan(m.basis_width_)]
    assert set(widths) <= {2.0, 4.0}


def test_meanfield_gives_gaussian_and_summed_mode_works():
    X, y = _sinc(1)
    m = VRVMRegressor(
        kernel_widths=[1.5, 3.0], kernel_mode="summed", factorization="meanfield"
    ).fit(X, y)
    dist = m.predict_dist(X[:4])
    assert isinstance(dist, Normal)
    assert np.all(np.isnan(m.basis_width_))
    assert m.n_relevance_ <= 20


def test_auto_widths_evidence_and_cv():
    X, y = _sinc(2)
    ev = VRVMRegressor(random_state=0).fit(X, y)
    assert len(ev.width_scores_) >= 4
    assert tuple(ev.kernel_widths_) == max(ev.width_scores_, key=ev.width_scores_.get)
    cv = VRVMRegressor(width_selection="cv", cv_folds=3, random_state=0).fit(X, y)
    assert tuple(cv.kernel_widths_) in cv.width_scores_


def test_chunked_statistics_give_the_same_fit():
    X, y = _sinc(3)
    one = VRVMRegressor(kernel_widths=3.0, chunk_size=1000).fit(X, y)
    many = VRVMRegressor(kernel_widths=3.0, chunk_size=7).fit(X, y)
    np.testing.assert_array_equal(one.active_, many.active_)
    np.testing.assert_allclose(one.predict(X), many.predict(X), rtol=1e-9, atol=1e-12)


def test_deterministic_for_fixed_seed_and_centres_subsampled():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 / 4 + rng.normal(0, 0.1, 400)
    a = VRVMRegressor(max_basis=60, random_state=7).fit(X, y)
    b = VRVMRegressor(max_basis=60, random_state=7).fit(X, y)
    assert a.centre_indices_.size == 60
    np.testing.assert_array_equal(a.centre_indices_, b.centre_indices_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert set(a.relevance_indices_) <= set(a.centre_indices_)


def test_pickle_clone_params_and_state_round_trip():
    X, y = _sinc(4)
    m = VRVMRegressor(kernel_widths=3.0, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(again.predict(X), m.predict(X))
    c = clone(m)
    assert c.get_params() == m.get_params()
    assert not hasattr(c, "coef_")
    c.set_params(factorization="meanfield", max_basis=50)
    assert c.factorization == "meanfield" and c.max_basis == 50
    meta, arrays = m.export_state()
    restored = VRVMRegressor.from_state(meta, arrays)
    np.testing.assert_array_equal(
        restored.predict(X, return_std=True)[1], m.predict(X, return_std=True)[1]
    )
    assert restored.n_relevance_ == m.n_relevance_
    with pytest.raises(ValueError, match="invalid VRVMRegressor state"):
        VRVMRegressor.from_state({"params": {}}, arrays)


def test_keyword_only_constructor():
    with pytest.raises(TypeError):
        VRVMRegressor("auto")  # positional arguments are refused on purpose


@pytest.mark.parametrize(
    ("X", "y", "message"),
    [
        (np.array([[0.0], [np.nan], [1.0]]), np.array([1.0, 2.0, 3.0]), "NaN or infinity"),
        (np.array([[0.0], [1.0], [2.0]]), np.array([1.0, np.inf, 3.0]), "NaN or infinity"),
        (np.zeros((4, 1)), np.ones(3), "rows"),
        (np.array([[0.0], [1.0]]), np.array([1.0, 2.0]), "at least 3 rows"),
        (np.array([["a"], ["b"], ["c"]]), np.array([1.0, 2.0, 3.0]), "numeric"),
        (np.arange(5.0)[:, None], np.full(5, 2.0), "constant"),
    ],
)
def test_bad_input_raises_clear_value_error(X, y, message):
    with pytest.raises(ValueError, match=message):
        VRVMRegressor(kernel_widths=1.0).fit(X, y)


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"kernel_widths": 0.0}, "kernel_widths"),
        ({"kernel_widths": [1.0, -2.0]}, "kernel_widths"),
        ({"kernel_widths": "wide"}, "kernel_widths"),
        ({"kernel_mode": "product"}, "kernel_mode"),
        ({"factorization": "full"}, "factorization"),
        ({"max_basis": 0}, "max_basis"),
        ({"tol": -1.0}, "tol"),
        ({"e0": 0.0}, "e0"),
        ({"a0": -1.0}, "a0"),
        ({"solver": "slow"}, "solver"),
        ({"span_tol": 2.0}, "span_tol"),
        ({"span_tol": -1e-6}, "span_tol"),
        ({"random_state": "x"}, "random_state"),
    ],
)
def test_bad_parameters_name_the_parameter(params, name):
    X, y = _sinc(5, n=20)
    with pytest.raises(ValueError, match=f"'{name}' parameter"):
        VRVMRegressor(**params).fit(X, y)


def test_predict_input_checks():
    X, y = _sinc(6, n=30)
    m = VRVMRegressor(kernel_widths=3.0).fit(X, y, linear=X[:, 0])
    with pytest.raises(ValueError, match="pass linear="):
        m.predict(X)
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros((2, 3)), linear=np.zeros(2))
    plain = VRVMRegressor(kernel_widths=3.0).fit(X, y)
    with pytest.raises(ValueError, match="without linear"):
        plain.predict(X, linear=X[:, 0])


@pytest.mark.parametrize("selection", ["evidence", "cv"])
def test_width_selection_in_processes_equals_in_turn(selection):
    """Candidates scored by loky workers get the same folds and centres as in turn."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-3, 3, size=(700, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + rng.normal(0, 0.1, 700)
    params = {
        "width_selection": selection,
        "cv_folds": 3,
        "selection_size": 300,
        "max_basis": 120,
        "selection_max_basis": 60,
        "random_state": 0,
    }
    one = VRVMRegressor(**params).fit(X, y)
    two = VRVMRegressor(**params, n_jobs=2).fit(X, y)
    assert one.width_scores_ == two.width_scores_
    np.testing.assert_array_equal(one.kernel_widths_, two.kernel_widths_)
    np.testing.assert_array_equal(one.predict(X[:50]), two.predict(X[:50]))


def test_an_unfitted_member_has_no_predictor():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        _ = VRVMRegressor().predictor_
