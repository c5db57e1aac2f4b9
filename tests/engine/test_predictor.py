"""Tests of vrvm.engine.predictor: the fitted member's prediction, fast and exact."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from scipy.linalg.blas import dtrmm

from vrvm.engine import _raw_blas
from vrvm.engine._raw_blas import symmetric_rank_one, times_lower_transposed
from vrvm.engine.predictor import Predictor
from vrvm.engine.regressor import VRVMRegressor


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (600, 3))
    d = np.linalg.norm(X, axis=1)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.2 * d + rng.normal(0, 0.1, 600)
    model = VRVMRegressor(kernel_widths=[0.7, 1.4], max_basis=120, random_state=0)
    return model.fit(X, y, linear=d[:, None]), rng.uniform(-4, 4, (2500, 3))


def _reference_loc_scale(pred: Predictor, X, linear):
    """The prediction from every candidate column (cdist) and scipy's trmm."""
    phi = pred.basis._full_design(X, linear)[:, pred.columns]
    loc = phi @ pred.mean
    z = dtrmm(1.0, pred.chol_inv, phi, side=1, lower=1, trans_a=1)
    quad = np.einsum("ij,ij->i", z, z)
    scale2 = (pred.f / pred.e) * (1.0 + quad)
    if pred.family != "structured":
        scale2 = pred.f / pred.e + quad / pred.beta_w
    return loc * pred.y_scale, np.sqrt(scale2) * pred.y_scale


def test_design_is_the_full_design_of_the_active_columns(fitted):
    model, X = fitted
    pred = model._predictor
    linear = np.linalg.norm(X, axis=1)[:, None]
    fast = pred.design(X, linear)
    # an independent path: every candidate column from exact differences (cdist)
    general = pred.basis._full_design(X, linear)[:, pred.columns]
    assert fast.flags.c_contiguous and fast.shape == general.shape
    np.testing.assert_allclose(fast, general, rtol=1e-13, atol=1e-300)


def test_loc_scale_matches_the_reference_to_rounding(fitted):
    model, X = fitted
    pred = model._predictor
    linear = np.linalg.norm(X, axis=1)[:, None]
    loc, scale = pred.loc_scale(X, linear, chunk=700)  # blocks of any size
    ref_loc, ref_scale = _reference_loc_scale(pred, X, linear)
    np.testing.assert_allclose(loc, ref_loc, rtol=1e-12)
    np.testing.assert_allclose(scale, ref_scale, rtol=1e-12)


def test_summed_kernels_and_mean_field_use_the_general_design(fitted):
    _, X = fitted
    rng = np.random.default_rng(2)
    train = rng.uniform(-3, 3, (400, 3))
    y = np.sin(train[:, 0]) + rng.normal(0, 0.1, 400)
    summed = VRVMRegressor(
        kernel_widths=[0.7, 1.4],
        kernel_mode="summed",
        max_basis=80,
        factorization="meanfield",
        random_state=0,
    ).fit(train, y, linear=train[:, :1])
    summed = summed._predictor
    linear = X[:, :1]
    assert summed.family != "structured"
    # kernel values come from exponents expanded as ||x||^2 - 2 x.c + ||c||^2 (one GEMM):
    # exact to rounding of the norms, so an absolute tolerance for the small values
    np.testing.assert_allclose(
        summed.design(X, linear),
        summed.basis._full_design(X, linear)[:, summed.columns],
        rtol=1e-13,
        atol=1e-14,
    )
    loc, scale = summed.loc_scale(X, linear)
    ref_loc, ref_scale = _reference_loc_scale(summed, X, linear)
    # loc is a sum of terms of order 1 that can cancel to ~1e-5: absolute rounding
    np.testing.assert_allclose(loc, ref_loc, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(scale, ref_scale, rtol=1e-12)


@pytest.mark.parametrize("gil_free", [True, False])
def test_triangular_product_in_place(monkeypatch, gil_free):
    if not gil_free:  # scipy's wrapper, where the function pointer is not available
        monkeypatch.setattr(_raw_blas, "blas_function", lambda name: None)
    rng = np.random.default_rng(1)
    lower = np.asfortranarray(np.tril(rng.normal(size=(37, 37))))
    rows = rng.normal(size=(50, 37))
    expected = rows @ lower.T
    out = times_lower_transposed(lower, rows.copy())
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    empty = times_lower_transposed(lower, np.empty((0, 37)))
    assert empty.shape == (0, 37)


def test_threads_predict_at_once_and_alike(fitted):
    model, X = fitted
    pred = model._predictor
    linear = np.linalg.norm(X, axis=1)[:, None]
    expected = pred.loc_scale(X, linear)
    results = [None] * 4

    def work(i):
        results[i] = pred.loc_scale(X, linear)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for loc, scale in results:
        assert np.array_equal(loc, expected[0]) and np.array_equal(scale, expected[1])


@pytest.mark.parametrize("gil_free", [True, False])
def test_symmetric_rank_one_on_a_leading_block(monkeypatch, gil_free):
    if not gil_free:
        monkeypatch.setattr(_raw_blas, "blas_function", lambda name: None)
    rng = np.random.default_rng(3)
    buffer = rng.normal(size=(40, 40))
    before = buffer.copy()
    x = rng.normal(size=23)
    symmetric_rank_one(-0.7, x, buffer, 23)
    expected = before.copy()
    expected[:23, :23] += -0.7 * np.outer(x, x)
    np.testing.assert_allclose(buffer, expected, rtol=1e-13, atol=1e-13)
    assert np.array_equal(buffer[23:], before[23:]) and np.array_equal(
        buffer[:, 23:], before[:, 23:]
    )
