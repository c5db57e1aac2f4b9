"""Tests for vrvm.trips.model.features: TripFeaturizer, the kernel inputs of trips."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from vrvm.trips.model.features import TripFeaturizer, raw_distance_km
from vrvm.trips.places.geo import LocalProjection, haversine_km

CHICAGO = (41.8781, -87.6298)


def make_trips(n: int = 200, seed: int = 0, tz: str | None = "UTC") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    lat0, lon0 = CHICAGO
    seconds = rng.integers(1_420_070_400, 1_451_606_400, n)  # 2015
    return pd.DataFrame(
        {
            "origin_lat": lat0 + rng.normal(0, 0.05, n),
            "origin_lon": lon0 + rng.normal(0, 0.05, n),
            "dest_lat": lat0 + rng.normal(0, 0.05, n),
            "dest_lon": lon0 + rng.normal(0, 0.05, n),
            "start_time": pd.to_datetime(seconds, unit="s", utc=tz is not None),
            "travel_time_s": rng.uniform(60, 3600, n),
        }
    )


def single_trips(utc_times: list[str]) -> pd.DataFrame:
    n = len(utc_times)
    return pd.DataFrame(
        {
            "origin_lat": np.linspace(41.85, 41.95, n),
            "origin_lon": np.full(n, -87.65),
            "dest_lat": np.full(n, 41.88),
            "dest_lon": np.linspace(-87.70, -87.60, n),
            "start_time": pd.to_datetime(utc_times, utc=True),
        }
    )


def local_hours(feat: TripFeaturizer, X: np.ndarray) -> np.ndarray:
    """Recover the fractional local hour from the standardised cyclic pair."""
    i = feat.feature_names_.index("tod_sin")
    raw = X[:, i : i + 2] * feat.scale_[i : i + 2] + feat.mean_[i : i + 2]
    return np.mod(np.arctan2(raw[:, 0], raw[:, 1]) * 24 / (2 * np.pi), 24)


def weekend_flags(feat: TripFeaturizer, X: np.ndarray) -> np.ndarray:
    i = feat.feature_names_.index("is_weekend")
    return np.rint(X[:, i] * feat.scale_[i] + feat.mean_[i]).astype(int)


# --------------------------------------------------------------- featurizer


def test_featurizer_shapes_names_and_standardisation():
    trips = make_trips(500)
    feat = TripFeaturizer()
    X, d = feat.fit_transform(trips)
    assert feat.feature_names_ == [
        "origin_x_km",
        "origin_y_km",
        "dest_x_km",
        "dest_y_km",
        "tod_sin",
        "tod_cos",
        "is_weekend",
    ]
    assert X.shape == (500, 7) and X.dtype == np.float64
    assert d.shape == (500,) and d.dtype == np.float64
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0, atol=1e-12)
    raw = raw_distance_km(trips)
    np.testing.assert_allclose(d, (raw - raw.mean()) / raw.std(), atol=1e-12)
    assert feat.tz_ == "UTC"
    assert feat.n_samples_fit_ == 500


def test_featurizer_centre_is_median_of_all_points():
    trips = make_trips(301)
    feat = TripFeaturizer().fit(trips)
    lats = np.concatenate([trips["origin_lat"], trips["dest_lat"]])
    lons = np.concatenate([trips["origin_lon"], trips["dest_lon"]])
    assert feat.projection_ == LocalProjection(np.median(lats), np.median(lons))


def test_featurizer_planar_coordinates_are_km():
    trips = make_trips(100)
    feat = TripFeaturizer().fit(trips)
    X, _ = feat.transform(trips)
    raw = X[:, :4] * feat.scale_[:4] + feat.mean_[:4]
    planar = np.hypot(raw[:, 0] - raw[:, 2], raw[:, 1] - raw[:, 3])
    np.testing.assert_allclose(planar, raw_distance_km(trips), rtol=1e-4)


def test_featurizer_is_deterministic_and_fit_transform_matches():
    trips = make_trips(300)
    X1, d1 = TripFeaturizer().fit_transform(trips)
    feat = TripFeaturizer().fit(trips)
    X2, d2 = feat.transform(trips)
    X3, d3 = feat.transform(trips)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(X2, X3)
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_array_equal(d2, d3)


def test_featurizer_to_dict_json_round_trip_is_exact():
    train, test = make_trips(300, seed=3), make_trips(50, seed=4)
    feat = TripFeaturizer(tz="America/Chicago").fit(train)
    payload = json.loads(json.dumps(feat.to_dict()))
    clone = TripFeaturizer.from_dict(payload)
    X, d = feat.transform(test)
    Xc, dc = clone.transform(test)
    np.testing.assert_array_equal(X, Xc)
    np.testing.assert_array_equal(d, dc)
    assert clone.get_params() == feat.get_params()
    assert clone.feature_names_ == feat.feature_names_
    assert clone.projection_ == feat.projection_


def test_featurizer_from_dict_rejects_foreign_payloads():
    payload = TripFeaturizer().fit(make_trips(20)).to_dict()
    with pytest.raises(ValueError, match="not a serialised TripFeaturizer"):
        TripFeaturizer.from_dict({**payload, "format": "something else"})
    with pytest.raises(ValueError, match="version"):
        TripFeaturizer.from_dict({**payload, "version": 99})
    with pytest.raises(ValueError, match="inconsistent"):
        TripFeaturizer.from_dict({**payload, "mean": payload["mean"][:-1]})


def test_featurizer_optional_time_features():
    trips = make_trips(50)
    X, _ = TripFeaturizer(time_of_day=False).fit_transform(trips)
    assert X.shape == (50, 5)
    feat = TripFeaturizer(time_of_day=False, day_of_week=False)
    X, _ = feat.fit_transform(trips.drop(columns="start_time"))
    assert X.shape == (50, 4)
    assert feat.tz_ is None
    TripFeaturizer.from_dict(json.loads(json.dumps(feat.to_dict())))


def test_init_only_stores_parameters():
    feat = TripFeaturizer(time_of_day="yes", tz="Not/AZone")  # type: ignore[arg-type]
    assert feat.get_params() == {
        "time_of_day": "yes",
        "day_of_week": True,
        "tz": "Not/AZone",
        "distance": "km",
        "distance_in_kernel": False,
    }
    with pytest.raises(ValueError, match="time_of_day"):
        feat.fit(make_trips(10))
    with pytest.raises(ValueError, match="Not/AZone"):
        TripFeaturizer(tz="Not/AZone").fit(make_trips(10))
    with pytest.raises(ValueError, match="distance"):
        TripFeaturizer(distance="miles").fit(make_trips(10))


def test_log1p_distance_column():
    trips = make_trips(50)
    km = TripFeaturizer(tz="UTC").fit(trips)
    log = TripFeaturizer(tz="UTC", distance="log1p").fit(trips)
    raw = np.log1p(raw_distance_km(trips))
    _, d = log.transform(trips)
    np.testing.assert_allclose(d, (raw - raw.mean()) / raw.std(), rtol=1e-10)
    np.testing.assert_array_equal(km.transform(trips)[0], log.transform(trips)[0])
    same = TripFeaturizer.from_dict(log.to_dict())
    np.testing.assert_array_equal(same.transform(trips)[1], d)


@pytest.mark.parametrize("distance", ["km", "log1p"])
def test_distance_as_a_kernel_input(distance):
    trips = make_trips(50)
    plain = TripFeaturizer(tz="UTC", distance=distance).fit(trips)
    feat = TripFeaturizer(tz="UTC", distance=distance, distance_in_kernel=True).fit(trips)
    assert feat.feature_names_ == [*plain.feature_names_, "distance"]
    X, d = feat.transform(trips)
    np.testing.assert_array_equal(X[:, :-1], plain.transform(trips)[0])
    np.testing.assert_allclose(X[:, -1], d, rtol=1e-12, atol=1e-12)  # the same standardised d
    same = TripFeaturizer.from_dict(json.loads(json.dumps(feat.to_dict())))
    np.testing.assert_array_equal(same.transform(trips)[0], X)
    # dicts written before the option read as without it
    old = plain.to_dict()
    del old["params"]["distance_in_kernel"]
    assert not TripFeaturizer.from_dict(old).distance_in_kernel
    with pytest.raises(ValueError, match="distance_in_kernel"):
        TripFeaturizer(distance_in_kernel="yes").fit(trips)  # type: ignore[arg-type]


# -------------------------------------------------------------- local time


def test_local_hour_across_spring_forward_in_chicago():
    # 2015-03-08: clocks in Chicago jump from 02:00 CST to 03:00 CDT (08:00 UTC).
    trips = single_trips(
        ["2015-03-08 07:30", "2015-03-08 08:30", "2015-03-08 12:15", "2015-03-07 18:00"]
    )
    feat = TripFeaturizer(tz="America/Chicago").fit(trips)
    hours = local_hours(feat, feat.transform(trips)[0])
    np.testing.assert_allclose(hours, [1.5, 3.5, 7.25, 12.0], atol=1e-9)


def test_local_hour_across_fall_back_in_chicago():
    # 2015-11-01: 01:30 happens twice, at 06:30 UTC (CDT) and 07:30 UTC (CST).
    trips = single_trips(["2015-11-01 06:30", "2015-11-01 07:30", "2015-11-01 08:30"])
    feat = TripFeaturizer(tz="America/Chicago").fit(trips)
    hours = local_hours(feat, feat.transform(trips)[0])
    np.testing.assert_allclose(hours, [1.5, 1.5, 2.5], atol=1e-9)


def test_timezone_taken_from_data_when_not_given():
    trips = single_trips(["2015-03-08 07:30", "2015-03-08 08:30"])
    trips["start_time"] = trips["start_time"].dt.tz_convert("America/Chicago")
    feat = TripFeaturizer().fit(trips)
    assert feat.tz_ == "America/Chicago"
    np.testing.assert_allclose(local_hours(feat, feat.transform(trips)[0]), [1.5, 3.5])
    # Times in another zone are converted to the fitted zone, not read literally.
    utc = trips.assign(start_time=trips["start_time"].dt.tz_convert("UTC"))
    np.testing.assert_array_equal(feat.transform(utc)[0], feat.transform(trips)[0])


def test_naive_times_are_local_wall_clock_when_tz_given():
    aware = single_trips(["2015-03-08 07:30", "2015-03-08 08:30", "2015-07-04 17:45"])
    naive = aware.assign(
        start_time=aware["start_time"].dt.tz_convert("America/Chicago").dt.tz_localize(None)
    )
    feat = TripFeaturizer(tz="America/Chicago").fit(aware)
    np.testing.assert_array_equal(feat.transform(naive)[0], feat.transform(aware)[0])


def test_weekend_flag_uses_local_day():
    trips = single_trips(
        [
            "2015-03-07 05:30",  # Friday 23:30 in Chicago, Saturday in UTC -> weekday
            "2015-03-07 18:00",  # Saturday noon
            "2015-03-09 04:30",  # Sunday 23:30 CDT, Monday in UTC -> weekend
            "2015-03-09 17:00",  # Monday noon
            "1969-12-28 18:00",  # a Sunday before the unix epoch
        ]
    )
    feat = TripFeaturizer(tz="America/Chicago").fit(trips)
    assert weekend_flags(feat, feat.transform(trips)[0]).tolist() == [0, 1, 1, 0, 1]
    utc = TripFeaturizer(tz="UTC").fit(trips)
    assert weekend_flags(utc, utc.transform(trips)[0]).tolist() == [1, 1, 0, 0, 1]


def test_constant_column_gets_unit_scale_without_warnings():
    trips = single_trips(["2015-03-09 17:00", "2015-03-10 18:00", "2015-03-11 19:00"])
    feat = TripFeaturizer(tz="America/Chicago").fit(trips)
    i = feat.feature_names_.index("is_weekend")
    assert feat.scale_[i] == 1.0
    X, _ = feat.transform(trips)
    assert np.all(X[:, i] == 0.0)
    weekend = single_trips(["2015-03-07 18:00"])
    assert feat.transform(weekend)[0][0, i] == 1.0  # finite, one unit above the weekday mean


# ----------------------------------------------------------------- errors


def test_missing_columns_are_named():
    trips = make_trips(10).drop(columns=["dest_lon", "start_time"])
    with pytest.raises(ValueError, match=r"missing required column\(s\) \['dest_lon'\]"):
        TripFeaturizer().fit(trips)
    with pytest.raises(ValueError, match="start_time"):
        TripFeaturizer().fit(make_trips(10).drop(columns="start_time"))
    with pytest.raises(TypeError, match="DataFrame"):
        TripFeaturizer().fit(make_trips(10).to_numpy())


def test_naive_times_without_tz_are_rejected():
    with pytest.raises(ValueError, match="timezone-naive and no tz was given"):
        TripFeaturizer().fit(make_trips(10, tz=None))


def test_nan_coordinates_report_rows():
    trips = make_trips(30)
    trips.index = trips.index + 100
    trips.loc[[103, 117], "dest_lat"] = np.nan
    trips.loc[120, "origin_lon"] = np.nan
    with pytest.raises(ValueError, match=r"rows \[103, 117, 120\]") as info:
        TripFeaturizer().fit(trips)
    assert "dest_lat" in str(info.value) and "origin_lon" in str(info.value)
    feat = TripFeaturizer().fit(trips.dropna())
    with pytest.raises(ValueError, match="NaN"):
        feat.transform(trips)
    with pytest.raises(ValueError, match=r"rows \[103, 117, 120\]"):
        raw_distance_km(trips)


def test_other_input_errors():
    trips = make_trips(10)
    with pytest.raises(ValueError, match="pandas datetimes"):
        TripFeaturizer().fit(trips.assign(start_time=np.arange(10)))
    bad_time = trips.assign(start_time=trips["start_time"].where(trips.index != 4))
    with pytest.raises(ValueError, match=r"NaT\) at rows \[4\]"):
        TripFeaturizer().fit(bad_time)
    with pytest.raises(ValueError, match="out of range"):
        TripFeaturizer().fit(trips.assign(origin_lat=95.0))
    with pytest.raises(ValueError, match="zero trips"):
        TripFeaturizer().fit(trips.iloc[:0])
    with pytest.raises(NotFittedError):
        TripFeaturizer().transform(trips)
    with pytest.raises(NotFittedError):
        TripFeaturizer().to_dict()


# ------------------------------------------------------------- real data


def load_chicago(path) -> pd.DataFrame:
    raw = pd.read_csv(path)
    raw = raw.dropna(
        subset=["pickup_latitude", "pickup_longitude", "dropoff_latitude", "dropoff_longitude"]
    )
    return pd.DataFrame(
        {
            "origin_lat": raw["pickup_latitude"],
            "origin_lon": raw["pickup_longitude"],
            "dest_lat": raw["dropoff_latitude"],
            "dest_lon": raw["dropoff_longitude"],
            # The portal's "timestamp" encodes the local Chicago wall-clock time as if it
            # were UTC (its hour equals trip_start_hour), so read it as naive local time.
            "start_time": pd.to_datetime(raw["trip_start_timestamp"], unit="s"),
            "trip_start_hour": raw["trip_start_hour"],
            "trip_start_day": raw["trip_start_day"],
        }
    )


def test_chicago_sample(shared_data):
    trips = load_chicago(shared_data("chicago_taxi_trips.csv"))
    feat = TripFeaturizer(tz="America/Chicago")
    X, d = feat.fit_transform(trips)
    assert X.shape == (len(trips), 7) and np.isfinite(X).all() and np.isfinite(d).all()
    assert haversine_km(feat.projection_.lat0, feat.projection_.lon0, *CHICAGO) < 10
    hours = local_hours(feat, X)
    np.testing.assert_array_equal(np.floor(hours + 1e-9), trips["trip_start_hour"])
    weekend = trips["trip_start_day"].isin([1, 7]).astype(int)  # 1 = Sunday, 7 = Saturday
    np.testing.assert_array_equal(weekend_flags(feat, X), weekend)


def test_timezone_objects_are_named_for_serialisation():
    import datetime as dt
    import zoneinfo

    trips = single_trips(["2015-03-08 07:30", "2015-07-01 12:00"])
    feat = TripFeaturizer(tz=zoneinfo.ZoneInfo("America/Chicago")).fit(trips)
    assert feat.tz_ == "America/Chicago"
    fixed = TripFeaturizer(tz=dt.timezone(dt.timedelta(hours=-6))).fit(trips)
    assert fixed.tz_ == "UTC-06:00"
    np.testing.assert_allclose(local_hours(fixed, fixed.transform(trips)[0]), [1.5, 6.0])
    clone = TripFeaturizer.from_dict(json.loads(json.dumps(fixed.to_dict())))
    np.testing.assert_array_equal(clone.transform(trips)[0], fixed.transform(trips)[0])
    from_data = TripFeaturizer().fit(
        trips.assign(start_time=trips["start_time"].dt.tz_convert(zoneinfo.ZoneInfo("Asia/Tokyo")))
    )
    assert from_data.tz_ == "Asia/Tokyo"
