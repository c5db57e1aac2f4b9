"""Optimal siting: the MILP against brute force, greedy, fixed sites, the cover, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from vrvm.services.planning import siting
from vrvm.services.planning.siting import (
    InfeasibleTarget,
    area_points,
    fewest_bases,
    site_bases,
    siting_probabilities,
    solve_cover,
    solve_siting,
)

DEPART = "2024-03-05 08:15"


def instance(seed: int, n_candidates: int, n_zones: int):
    """A random probability matrix with the structure of a city's: a few near sites
    reach a zone with high probability, most with almost none; some exact zeros."""
    rng = np.random.default_rng(seed)
    prob = rng.random((n_candidates, n_zones)) ** rng.choice([1, 3, 8])
    if seed % 3 == 0:
        prob[rng.random(prob.shape) < 0.4] = 0.0
    weights = rng.random(n_zones) * (rng.random(n_zones) < 0.85)
    weights[0] += 0.1
    return prob, weights


def coverage(prob, weights, rows) -> float:
    return float(np.max(prob[list(rows)], axis=0) @ weights / weights.sum())


def brute_force(prob, weights, k, fixed=()):
    subsets = (s for s in itertools.combinations(range(prob.shape[0]), k) if set(fixed) <= set(s))
    return max(coverage(prob, weights, s) for s in subsets)


@pytest.mark.parametrize("seed", range(40))
def test_milp_is_optimal_by_brute_force(seed):
    rng = np.random.default_rng(1000 + seed)
    n_candidates = int(rng.integers(3, 10))
    prob, weights = instance(seed, n_candidates, int(rng.integers(2, 14)))
    k = int(rng.integers(1, min(4, n_candidates) + 1))
    fixed = rng.choice(n_candidates, int(rng.integers(0, k + 1)), replace=False).tolist()
    solution = solve_siting(prob, weights, k, fixed=fixed if seed % 2 else ())
    fixed = fixed if seed % 2 else []
    best = brute_force(prob, weights, k, fixed)
    assert solution.status in ("optimal", "no choice")
    assert solution.objective == pytest.approx(best, rel=1e-9, abs=1e-12)
    assert coverage(prob, weights, solution.chosen) == pytest.approx(solution.objective)
    assert solution.chosen.size == k and set(fixed) <= set(solution.chosen.tolist())
    assert solution.bound >= solution.objective - 1e-12
    # greedy: never better than the optimum, within 1 - 1/e of its gain over the fixed
    assert solution.greedy_objective <= solution.objective + 1e-12
    assert solution.greedy.size == k and list(solution.greedy[: len(fixed)]) == fixed
    base = coverage(prob, weights, fixed) if fixed else 0.0
    gain = solution.objective - base
    assert solution.greedy_objective - base >= (1 - 1 / np.e) * gain - 1e-12
    assert 0.0 <= solution.gap <= 1.0


def test_larger_instance_matches_brute_force():
    prob, weights = instance(7, 14, 60)
    solution = solve_siting(prob, weights, 4)
    assert solution.status == "optimal"
    assert solution.objective == pytest.approx(brute_force(prob, weights, 4), rel=1e-9)


def test_greedy_can_be_beaten():
    prob = np.array([[0.9, 0.0], [0.0, 0.9], [0.6, 0.6]])
    solution = solve_siting(prob, [1.0, 1.0], 2)
    assert solution.chosen.tolist() == [0, 1]
    assert solution.greedy.tolist() == [2, 0]
    assert solution.gap == pytest.approx((0.9 - 0.75) / 0.9)


def test_fixed_sites_are_always_chosen():
    prob, weights = instance(4, 8, 20)
    worst = int(np.argmin(prob @ weights))
    solution = solve_siting(prob, weights, 3, fixed=[worst])
    assert worst in solution.chosen.tolist()
    assert solve_siting(prob, weights, 1, fixed=[worst]).status == "no choice"
    everything = solve_siting(prob, weights, 8)
    assert everything.chosen.tolist() == list(range(8))


def test_time_limit_returns_a_set_and_a_bound():
    prob, weights = instance(5, 12, 40)
    solution = solve_siting(prob, weights, 3, time_limit_s=30)
    assert solution.chosen.size == 3 and solution.bound >= solution.objective - 1e-12


def brute_force_cover(prob, weights, level, share, fixed=()):
    reach = prob >= level
    w = weights / weights.sum()
    for size in range(len(fixed), prob.shape[0] + 1):
        best = None
        for subset in itertools.combinations(range(prob.shape[0]), size):
            if not set(fixed) <= set(subset):
                continue
            covered = w[reach[list(subset)].any(axis=0)].sum() if subset else 0.0
            if covered >= share - 1e-12 and (best is None or covered > best):
                best = covered
        if best is not None:
            return size, best
    return None


@pytest.mark.parametrize("seed", range(30))
def test_cover_is_optimal_by_brute_force(seed):
    rng = np.random.default_rng(2000 + seed)
    n_candidates = int(rng.integers(2, 9))
    prob, weights = instance(seed, n_candidates, int(rng.integers(1, 12)))
    level = float(rng.choice([0.3, 0.5, 0.8]))
    share = float(rng.choice([1.0, 0.9, 0.6, 0.3]))
    fixed = rng.choice(n_candidates, int(rng.integers(0, 2)), replace=False).tolist()
    expected = brute_force_cover(prob, weights, level, share, fixed)
    if expected is None:
        with pytest.raises(InfeasibleTarget) as caught:
            solve_cover(prob, weights, level, share=share, fixed=fixed)
        unreachable = np.flatnonzero((weights > 0) & ~(prob >= level).any(axis=0))
        assert caught.value.unreachable == unreachable.tolist()
        return
    solution = solve_cover(prob, weights, level, share=share, fixed=fixed)
    assert solution.objective == expected[0] == solution.chosen.size
    assert set(fixed) <= set(solution.chosen.tolist())
    w = weights / weights.sum()
    covered = w[(prob[solution.chosen] >= level).any(axis=0)].sum()
    assert covered == pytest.approx(expected[1])  # the most demand among the smallest
    assert solution.greedy_objective >= solution.objective
    assert solution.status in ("optimal", "no choice")


def test_infeasible_target_names_the_zones():
    prob = np.array([[0.95, 0.2, 0.1], [0.9, 0.5, 0.0]])
    with pytest.raises(InfeasibleTarget, match="2 demand zone") as caught:
        solve_cover(prob, [1, 1, 1], 0.8)
    assert caught.value.unreachable == [1, 2]
    assert solve_cover(prob, [1, 1, 1], 0.8, share=0.3).objective == 1.0
    with pytest.raises(InfeasibleTarget):
        solve_cover(prob, [1, 1, 1], 0.8, share=0.5)
    # a zone without demand needs no base
    assert solve_cover(prob, [1, 0, 0], 0.8).objective == 1.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: solve_siting(np.zeros((0, 3)), None, 1), "no candidate"),
        (lambda: solve_siting(np.zeros((3, 0)), None, 1), "no demand"),
        (lambda: solve_siting([[0.5, 1.2]], None, 1), r"\[0, 1\]"),
        (lambda: solve_siting([[0.5, np.nan]], None, 1), r"\[0, 1\]"),
        (lambda: solve_siting([[0.5, 0.2]], [1.0], 1), "one number per demand zone"),
        (lambda: solve_siting([[0.5, 0.2]], [1.0, -1.0], 1), "non-negative"),
        (lambda: solve_siting([[0.5, 0.2]], [0.0, 0.0], 1), "zero in every"),
        (lambda: solve_siting([[0.5], [0.2]], None, 3), "only 2 candidate"),
        (lambda: solve_siting([[0.5], [0.2]], None, 0), "at least 1"),
        (lambda: solve_siting([[0.5], [0.2]], None, 1.5), "whole number"),
        (lambda: solve_siting([[0.5], [0.2]], None, 1, fixed=[0, 1]), "cannot keep the 2"),
        (lambda: solve_siting([[0.5], [0.2]], None, 2, fixed=[0, 0]), "repeated"),
        (lambda: solve_siting([[0.5], [0.2]], None, 1, fixed=[5]), "candidate rows"),
        (lambda: solve_cover([[0.5]], None, 0.0), r"in \(0, 1\]"),
        (lambda: solve_cover([[0.5]], None, 1.5), r"in \(0, 1\]"),
        (lambda: solve_cover([[0.5]], None, 0.5, share=0), "share"),
    ],
)
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------------- model level
@pytest.fixture(scope="module")
def zones(tiny_area):
    """Ten busy zones as candidates, thirty as demand (with the area's weights)."""
    busiest = tiny_area.grid.sort_values("n_points", ascending=False)["zone"].tolist()
    return area_points(tiny_area, busiest[:10]), area_points(tiny_area, busiest[:30], what="demand")


def test_probabilities_read_the_model_as_fleet_does(tiny_model, zones):
    candidates, demand = zones
    prob = siting_probabilities(tiny_model, candidates, demand, 600.0, DEPART, block_pairs=64)
    queries = pd.DataFrame(
        {
            "origin_lat": np.repeat(candidates["lat"].to_numpy(), len(demand)),
            "origin_lon": np.repeat(candidates["lon"].to_numpy(), len(demand)),
            "dest_lat": np.tile(demand["lat"].to_numpy(), len(candidates)),
            "dest_lon": np.tile(demand["lon"].to_numpy(), len(candidates)),
            "start_time": pd.Timestamp(DEPART, tz=tiny_model.tz_),
        }
    )
    dist = tiny_model.predict_dist(queries)
    expected = tiny_model.recalibrate(dist.member_cdf(600.0).mean(axis=0))
    np.testing.assert_allclose(prob.ravel(), expected, rtol=1e-12, atol=1e-15)
    # averaged over departures
    night = siting_probabilities(tiny_model, candidates, demand, 600.0, "2024-03-05 03:00")
    both = siting_probabilities(tiny_model, candidates, demand, 600.0, [DEPART, "2024-03-05 03:00"])
    np.testing.assert_allclose(both, 0.5 * (prob + night), rtol=1e-12)


def test_site_bases_on_the_tiny_model(tiny_model, zones):
    candidates, demand = zones
    result = site_bases(tiny_model, candidates, demand, 3, 480.0, [DEPART])
    assert result.status == "optimal" and result.problem == "coverage"
    assert list(result.sites.columns) == siting.SITE_COLUMNS
    assert len(result.sites) == 3
    w = demand["weight"].to_numpy()
    best = brute_force(result.prob, w, 3)
    assert result.objective == pytest.approx(best, rel=1e-9)
    assert result.sites["demand_share"].sum() == pytest.approx(1.0)
    table = result.demand_table()
    assert list(table.columns) == ["id", "lat", "lon", "weight", "site", "probability"]
    assert set(table["site"]) <= set(result.sites["id"])
    assert np.dot(table["probability"], w) / w.sum() == pytest.approx(result.objective)
    # keep a base fixed: the first candidate, by id and as a point
    first = candidates.iloc[[0]]
    for fixed in (first["id"].tolist(), first):
        kept = site_bases(tiny_model, candidates, demand, 3, 480.0, DEPART, fixed=fixed)
        assert kept.sites["fixed"].tolist()[0] and kept.sites["id"].iloc[0] == first["id"].iloc[0]
        assert kept.objective <= result.objective + 1e-12
    # an existing base that is not a candidate is added as a site
    elsewhere = pd.DataFrame(
        {"id": ["depot"], "lat": [demand["lat"].iloc[-1]], "lon": [demand["lon"].iloc[-1]]}
    )
    added = site_bases(tiny_model, candidates, demand, 2, 480.0, DEPART, fixed=elsewhere)
    assert "depot" in added.sites["id"].tolist()


def test_fewest_bases_on_the_tiny_model(tiny_model, zones):
    candidates, demand = zones
    result = fewest_bases(tiny_model, candidates, demand, 900.0, DEPART, 0.5, share=0.8)
    assert result.problem == "cover" and result.covered_share >= 0.8 - 1e-12
    assert result.objective == len(result.sites)
    expected = brute_force_cover(result.prob, demand["weight"].to_numpy(), 0.5, 0.8)
    assert expected is not None and result.objective == expected[0]
    assert "reached" in result.demand_table().columns
    with pytest.raises(InfeasibleTarget) as caught:
        fewest_bases(tiny_model, candidates, demand, 30.0, DEPART, 0.99)
    assert set(caught.value.unreachable) <= set(demand["id"])
    assert str(caught.value).endswith(" ...") or demand["id"].iloc[-1] in str(caught.value)


def test_model_level_bad_input(tiny_model, tiny_area, zones):
    candidates, demand = zones
    with pytest.raises(ValueError, match="candidate zone ids not in the service area"):
        area_points(tiny_area, ["nowhere"])
    with pytest.raises(ValueError, match="candidate ids must differ"):
        site_bases(tiny_model, pd.concat([candidates, candidates.iloc[:1]]), demand, 1, 480, DEPART)
    with pytest.raises(ValueError, match="demand ids must differ"):
        site_bases(tiny_model, candidates, pd.concat([demand, demand.iloc[:1]]), 1, 480, DEPART)
    with pytest.raises(ValueError, match="unknown fixed base ids"):
        site_bases(tiny_model, candidates, demand, 2, 480, DEPART, fixed=["nowhere"])
    with pytest.raises(ValueError, match="no demand sites"):
        site_bases(tiny_model, candidates, demand.iloc[:0], 1, 480, DEPART)
    with pytest.raises(ValueError, match="positive number of seconds"):
        site_bases(tiny_model, candidates, demand, 1, 0, DEPART)
    with pytest.raises(ValueError, match="only 10 candidate"):
        site_bases(tiny_model, candidates, demand, 11, 480, DEPART)
    with pytest.raises(ValueError, match="no departure"):
        site_bases(tiny_model, candidates, demand, 1, 480, [])
    with pytest.raises(ValueError, match="probability asked for"):
        fewest_bases(tiny_model, candidates, demand, 480, DEPART, 0.0)
    moved = candidates.iloc[[0]].assign(lat=candidates["lat"].iloc[0] + 0.01)
    with pytest.raises(ValueError, match="share a candidate's id but not its point"):
        site_bases(tiny_model, candidates, demand, 2, 480, DEPART, fixed=moved)
