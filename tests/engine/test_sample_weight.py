"""VRVMRegressor(sample_weight=...): weighted statistics, and a subsample standing for more rows."""

from __future__ import annotations

import numpy as np
import pytest

from vrvm import VRVMRegressor


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sinc(X[:, 0]) + 0.5 * np.cos(X[:, 1]) + rng.normal(0, 0.1, n)
    return X, y


def test_no_weights_unit_weights_and_one_number_give_the_same_fit():
    X, y = _data(300)
    base = VRVMRegressor(kernel_widths=[0.8], random_state=0).fit(X, y)
    for weight in (1.0, np.ones(300)):
        other = VRVMRegressor(kernel_widths=[0.8], random_state=0).fit(X, y, sample_weight=weight)
        np.testing.assert_allclose(other.coef_, base.coef_, rtol=1e-10)
        assert np.array_equal(other.active_, base.active_)
        assert other.noise_std_ == pytest.approx(base.noise_std_, rel=1e-12)


def test_a_weight_of_two_is_a_row_seen_twice(monkeypatch):
    """Weights 2 on every other row give the fit of those rows duplicated, on the same
    centres (the 120 distinct rows, fixed here for both fits)."""
    import vrvm.engine.regressor as regressor

    X, y = _data(120, seed=1)
    twice = np.tile([2.0, 1.0], 60)
    dup = np.repeat(np.arange(120), twice.astype(int))
    first = np.unique(dup, return_index=True)[1]  # each distinct row's first copy
    params = {"kernel_widths": [0.8], "random_state": 0}
    monkeypatch.setattr(regressor, "choose_centres", lambda X_, m, rng: np.arange(120))
    weighted = VRVMRegressor(**params).fit(X, y, sample_weight=twice)
    monkeypatch.setattr(regressor, "choose_centres", lambda X_, m, rng: first)
    duplicated = VRVMRegressor(**params).fit(X[dup], y[dup])
    np.testing.assert_allclose(weighted.relevance_vectors_, duplicated.relevance_vectors_)
    np.testing.assert_allclose(weighted.coef_, duplicated.coef_, rtol=1e-7, atol=1e-10)
    assert weighted.noise_std_ == pytest.approx(duplicated.noise_std_, rel=1e-9)
    assert weighted.log_evidence_ == pytest.approx(duplicated.log_evidence_, rel=1e-9)
    queries = _data(50, seed=9)[0]
    mean_w, std_w = weighted.predict(queries, return_std=True)
    mean_d, std_d = duplicated.predict(queries, return_std=True)
    np.testing.assert_allclose(mean_w, mean_d, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(std_w, std_d, rtol=1e-7)


def test_a_subsample_weighted_up_has_the_evidence_of_more_rows():
    """The evidence grows with the rows: 400 rows keep fewer functions than 4,000; the same
    400 rows weighted 10 keep more than unweighted (the evidence of 4,000 rows, with the
    subsample's own noise: a candidate set for a second stage on all rows to prune); the
    second stage on all rows estimates the noise of the data again."""
    X, y = _data(4000, seed=2)
    params = {"kernel_widths": [0.5, 1.0], "max_basis": 300, "random_state": 0}
    full = VRVMRegressor(**params).fit(X, y)
    sub = VRVMRegressor(**params).fit(X[:400], y[:400])
    scaled = VRVMRegressor(**params).fit(X[:400], y[:400], sample_weight=10.0)
    assert sub.n_relevance_ < 0.8 * full.n_relevance_
    assert scaled.n_relevance_ > full.n_relevance_
    scaled.refit_statistics(scaled.basis_statistics(X, y), prune=True)
    assert sub.n_relevance_ < scaled.n_relevance_ < 2 * full.n_relevance_
    assert scaled.noise_std_ == pytest.approx(full.noise_std_, rel=0.1)


@pytest.mark.parametrize(
    "weight, words",
    [
        (0.0, "positive number"),
        (-1.0, "positive number"),
        (np.inf, "positive number"),
        (np.ones(5), "one value per row"),
        (np.r_[np.ones(99), -1.0], "non-negative"),
        (np.zeros(100), "not all zero"),
    ],
)
def test_bad_weights_are_refused(weight, words):
    X, y = _data(100)
    with pytest.raises(ValueError, match=words):
        VRVMRegressor(kernel_widths=[0.8]).fit(X, y, sample_weight=weight)


def test_width_selection_uses_the_weights():
    X, y = _data(300, seed=3)
    a = VRVMRegressor(random_state=0).fit(X, y, sample_weight=np.ones(300))
    b = VRVMRegressor(random_state=0).fit(X, y)
    assert a.width_scores_ == pytest.approx(b.width_scores_, rel=1e-10)
    c = VRVMRegressor(random_state=0).fit(X, y, sample_weight=5.0)
    assert c.width_scores_ != pytest.approx(b.width_scores_, rel=1e-3)  # evidence of more rows
    cv = VRVMRegressor(random_state=0, width_selection="cv", cv_folds=3)
    assert cv.fit(X, y, sample_weight=np.full(300, 2.0)).width_scores_ == pytest.approx(
        VRVMRegressor(random_state=0, width_selection="cv", cv_folds=3)
        .fit(X, y, sample_weight=2.0)
        .width_scores_
    )
