"""OD matrices (``vrvm.services.answers.matrix``) against per-pair brute force."""

from __future__ import annotations

import io
import threading

import h3
import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from vrvm import synthetic_city
from vrvm.engine._blas import in_threads
from vrvm.services.answers import matrix
from vrvm.services.map.places import busiest_zones, place_from_zone
from vrvm.trips.places.zone_files import ZoneFile

DEPARTURE = pd.Timestamp("2024-03-05 08:15")  # naive: the model's wall clock


@pytest.fixture(scope="module")
def places():
    trips = synthetic_city(12, seed=11)
    origins = matrix.points_table(
        pd.DataFrame({"lat": trips["origin_lat"][:4], "lon": trips["origin_lon"][:4]})
    )
    names = [f"D{i}" for i in range(5)]
    destinations = matrix.points_table(
        pd.DataFrame({"name": names, "lat": trips["dest_lat"][4:9], "lon": trips["dest_lon"][4:9]})
    )
    return origins, destinations


def one_pair_dist(model, origin, dest, departure=DEPARTURE):
    """The predictive of one pair, asked on its own (the brute force)."""
    query = pd.DataFrame(
        {
            "origin_lat": [origin.lat],
            "origin_lon": [origin.lon],
            "dest_lat": [dest.lat],
            "dest_lon": [dest.lon],
            "start_time": [departure.tz_localize(model.tz_)],
        }
    )
    return model.predict_dist(query)


def test_every_pair_matches_its_own_prediction(tiny_model, places):
    origins, destinations = places
    frame = matrix.matrix_frame(
        tiny_model, origins, destinations, DEPARTURE, quantiles=[0.1, 0.9], thresholds_s=[600]
    )
    assert len(frame) == 20
    # origin by origin, every destination in order
    assert frame["origin"].tolist() == np.repeat(origins["label"], 5).tolist()
    assert frame["destination"].tolist() == destinations["label"].tolist() * 4
    for _, row in frame.iterrows():
        origin = origins.set_index("label").loc[row["origin"]]
        dest = destinations.set_index("label").loc[row["destination"]]
        dist = one_pair_dist(tiny_model, origin, dest)
        q10, q50, q90 = dist.ppf(np.array([[0.1], [0.5], [0.9]]))[:, 0]
        np.testing.assert_allclose(row["mean_s"], dist.mean()[0], rtol=1e-12)
        np.testing.assert_allclose(row["median_s"], q50, rtol=1e-12)
        np.testing.assert_allclose(row["q0.1_s"], q10, rtol=1e-12)
        np.testing.assert_allclose(row["q0.9_s"], q90, rtol=1e-12)
        np.testing.assert_allclose(row["p_within_600s"], dist.cdf(600.0)[0], rtol=1e-12)


def test_quantiles_match_a_dense_scalar_root_find(tiny_model, places):
    origins, destinations = places
    frame = matrix.matrix_frame(tiny_model, origins, destinations, DEPARTURE, quantiles=[0.9])
    for k in (0, 7, 19):
        row = frame.iloc[k]
        origin = origins.set_index("label").loc[row["origin"]]
        dest = destinations.set_index("label").loc[row["destination"]]
        cdf = one_pair_dist(tiny_model, origin, dest).cdf
        for level, column in ((0.5, "median_s"), (0.9, "q0.9_s")):
            root = optimize.brentq(
                lambda t, q=level, cdf=cdf: cdf(t)[0] - q, 1.0, 1e6, xtol=1e-12, rtol=1e-14
            )
            np.testing.assert_allclose(row[column], root, rtol=1e-11)
            assert abs(cdf(row[column])[0] - level) < 1e-12


def test_batching_and_threads_do_not_change_any_value(tiny_model, places):
    origins, destinations = places
    options = {"quantiles": [0.25, 0.5, 0.9], "thresholds_s": [300, 900.5]}
    whole = list(matrix.iter_matrix(tiny_model, origins, destinations, DEPARTURE, **options))
    assert len(whole) == 1
    parts = list(
        matrix.iter_matrix(
            tiny_model, origins, destinations, DEPARTURE, batch_pairs=3, threads=3, **options
        )
    )
    assert [len(p) for p in parts] == [3] * 6 + [2]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole[0], rtol=1e-13)


def test_columns_are_named_for_their_quantile_and_threshold(tiny_model, places):
    origins, destinations = places
    frame = matrix.matrix_frame(
        tiny_model,
        origins,
        destinations,
        DEPARTURE,
        quantiles=[0.05, 0.9, 0.5],
        thresholds_s=[600, 900.5],
    )
    assert list(frame.columns) == [
        "origin",
        "destination",
        "mean_s",
        "median_s",
        "q0.05_s",
        "q0.9_s",
        "q0.5_s",
        "p_within_600s",
        "p_within_900.5s",
    ]
    assert (frame["q0.5_s"] == frame["median_s"]).all()
    assert (frame["q0.05_s"] < frame["median_s"]).all() and (
        frame["median_s"] < frame["q0.9_s"]
    ).all()
    assert (frame["p_within_600s"] <= frame["p_within_900.5s"]).all()
    assert frame["origin"].dtype == np.int64  # row numbers: no names
    assert frame["destination"].tolist()[:5] == ["D0", "D1", "D2", "D3", "D4"]


@pytest.mark.parametrize(
    "quantiles, thresholds, message",
    [
        ([0.9, 0.9], [], "q0.9_s twice"),
        ([1.0], [], "quantiles must lie strictly between 0 and 1"),
        ([], [0], "thresholds must lie strictly between 0 and inf"),
        ([], [np.nan], "thresholds must lie strictly"),
    ],
)
def test_bad_levels_are_refused(quantiles, thresholds, message):
    with pytest.raises(ValueError, match=message):
        matrix.matrix_columns(quantiles, thresholds)


def test_naive_and_aware_departures_agree(tiny_model, places):
    origins, destinations = places
    naive = matrix.matrix_frame(tiny_model, origins, destinations, DEPARTURE)
    aware = matrix.matrix_frame(
        tiny_model, origins, destinations, DEPARTURE.tz_localize(tiny_model.tz_).tz_convert("UTC")
    )
    pd.testing.assert_frame_equal(naive, aware)
    night = matrix.matrix_frame(tiny_model, origins, destinations, "2024-03-05 03:00")
    assert not np.allclose(night["median_s"], naive["median_s"])


def test_progress_counts_pairs(tiny_model, places):
    origins, destinations = places
    calls = []
    list(
        matrix.iter_matrix(
            tiny_model,
            origins,
            destinations,
            DEPARTURE,
            batch_pairs=8,
            progress=lambda done, total, elapsed, phase: calls.append((done, total, phase)),
        )
    )
    assert calls == [(0, 20, "pairs"), (8, 20, "pairs"), (16, 20, "pairs"), (20, 20, "pairs")]


def test_too_many_pairs_for_one_table(tiny_model, places):
    origins, destinations = places
    with pytest.raises(ValueError, match="20 pairs is more than 19"):
        matrix.matrix_frame(tiny_model, origins, destinations, DEPARTURE, max_pairs=19)


# ---------------------------------------------------------------------------- points
def test_points_from_coordinates_names_and_rows():
    frame = pd.DataFrame({" Latitude ": ["41.5", "42"], "LNG": [-87.5, -87.25]})
    points = matrix.points_table(frame)
    assert points["label"].tolist() == [2, 3]  # lines in the file, header = line 1
    assert points["lat"].tolist() == [41.5, 42.0] and points["lon"].tolist() == [-87.5, -87.25]
    named = matrix.points_table(frame.assign(name=[" depot ", "B"]))
    assert named["label"].tolist() == ["depot", "B"]


@pytest.mark.parametrize(
    "frame, message",
    [
        (
            pd.DataFrame({"lat": ["1", "x", "", "95"], "lon": [0, 0, 0, 0]}),
            r"O.csv: column 'lat': row 3 \('x'\), row 4 \(''\), row 5 \('95'\): expected a "
            "latitude in degrees between -90 and 90",
        ),
        (
            pd.DataFrame({"lat": [1.0], "lon": [181.0]}),
            r"O.csv: column 'lon': row 2 \(181.0\): expected a longitude",
        ),
        (
            pd.DataFrame({"lat": [1.0, 2.0], "lon": [0.0, 0.0], "name": ["a", " "]}),
            r"O.csv: column 'name': row 3 \(' '\): expected a value",
        ),
        (
            pd.DataFrame({"x": [1.0], "y": [2.0]}),
            "O.csv: expected columns lat and lon .* or a zone column of zone ids; found: x, y",
        ),
        (pd.DataFrame({"lat": [], "lon": []}), "O.csv: no rows"),
    ],
)
def test_bad_points_name_the_file_column_and_rows(frame, message):
    with pytest.raises(ValueError, match=message):
        matrix.points_table(frame, source="O.csv")


def test_many_bad_rows_are_counted():
    frame = pd.DataFrame({"lat": ["x"] * 9, "lon": [0.0] * 9})
    with pytest.raises(ValueError, match=r"row 6 \('x'\) and 4 more: expected"):
        matrix.points_table(frame, source="O.csv")


def test_h3_zone_ids_are_their_cells_centres():
    cells = [h3.latlng_to_cell(41.88, -87.63, 8), h3.latlng_to_cell(41.9, -87.7, 9)]
    points = matrix.points_table(pd.DataFrame({"zone": cells}))
    assert points["label"].tolist() == cells
    centres = np.array([h3.cell_to_latlng(c) for c in cells])
    np.testing.assert_array_equal(points[["lat", "lon"]].to_numpy(), centres)
    with pytest.raises(ValueError, match=r"D.csv: column 'zone': row 3 \('12'\): expected an H3"):
        matrix.points_table(pd.DataFrame({"zone": [cells[0], "12"]}), source="D.csv")


def square(lon0, lat0, size=0.01):
    ring = [[lon0, lat0], [lon0 + size, lat0], [lon0 + size, lat0 + size], [lon0, lat0 + size]]
    return {"type": "Polygon", "coordinates": [[*ring, ring[0]]]}


@pytest.fixture
def zone_file():
    features = [
        {"type": "Feature", "properties": {"id": 7, "name": "Loop"}, "geometry": square(0, 0)},
        {"type": "Feature", "properties": {"id": 8, "name": "Park"}, "geometry": square(1, 1)},
    ]
    collection = {"type": "FeatureCollection", "features": features}
    return ZoneFile.from_geojson(collection, id_property="id", label="zones.geojson")


def test_zone_file_ids_are_their_representative_points(zone_file):
    points = matrix.points_table(
        pd.DataFrame({"zone": ["8", 7.0], "name": ["park", "loop"]}), zones=zone_file
    )
    assert points["label"].tolist() == ["park", "loop"]
    lat, lon = zone_file.representative_points([8, 7])
    np.testing.assert_array_equal(points["lat"], lat)
    np.testing.assert_array_equal(points["lon"], lon)
    with pytest.raises(ValueError, match=r"row 3 \('9'\): expected an id of the zone file zones"):
        matrix.points_table(pd.DataFrame({"zone": ["7", "9"]}), source="O.csv", zones=zone_file)


def test_read_points_from_csv_and_parquet(tmp_path):
    frame = pd.DataFrame({"name": ["a", "b"], "lat": [41.5, 41.6], "lon": [-87.5, -87.6]})
    frame.to_csv(tmp_path / "p.csv", index=False)
    frame.to_parquet(tmp_path / "p.parquet", index=False)
    from_csv = matrix.read_points(tmp_path / "p.csv")
    from_parquet = matrix.read_points(str(tmp_path / "p.parquet"))
    pd.testing.assert_frame_equal(from_csv, from_parquet)
    assert from_csv["label"].tolist() == ["a", "b"]
    with pytest.raises(FileNotFoundError, match=r"missing\.csv: no such file"):
        matrix.read_points(tmp_path / "missing.csv")
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.csv could not be read"):
        matrix.read_points(tmp_path / "empty.csv")
    bad = matrix.read_points(io.BytesIO(b"lat,lon\n1,2\n"), source="upload.csv")
    assert bad["label"].tolist() == [2]


def test_zone_points_are_the_places_answers_use(tiny_area):
    zones = busiest_zones(tiny_area, 3)
    assert zones == tiny_area.grid.nlargest(3, "n_points", keep="first")["zone"].tolist()
    points = matrix.zone_points(tiny_area, zones)
    for zone, row in zip(zones, points.itertuples(), strict=True):
        place = place_from_zone(tiny_area, zone)
        assert (row.label, row.lat, row.lon) == (zone, place.lat, place.lon)
    with pytest.raises(ValueError, match="zones not in the service area"):
        matrix.zone_points(tiny_area, ["nowhere"])


# --------------------------------------------------------------------- what is shown
def test_heat_map_preview_and_downloads(tiny_model, tiny_area):
    zones = busiest_zones(tiny_area, 4)
    points = matrix.zone_points(tiny_area, zones)
    frame = matrix.matrix_frame(tiny_model, points, points, DEPARTURE, thresholds_s=[900])
    heat = matrix.median_heatmap(frame, tiny_area)
    labels = dict(zip(tiny_area.grid["zone"], tiny_area.grid["label"], strict=True))
    assert heat.shape == (4, 4) and heat.index.tolist() == [labels[z] for z in zones]
    np.testing.assert_allclose(heat.to_numpy().ravel(), frame["median_s"] / 60.0)
    assert matrix.median_heatmap(frame, tiny_area, max_side=3) is None
    preview = matrix.preview_table(frame, tiny_area, rows=5)
    assert list(preview.columns) == [
        "origin",
        "destination",
        "mean (min)",
        "median (min)",
        "P(≤ 15 min)",
    ]
    assert len(preview) == 5
    np.testing.assert_allclose(preview["P(≤ 15 min)"], frame["p_within_900s"][:5])
    pd.testing.assert_frame_equal(pd.read_csv(io.BytesIO(matrix.matrix_csv(frame))), frame)
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(matrix.matrix_parquet(frame))), frame)


def test_model_reference_is_relative_to_the_home(tiny_home):
    assert matrix.model_reference(tiny_home, 1) == "$VRVM_HOME/models/versions/v0001"


# ------------------------------------------------------------------------ in_threads
def test_in_threads_keeps_order_and_stops_when_abandoned():
    started = []
    lock = threading.Lock()

    def square_it(x):
        with lock:
            started.append(x)
        return x * x

    assert list(in_threads(square_it, range(50), threads=4)) == [x * x for x in range(50)]
    started.clear()
    results = in_threads(square_it, range(1000), threads=2)
    assert [next(results) for _ in range(3)] == [0, 1, 4]
    results.close()
    assert len(started) <= 6  # at most threads + 1 taken beyond what was used
