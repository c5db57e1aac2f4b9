"""Sequential Bayesian learning of a fitted VRVM (partial_fit) and of the ensemble."""

import numpy as np
import pytest

from vrvm import VRVMRegressor
from vrvm.engine.kernels import sufficient_statistics
from vrvm.engine.variational import Priors, optimize_q_w_lambda


def _data(seed=0, n=200):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-4, 4, (n, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.3 * X[:, 1] + rng.normal(0, 0.15, n)
    return X, y, X[:, 0] ** 2 / 10


def _batch_posterior(model, X, y, d):
    """Structured posterior on all data with the model's basis and alpha fixed."""
    pred = model._predictor
    stats = sufficient_statistics(pred.basis, X, y / pred.y_scale, d[:, None])
    sub = stats.subset(pred.columns)
    priors = Priors(e0=model.e0, f0=model.f0 / pred.y_scale**2)
    return optimize_q_w_lambda(sub, model.alpha_, "structured", priors)


def test_sequential_updates_equal_the_batch_posterior():
    X, y, d = _data()
    m = VRVMRegressor(kernel_widths=[1.0, 2.0], random_state=0).fit(
        X[:120], y[:120], linear=d[:120]
    )
    for i in range(120, 200):  # one trip at a time
        m.partial_fit(X[i : i + 1], y[i : i + 1], linear=d[i : i + 1])
    batch = _batch_posterior(m, X, y, d)
    pred = m._predictor
    np.testing.assert_allclose(pred.mean, batch.post.mean, rtol=1e-8, atol=1e-10)
    assert pred.e == pytest.approx(batch.e, rel=1e-10)
    assert pred.f == pytest.approx(batch.f, rel=1e-8)
    np.testing.assert_allclose(
        pred.chol @ pred.chol.T, batch.post.chol @ batch.post.chol.T, rtol=1e-8, atol=1e-9
    )
    assert m.n_updates_ == 80


def test_order_does_not_matter_and_batches_equal_rows():
    X, y, d = _data(1)
    base = VRVMRegressor(kernel_widths=1.5, random_state=0).fit(X[:100], y[:100], linear=d[:100])
    meta, arrays = base.export_state()
    a = VRVMRegressor.from_state(meta, arrays).partial_fit(X[100:], y[100:], linear=d[100:])
    b = VRVMRegressor.from_state(meta, arrays)
    for i in np.random.default_rng(0).permutation(np.arange(100, 200)):
        b.partial_fit(X[i : i + 1], y[i : i + 1], linear=d[i : i + 1])
    Xq = X[:20]
    np.testing.assert_allclose(
        a.predict(Xq, linear=d[:20], return_std=True),
        b.predict(Xq, linear=d[:20], return_std=True),
        rtol=1e-9,
    )


def test_forgetting_one_forgets_nothing_and_forgetting_follows_drift():
    X, y, d = _data(2, n=400)
    base = VRVMRegressor(kernel_widths=1.5, random_state=0).fit(X[:150], y[:150], linear=d[:150])
    meta, arrays = base.export_state()
    plain = VRVMRegressor.from_state(meta, arrays).partial_fit(X[150:], y[150:], linear=d[150:])
    one = VRVMRegressor.from_state(meta, arrays).partial_fit(
        X[150:], y[150:], linear=d[150:], forgetting=1.0
    )
    np.testing.assert_array_equal(plain.predict(X, linear=d), one.predict(X, linear=d))
    # a road closure: every trip becomes 1.0 slower from row 150 on
    shifted = y + np.where(np.arange(400) >= 150, 1.0, 0.0)
    keep = VRVMRegressor.from_state(meta, arrays)
    forget = VRVMRegressor.from_state(meta, arrays)
    for i in range(150, 400):
        keep.partial_fit(X[i : i + 1], shifted[i : i + 1], linear=d[i : i + 1])
        forget.partial_fit(X[i : i + 1], shifted[i : i + 1], linear=d[i : i + 1], forgetting=0.98)
    err_keep = np.abs(keep.predict(X[300:], linear=d[300:]) - shifted[300:]).mean()
    err_forget = np.abs(forget.predict(X[300:], linear=d[300:]) - shifted[300:]).mean()
    assert err_forget < err_keep


def test_meanfield_member_updates_stay_consistent():
    X, y, d = _data(3)
    m = VRVMRegressor(kernel_widths=1.5, factorization="meanfield", tol=1e-10).fit(
        X[:120], y[:120], linear=d[:120]
    )
    m.partial_fit(X[120:], y[120:], linear=d[120:])
    batch = _batch_posterior(m, X, y, d)
    pred = m._predictor
    np.testing.assert_allclose(pred.mean, batch.post.mean, rtol=1e-6, atol=1e-8)
    assert pred.e / pred.f == pytest.approx(batch.e / batch.f, rel=1e-6)
    assert pred.e == pytest.approx(batch.e + pred.mean.size / 2)


def test_partial_fit_checks_input():
    X, y, d = _data(4, n=60)
    m = VRVMRegressor(kernel_widths=1.5).fit(X, y, linear=d)
    with pytest.raises(ValueError, match="NaN"):
        m.partial_fit(X[:2], np.array([1.0, np.nan]), linear=d[:2])
    with pytest.raises(ValueError, match="forgetting"):
        m.partial_fit(X[:2], y[:2], linear=d[:2], forgetting=1.5)
    with pytest.raises(ValueError, match="pass linear="):
        m.partial_fit(X[:2], y[:2])


def test_travel_time_model_update_and_round_trip(tmp_path):
    from vrvm import TravelTimeModel, synthetic_city

    trips = synthetic_city(2400, seed=1)
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.5, 3.0], max_basis=150, random_state=0
    ).fit(trips.iloc[:1600])
    before = model.evaluate(trips.iloc[2000:])["crps_s"]
    model.update(trips.iloc[1600:2000])
    assert model.n_updates_ == 400 and len(model.update_history_) == 1
    after = model.evaluate(trips.iloc[2000:])["crps_s"]
    assert after < before * 1.05  # more data never makes it much worse
    model.save(tmp_path / "m")
    loaded = TravelTimeModel.load(tmp_path / "m")
    np.testing.assert_allclose(
        loaded.predict(trips.iloc[2000:2050]), model.predict(trips.iloc[2000:2050]), rtol=1e-10
    )
    assert loaded.n_updates_ == 400
    # shard assignment continues round-robin across calls and touches one member per trip
    one = trips.iloc[2000:2001]
    counts = [m.n_updates_ for m in model.members_]
    model.update(one, assign="shard")
    assert sum(m.n_updates_ for m in model.members_) == sum(counts) + 1
    with pytest.raises(ValueError, match="assign"):
        model.update(one, assign="some")
