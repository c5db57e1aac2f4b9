"""Arrive by a deadline and departure windows, checked against brute force.

The arrive-by answer must be the latest whole second whose on-time probability meets
p in a scan of every second of the searched window; the window's distribution must be
the average of the departures' distributions.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from vrvm.services.answers import schedule
from vrvm.services.answers.indices import pool_departures

DEADLINE = pd.Timestamp("2016-05-03 09:00", tz="UTC")


def queries(origin, dest, departures) -> pd.DataFrame:
    """Model queries written out by hand (independent of the service's helper)."""
    n = len(departures)
    return pd.DataFrame(
        {
            "origin_lat": np.full(n, origin.lat),
            "origin_lon": np.full(n, origin.lon),
            "dest_lat": np.full(n, dest.lat),
            "dest_lon": np.full(n, dest.lon),
            "start_time": pd.DatetimeIndex(departures),
        }
    )


@pytest.fixture(scope="module")
def scan(tiny_model, pair):
    """P(arrive by DEADLINE) for every whole second of the 3 hours before it."""
    leads = np.arange(0, 3 * 3600 + 1)
    departures = DEADLINE - pd.to_timedelta(leads, unit="s")
    dist = tiny_model.predict_dist(queries(*pair, departures))
    probs = np.where(leads > 0, dist.cdf(leads.astype(float)), 0.0)
    return leads, probs


@pytest.mark.parametrize("prob", [0.5, 0.8, 0.95, 0.99])
def test_arrive_by_is_the_latest_second_of_a_full_scan(tiny_model, pair, scan, prob):
    leads, probs = scan
    answer = schedule.arrive_by(tiny_model, *pair, DEADLINE, prob)
    assert answer.found and answer.reason == ""
    latest = int(leads[np.flatnonzero(probs >= prob)[0]])  # smallest lead meeting p
    assert answer.departure == DEADLINE - pd.Timedelta(seconds=latest)
    assert answer.prob_at_departure == pytest.approx(probs[latest], abs=1e-12)
    assert answer.prob_at_departure >= prob > probs[latest - 1]
    assert answer.minutes_allowed == pytest.approx(latest / 60)
    # the refinement is a bounded bisection on the minute between two grid departures
    assert 1 <= answer.n_refinements <= math.ceil(math.log2(60))
    # the forecast and quantiles are those of leaving then
    assert answer.forecast.departure == answer.departure
    assert answer.forecast.prob_within == pytest.approx(answer.prob_at_departure, abs=1e-12)
    dist = tiny_model.predict_dist(queries(*pair, [answer.departure]))
    np.testing.assert_allclose(
        answer.quantiles["minutes"], dist.ppf(np.array([0.5, 0.8, 0.9, 0.95])[:, None])[:, 0] / 60
    )
    arrivals = answer.arrival_table()
    assert arrivals["quantile"].tolist() == ["50 %", "80 %", "90 %", "95 %"]
    assert arrivals["arrival"].iloc[-1] <= f"{DEADLINE:%H:%M:%S}" or prob < 0.95


def test_it_is_a_search_not_the_deadline_minus_a_quantile(tiny_model, pair, scan):
    """The trip's distribution changes with the departure: the answer is where leaving
    then meets p, which differs from the deadline minus the quantile of a trip leaving
    at the deadline (the naive answer), and meets p where the naive one need not."""
    answer = schedule.arrive_by(tiny_model, *pair, DEADLINE, 0.95)
    at_deadline = tiny_model.predict_dist(queries(*pair, [DEADLINE]))
    naive = DEADLINE - pd.Timedelta(seconds=float(at_deadline.ppf(0.95)[0]))
    # the premise: leaving at the answer is another trip than leaving at the deadline
    at_answer = tiny_model.predict_dist(queries(*pair, [answer.departure]))
    assert at_answer.ppf(0.95)[0] != at_deadline.ppf(0.95)[0]
    assert naive != answer.departure
    _, probs = scan
    naive_lead = math.ceil((DEADLINE - naive).total_seconds())
    # on the search's whole seconds: leaving at the naive second meets p only if it is
    # not later than the answer
    naive_second = DEADLINE - pd.Timedelta(seconds=naive_lead)
    assert (probs[naive_lead] >= 0.95) == (naive_second <= answer.departure)


def test_the_curve_is_the_on_time_probability_per_departure(tiny_model, pair, scan):
    _, probs = scan
    answer = schedule.arrive_by(tiny_model, *pair, DEADLINE, 0.9)
    curve = answer.curve
    assert len(curve) == 181 and curve["departure"].is_monotonic_increasing
    assert curve["departure"].iloc[0] == DEADLINE - pd.Timedelta(hours=3)
    assert curve["departure"].iloc[-1] == DEADLINE
    np.testing.assert_allclose(curve["minutes_before"], np.arange(180, -1, -1))
    np.testing.assert_allclose(curve["prob_on_time"], probs[::60][::-1], atol=1e-12)
    assert curve["prob_on_time"].iloc[-1] == 0.0  # leaving at the deadline is late
    direct = schedule.on_time_probability(tiny_model, *pair, curve["departure"], DEADLINE)
    np.testing.assert_allclose(direct, curve["prob_on_time"], atol=1e-12)
    assert answer.best_prob == pytest.approx(curve["prob_on_time"].max())


def test_no_departure_meets_p(tiny_model, pair, scan):
    _, probs = scan
    answer = schedule.arrive_by(tiny_model, *pair, DEADLINE, 0.999, search_hours=0.25)
    assert (probs[: 900 + 1] < 0.999).all()  # the premise, by brute force
    assert not answer.found
    assert answer.departure is None and answer.forecast is None and answer.quantiles is None
    assert answer.arrival_table() is None and answer.minutes_allowed is None
    assert answer.best_prob == pytest.approx(probs[: 900 + 1 : 60].max(), abs=1e-12)
    assert answer.best_departure == DEADLINE - pd.Timedelta(minutes=15)  # the earliest
    assert answer.sentence() == answer.reason
    assert answer.reason.startswith("No departure in the 15 min before the deadline")
    assert "search further back" in answer.reason
    assert "99.9 %" in answer.reason
    assert answer.indices.planning_time_index > 0  # at the best departure


def test_naive_deadlines_are_read_in_the_models_time_zone(tiny_model, pair):
    naive = schedule.arrive_by(tiny_model, *pair, "2016-05-03 09:00", 0.9)
    aware = schedule.arrive_by(tiny_model, *pair, DEADLINE, 0.9)
    assert naive.departure == aware.departure and naive.deadline == DEADLINE


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prob": 1.0}, "strictly between 0 and 1"),
        ({"prob": 0.0}, "strictly between 0 and 1"),
        ({"prob": 0.9, "search_hours": 0}, "search_hours"),
        ({"prob": 0.9, "search_hours": 25}, "search_hours"),
        ({"prob": 0.9, "step_s": 0}, "step_s"),
        ({"prob": 0.9, "deadline": "not a time"}, "deadline"),
    ],
)
def test_bad_input_says_what_was_expected(tiny_model, pair, kwargs, message):
    kwargs = {"deadline": DEADLINE, **kwargs}
    deadline = kwargs.pop("deadline")
    with pytest.raises(ValueError, match=message):
        schedule.arrive_by(tiny_model, *pair, deadline, **kwargs)


def test_curve_csv(tiny_model, pair):
    answer = schedule.arrive_by(tiny_model, *pair, DEADLINE, 0.9)
    frame = pd.read_csv(__import__("io").BytesIO(schedule.curve_csv(answer, synthetic=True)))
    assert len(frame) == len(answer.curve)
    assert {"departure", "prob_on_time", "q0.9_min", "deadline", "latest_departure"} <= set(
        frame.columns
    )
    assert (frame["latest_departure"] == answer.departure.isoformat()).all()
    assert frame["origin_lat"].iloc[0] == pytest.approx(pair[0].lat, abs=1e-6)
    assert frame["data"].str.contains("SYNTHETIC").all()


# --------------------------------------------------------------------------- windows
def test_window_departures_are_the_midpoints_of_each_minute():
    start = pd.Timestamp("2016-05-03 08:00", tz="UTC")
    times = schedule.window_departures(start, start + pd.Timedelta(minutes=3))
    assert list(times) == [start + pd.Timedelta(seconds=s) for s in (30, 90, 150)]
    assert list(schedule.window_departures(start, start)) == [start]
    with pytest.raises(ValueError, match="before it starts"):
        schedule.window_departures(start, start - pd.Timedelta(minutes=1))
    with pytest.raises(ValueError, match="at most 24 hours"):
        schedule.window_departures(start, start + pd.Timedelta(hours=25))


def test_window_distribution_is_the_average_over_departures(tiny_model, pair):
    start = pd.Timestamp("2016-05-03 08:00", tz="UTC")
    end = start + pd.Timedelta(hours=1)
    pooled = schedule.window_distribution(tiny_model, *pair, start, end)
    n_members = len(tiny_model.members_)
    assert pooled.n_members == 60 * n_members and len(pooled) == 1
    one = tiny_model.predict_dist(queries(*pair, [start]))  # one departure's components
    assert pooled.n_components == 60 * one.n_components
    # brute force: each departure's own distribution, then the average cdf
    departures = start + pd.to_timedelta(30 + 60 * np.arange(60), unit="s")
    each = tiny_model.predict_dist(queries(*pair, departures))
    t = np.linspace(600.0, 4800.0, 25)
    brute = each.cdf(t[:, None]).mean(axis=1)
    np.testing.assert_allclose(pooled.cdf(t[:, None])[:, 0], brute, atol=1e-13)
    # its median solves the averaged cdf = 1/2
    median = optimize.brentq(lambda x: each.cdf(x).mean() - 0.5, 60.0, 1e5, xtol=1e-9)
    assert pooled.median()[0] == pytest.approx(median, rel=1e-9)
    # an empty window is the single departure
    single = schedule.window_distribution(tiny_model, *pair, start, start)
    alone = tiny_model.predict_dist(queries(*pair, [start]))
    np.testing.assert_allclose(single.cdf(t[:, None]), alone.cdf(t[:, None]), atol=1e-15)


def test_pooling_many_queries_at_once(tiny_model, pair):
    """K departures of n trips at once: trip j's mixture pools its K departures."""
    origin, dest = pair
    trips = queries(origin, dest, [DEADLINE] * 2)
    trips.loc[1, ["dest_lat", "dest_lon"]] = [origin.lat, origin.lon]  # a second trip
    times = DEADLINE + pd.to_timedelta([0, 20, 40], unit="min")
    stacked = pd.concat([trips.assign(start_time=t) for t in times], ignore_index=True)
    pooled = pool_departures(tiny_model.predict_dist(stacked), 3)
    t = np.array([[300.0], [1500.0], [2500.0]])
    for j in range(2):
        each = tiny_model.predict_dist(trips.iloc[[j] * 3].assign(start_time=times))
        np.testing.assert_allclose(pooled.cdf(t)[:, j], each.cdf(t).mean(axis=1), atol=1e-13)
    with pytest.raises(ValueError, match="cannot pool 6 queries into 4"):
        pool_departures(tiny_model.predict_dist(stacked), 4)


def test_depart_within_shows_the_window_like_one_departure(tiny_model, pair):
    start = pd.Timestamp("2016-05-03 08:00", tz="UTC")
    window = schedule.depart_within(tiny_model, *pair, start, "2016-05-03 09:00", 40.0)
    dist = window.forecast.dist
    assert window.n_departures == 60 and window.end == start + pd.Timedelta(hours=1)
    assert window.forecast.median_min == pytest.approx(dist.median()[0] / 60)
    assert window.forecast.prob_within == pytest.approx(dist.cdf(2400.0)[0])
    assert list(window.density.columns) == ["minutes", "density"]
    # the density integrates to about the mass between its 0.1 % and 99.5 % quantiles
    mass = np.trapezoid(window.density["density"], window.density["minutes"])
    assert 0.98 < mass < 1.0
    assert window.sentence().startswith("Leaving at any time between 08:00 and 09:00")
    assert window.indices.mean_min == pytest.approx(dist.mean()[0] / 60)


def test_default_pair_and_deadline(tiny_area):
    origin, dest = schedule.default_pair(tiny_area)
    busiest = tiny_area.grid.sort_values("n_points", ascending=False)
    assert origin.zone == busiest["zone"].iloc[0]
    assert dest.zone in set(busiest["zone"].iloc[1:11]) and dest.zone != origin.zone
    deadline = schedule.default_deadline("America/Chicago")
    assert deadline.dayofweek < 5 and (deadline.hour, deadline.minute) == (9, 0)
    assert deadline > pd.Timestamp.now(tz="America/Chicago")


def test_the_reason_says_whether_searching_further_back_could_help():
    earliest = pd.Timestamp("2016-05-03 06:00", tz="UTC")
    interior = pd.Timestamp("2016-05-03 07:12", tz="UTC")
    at_edge = schedule._no_answer(0.95, 3.0, earliest, 0.91, earliest)
    inside = schedule._no_answer(0.95, 3.0, interior, 0.91, earliest)
    assert at_edge.startswith("No departure in the 3 h before the deadline")
    assert "91 %, leaving at 06:00, the earliest departure searched" in at_edge
    assert "leaving at 07:12; leaving earlier than that does not help" in inside
