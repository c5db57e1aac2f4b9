"""Trips with stops: the total time through ordered stops against its definitions.

One leg is the model's own predictive; a fixed dwell shifts the total by exactly the
dwell (for a model that ignores the clock); and across a rush hour the total agrees
with a Monte-Carlo simulation of the legs (leg 1 sampled, leg 2 predicted at each
sampled arrival plus dwell and sampled, ...) to within the simulation's noise, while
predicting every leg at the first departure does not.

Tolerances: with n = 20,000 draws the Kolmogorov-Smirnov distance between the exact
cdf and the draws' empirical cdf exceeds 1.36 / sqrt(n) = 0.0096 with probability
0.05 (and 0.0115 with probability 0.01), so a KS distance below 0.02 leaves room for
the method's own error (measured: 0.006 on the tiny model); P(total within T) is a
binomial proportion with standard deviation sqrt(p (1 - p) / n), of which 4 are
allowed (a false alarm once in 16,000 runs). The seeds are fixed.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.planning.stops import (
    MAX_STOPS,
    NO_DWELL,
    QUANTILE_LEVELS,
    Dwell,
    Stop,
    StopsTrip,
    read_stops,
    stops_table,
    trip_with_stops,
)
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.synthetic import synthetic_lat_lon

N_DRAWS = 20_000


def point(x_km: float, y_km: float) -> tuple[float, float]:
    """Synthetica's point x km east and y km north of its centre."""
    lat, lon = synthetic_lat_lon(np.array([x_km]), np.array([y_km]))
    return float(lat[0]), float(lon[0])


def trip_stops(dwell: Dwell = NO_DWELL, *more: Dwell) -> list[Stop]:
    """A residential base, a downtown scene and a downtown hospital (and back out)."""
    places = [("base", -6, 6), ("scene", 0, 2), ("hospital", 2, 3.5), ("station", -6, 6.5)]
    dwells = [NO_DWELL, dwell, *more]
    count = len(dwells) + 1
    return [
        Stop(*point(x, y), name, dwells[i] if 0 < i < count - 1 else NO_DWELL)
        for i, (name, x, y) in enumerate(places[:count])
    ]


class RushHourModel:
    """A stand-in model: log-normal legs (two members, spread 0.25 on the log scale) at
    40 km/h plus two minutes, whose median doubles within about ten minutes of 08:00."""

    def __init__(self, tz: str = "UTC", *, clock: bool = True, refuse: str | None = None):
        self.tz_ = tz
        self.clock = clock
        self.refuse = refuse
        self.calls: list[pd.DataFrame] = []

    def predict_dist(self, queries: pd.DataFrame) -> MixtureDistribution:
        self.calls.append(queries)
        km = haversine_km(
            queries["origin_lat"].to_numpy(),
            queries["origin_lon"].to_numpy(),
            queries["dest_lat"].to_numpy(),
            queries["dest_lon"].to_numpy(),
        )
        if self.refuse is not None and np.any(km > float(self.refuse)):
            raise ValueError("the query lies outside the model's area")
        start = pd.DatetimeIndex(queries["start_time"])
        hour = start.hour + start.minute / 60 + start.second / 3600
        peak = 1.0 / (1.0 + np.exp(-(np.asarray(hour) - 8.0) * 12.0)) if self.clock else 0.0
        median = (120.0 + 90.0 * km) * (1.0 + peak)
        loc = np.log(median)[None, :] + np.array([[-0.05], [0.05]])
        return MixtureDistribution(loc, 0.25, transform="log")


def monte_carlo(model, stops, departure, n: int, seed: int, *, clock: bool = True):
    """Total times drawn leg by leg; ``clock=False`` predicts every leg at ``departure``."""
    rng = np.random.default_rng(seed)
    departure = pd.Timestamp(departure)
    elapsed = np.zeros(n)
    for k in range(1, len(stops)):
        origin, destination = stops[k - 1], stops[k]
        leaves = departure + pd.to_timedelta(elapsed if clock else np.zeros(n), unit="s")
        queries = pd.DataFrame(
            {
                "origin_lat": origin.lat,
                "origin_lon": origin.lon,
                "dest_lat": destination.lat,
                "dest_lon": destination.lon,
                "start_time": leaves,
            }
        )
        elapsed = elapsed + model.predict_dist(queries).sample(1, rng)[0]
        if k < len(stops) - 1:
            elapsed = elapsed + destination.dwell.sample_s(n, rng)
    return np.sort(elapsed)


def ks_distance(trip: StopsTrip, draws: np.ndarray) -> float:
    """sup |F(t) - F_n(t)| over the sorted draws, F interpolated linearly between its
    exact values 5 s apart (F'' is below 1e-6 per s^2 here: an error under 4e-6)."""
    grid = np.arange(draws[0] - 5.0, draws[-1] + 10.0, 5.0)
    cdf = np.interp(draws, grid, trip.cdf(grid))
    n = draws.size
    return float(max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n)))


def close_in_sigmas(p: float, draws: np.ndarray, within_s: float) -> float:
    """|p - share of draws within| in binomial standard deviations."""
    share = float(np.mean(draws <= within_s))
    return abs(p - share) / np.sqrt(max(p * (1 - p), 1e-12) / draws.size)


def query(stops, departure, k=1) -> pd.DataFrame:
    a, b = stops[k - 1], stops[k]
    return pd.DataFrame(
        {
            "origin_lat": [a.lat],
            "origin_lon": [a.lon],
            "dest_lat": [b.lat],
            "dest_lon": [b.lon],
            "start_time": [pd.Timestamp(departure)],
        }
    )


# ------------------------------------------------------------------ exact identities
def test_one_leg_is_the_models_own_predictive(tiny_model):
    stops = trip_stops()[:2]
    departure = pd.Timestamp("2024-03-05 07:10:23", tz="UTC")
    trip = trip_with_stops(tiny_model, stops, departure)
    own = tiny_model.predict_dist(query(stops, departure))
    times = np.linspace(60.0, 7200.0, 50)
    np.testing.assert_allclose(trip.cdf(times), own.cdf(times[:, None])[:, 0], atol=1e-13)
    np.testing.assert_allclose(trip.pdf(times), own.pdf(times[:, None])[:, 0], rtol=1e-10)
    levels = np.array(QUANTILE_LEVELS)
    np.testing.assert_allclose(trip.ppf(levels), own.ppf(levels[:, None])[:, 0], rtol=1e-9)
    assert trip.median() == pytest.approx(float(own.median()[0]), rel=1e-9)
    lo, hi = own.interval(0.9)
    assert trip.interval(0.9) == pytest.approx((float(lo[0]), float(hi[0])), rel=1e-9)
    assert trip.mean() == pytest.approx(float(own.mean()[0]), rel=1e-12)
    assert trip.unresolved_probability < 1e-8
    legs = trip.legs()
    assert len(legs) == 1 and legs["depart"].iloc[0] == departure
    assert legs["median_s"].iloc[0] == pytest.approx(trip.median(), rel=1e-9)


def test_one_leg_through_a_pit_map_is_the_models_own_predictive(skewed_model):
    stops = trip_stops()[:2]
    departure = pd.Timestamp("2024-03-05 08:00", tz="UTC")
    own = skewed_model.predict_dist(query(stops, departure))
    assert type(own).__name__ == "RecalibratedMixture"
    trip = trip_with_stops(skewed_model, stops, departure)
    times = np.linspace(120.0, 5400.0, 30)
    np.testing.assert_allclose(trip.cdf(times), own.cdf(times[:, None])[:, 0], atol=1e-13)
    levels = np.array([0.05, 0.5, 0.95])
    np.testing.assert_allclose(trip.ppf(levels), own.ppf(levels[:, None])[:, 0], rtol=1e-7)


def test_a_fixed_dwell_shifts_the_total_by_exactly_the_dwell():
    model = RushHourModel(clock=False)
    departure = pd.Timestamp("2024-03-05 07:40", tz="UTC")
    plain = trip_with_stops(model, trip_stops(Dwell.fixed(0)), departure)
    waited = trip_with_stops(model, trip_stops(Dwell.fixed(7.5)), departure)
    times = np.linspace(300.0, 4000.0, 40)
    np.testing.assert_allclose(waited.cdf(times + 450.0), plain.cdf(times), atol=1e-13)
    levels = np.array([0.01, 0.05, 0.5, 0.95, 0.99])
    np.testing.assert_allclose(waited.ppf(levels), plain.ppf(levels) + 450.0, rtol=1e-9)
    assert waited.mean() == pytest.approx(plain.mean() + 450.0, rel=1e-12)
    legs = waited.legs()
    # the second leg leaves exactly 7.5 minutes after the first arrives, at every level
    for end in ("", "_lo", "_hi"):
        gap = legs[f"depart{end}"].iloc[1] - legs[f"arrive{end}"].iloc[0]
        assert gap == pd.Timedelta(minutes=7.5)  # clock times to the second


def test_a_dwell_before_the_rush_hour_changes_the_next_leg_not_only_its_start():
    """With the clock, waiting at the scene pushes the second leg into the peak."""
    model = RushHourModel()
    departure = pd.Timestamp("2024-03-05 07:40", tz="UTC")
    plain = trip_with_stops(model, trip_stops(), departure)
    waited = trip_with_stops(model, trip_stops(Dwell.fixed(15)), departure)
    second = waited.legs()["median_s"].iloc[1] - plain.legs()["median_s"].iloc[1]
    assert second > 200.0  # the peak doubles the leg's median
    assert waited.median() - plain.median() > 900.0 + 200.0


# ----------------------------------------------------------------- against Monte Carlo
def test_matches_monte_carlo_across_the_morning_peak_of_the_tiny_model(tiny_model):
    """Leaving at 06:30, the first leg arrives around 06:55-07:10 and the second leaves
    on the tiny model's steep rise into the morning peak."""
    stops = trip_stops(Dwell.lognormal(10, 18))
    departure = pd.Timestamp("2024-03-05 06:30", tz="UTC")
    second = tiny_model.predict_dist(
        pd.concat([query(stops, departure, 2), query(stops, "2024-03-05 07:10+00:00", 2)])
    ).median()
    assert second[1] - second[0] > 120.0  # the predictive depends on when leg 2 leaves

    trip = trip_with_stops(tiny_model, stops, departure)
    draws = monte_carlo(tiny_model, stops, departure, N_DRAWS, seed=1)
    assert ks_distance(trip, draws) < 0.02
    within_s = 45 * 60.0
    p = float(trip.prob_within(within_s))
    assert 0.05 < p < 0.95
    assert close_in_sigmas(p, draws, within_s) < 4.0
    assert abs(trip.mean() - draws.mean()) < 4.0 * draws.std() / np.sqrt(N_DRAWS)

    # ignoring the dependence (leg 2 predicted at 06:30) is a different answer
    ignored = monte_carlo(tiny_model, stops, departure, N_DRAWS, seed=2, clock=False)
    assert ks_distance(trip, ignored) > 0.08
    assert close_in_sigmas(p, ignored, within_s) > 10.0


def test_three_legs_with_random_dwells_match_monte_carlo_across_a_sharp_peak():
    model = RushHourModel()
    stops = trip_stops(Dwell.lognormal(6, 12), Dwell.empirical([2, 3, 5, 8, 13, 21]))
    departure = pd.Timestamp("2024-03-05 07:35", tz="UTC")
    trip = trip_with_stops(model, stops, departure)
    # the model was asked once per leg, at departures a minute apart: as many as the
    # minutes between the legs' earliest and latest departures (1e-12 tails included)
    assert len(model.calls) == 3 and len(model.calls[0]) == 1
    assert all(len(call) < 300 for call in model.calls)
    draws = monte_carlo(model, stops, departure, N_DRAWS, seed=3)
    assert ks_distance(trip, draws) < 0.02
    for within_min in (45, 60, 75):
        p = float(trip.prob_within(60.0 * within_min))
        assert close_in_sigmas(p, draws, 60.0 * within_min) < 4.0
    ignored = monte_carlo(model, stops, departure, N_DRAWS, seed=4, clock=False)
    assert ks_distance(trip, ignored) > 0.2


def test_long_dwells_coarsen_the_lattice_and_still_match_monte_carlo():
    """Dwells of hours spread the later departures over most of a day: the lattice is
    coarsened (at most 480 nodes), so each leg asks the model a bounded number of times."""
    model = RushHourModel()
    stops = trip_stops(Dwell.lognormal(90, 180), Dwell.lognormal(60, 150))
    departure = pd.Timestamp("2024-03-05 05:00", tz="UTC")
    trip = trip_with_stops(model, stops, departure)
    assert all(len(call) <= 482 for call in model.calls)
    draws = monte_carlo(model, stops, departure, N_DRAWS, seed=6)
    assert ks_distance(trip, draws) < 0.02
    assert close_in_sigmas(float(trip.prob_within(4 * 3600.0)), draws, 4 * 3600.0) < 4.0
    # a dwell's lattice stops at 12 h: its log-normal tail beyond is reported, not lost
    beyond = [
        stats.norm.sf(np.log(720 / m) * 1.2815516 / np.log(p / m))
        for m, p in ((90, 180), (60, 150))
    ]
    assert trip.unresolved_probability == pytest.approx(sum(beyond), rel=0.01)


def test_a_coarser_lattice_gives_the_same_answer():
    model = RushHourModel()
    stops = trip_stops(Dwell.lognormal(6, 12))
    departure = pd.Timestamp("2024-03-05 07:45", tz="UTC")
    fine = trip_with_stops(model, stops, departure, step_s=5.0, departure_step_s=20.0)
    coarse = trip_with_stops(model, stops, departure)
    times = np.linspace(600.0, 4800.0, 200)
    assert np.max(np.abs(fine.cdf(times) - coarse.cdf(times))) < 2e-3


# ----------------------------------------------------------------------------- tables
def test_legs_and_quantile_tables():
    model = RushHourModel()
    stops = trip_stops(Dwell.fixed(10), Dwell.lognormal(5, 9))
    departure = pd.Timestamp("2024-03-05 07:30", tz="UTC")
    trip = trip_with_stops(model, stops, departure)
    legs = trip.legs()
    assert list(legs.columns) == [
        "leg", "from", "to", "depart", "depart_lo", "depart_hi", "median_s", "lo_s",
        "hi_s", "arrive", "arrive_lo", "arrive_hi", "dwell", "dwell_median_s",
    ]  # fmt: skip
    assert list(legs["from"]) == ["base", "scene", "hospital"]
    assert list(legs["to"]) == ["scene", "hospital", "station"]
    assert legs["depart"].iloc[0] == departure and legs["depart_lo"].iloc[0] == departure
    assert all(t.tz is not None for t in legs["arrive"])
    assert (legs["lo_s"] < legs["median_s"]).all() and (legs["median_s"] < legs["hi_s"]).all()
    assert legs["arrive"].iloc[-1] == trip.arrival(0.5)
    assert list(legs["dwell_median_s"]) == [600.0, 300.0, 0.0]
    # the last leg leaves after the random dwell: read from the lattice (+- 7.5 s)
    dwell_start = legs["arrive"].iloc[1]
    assert legs["depart"].iloc[2] - dwell_start > pd.Timedelta(minutes=4)

    table = trip.quantiles()
    assert list(table.columns) == ["part", "leg", "from", "to", "level", "time_s", "arrive"]
    assert len(table) == 99 * 4
    total = table[table["part"] == "total"]
    assert list(total["level"]) == list(QUANTILE_LEVELS)
    assert np.all(np.diff(total["time_s"]) > 0)
    elapsed = (total["arrive"] - departure).dt.total_seconds()
    np.testing.assert_allclose(elapsed, total["time_s"], atol=0.5)  # clock to the second
    sentence = trip.sentence(within_s=3600)
    assert sentence.startswith("base -> scene -> hospital -> station leaving 07:30")
    assert "P(within 60 min)" in sentence
    document = trip.to_dict(within_s=3600)
    assert document["total"]["p_within"] == pytest.approx(float(trip.prob_within(3600)))
    assert len(document["legs"]) == 3 and len(document["quantiles"]) == 99 * 4


def test_a_naive_departure_is_read_in_the_models_time_zone():
    model = RushHourModel(tz="America/Chicago")
    trip = trip_with_stops(model, trip_stops(), "2024-03-05 07:30")
    assert trip.departure == pd.Timestamp("2024-03-05 07:30", tz="America/Chicago")
    first = pd.DatetimeIndex(model.calls[0]["start_time"])
    assert str(first.tz) == "America/Chicago"
    assert first.min() <= trip.departure <= first.max()


def test_heavy_tails_are_reported_as_unresolved_never_as_faster():
    class HeavyTails(RushHourModel):
        def predict_dist(self, queries):
            light = super().predict_dist(queries)
            return MixtureDistribution(light.loc, 0.6, df=1.2, transform="log")

    trip = trip_with_stops(HeavyTails(), trip_stops(Dwell.fixed(5)), "2024-03-05 06:00")
    assert 0 < trip.unresolved_probability < 0.05
    # beyond the resolved range the cdf stops short of 1: by the unresolved mass (and
    # by the last leg's own tail, which is exact)
    assert 0.9 < float(trip.cdf(1e12)) <= 1.0 - trip.unresolved_probability + 1e-12
    assert np.isinf(trip.ppf(1.0 - trip.unresolved_probability / 2))
    assert np.isfinite(trip.median())


# ------------------------------------------------------------------------------ dwells
def test_dwell_parameterisations():
    lognormal = Dwell.lognormal(10, 18)
    assert lognormal.quantile_s(0.5) == pytest.approx(600.0)
    assert lognormal.quantile_s(0.9) == pytest.approx(1080.0)
    draws = lognormal.sample_s(200_000, random_state=0)
    assert np.mean(draws) == pytest.approx(lognormal.mean_s, rel=0.01)
    offset, pmf, unresolved = lognormal.lattice(15.0)
    assert offset == 7.5 and pmf.sum() + unresolved == pytest.approx(1.0, abs=1e-12)
    nodes = offset + 15.0 * np.arange(pmf.size)
    assert nodes @ pmf == pytest.approx(lognormal.mean_s, rel=1e-3)

    empirical = Dwell.empirical([3, 4.2, 7.9, 15])
    offset, pmf, unresolved = empirical.lattice(15.0)
    nodes = offset + 15.0 * np.arange(pmf.size)
    assert unresolved == 0 and nodes @ pmf == pytest.approx(empirical.mean_s, rel=1e-12)
    assert empirical.quantile_s(0.5) == 60 * 4.2
    assert Dwell.empirical([5, 5]) == Dwell.fixed(5)
    assert Dwell.lognormal(5, 5) == Dwell.fixed(5)
    assert NO_DWELL.is_zero and not Dwell.fixed(0.5).is_zero


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Dwell.fixed(-1), "between 0 and 720"),
        (lambda: Dwell.fixed(float("nan")), "between 0 and 720"),
        (lambda: Dwell.fixed(float("inf")), "between 0 and 720"),
        (lambda: Dwell.fixed("ten"), "got 'ten'"),
        (lambda: Dwell.lognormal(10, 8), "at least its median"),
        (lambda: Dwell.lognormal(0, 8), "median must be > 0"),
        (lambda: Dwell.empirical([]), "at least one"),
        (lambda: Dwell.empirical([3, -1]), "#2 (-1.0)"),
        (lambda: Dwell("weibull", (1.0,)), "not 'weibull'"),
    ],
)
def test_bad_dwells(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


# --------------------------------------------------------------------------- bad input
def test_bad_trips():
    model = RushHourModel()
    stops = trip_stops(Dwell.fixed(5))
    when = "2024-03-05 07:30"
    eleven = [*stops, *stops, *stops, stops[0], stops[1]]
    cases = [
        (stops[:1], when, "at least two stops, got 1"),
        (eleven, when, f"at most {MAX_STOPS} stops, got 11"),
        ([stops[0], Stop(stops[0].lat, stops[0].lon, "again"), stops[2]], when, "same point"),
        ([stops[0], stops[1], Stop(stops[2].lat, stops[2].lon, "h", Dwell.fixed(3))], when,
         r"stop 3 \(h\) has a dwell \(3 min\) but the trip ends there"),
        ([Stop(stops[0].lat, stops[0].lon, "b", Dwell.fixed(3)), stops[2]], when,
         "delay the departure instead"),
        (stops, "not a time", "the departure: 'not a time' is not a date and time"),
        (stops, None, "the departure: a date and time is needed, got None"),
        (["base", "scene"], when, "stop 1 must be a Stop"),
    ]  # fmt: skip
    for trip, departure, message in cases:
        with pytest.raises(ValueError, match=message):
            trip_with_stops(model, trip, departure)
    with pytest.raises(ValueError, match="step_s must be seconds between 1 and 120"):
        trip_with_stops(model, stops, when, step_s=0)
    with pytest.raises(ValueError, match="departure_step_s must be seconds between"):
        trip_with_stops(model, stops, when, departure_step_s=5)
    with pytest.raises(ValueError, match="not coordinates"):
        Stop(float("nan"), 1.0, "nowhere")
    with pytest.raises(ValueError, match="a stop needs a name"):
        Stop(1.0, 1.0, " ")
    with pytest.raises(ValueError, match="the dwell must be a Dwell"):
        Stop(1.0, 1.0, "x", dwell=10)
    trip = trip_with_stops(model, stops, when)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        trip.ppf(1.0)
    with pytest.raises(ValueError, match="NaN"):
        trip.cdf(float("nan"))


def test_a_leg_the_model_cannot_answer_is_named():
    stops = trip_stops(Dwell.fixed(5), Dwell.fixed(5))  # base, scene, hospital, station
    model = RushHourModel(refuse="7.5")  # refuses the long leg hospital -> station
    with pytest.raises(ValueError, match=r"leg 3 \(hospital -> station\): the model cannot answer"):
        trip_with_stops(model, stops, "2024-03-05 07:30")


# ------------------------------------------------------------------------------ files
def test_stops_from_a_csv_file_with_dwell_columns(tmp_path):
    base, scene, hospital = trip_stops()[:3]
    text = (
        "name,lat,lon,dwell_min,dwell_median_min,dwell_p90_min\n"
        f"base,{base.lat},{base.lon},,,\n"
        f"scene,{scene.lat},{scene.lon},,10,18\n"
        f"clinic,{scene.lat + 0.01},{scene.lon},4,,\n"
        f"hospital,{hospital.lat},{hospital.lon},0,,\n"
    )
    path = tmp_path / "stops.csv"
    path.write_text(text)
    stops = read_stops(path)
    assert [s.name for s in stops] == ["base", "scene", "clinic", "hospital"]
    assert [s.dwell for s in stops] == [NO_DWELL, Dwell.lognormal(10, 18), Dwell.fixed(4), NO_DWELL]
    frame = pd.read_csv(io.StringIO(text))
    parquet = tmp_path / "stops.parquet"
    frame.to_parquet(parquet)
    assert read_stops(parquet) == stops
    unnamed = stops_table(frame[["lat", "lon"]])
    assert [s.name for s in unnamed] == ["stop 2", "stop 3", "stop 4", "stop 5"]


@pytest.mark.parametrize(
    ("header", "cells", "message"),
    [
        ("dwell_min", ["", "ten", ""], "S.csv: column 'dwell_min': row 3: a dwell must be"),
        ("dwell_min", ["", "-2", ""], "S.csv: column 'dwell_min': row 3: .* got -2.0"),
        ("dwell_min", ["", "5", "3"], r"S.csv: row 4 \(c\): the last stop has a dwell"),
        ("dwell_min", ["4", "", ""], r"S.csv: row 2 \(a\): the first stop has a dwell"),
        ("dwell_median_min", ["", "5", ""], "'dwell_median_min' needs column 'dwell_p90_min'"),
        ("dwell_p90_min", ["", "5", ""], "'dwell_p90_min' needs column 'dwell_median_min'"),
        (
            "dwell_min,dwell_median_min,dwell_p90_min",
            [",,", "5,5,9", ",,"],
            "column 'dwell_min': row 3: give a dwell either as dwell_min",
        ),
        (
            "dwell_median_min,dwell_p90_min",
            [",", "5,", ","],
            "column 'dwell_median_min': row 3: a log-normal dwell needs both",
        ),
        ("dwell_median_min,dwell_p90_min", [",", "9,5", ","], "row 3: .*at least its median"),
    ],
)
def test_bad_stop_files_name_the_file_column_and_row(header, cells, message):
    lines = ["name,lat,lon," + header]
    for name, lat, cell in zip("abc", (41.79, 41.88, 41.87), cells, strict=True):
        lines.append(f"{name},{lat},-87.6,{cell}")
    with pytest.raises(ValueError, match=message):
        read_stops("\n".join(lines).encode(), source="S.csv")


def test_unreadable_stop_files():
    with pytest.raises(ValueError, match=r"S\.csv: column 'lat': row 3"):
        read_stops(b"name,lat,lon\na,41.8,-87.6\nb,north,-87.6\n", source="S.csv")
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_stops("/nonexistent/stops.csv")
