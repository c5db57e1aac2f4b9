"""The notebook API (vrvm.travel_time_matrix, isochrones, reach, arrive_by, coverage_matrix):
the same numbers as ``vrvm matrix`` and the services, real GeoDataFrames, refused input."""

from __future__ import annotations

import io
import warnings

import geopandas as gpd
import h3
import numpy as np
import pandas as pd
import pytest
import shapely

import vrvm
from tests.conftest import PLACES_ONLY
from vrvm import TravelTimeModel, read_trips
from vrvm.cli import main
from vrvm.services.answers import schedule
from vrvm.services.answers.matrix import iter_matrix, matrix_frame
from vrvm.services.map.area import build_service_area
from vrvm.services.map.places import Place
from vrvm.services.notebook import inputs
from vrvm.services.planning.fleet import bases_at_points, fleet_coverage
from vrvm.services.planning.isochrones import probability_isochrones
from vrvm.services.planning.siting import siting_probabilities
from vrvm.trips.home import Home

DEPART = "2024-03-05 08:15"
TOL = 1e-9


@pytest.fixture(scope="module")
def model_dir(tiny_home):
    return Home(tiny_home).models.active_path()


@pytest.fixture(scope="module")
def model(model_dir):
    return TravelTimeModel.load(model_dir)


@pytest.fixture(scope="module")
def trips(tiny_home, model):
    return Home(tiny_home).load_training_trips(model)


@pytest.fixture(scope="module")
def places(trips):
    """Five named places where the synthetic city's trips start."""
    ends = trips.iloc[[3, 40, 400, 900, 1500]]
    return pd.DataFrame(
        {
            "id": ["depot", "school", "clinic", "park", "mall"],
            "lat": ends["origin_lat"].to_numpy(),
            "lon": ends["origin_lon"].to_numpy(),
        }
    )


def run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------ the same numbers
@pytest.mark.parametrize("window", [0, 20])
def test_the_matrix_is_what_vrvm_matrix_writes(model, model_dir, places, tmp_path, window):
    places.rename(columns={"id": "name"}).to_csv(tmp_path / "P.csv", index=False)
    status, _, err = run(
        "matrix", model_dir, "--origins", tmp_path / "P.csv", "--destinations",
        tmp_path / "P.csv", "--depart", DEPART, "--quantiles", "0.1,0.9", "--prob-within",
        "600,1200", "--window", window, "--out", tmp_path / "M.csv", "--quiet",
    )  # fmt: skip
    assert status == 0, err
    cli = pd.read_csv(tmp_path / "M.csv")
    table = vrvm.travel_time_matrix(
        model, places, places, departure=DEPART, percentiles=(10, 50, 90),
        within_min=(10, 20), departure_window_min=window,
    )  # fmt: skip
    assert list(table.columns) == [
        "from_id", "to_id", "travel_time_p10", "travel_time_p50", "travel_time_p90",
        "travel_time_mean", "p_within_10min", "p_within_20min", "outside_area",
    ]  # fmt: skip
    assert table["from_id"].tolist() == cli["origin"].tolist()
    assert table["to_id"].tolist() == cli["destination"].tolist()
    for ours, theirs, scale in [
        ("travel_time_p10", "q0.1_s", 60.0),
        ("travel_time_p50", "median_s", 60.0),
        ("travel_time_p90", "q0.9_s", 60.0),
        ("travel_time_mean", "mean_s", 60.0),
        ("p_within_10min", "p_within_600s", 1.0),
        ("p_within_20min", "p_within_1200s", 1.0),
    ]:
        np.testing.assert_allclose(table[ours] * scale, cli[theirs], rtol=TOL, atol=TOL)
    assert not table["outside_area"].any()


def test_a_window_is_the_predict_pages_departure_window(model, places):
    table = vrvm.travel_time_matrix(
        model, places.iloc[:1], places.iloc[1:2], departure=DEPART, within_min=15,
        departure_window_min=30,
    )  # fmt: skip
    a, b = places.iloc[0], places.iloc[1]
    start = pd.Timestamp(DEPART)
    answer = schedule.depart_within(
        model,
        Place(a["lat"], a["lon"], None, "a", kind="point"),
        Place(b["lat"], b["lon"], None, "b", kind="point"),
        start,
        start + pd.Timedelta(minutes=30),
        15,
    )
    assert table["travel_time_p50"].iloc[0] == pytest.approx(answer.forecast.median_min, rel=TOL)
    assert table["p_within_15min"].iloc[0] == pytest.approx(answer.forecast.prob_within, rel=TOL)
    single = vrvm.travel_time_matrix(
        model, places.iloc[:1], places.iloc[1:2], departure=DEPART, within_min=15
    )
    assert single["travel_time_p50"].iloc[0] != table["travel_time_p50"].iloc[0]


def test_support_columns_are_the_dashboards_with_the_training_trips(model, trips, places):
    table = vrvm.travel_time_matrix(model, places, places, departure=DEPART, trips=trips)
    area = build_service_area(model, trips=trips)
    queries = pd.DataFrame(
        {
            "label": places["id"],
            "lat": places["lat"],
            "lon": places["lon"],
        }
    )
    expected = pd.concat(list(iter_matrix(model, queries, queries, DEPART, area=area)))
    for column in ("support_trips", "support_trips_at_time", "thin"):
        assert table[column].tolist() == expected[column].tolist()
    assert table["support_trips"].sum() > 0


def test_isochrones_are_the_plan_pages(model, trips, places):
    regions = vrvm.isochrones(
        model, places.iloc[:1], departure=DEPART, within_min=20, probabilities=(0.5, 0.9),
        direction="to", trips=trips,
    )  # fmt: skip
    area = build_service_area(model, trips=trips)
    lat, lon = round(places["lat"].iloc[0], 6), round(places["lon"].iloc[0], 6)
    zone = str(area.grid["zone"].iloc[int(area.zone_rows([lat], [lon])[0])])
    result = probability_isochrones(
        model, area, Place(lat, lon, zone, "depot", kind="point"), DEPART, 20, (0.5, 0.9),
        direction="to",
    )  # fmt: skip
    assert isinstance(regions, gpd.GeoDataFrame) and regions.crs.to_epsg() == 4326
    assert list(regions.columns) == ["probability", "within_min", "area_km2", "n_zones", "geometry"]
    for row, level in zip(regions.itertuples(), result.levels, strict=True):
        assert row.probability == level.probability and row.n_zones == level.n_zones
        assert row.area_km2 == pytest.approx(level.area_km2, rel=TOL)
        assert row.geometry.equals(level.geometry)
    assert regions["area_km2"].iloc[0] >= regions["area_km2"].iloc[1] > 0


def test_reach_is_fleet_coverage_with_the_median_from_the_best_base(model, places):
    bases = places.iloc[:3]
    zones = vrvm.reach(model, bases, departure=DEPART, within_min=12)
    area = inputs.model_extent(model)
    located = bases_at_points(area, bases["id"], bases["lat"], bases["lon"])
    coverage = fleet_coverage(model, area, located, DEPART, 12)
    assert zones["id"].tolist() == coverage.grid["zone"].tolist()
    np.testing.assert_allclose(zones["p_best"], coverage.grid["p_best"], rtol=TOL, atol=TOL)
    np.testing.assert_allclose(zones["p_any"], coverage.grid["p_any"], rtol=TOL, atol=TOL)
    assert zones["best_base"].tolist() == coverage.grid["best_base"].tolist()
    row = 7  # the median from that zone's best base, as the OD matrix gives it
    best = bases[bases["id"] == zones["best_base"].iloc[row]]
    target = pd.DataFrame({"id": ["z"], "lat": [area.grid["lat"].iloc[row]],
                           "lon": [area.grid["lon"].iloc[row]]})  # fmt: skip
    one = vrvm.travel_time_matrix(model, best.round(6), target, departure=DEPART)
    assert zones["median_min"].iloc[row] == pytest.approx(one["travel_time_p50"].iloc[0], rel=TOL)
    # every zone's, as the whole matrix of the bases gives it (reach predicts one pair a zone)
    points = area.grid[["zone", "lat", "lon"]].rename(columns={"zone": "label"})
    sources = located[["name", "lat", "lon"]].rename(columns={"name": "label"})
    whole = matrix_frame(model, sources, points, DEPART, max_pairs=10**6)
    median = whole["median_s"].to_numpy().reshape(len(bases), len(points)) / 60.0
    best_rows = np.argmax(coverage.prob, axis=0)
    picked = median[best_rows, np.arange(len(points))]
    np.testing.assert_allclose(zones["median_min"], picked, rtol=1e-12)
    assert set(zones.columns) >= {"p_best", "p_any", "best_base", "median_min", "geometry"}
    assert (zones.geometry.geom_type == "Polygon").all() and zones.crs.to_epsg() == 4326


def test_arrive_by_is_the_schedule_search(model, places):
    plan = vrvm.arrive_by(
        model, places.iloc[:1], places.iloc[3:4], deadline="2024-03-05 09:00", probability=0.8
    )
    ends = [
        Place(round(r["lat"], 6), round(r["lon"], 6), None, r["id"], kind="point")
        for _, r in places.iloc[[0, 3]].iterrows()
    ]
    answer = schedule.arrive_by(model, ends[0], ends[1], "2024-03-05 09:00", 0.8)
    assert plan.departure == answer.departure and plan.departure.tz is not None
    assert plan.prob_on_time == pytest.approx(answer.prob_at_departure, rel=TOL)
    seconds = (plan.deadline - plan.departure).total_seconds()
    assert float(plan.distribution.cdf(seconds)[0]) == pytest.approx(plan.prob_on_time, rel=TOL)
    assert plan.prob_on_time >= 0.8 and plan.minutes_before > 0


def test_arrive_by_says_when_no_departure_is_on_time(model, places):
    with pytest.raises(ValueError, match=r"[Nn]o departure"):
        vrvm.arrive_by(
            model, places.iloc[:1], places.iloc[3:4], deadline="2024-03-05 09:00",
            probability=0.999, search_hours=0.05,
        )  # fmt: skip


def test_the_coverage_matrix_is_what_siting_solves_on(model, places):
    cover = vrvm.coverage_matrix(
        model, places.iloc[:2], places, departure=[DEPART, "2024-03-05 17:30"], within_min=15
    )
    expected = siting_probabilities(
        model, places.iloc[:2], places, 900.0, [DEPART, "2024-03-05 17:30"]
    )
    np.testing.assert_allclose(cover.to_numpy(), expected, rtol=TOL, atol=TOL)
    assert cover.index.tolist() == ["depot", "school"] and cover.columns.tolist() == list(
        places["id"]
    )
    assert cover.attrs["outside_area"] == []


# ----------------------------------------------------------------------- the inputs
def test_any_crs_and_polygons_give_the_same_points(model, places):
    points = gpd.GeoDataFrame(
        places[["id"]], geometry=gpd.points_from_xy(places["lon"], places["lat"]), crs=4326
    )
    direct = vrvm.travel_time_matrix(model, places, places, departure=DEPART)
    projected = points.to_crs(points.estimate_utm_crs())
    converted = vrvm.travel_time_matrix(model, projected, points, departure=DEPART)
    np.testing.assert_allclose(
        converted["travel_time_p50"], direct["travel_time_p50"], rtol=1e-7, atol=1e-7
    )
    utm = points.estimate_utm_crs()  # 100 m squares: each stands for a point inside it
    squares = points.assign(geometry=points.to_crs(utm).buffer(100, cap_style="square"))
    table = inputs.place_table(squares, "zones")
    shapes = squares.to_crs(4326).geometry.to_numpy()
    inside = shapely.contains_xy(shapes, table["lon"].to_numpy(), table["lat"].to_numpy())
    assert inside.all()


def test_h3_cells_are_places_at_their_centres(model, places):
    cells = [h3.latlng_to_cell(a, b, 8) for a, b in zip(places["lat"], places["lon"], strict=True)]
    table = vrvm.travel_time_matrix(model, cells[:2], cells, departure=DEPART)
    assert table["from_id"].tolist()[:5] == [cells[0]] * 5
    centre = h3.cell_to_latlng(cells[0])
    assert inputs.place_table(cells[:1]).iloc[0][["lat", "lon"]].tolist() == list(centre)


def _gdf(**columns) -> gpd.GeoDataFrame:
    geometry = columns.pop("geometry", [shapely.Point(-30.0, -40.0), shapely.Point(-29.9, -40.0)])
    crs = columns.pop("crs", 4326)
    return gpd.GeoDataFrame(columns, geometry=geometry, crs=crs)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (_gdf(id=["a", "b"], crs=None), "origins: the GeoDataFrame has no CRS"),
        (_gdf(name=["a", "b"]), "origins: expected an 'id' column"),
        (_gdf(id=["a", "a"]), "origins: ids must be distinct; repeated: 'a'"),
        (_gdf(id=["a", None]), "origins: the id is missing on rows 1"),
        (
            _gdf(id=["a", "b"], geometry=[shapely.Point(447000, 4630000)] * 2),
            "is the frame's CRS the one its coordinates are in",
        ),
        (
            _gdf(id=["a", "b"], geometry=[shapely.LineString([(0, 0), (1, 1)])] * 2),
            "origins: expected points or polygons; ids 'a', 'b' are LineString",
        ),
        (
            _gdf(id=["a", "b"], geometry=[None, shapely.Point(0, 0)]),
            "origins: no geometry at ids 'a'",
        ),
        (_gdf(id=[], geometry=[]), "origins: no places"),
        (gpd.GeoSeries([shapely.Point(0, 0)], crs=4326), "a GeoSeries has no ids"),
        (pd.DataFrame({"id": ["a"], "lat": [-40.0]}), "origins: expected columns id, lat and lon"),
        (
            pd.DataFrame({"id": ["a"], "lat": ["north"], "lon": [1.0]}),
            "column 'lat' is not a number at ids 'a'",
        ),
        (pd.DataFrame({"id": ["a"], "lat": [95.0], "lon": [1.0]}), "expected latitude"),
        (["8828308281fffff", "not-a-cell"], "not H3 cells: 'not-a-cell'"),
        ("8828308281fffff", "got str"),
    ],
)
def test_bad_places_are_refused_by_name(model, places, bad, message):
    with pytest.raises(ValueError) as caught:
        vrvm.travel_time_matrix(model, bad, places, departure=DEPART)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"within_min": 0}, "within_min must be positive numbers of minutes, got 0.0"),
        ({"within_min": [10, -5]}, "got -5.0"),
        ({"within_min": [10, 10]}, "within_min must differ: 10 given twice"),
        ({"percentiles": (0,)}, "percentiles must lie strictly between 0 and 100"),
        ({"percentiles": (100,)}, "percentiles must lie strictly between 0 and 100"),
        ({"percentiles": ()}, "give at least one percentile"),
        ({"departure_window_min": -1}, "window_min must be 0 or a positive number"),
        ({"departure": "not a time"}, "not a time"),
    ],
)
def test_bad_settings_are_refused(model, places, options, message):
    settings = {"departure": DEPART, **options}
    with pytest.raises(ValueError, match=message):
        vrvm.travel_time_matrix(model, places, places, **settings)


def test_places_outside_the_model_are_flagged_per_row_or_refused(model, places):
    far = pd.DataFrame({"id": ["chicago"], "lat": [41.88], "lon": [-87.63]})
    table = vrvm.travel_time_matrix(model, places.iloc[:2], pd.concat([places.iloc[:1], far]),
                                    departure=DEPART)  # fmt: skip
    assert table["outside_area"].tolist() == [False, True, False, True]
    with pytest.raises(ValueError, match=r"place .chicago.: .* outside the service area"):
        vrvm.isochrones(model, far, departure=DEPART, within_min=10)
    with pytest.raises(ValueError, match=r"destination '41.88, -87.63': .* read as \(lat, lon\)"):
        vrvm.arrive_by(model, places.iloc[:1], (41.88, -87.63), deadline="2024-03-05 09:00")
    with pytest.raises(ValueError, match=r"bases: outside the model's extent .* \['chicago'\]"):
        vrvm.reach(model, far, departure=DEPART, within_min=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cover = vrvm.coverage_matrix(model, places.iloc[:1], far, departure=DEPART, within_min=10)
    assert cover.attrs["outside_area"] == ["chicago"]
    assert any("chicago" in str(w.message) for w in caught)


def test_the_names_are_top_level_and_lazy():
    assert {"travel_time_matrix", "isochrones", "reach", "arrive_by", "coverage_matrix"} <= set(
        dir(vrvm)
    )
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        vrvm.nothing  # noqa: B018


# ------------------------------------------------------------ real GeoDataFrames
def _sample_model(path, n: int) -> tuple[TravelTimeModel, pd.DataFrame]:
    """A small model of ``n`` trips of a real file (two members: a few seconds)."""
    trips, _ = read_trips(path)
    trips = trips.sample(n=n, random_state=0).sort_values("start_time").reset_index(drop=True)
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.5, 3.0], max_basis=100, n_jobs=1, **PLACES_ONLY
    ).fit(trips)
    return model, trips


@pytest.fixture
def chicago(shared_data):
    model, trips = _sample_model(shared_data("chicago_taxi_trips.csv"), 3000)
    areas = gpd.read_file(shared_data("chicago_community_areas.geojson"))
    areas = areas.assign(id=areas["area_numbe"].astype(int), name=areas["community"].str.title())
    return model, trips, areas


def test_chicago_community_areas(chicago):
    model, trips, areas = chicago
    some = areas[areas["id"].isin([32, 41, 6, 76])]  # Loop, Hyde Park, Lake View, O'Hare
    table = vrvm.travel_time_matrix(
        model, some, some.to_crs(26916), departure="2016-05-03 08:00", within_min=15, trips=trips
    )
    assert len(table) == 16 and not table["outside_area"].any()
    loop_to_hyde = table[(table["from_id"] == 32) & (table["to_id"] == 41)]
    assert 8 < loop_to_hyde["travel_time_p50"].iloc[0] < 40
    zones = vrvm.reach(
        model, some.iloc[:2], departure="2016-05-03 08:00", within_min=10, zones=areas, trips=trips
    )
    assert len(zones) == len(areas) and zones["id"].tolist() == sorted(
        areas["id"].astype(str), key=int
    )
    assert zones["support_trips"].sum() > 0 and {"name", "p_best"} <= set(zones.columns)
    assert zones.loc[zones["name"] == "Loop", "p_best"].iloc[0] > 0.5


def test_nyc_taxi_zones(shared_data):
    model, _ = _sample_model(shared_data("nyc_taxi_2016_sample.csv"), 2000)
    zones = gpd.read_file(shared_data("nyc_taxi_zones.geojson"))
    zones = zones.rename(columns={"LocationID": "id", "zone": "name"})
    manhattan = zones[zones["borough"] == "Manhattan"].head(6)
    regions = vrvm.isochrones(
        model, manhattan.iloc[[3]], departure="2016-05-03 08:00", within_min=15, zones=zones
    )
    assert (regions["area_km2"].diff().dropna() <= 0).all() and regions.crs.to_epsg() == 4326
    table = vrvm.travel_time_matrix(model, manhattan, zones, departure="2016-05-03 08:00")
    assert len(table) == 6 * len(zones)
    outside = table.groupby("to_id")["outside_area"].first()
    assert not outside[manhattan["id"]].any()
    assert outside.loc[1]  # Newark Airport: beyond the sample's extent
