"""Reliability indices (planning time, buffer, misery) checked against brute force.

The mean of the slowest 20 % against numerical integration of the density, the
free-flow time against 5 separate night predictions and a root finder, the indices
against their definitions, and the vectorised forms against one query at a time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize

from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.answers import indices, schedule
from vrvm.services.answers.forecast import answer_od, query_frame
from vrvm.services.planning.coverage import coverage_grid, coverage_map

DEPARTURE = pd.Timestamp("2016-05-03 08:30", tz="UTC")


def brute_tail_mean(dist: MixtureDistribution, share: float = 0.2) -> float:
    """(1/share) * integral of t p(t) above the (1 - share) quantile, by quadrature."""
    c = float(dist.ppf(1 - share)[0])
    value, _ = integrate.quad(lambda t: t * dist.pdf(t)[0], c, np.inf, epsabs=0, epsrel=1e-11)
    return value / share


@pytest.mark.parametrize(
    ("loc", "scale", "df", "transform"),
    [
        (np.log([[600.0], [800.0], [700.0]]), [[0.2], [0.3], [0.25]], None, "log"),
        ([[600.0], [900.0]], [[60.0], [120.0]], None, None),
        ([[600.0], [900.0]], [[60.0], [120.0]], [[5.0], [np.inf]], None),
        ([[0.0]], [[1.0]], None, None),
    ],
)
def test_tail_mean_is_exact(loc, scale, df, transform):
    dist = MixtureDistribution(loc, scale, df=df, transform=transform)
    assert indices.tail_mean(dist)[0] == pytest.approx(brute_tail_mean(dist), rel=1e-9)
    # the mean of the slowest 20 % is above the 80th percentile and the mean
    assert indices.tail_mean(dist)[0] > max(dist.ppf(0.8)[0], dist.mean()[0])


def test_tail_mean_of_log_t_members_uses_the_variance_matched_log_normal():
    """A log-t has no mean; like MixtureDistribution.mean, the log-normal with the t's
    variance stands for it (and the two converge as df grows)."""
    loc, scale, df = np.log([[600.0], [700.0]]), np.array([[0.2], [0.25]]), 12.0
    log_t = MixtureDistribution(loc, scale, df=df, transform="log")
    matched = MixtureDistribution(loc, scale * np.sqrt(df / (df - 2)), transform="log")
    assert indices.tail_mean(log_t)[0] == pytest.approx(brute_tail_mean(matched), rel=1e-9)
    big = MixtureDistribution(loc, scale, df=1e7, transform="log")
    gaussian = MixtureDistribution(loc, scale, transform="log")
    assert indices.tail_mean(big)[0] == pytest.approx(indices.tail_mean(gaussian)[0], rel=1e-6)
    with pytest.raises(ValueError, match="df > 2"):
        indices.tail_mean(MixtureDistribution(loc, scale, df=2.0, transform="log"))
    with pytest.raises(ValueError, match="share"):
        indices.tail_mean(gaussian, share=1.0)


def test_indices_follow_their_definitions():
    dist = MixtureDistribution(np.log([[600.0, 900.0], [660.0, 1000.0]]), 0.25, transform="log")
    free_flow = np.array([450.0, 500.0])
    table = indices.indices_from(dist, free_flow)
    p95, mean = dist.ppf(0.95), dist.mean()
    np.testing.assert_allclose(table["planning_time_index"], p95 / free_flow)
    np.testing.assert_allclose(table["buffer_index"], (p95 - mean) / mean)
    slowest = np.array([brute_tail_mean(dist[j]) for j in range(2)])
    np.testing.assert_allclose(table["misery_index"], slowest / free_flow, rtol=1e-9)
    np.testing.assert_allclose(table["free_flow_min"], free_flow / 60)
    assert list(table.columns) == list(indices.INDEX_COLUMNS)


def test_night_departures_are_on_the_local_day():
    times = pd.DatetimeIndex(["2016-03-13 23:30", "2016-03-14 00:10"]).tz_localize(
        "America/Chicago"
    )
    nights = indices.night_departures(times.tz_convert("UTC"), "America/Chicago")
    assert len(nights) == 10
    local = nights.tz_convert("America/Chicago")
    # departure-major: block k holds the k-th night departure of both queries
    assert [d.day for d in local[:2]] == [13, 14] and [d.day for d in local[-2:]] == [13, 14]
    # the clocks jumped at 02:00 on 13 March 2016: 02:xx moved to the first valid instant
    assert local[0].hour == 3 and local[2].hour == 3 and local[-1].hour == 4
    assert local[1].hour == 2 and local[1].minute == 0
    naive = indices.night_departures(pd.DatetimeIndex(["2016-05-03 08:30"]), "UTC")
    assert str(naive[2]) == "2016-05-03 03:00:00+00:00"


def test_free_flow_is_the_15th_percentile_of_the_pooled_night(tiny_model, pair):
    queries = query_frame(*pair, DEPARTURE)
    got = indices.free_flow_seconds(tiny_model, queries)[0]
    nights = pd.date_range("2016-05-03 02:00", "2016-05-03 04:00", freq="30min", tz="UTC")
    each = tiny_model.predict_dist(
        pd.concat([queries.assign(start_time=t) for t in nights], ignore_index=True)
    )
    expected = optimize.brentq(lambda t: each.cdf(t).mean() - 0.15, 1.0, 1e5, xtol=1e-10)
    assert got == pytest.approx(expected, rel=1e-9)


def test_vectorised_indices_equal_one_query_at_a_time(tiny_model, tiny_area, pair):
    grid = tiny_area.grid.iloc[:12]
    queries = query_frame(pair[0], grid, DEPARTURE)
    table = indices.reliability_indices(tiny_model, queries)
    for j in (0, 5, 11):
        one = indices.od_indices(tiny_model, queries.iloc[[j]])
        for name in indices.INDEX_COLUMNS:
            assert getattr(one, name) == pytest.approx(table[name].iloc[j], rel=1e-10)


def test_the_answer_panel_and_the_arrive_by_answer_carry_the_indices(tiny_model, tiny_area, pair):
    answer = answer_od(tiny_model, *pair, DEPARTURE, 15, trips=None, resolution=8)
    direct = indices.od_indices(tiny_model, query_frame(*pair, DEPARTURE))
    for name in indices.INDEX_COLUMNS:
        assert getattr(answer.indices, name) == pytest.approx(getattr(direct, name), rel=1e-12)
    assert answer.indices.planning_time_index > 1  # 08:30 is slower than the night
    arrive = schedule.arrive_by(tiny_model, *pair, DEPARTURE, 0.9)
    at_answer = indices.od_indices(tiny_model, query_frame(*pair, arrive.departure))
    assert arrive.indices.buffer_index == pytest.approx(at_answer.buffer_index, rel=1e-12)
    table = answer.indices.table()
    assert table["index"].tolist() == ["Planning time index", "Buffer index", "Misery index"]
    assert "Free-flow time" in answer.indices.free_flow_sentence()


def test_coverage_grid_with_indices(tiny_model, tiny_area, pair):
    plain = coverage_grid(tiny_model, tiny_area, pair[0], DEPARTURE, 15)
    assert "planning_time_index" not in plain.columns  # unchanged by default
    grid = coverage_grid(tiny_model, tiny_area, pair[0], DEPARTURE, 15, indices=True)
    pd.testing.assert_frame_equal(grid[plain.columns], plain)
    expected = indices.reliability_indices(
        tiny_model, query_frame(pair[0], tiny_area.grid, DEPARTURE)
    )
    for name in ("free_flow_min", *indices.RELIABILITY_INDICES):
        np.testing.assert_allclose(grid[name], expected[name], rtol=1e-12)
    _, tips, _ = coverage_map(grid, "probability", 15)
    row = grid.iloc[7]
    assert (
        f"planning time index {row['planning_time_index']:.2f} · buffer "
        f"{row['buffer_index']:.2f} · misery {row['misery_index']:.2f}"
    ) in tips[7]
    _, plain_tips, _ = coverage_map(plain, "probability", 15)
    assert "planning time index" not in plain_tips[7]


def test_the_free_flow_cache_gives_the_same_times_and_computes_each_once(
    tiny_model, pair, monkeypatch
):
    origin, dest = pair
    queries = pd.concat(
        [
            query_frame(origin, dest, pd.Timestamp("2024-03-12 08:00", tz="UTC")),
            query_frame(dest, origin, pd.Timestamp("2024-03-12 17:00", tz="UTC")),
            query_frame(origin, dest, pd.Timestamp("2024-03-13 08:00", tz="UTC")),
        ],
        ignore_index=True,
    )
    exact = indices.free_flow_seconds(tiny_model, queries)
    cache = indices.FreeFlowCache(max_entries=2)
    assert cache.free_flow(tiny_model, queries) == pytest.approx(exact, rel=1e-12)
    assert len(cache) == 2  # at most max_entries kept, least recently used forgotten

    asked = []
    real = indices.free_flow_seconds
    monkeypatch.setattr(
        indices, "free_flow_seconds", lambda m, q: asked.append(len(q)) or real(m, q)
    )
    later = queries.iloc[[2, 1]].copy()  # the same trips at other hours of their days
    later["start_time"] = later["start_time"] + pd.Timedelta(hours=2)
    assert cache.free_flow(tiny_model, later) == pytest.approx(exact[[2, 1]], rel=1e-12)
    assert asked == []  # both were kept: the hour does not change the free-flow time
    table = indices.reliability_indices(tiny_model, queries, cache=cache)
    assert table["free_flow_min"].to_numpy() == pytest.approx(exact / 60.0, rel=1e-12)
