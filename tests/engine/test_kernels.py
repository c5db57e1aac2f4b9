"""Design matrix, centres and chunked statistics."""

import numpy as np
import pytest

from vrvm.engine.kernels import BasisSpec, choose_centres, sufficient_statistics, width_grid


def test_stacked_and_summed_columns_match_the_definition():
    rng = np.random.default_rng(0)
    X, C, lin = rng.normal(size=(9, 3)), rng.normal(size=(4, 3)), rng.normal(size=(9, 2))
    widths = np.array([0.7, 2.0])
    sq = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    stacked = BasisSpec(centres=C, widths=widths, mode="stacked", n_linear=2).design(X, lin)
    expect = np.hstack([np.ones((9, 1)), lin] + [np.exp(-sq / w**2) for w in widths])
    np.testing.assert_allclose(stacked, expect, rtol=1e-12)
    summed = BasisSpec(centres=C, widths=widths, mode="summed", n_linear=2).design(X, lin)
    expect = np.hstack([np.ones((9, 1)), lin, sum(np.exp(-sq / w**2) for w in widths)])
    np.testing.assert_allclose(summed, expect, rtol=1e-12)


@pytest.mark.parametrize(
    "widths",
    [[1.0, 2.0], [0.5, 1.0, 2.0, 4.0], [2.0, 2.0**0.5], [4.0, 1.0], [1.0, 3.0, 6.0, 0.25]],
)
@pytest.mark.parametrize("mode", ["stacked", "summed"])
def test_kernels_by_repeated_squaring_equal_the_exponentials(widths, mode):
    # widths 2^(j/2) apart reuse the wider kernel (j squarings); others call exp
    rng = np.random.default_rng(3)
    X, C = rng.normal(size=(40, 3)), rng.normal(size=(7, 3))
    widths = np.array(widths)
    sq = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    kernels = [np.exp(-sq / w**2) for w in widths]
    expect = np.hstack(kernels) if mode == "stacked" else sum(kernels)
    got = BasisSpec(centres=C, widths=widths, mode=mode).design(X, None)[:, 1:]
    np.testing.assert_allclose(got, expect, rtol=1e-13, atol=1e-300)


def test_design_subset_of_columns_and_column_metadata():
    rng = np.random.default_rng(1)
    X, C = rng.normal(size=(5, 2)), rng.normal(size=(3, 2))
    spec = BasisSpec(centres=C, widths=np.array([1.0, 3.0]), mode="stacked", n_linear=1)
    full = spec.design(X, X[:, :1])
    cols = np.array([0, 4, 7])
    np.testing.assert_allclose(spec.design(X, X[:, :1], cols), full[:, cols])
    np.testing.assert_array_equal(spec.column_centre(), [-1, -1, 0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(spec.column_width()[2:], [1, 1, 1, 3, 3, 3])


def test_sufficient_statistics_equal_the_dense_products():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(301, 2)), rng.normal(size=301)
    spec = BasisSpec(centres=X[:20], widths=np.array([0.5, 1.5]), n_linear=1)
    phi = spec.design(X, X[:, 1:])
    for chunk in (7, 64, 1000):
        stats = sufficient_statistics(spec, X, y, X[:, 1:], chunk_size=chunk)
        np.testing.assert_allclose(stats.G, phi.T @ phi, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(stats.h, phi.T @ y, rtol=1e-10, atol=1e-10)
        assert stats.yy == pytest.approx(y @ y) and stats.n == 301


def test_centres_are_distinct_training_rows():
    X = np.repeat(np.arange(50.0), 3)[:, None]  # heavy duplicates
    idx = choose_centres(X, 20, random_state=0)
    assert idx.size == 20
    assert np.unique(X[idx], axis=0).shape[0] == 20


def test_bad_widths_and_mode_rejected():
    with pytest.raises(ValueError, match="widths"):
        BasisSpec(centres=np.zeros((2, 1)), widths=np.array([0.0]))
    with pytest.raises(ValueError, match="mode"):
        BasisSpec(centres=np.zeros((2, 1)), widths=np.array([1.0]), mode="product")


def test_width_grid_respects_spacing_of_centres():
    dense = np.linspace(0, 1, 1000)[:, None]
    sparse = np.linspace(0, 1, 5)[:, None]
    assert width_grid(sparse, 2)[0][0] >= 2 * 0.25  # never narrower than twice the spacing
    assert width_grid(dense, 2)[0][0] == pytest.approx(
        np.median(np.abs(dense - dense.T)[np.triu_indices(1000, 1)]) / 4, rel=0.05
    )


def test_statistics_travel_as_half_a_matrix_and_come_back_exact():
    import pickle

    from vrvm.engine.kernels import StatisticsAccumulator, SufficientStatistics

    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    spec = BasisSpec(centres=X[:200], widths=np.array([1.0, 2.0]))
    acc = StatisticsAccumulator(spec)
    acc.add(X[:100], y[:100])
    acc.add(X[100:], y[100:])
    stats = acc.result()
    assert np.array_equal(stats.G, stats.G.T)  # exactly symmetric, as the packing needs
    np.testing.assert_allclose(stats.G, sufficient_statistics(spec, X, y).G, rtol=1e-12)
    again = pickle.loads(pickle.dumps(stats))
    assert np.array_equal(again.G, stats.G) and np.array_equal(again.h, stats.h)
    assert (again.yy, again.n) == (stats.yy, stats.n)
    assert len(pickle.dumps(stats)) < 0.55 * stats.G.nbytes
    lopsided = SufficientStatistics(np.triu(stats.G), stats.h, stats.yy, stats.n)
    assert np.array_equal(pickle.loads(pickle.dumps(lopsided)).G, lopsided.G)  # not packed
