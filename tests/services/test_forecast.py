"""The answer for one trip: summary, quantiles, density, day profile, observed trips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.answers.forecast import (
    answer_od,
    density_curve,
    forecast_od,
    member_medians,
    observed_pair_trips,
    quantile_table,
    query_frame,
    time_of_day_profile,
)
from vrvm.services.map.places import place_from_zone
from vrvm.services.map.support import origin_support, pair_support
from vrvm.trips.home import Home
from vrvm.trips.places.zones import latlng_to_zone

DEPARTURE = pd.Timestamp("2024-03-05 08:15", tz="UTC")


def test_forecast_in_minutes_matches_the_mixture(tiny_model, pair):
    origin, dest = pair
    forecast = forecast_od(tiny_model, origin, dest, DEPARTURE, threshold_min=20)
    dist = tiny_model.predict_dist(query_frame(origin, dest, DEPARTURE))
    assert forecast.median_min == pytest.approx(dist.median()[0] / 60)
    assert forecast.mean_min == pytest.approx(dist.mean()[0] / 60)
    assert forecast.prob_within == pytest.approx(dist.cdf(1200.0)[0])
    table = forecast.intervals
    assert table["level"].tolist() == [0.5, 0.8, 0.95]
    assert table["interval"].tolist() == ["50 %", "80 %", "95 %"]
    lo95, hi95 = dist.interval(0.95)
    assert table["lower_min"].iloc[2] == pytest.approx(lo95[0] / 60)
    assert table["upper_min"].iloc[2] == pytest.approx(hi95[0] / 60)
    # nested intervals around the median
    assert np.all(np.diff(table["lower_min"]) < 0) and np.all(np.diff(table["upper_min"]) > 0)
    assert table["lower_min"].iloc[0] < forecast.median_min < table["upper_min"].iloc[0]
    np.testing.assert_allclose(table["width_min"], table["upper_min"] - table["lower_min"])
    text = forecast.summary_text()
    assert f"{forecast.median_min:.0f} min" in text and "P(arrive within 20 min)" in text


def test_quantile_table(tiny_model, pair):
    dist = tiny_model.predict_dist(query_frame(*pair, DEPARTURE))
    table = quantile_table(dist, (0.1, 0.5, 0.9))
    assert table["minutes"].is_monotonic_increasing
    assert table["minutes"].iloc[1] == pytest.approx(dist.median()[0] / 60)


def test_density_curve_is_the_mixture_and_its_members(tiny_model, pair):
    dist = tiny_model.predict_dist(query_frame(*pair, DEPARTURE))
    curve = density_curve(dist, n_points=800)
    members = curve[[c for c in curve.columns if c.startswith("member_")]]
    assert members.shape[1] == tiny_model.n_members
    np.testing.assert_allclose(members.sum(axis=1), curve["density"], rtol=1e-10)
    mass = np.trapezoid(curve["density"], curve["minutes"])
    assert 0.99 < mass <= 1.0
    assert curve["minutes"].is_monotonic_increasing and curve["minutes"].iloc[0] > 0


def test_time_of_day_profile(tiny_model, pair):
    origin, dest = pair
    profile = time_of_day_profile(tiny_model, origin, dest, DEPARTURE, step_min=15)
    assert len(profile) == 97 and profile["hour"].iloc[-1] == 24.0
    quantiles = profile[["q05", "q10", "q25", "q50", "q75", "q90", "q95"]].to_numpy()
    assert np.all(np.diff(quantiles, axis=1) > 0)
    at_departure = profile.loc[profile["hour"] == 8.25, "q50"].iloc[0]
    single = forecast_od(tiny_model, origin, dest, DEPARTURE, 10).median_min
    assert at_departure == pytest.approx(single, rel=1e-9)
    assert profile["departure"].iloc[0] == pd.Timestamp("2024-03-05", tz="UTC")
    dist = tiny_model.predict_dist(query_frame(origin, dest, DEPARTURE))
    assert profile.loc[profile["hour"] == 8.25, "mean"].iloc[0] == pytest.approx(
        dist.mean()[0] / 60.0, rel=1e-9
    )
    quantiles_only = time_of_day_profile(tiny_model, origin, dest, DEPARTURE, mean=False)
    assert "mean" not in quantiles_only
    pd.testing.assert_frame_equal(quantiles_only, profile.drop(columns="mean"))


@pytest.mark.parametrize("day", ["2024-03-10", "2024-11-03"])
def test_time_of_day_profile_across_daylight_saving_changes(tiny_model, pair, day):
    import copy

    chicago = copy.copy(tiny_model)
    chicago.tz_ = "America/Chicago"
    departure = pd.Timestamp(f"{day} 12:00", tz="America/Chicago").tz_convert("UTC")
    profile = time_of_day_profile(chicago, *pair, departure)
    assert len(profile) == 97 and profile["departure"].iloc[0].day == int(day[-2:])
    assert str(profile["departure"].dt.tz) == "America/Chicago"


def test_observed_trips_of_a_zone_pair(tiny_home, tiny_model, tiny_area, pair):
    trips = Home(tiny_home).load_training_trips(tiny_model)
    origin, dest = pair
    observed, rings = observed_pair_trips(trips, origin, dest, tiny_area.resolution, min_trips=1)
    o = latlng_to_zone(trips["origin_lat"], trips["origin_lon"], tiny_area.resolution)
    d = latlng_to_zone(trips["dest_lat"], trips["dest_lon"], tiny_area.resolution)
    expected = trips[(o == origin.zone) & (d == dest.zone)]
    if len(expected):
        assert rings == 0 and len(observed) == len(expected)
        np.testing.assert_allclose(
            np.sort(observed["minutes"]), np.sort(expected["travel_time_s"] / 60)
        )
    # asking for many trips widens the search to neighbouring zones
    wide, wide_rings = observed_pair_trips(
        trips, origin, dest, tiny_area.resolution, min_trips=10**6, max_rings=1
    )
    assert wide_rings == 1 and len(wide) >= len(observed)
    assert set(wide.columns) == {"hour", "minutes", "start_time", "weekend"}
    assert observed_pair_trips(None, origin, dest, 8)[0].empty


def busiest_and_emptiest_pairs(area):
    """The zone pair with the most support trips at any time, and one with none."""
    support = area.support
    origins = area.grid.sort_values("n_points", ascending=False).index[:5]
    best = max(
        ((o, int(np.argmax(origin_support(support, o, 0)["support_trips"]))) for o in origins),
        key=lambda od: pair_support(support, od[0], od[1], 0).n_near,
    )
    o = int(origins[0])
    empty = int(np.argmin(origin_support(support, o, 0)["support_trips"]))
    place = lambda row: place_from_zone(area, area.grid["zone"][row])  # noqa: E731
    return (place(best[0]), place(best[1])), (place(o), place(empty))


def test_answer_says_how_much_data_stands_behind_it(tiny_home, tiny_model, tiny_area):
    trips = Home(tiny_home).load_training_trips(tiny_model)
    busy, empty = busiest_and_emptiest_pairs(tiny_area)
    kwargs = {"trips": trips, "resolution": tiny_area.resolution, "area": tiny_area}
    answer = answer_od(tiny_model, *busy, DEPARTURE, 20, **kwargs)
    assert answer.support is not None and not answer.support.thin
    assert answer.support.n_near >= answer.support.n_near_at_time
    assert "caution" not in answer.support.sentence()
    lonely = answer_od(tiny_model, *empty, DEPARTURE, 20, **kwargs)
    assert lonely.support.thin and lonely.support.n_near == 0
    assert lonely.support.sentence().startswith("No training trip")
    # without the area (or its trips) nothing is claimed
    assert answer_od(tiny_model, *busy, DEPARTURE, 20, trips=None, resolution=8).support is None


def test_member_medians_are_the_members_own(tiny_model, pair):
    dist = tiny_model.predict_dist(query_frame(*pair, DEPARTURE))
    medians = member_medians(dist)[:, 0] / 60
    m_count = tiny_model.n_members
    assert medians.shape == (m_count,)
    for m, median in enumerate(medians):  # each member alone: its components m, M + m, ...
        df = None if dist.df is None else dist.df[m::m_count, :1]
        alone = MixtureDistribution(
            dist.loc[m::m_count, :1], dist.scale[m::m_count, :1], df, dist.transform
        )
        assert median == pytest.approx(alone.median()[0] / 60, rel=1e-9)
    base = dist.base if hasattr(dist, "base") else dist  # the members of F, before a map
    mixture = base.median()[0] / 60
    assert medians.min() <= mixture <= medians.max()


def test_a_weekend_answer_from_weekday_trips_is_flagged_at_every_door(tiny_home, tiny_model):
    """The page's answer and the batch answers (API, matrices, notebook) both say when
    the model learned nothing of the departure's kind of day."""
    from vrvm.services.answers.summaries import trip_summaries
    from vrvm.services.map.area import build_service_area
    from vrvm.services.planning.coverage import coverage_grid, coverage_map, reachable_summary

    trips = Home(tiny_home).load_training_trips(tiny_model)
    local = trips["start_time"].dt.tz_convert(tiny_model.tz_)
    weekdays = trips.loc[local.dt.weekday.to_numpy() < 5].reset_index(drop=True)
    assert 0 < len(weekdays) < len(trips)
    area = build_service_area(tiny_model, trips=weekdays)
    busy, _ = busiest_and_emptiest_pairs(area)
    kwargs = {"trips": weekdays, "resolution": area.resolution, "area": area}
    saturday = DEPARTURE + pd.Timedelta(days=4)  # Tuesday 2024-03-05 -> Saturday
    answer = answer_od(tiny_model, *busy, saturday, 20, **kwargs)
    assert not answer.support.thin and answer.support.thin_day and answer.support.caution
    assert "for a Saturday" in answer.support.sentence()
    tuesday = answer_od(tiny_model, *busy, DEPARTURE, 20, **kwargs)
    assert not tuesday.support.caution and "weekend" not in tuesday.support.sentence()

    queries = pd.concat([query_frame(*busy, DEPARTURE), query_frame(*busy, saturday)])
    table = trip_summaries(tiny_model, queries.reset_index(drop=True), area=area)
    assert table["support_trips"].tolist()[0] == table["support_trips"].tolist()[1] > 0
    assert table["thin"].tolist() == [False, True]
    # the reach map: every zone faded on a Saturday, only the thin pairs on a Tuesday
    reach = {
        when: coverage_grid(tiny_model, area, busy[0], when, 20) for when in (DEPARTURE, saturday)
    }
    assert reach[saturday]["thin"].all()
    assert not reach[DEPARTURE]["thin"].all()
    assert reach[DEPARTURE]["support_trips"].equals(reach[saturday]["support_trips"])
    notes = {when: reachable_summary(grid, 0.8)["day_note"] for when, grid in reach.items()}
    assert "for a Saturday" in notes[saturday] and notes[DEPARTURE] == ""
    legend = coverage_map(reach[saturday], "probability", 20)[2]
    assert legend[-1][0].endswith("on this kind of day)")


def test_member_medians_of_members_whose_components_differ_are_solved():
    # two members, two blocks: member m is components m and 2 + m, at other locations
    loc = np.log([[500.0, 800.0], [600.0, 900.0], [560.0, 700.0], [640.0, 1000.0]])
    dist = MixtureDistribution(loc, 0.25, transform="log", n_members=2)
    medians = member_medians(dist)
    assert medians.shape == (2, 2)
    for m in range(2):
        assert np.allclose(dist.member_cdf(medians[m])[m], 0.5, atol=1e-9)
    shared = MixtureDistribution(np.vstack([loc[:2], loc[:2]]), 0.25, transform="log", n_members=2)
    assert np.allclose(member_medians(shared), np.exp(loc[:2]))
