"""Fleet coverage from several bases, one more base, bases and demand files, downloads.

Every probability is checked against a brute force: the single-base closed form (the
reach map's P(T <= T) from each base), a Monte-Carlo simulation from the ensemble's
members, and the ranking against recomputing the coverage with each candidate added.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.map.area import ServiceArea, ViewState, build_service_area
from vrvm.services.map.places import Place
from vrvm.services.planning import fleet
from vrvm.services.planning.coverage import coverage_grid
from vrvm.services.planning.fleet import (
    FLEET_METRICS,
    MAX_BASES,
    bases_at_points,
    bases_from_zones,
    default_bases,
    demand_weighted,
    fleet_coverage,
    fleet_map,
    rank_new_base,
    toggle_zone_base,
    zone_demand,
)
from vrvm.services.planning.fleet_files import (
    bases_csv,
    bases_geojson,
    candidates_csv,
    candidates_geojson,
    fleet_csv,
    fleet_geojson,
    read_bases_csv,
    read_demand_csv,
)
from vrvm.trips.home import Home
from vrvm.trips.places.zone_files import ZoneFile

DEPARTURE = pd.Timestamp("2024-03-05 08:15", tz="UTC")


def _busiest(area, k: int, step: int = 1) -> list[str]:
    order = area.grid.sort_values("n_points", ascending=False, kind="stable")["zone"]
    return order.iloc[: k * step : step].tolist()


@pytest.fixture(scope="module")
def three_bases(tiny_area):
    return bases_from_zones(tiny_area, _busiest(tiny_area, 3, step=7))


@pytest.fixture(scope="module")
def close_bases(tiny_area):
    """The busiest zone and its two nearest zones: every zone near them has backups."""
    grid = tiny_area.grid
    first = tiny_area.zone_index[_busiest(tiny_area, 1)[0]]
    distance = np.hypot(grid["lat"] - grid["lat"][first], grid["lon"] - grid["lon"][first])
    return bases_from_zones(tiny_area, grid["zone"].iloc[np.argsort(distance)[:3]].tolist())


# ------------------------------------------------------------------ member cdfs


def test_component_cdfs_are_the_members_and_average_to_the_mixture(tiny_model, tiny_area):
    grid = tiny_area.grid.head(40)
    origin = Place(float(grid["lat"][0]), float(grid["lon"][0]), grid["zone"][0], "o")
    queries = pd.DataFrame(
        {
            "origin_lat": origin.lat,
            "origin_lon": origin.lon,
            "dest_lat": grid["lat"],
            "dest_lon": grid["lon"],
            "start_time": DEPARTURE,
        }
    )
    dist = tiny_model.predict_dist(queries)
    members = dist.component_cdf(600.0)
    assert members.shape == (dist.n_components, len(grid))
    z = (np.log(600.0) - dist.loc) / dist.scale
    expected = stats.norm.cdf(z) if dist.df is None else stats.t.cdf(z, dist.df)
    np.testing.assert_allclose(members, expected, rtol=1e-10, atol=1e-14)
    # the components' mean is the mixture F; the predictive reads it through its map
    np.testing.assert_allclose(
        tiny_model.recalibrate(members.mean(axis=0)), dist.cdf(600.0), rtol=1e-12
    )
    assert dist.component_cdf(np.array([[300.0], [900.0]])).shape == (
        dist.n_components,
        2,
        len(grid),
    )


# --------------------------------------------------------------------- coverage


def test_one_base_is_the_reach_map(tiny_model, tiny_area):
    bases = bases_from_zones(tiny_area, _busiest(tiny_area, 1))
    cov = fleet_coverage(tiny_model, tiny_area, bases, DEPARTURE, 12)
    base = Place(bases["lat"][0], bases["lon"][0], bases["zone"][0], bases["label"][0])
    single = coverage_grid(tiny_model, tiny_area, base, DEPARTURE, 12)["prob_within"].to_numpy()
    np.testing.assert_allclose(cov.grid["p_best"], single, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cov.grid["p_any"], single, rtol=1e-9, atol=1e-14)
    assert (cov.grid["best_base"] == bases["name"][0]).all()
    assert cov.prob.shape == (1, len(tiny_area.grid))


def test_best_base_is_the_highest_single_base_probability(tiny_model, tiny_area, three_bases):
    cov = fleet_coverage(tiny_model, tiny_area, three_bases, DEPARTURE, 10)
    singles = np.array(
        [
            coverage_grid(
                tiny_model, tiny_area, Place(b.lat, b.lon, b.zone, b.label), DEPARTURE, 10
            )["prob_within"].to_numpy()
            for b in three_bases.itertuples()
        ]
    )
    np.testing.assert_allclose(cov.prob, singles, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cov.grid["p_best"], singles.max(axis=0), rtol=1e-12)
    names = three_bases["name"].to_numpy()[singles.argmax(axis=0)]
    assert (cov.grid["best_base"].to_numpy() == names).all()
    # at least one of several arrives at least as often as the best one alone
    assert (cov.grid["p_any"] >= cov.grid["p_best"] - 1e-12).all()
    assert (cov.grid["p_any"] <= 1.0).all()
    assert cov.grid["p_any"].gt(cov.grid["p_best"] + 1e-3).any()  # backups do count
    # each base is best in its own zone
    for i, zone in enumerate(three_bases["zone"]):
        row = tiny_area.zone_index[zone]
        assert cov.grid["best_base"][row] == three_bases["name"][i]


def test_any_base_matches_a_simulation_from_the_members(tiny_model, tiny_area, close_bases):
    """Draw a member (one scenario for all bases), then each base's time given it."""
    threshold_min = 10.0
    three_bases = close_bases
    cov = fleet_coverage(tiny_model, tiny_area, three_bases, DEPARTURE, threshold_min)
    p_any = cov.grid["p_any"].to_numpy()
    rows = np.flatnonzero((p_any > 0.1) & (p_any < 0.9))[:6]
    assert rows.size >= 3
    zones = tiny_area.grid.iloc[rows]
    queries = pd.concat(
        [
            pd.DataFrame(
                {
                    "origin_lat": base.lat,
                    "origin_lon": base.lon,
                    "dest_lat": zones["lat"].to_numpy(),
                    "dest_lon": zones["lon"].to_numpy(),
                    "start_time": DEPARTURE,
                }
            )
            for base in three_bases.itertuples()
        ],
        ignore_index=True,
    )
    dist = tiny_model.predict_dist(queries)
    n_draws, n_bases, n_zones = 200_000, len(three_bases), rows.size
    rng = np.random.default_rng(20240305)
    members, blocks = dist.n_members, dist.n_components // dist.n_members
    member = rng.integers(members, size=(n_draws, 1, n_zones))  # shared by the bases
    # then each base's time from that member's own mixture (its components m, M + m, ...)
    component = member + members * rng.integers(blocks, size=(n_draws, n_bases, n_zones))
    cols = np.arange(n_bases * n_zones).reshape(1, n_bases, n_zones)
    loc, scale = dist.loc[component, cols], dist.scale[component, cols]
    if dist.df is None:
        noise = rng.standard_normal(loc.shape)
    else:  # Student-t components, and normal ones (df = inf: a forest's neighbours)
        df = dist.df[component, cols]
        finite = np.isfinite(df)
        noise = np.where(
            finite, rng.standard_t(np.where(finite, df, 1.0)), rng.standard_normal(df.shape)
        )
    times = np.exp(loc + scale * noise)  # seconds
    simulated = (times.min(axis=1) <= 60.0 * threshold_min).mean(axis=0)
    # the members' P(any), before the map the answer is read through
    pit_map = getattr(dist, "pit_map", None)
    expected = p_any[rows] if pit_map is None else pit_map.ppf(p_any[rows])
    standard_error = np.sqrt(expected * (1 - expected) / n_draws)
    assert np.all(np.abs(simulated - expected) <= 5 * standard_error), (simulated, expected)


class _TwoScenarios:
    """A stand-in model whose two members disagree: a quiet city and a congested one.

    Member m predicts log-normal times with median 8 * (1 + 1.5 m) minutes plus 2 minutes
    per 0.01 degree between the ends, so shared scenarios and independent bases differ.
    """

    members_ = (0, 1)

    def recalibrate(self, probability):
        return np.asarray(probability, dtype=np.float64)  # no PIT map

    def predict_dist(self, queries: pd.DataFrame) -> MixtureDistribution:
        gap = np.hypot(
            queries["dest_lat"] - queries["origin_lat"], queries["dest_lon"] - queries["origin_lon"]
        ).to_numpy()
        minutes = np.array([[8.0], [20.0]]) + 200.0 * gap[None, :]
        return MixtureDistribution(np.log(60.0 * minutes), 0.25, transform="log")


def test_any_base_shares_the_scenario_and_is_not_independence():
    grid = pd.DataFrame(
        {
            "zone": list("abcde"),
            "number": np.arange(1, 6),
            "label": [f"Zone {i}" for i in range(1, 6)],
            "lat": [0.0, 0.01, 0.02, 0.03, 0.04],
            "lon": 0.0,
            "boundary": [[[0.0, 0.0]]] * 5,
        }
    )
    area = ServiceArea(grid, 8, (0.0, 0.0, 0.04, 0.0), ViewState(0.0, 0.0, 10.0))
    model = _TwoScenarios()
    bases = bases_from_zones(area, ["a", "c"])
    cov = fleet_coverage(model, area, bases, DEPARTURE, 12.0)
    dist = model.predict_dist(
        fleet._pair_queries(bases["lat"].to_numpy(), bases["lon"].to_numpy(), grid, DEPARTURE)
    )
    members = dist.component_cdf(720.0).reshape(2, 2, 5)  # (member, base, zone)
    expected = np.mean(1 - np.prod(1 - members, axis=1), axis=0)
    np.testing.assert_allclose(cov.grid["p_any"], expected, rtol=1e-12)
    rng = np.random.default_rng(7)
    n_draws = 100_000
    member = rng.integers(2, size=(n_draws, 1, 5))
    cols = np.arange(10).reshape(1, 2, 5)
    times = np.exp(
        dist.loc[member, cols] + dist.scale[member, cols] * rng.standard_normal((n_draws, 2, 5))
    )
    simulated = (times.min(axis=1) <= 720.0).mean(axis=0)
    standard_error = np.sqrt(expected * (1 - expected) / n_draws) + 1e-12
    assert np.all(np.abs(simulated - expected) <= 5 * standard_error)
    independent = 1 - np.prod(1 - cov.prob, axis=0)
    assert np.max(np.abs(independent - expected)) > 20 * standard_error.max()


def test_no_bases_cover_nothing(tiny_model, tiny_area):
    cov = fleet_coverage(tiny_model, tiny_area, bases_from_zones(tiny_area, []), DEPARTURE, 10)
    assert (cov.grid["p_any"] == 0).all() and (cov.grid["p_best"] == 0).all()
    assert (cov.grid["best_base"] == "").all()
    with pytest.raises(ValueError, match="threshold_min"):
        fleet_coverage(tiny_model, tiny_area, bases_from_zones(tiny_area, []), DEPARTURE, 0)


# ----------------------------------------------------------------------- demand


def test_default_demand_counts_training_trip_origins(tiny_home, tiny_model, tiny_area):
    trips = Home(tiny_home).load_training_trips(tiny_model)
    rows = tiny_area.zone_rows(trips["origin_lat"], trips["origin_lon"])
    expected = np.bincount(rows[rows >= 0], minlength=len(tiny_area.grid))
    demand, source = zone_demand(tiny_area)
    np.testing.assert_array_equal(demand, expected)
    assert "starting" in source
    assert demand_weighted(np.ones(len(demand)), demand) == pytest.approx(1.0)
    uploaded, source = zone_demand(tiny_area, np.arange(len(demand), dtype=float))
    assert source == "the uploaded demand" and uploaded[-1] == len(demand) - 1
    with pytest.raises(ValueError, match="one per zone"):
        zone_demand(tiny_area, [1.0, 2.0])
    with pytest.raises(ValueError, match="zero"):
        zone_demand(tiny_area, np.zeros(len(demand)))


def test_default_bases_are_busy_central_and_apart(tiny_area):
    bases = default_bases(tiny_area)
    assert len(bases) == 2 and bases["zone"].is_unique
    demand, _ = zone_demand(tiny_area)
    first = tiny_area.zone_index[bases["zone"][0]]
    assert demand[first] == demand.max()  # the busiest zone is downtown
    second = tiny_area.zone_index[bases["zone"][1]]
    assert demand[second] >= np.quantile(demand, 0.9)
    assert (bases["kind"] == "zone").all() and bases["name"].tolist() == bases["label"].tolist()


# -------------------------------------------------------------------- one more base


@pytest.mark.parametrize("objective", ["any", "best"])
def test_ranking_matches_recomputing_with_each_candidate(
    tiny_model, tiny_area, three_bases, objective
):
    threshold_min = 10.0
    demand, _ = zone_demand(tiny_area)
    cov = fleet_coverage(tiny_model, tiny_area, three_bases, DEPARTURE, threshold_min)
    candidates = tiny_area.grid["zone"].iloc[::37].tolist()
    ranking = rank_new_base(
        tiny_model,
        tiny_area,
        cov,
        demand,
        candidates=candidates,
        objective=objective,
        top=None,
        block_pairs=2 * len(tiny_area.grid),  # two candidates per block
    )
    assert sorted(ranking["zone"]) == sorted(candidates)
    before = cov.summary(demand)
    brute = {}
    for zone in candidates:
        more = pd.concat([three_bases, bases_from_zones(tiny_area, [zone])], ignore_index=True)
        more["name"] = [f"b{i}" for i in range(len(more))]
        after = fleet_coverage(tiny_model, tiny_area, more, DEPARTURE, threshold_min)
        brute[zone] = after.summary(demand)
    for row in ranking.itertuples():
        assert row.any_before == pytest.approx(before["any"], rel=1e-12)
        assert row.any_after == pytest.approx(brute[row.zone]["any"], rel=1e-9, abs=1e-12)
        assert row.best_after == pytest.approx(brute[row.zone]["best"], rel=1e-9, abs=1e-12)
        assert row.any_gain == pytest.approx(row.any_after - row.any_before, abs=1e-12)
    gains = np.array([brute[z][objective] for z in ranking["zone"]]) - before[objective]
    assert np.all(np.diff(gains) <= 1e-12)  # best first
    assert ranking["rank"].tolist() == list(range(1, len(candidates) + 1))
    assert (ranking["any_gain"] >= -1e-15).all()


def test_default_candidates_and_the_first_base(tiny_model, tiny_area, three_bases):
    demand, _ = zone_demand(tiny_area)
    cov = fleet_coverage(tiny_model, tiny_area, three_bases, DEPARTURE, 10)
    ranking = rank_new_base(tiny_model, tiny_area, cov, demand, top=5)
    assert len(ranking) == 5 and not set(ranking["zone"]) & set(three_bases["zone"])
    # without bases, the gain of a candidate is its own demand-weighted reach
    empty = fleet_coverage(tiny_model, tiny_area, bases_from_zones(tiny_area, []), DEPARTURE, 10)
    first = rank_new_base(tiny_model, tiny_area, empty, demand, candidates=_busiest(tiny_area, 2))
    for row in first.itertuples():
        alone = fleet_coverage(
            tiny_model, tiny_area, bases_from_zones(tiny_area, [row.zone]), DEPARTURE, 10
        )
        assert row.any_after == pytest.approx(demand_weighted(alone.grid["p_any"], demand))
        assert row.any_before == 0.0
    with pytest.raises(ValueError, match="objective"):
        rank_new_base(tiny_model, tiny_area, cov, demand, objective="most")
    with pytest.raises(ValueError, match="not in the service area"):
        rank_new_base(tiny_model, tiny_area, cov, demand, candidates=["nowhere"])


# ------------------------------------------------------------------------ bases


def test_bases_from_clicks_and_points(tiny_area):
    a, b = _busiest(tiny_area, 2)
    bases = toggle_zone_base(tiny_area, bases_from_zones(tiny_area, [a]), b)
    assert bases["zone"].tolist() == [a, b]
    assert toggle_zone_base(tiny_area, bases, a)["zone"].tolist() == [b]
    row = tiny_area.grid.iloc[tiny_area.zone_index[a]]
    points = bases_at_points(tiny_area, ["", "Depot"], [row.lat, row.lat], [row.lon, row.lon])
    assert points["name"].tolist() == ["Base 1", "Depot"]
    assert (points["zone"] == a).all() and (points["kind"] == "point").all()
    with pytest.raises(ValueError, match=r"base 2: .*outside the service area"):
        bases_at_points(tiny_area, ["x", "y"], [row.lat, 10.0], [row.lon, 10.0])
    with pytest.raises(ValueError, match="repeated: 'Depot'"):
        bases_at_points(tiny_area, ["Depot", "Depot"], [row.lat] * 2, [row.lon] * 2)
    many = tiny_area.grid["zone"].iloc[: MAX_BASES + 1].tolist()
    with pytest.raises(ValueError, match=f"at most {MAX_BASES}"):
        bases_from_zones(tiny_area, many)


def _csv_line(name, lat, lon) -> str:
    return f"{name},{lat},{lon}\n"


def test_read_bases_csv(tiny_area):
    grid = tiny_area.grid
    good = "Name,Latitude,Longitude\n" + "".join(
        _csv_line(n, grid["lat"][i], grid["lon"][i])
        for n, i in (("<b>North</b>", 3), ("", 40), ("South [x](y)", 90))
    )
    bases = read_bases_csv(good.encode(), tiny_area, source="bases.csv")
    assert bases["name"].tolist() == ["<b>North</b>", "Base 2", "South [x](y)"]
    assert bases["zone"].tolist() == grid["zone"].iloc[[3, 40, 90]].tolist()
    by_zone = read_bases_csv(f"zone\n{grid['zone'][7]}\n".encode(), tiny_area)
    assert by_zone["lat"][0] == grid["lat"][7] and by_zone["name"][0] == "Base 1"
    semicolons = read_bases_csv(
        f"name;lat;lon\nA;{grid['lat'][3]};{grid['lon'][3]}\n".encode(), tiny_area
    )
    assert semicolons["zone"][0] == grid["zone"][3]

    def refused(text: str | bytes, match: str) -> None:
        data = text if isinstance(text, bytes) else text.encode()
        with pytest.raises(ValueError, match=match):
            read_bases_csv(data, tiny_area, source="bases.csv")

    lat, lon = grid["lat"][3], grid["lon"][3]
    refused("name,x,y\nA,1,2\n", "bases.csv needs columns 'lat' and 'lon'")
    refused(
        f"name,lat,lon\nA,{lat},{lon}\nB,north,{lon}\n",
        "bases.csv, line 3, column 'lat': 'north' is not a number",
    )
    refused(
        f"name,lat,lon\nA,{lat},{lon}\nB,{lat},200\n",
        "line 3, column 'lon': '200' is not a number from -180 to 180",
    )
    refused(
        f"name,lat,lon\nA,{lat},{lon}\nFar,10,10\n",
        r"bases.csv, line 3: \(10.00000, 10.00000\) is outside",
    )
    refused(f"name,lat,lon\nA,{lat},{lon}\nA,{lat},{lon}\n", "repeated: 'A'")
    refused(
        f"name,lat,lon\n{'x' * 61},{lat},{lon}\n",
        "line 2, column 'name': the name is 61 characters",
    )
    refused("name,zone\nA,nowhere\n", "line 2, column 'zone': 'nowhere' is not a zone")
    refused("name,lat,lon\n", "no rows")
    refused(b"", "empty")
    refused(b"name,lat,lon\n\xff,1,2\n", "not UTF-8")
    refused("lat,latitude,lon\n1,2,3\n", "both give the lat")
    rows = "".join(_csv_line(f"B{i}", lat, lon) for i in range(MAX_BASES + 1))
    refused("name,lat,lon\n" + rows, f"at most {MAX_BASES}")


def test_read_demand_csv(tiny_area):
    grid = tiny_area.grid
    by_zone = f"zone,demand\n{grid['zone'][5]},2\n{grid['zone'][5]},3\n{grid['zone'][9]},0.5\n"
    demand = read_demand_csv(by_zone.encode(), tiny_area)
    assert demand.shape == (len(grid),) and demand[5] == 5.0 and demand[9] == 0.5
    assert demand.sum() == 5.5
    points = "lat,lon,demand\n" + "".join(
        f"{grid['lat'][i]},{grid['lon'][i]},{n}\n" for i, n in ((5, 4), (6, 1))
    )
    demand = read_demand_csv(points.encode(), tiny_area)
    assert demand[5] == 4.0 and demand[6] == 1.0 and demand.sum() == 5.0
    with pytest.raises(ValueError, match="needs a column 'demand'"):
        read_demand_csv(b"zone\nx\n", tiny_area)
    with pytest.raises(ValueError, match="line 3, column 'demand': '-1' is not a number from 0"):
        read_demand_csv(
            f"zone,demand\n{grid['zone'][5]},1\n{grid['zone'][5]},-1\n".encode(), tiny_area
        )
    with pytest.raises(ValueError, match=r"1 point\(s\) lie in no zone of the map \(line\(s\) 3"):
        read_demand_csv(
            f"lat,lon,demand\n{grid['lat'][5]},{grid['lon'][5]},1\n10,10,1\n".encode(), tiny_area
        )
    with pytest.raises(ValueError, match="zero everywhere"):
        read_demand_csv(f"zone,demand\n{grid['zone'][5]},0\n".encode(), tiny_area)


def test_fleet_files_are_read_within_a_viewers_bounds(tiny_area):
    """Issue 32: a bases or demand file (anyone who sees the Plan page may upload one)
    is refused on its raw header, size and rows before pandas parses it, with bounds
    tighter than an analyst's trip upload."""
    from vrvm.services.analyst import uploads
    from vrvm.services.planning.fleet_files import FLEET_LIMITS, MAX_FILE_MB
    from vrvm.trips.files.reader import ReadLimits

    trips = ReadLimits()
    assert FLEET_LIMITS.max_columns < trips.max_columns
    assert FLEET_LIMITS.header_bytes < trips.header_bytes
    assert FLEET_LIMITS.max_data_rows < uploads.DEFAULT_MAX_UPLOAD_ROWS
    assert MAX_FILE_MB < uploads.MAX_UPLOAD_MB
    zone = tiny_area.grid["zone"][5]
    wide = ",".join(f"c{k}" for k in range(5_000)) + ",zone,demand\n"
    wide += "," * 5_000 + f"{zone},1\n"
    for read in (read_bases_csv, read_demand_csv):
        with pytest.raises(ValueError, match=r"wide.csv: its header has 5,002 columns, more "):
            read(wide.encode(), tiny_area, source="wide.csv")
    # no line break within the header's 64 KiB: refused without counting further
    with pytest.raises(ValueError, match=r"does not end within the first 64 KB"):
        read_demand_csv(b"zone" + b"x" * 70_000 + b",demand\n", tiny_area, source="d.csv")
    # a row wider than the header (pandas would take a first row's extra fields as an
    # index: a row of a million fields kept it busy for minutes) is refused on the bytes
    for body, line in ((b"1," * 5_000 + b"1\n", 2), (f"{zone},1\n".encode() + b"1," * 5_000, 3)):
        with pytest.raises(ValueError, match=f"d.csv, line {line}: 5,001 fields, more than the "):
            read_demand_csv(b"zone,demand\r\n" + body, tiny_area, source="d.csv")
    quoted = f'name,zone\n"a, b, c",{zone}\r\n'.encode()
    assert read_bases_csv(quoted, tiny_area)["name"].tolist() == ["a, b, c"]
    rows = "zone,demand\n" + f"{zone},1\n" * (FLEET_LIMITS.max_data_rows + 1)
    with pytest.raises(ValueError, match=r"d\.csv has more than 200,000 data rows"):
        read_demand_csv(rows.encode(), tiny_area, source="d.csv")
    big = b"zone,demand\n" + b" " * int(MAX_FILE_MB * 2**20)
    with pytest.raises(ValueError, match=f"above the {MAX_FILE_MB:g} MB upload limit"):
        read_demand_csv(big, tiny_area, source="d.csv")
    # the limit itself reads
    ok = "zone,demand\n" + f"{zone},1\n" * FLEET_LIMITS.max_data_rows
    assert read_demand_csv(ok.encode(), tiny_area)[5] == FLEET_LIMITS.max_data_rows


def test_small_csv_reader_bounds():
    from vrvm.trips.files.reader import ReadLimits
    from vrvm.trips.files.small_csv import SmallCsvError, read_small_csv

    limits = ReadLimits(max_columns=3, max_data_rows=50_000)

    def read(data: bytes, **kwargs):
        options = {"max_bytes": 2**20, "max_seconds": 60.0, **kwargs}
        return read_small_csv(data, source="t.csv", limits=limits, **options)

    frame = read(b'\xef\xbb\xbf"a,b",c\n1,\n')  # a quoted delimiter is one column
    assert frame.columns.tolist() == ["a,b", "c"] and frame.iloc[0].tolist() == ["1", ""]
    assert read(b"a;b\n").empty
    with pytest.raises(SmallCsvError, match="header has 4 columns") as caught:
        read(b"a\tb\tc\td\n")
    assert caught.value.limit == "max_columns"
    # the time bound is checked after each block of rows: a deadline already passed
    # stops the read at the first block
    with pytest.raises(
        SmallCsvError, match=r"took more than 1e-09 s \(stopped after 20,000"
    ) as caught:
        read(b"a,b\n" + b"1,2\n" * 30_000, max_seconds=1e-9)
    assert caught.value.limit == "max_seconds"
    with pytest.raises(SmallCsvError, match="has more than 50,000 data rows") as caught:
        read(b"a,b\n" + b"1,2\n" * 60_000)
    assert caught.value.limit == "max_data_rows"
    with pytest.raises(SmallCsvError, match="is empty"):
        read(b"")


# ---------------------------------------------------------------- map and downloads


def test_map_colours_and_escaped_tooltips(tiny_model, tiny_area):
    row = tiny_area.grid.iloc[tiny_area.zone_index[_busiest(tiny_area, 1)[0]]]
    bases = bases_at_points(tiny_area, ["<img src=x onerror=alert(1)>"], [row.lat], [row.lon])
    cov = fleet_coverage(tiny_model, tiny_area, bases, DEPARTURE, 10)
    for metric in FLEET_METRICS:
        fill, tips, legend = fleet_map(cov, metric)
        assert fill.shape == (len(tiny_area.grid), 4) and len(tips) == len(tiny_area.grid)
        assert legend[-1][0] == "95 % - 100 %"
    assert "<img" not in " ".join(tips) and "&lt;img src=x" in tips[0]
    assert "P(best base ≤ 10 min)" in tips[0] and "P(any base ≤ 10 min)" in tips[0]
    any_fill, _, _ = fleet_map(cov, "any")
    assert any_fill.tolist() == fleet_map(cov, "best")[0].tolist()  # one base: the same
    with pytest.raises(ValueError, match="metric"):
        fleet_map(cov, "median")


def test_downloads(tiny_model, tiny_area, three_bases):
    demand, _ = zone_demand(tiny_area)
    cov = fleet_coverage(tiny_model, tiny_area, three_bases, DEPARTURE, 10)
    table = pd.read_csv(io.BytesIO(fleet_csv(cov, demand, synthetic=True)))
    assert len(table) == len(tiny_area.grid)
    assert {"zone", "label", "best_base", "demand", "departure", "threshold_min", "data"} <= set(
        table
    )
    np.testing.assert_allclose(table["p_any_base_within_10min"], cov.grid["p_any"], rtol=1e-5)
    np.testing.assert_allclose(table["p_best_base_within_10min"], cov.grid["p_best"], rtol=1e-5)
    assert table["best_base"].tolist() == cov.grid["best_base"].tolist()

    document = json.loads(fleet_geojson(cov, demand, synthetic=True))
    assert len(document["features"]) == len(tiny_area.grid)
    assert document["features"][0]["geometry"]["type"] == "Polygon"
    assert document["threshold_min"] == 10.0 and document["synthetic"] is True
    assert {"p_best", "p_any"} == set(document["definitions"])
    assert len(document["bases"]["features"]) == 3

    bases = pd.read_csv(io.BytesIO(bases_csv(cov, demand)))
    assert bases["name"].tolist() == three_bases["name"].tolist()
    assert bases["zones"].sum() == len(tiny_area.grid)
    # each share written to six significant digits: the sum within their rounding
    assert bases["demand_share"].sum() == pytest.approx(1.0, abs=len(bases) * 5e-6)
    points = json.loads(bases_geojson(cov, demand))
    coordinates = [f["geometry"]["coordinates"] for f in points["features"]]
    assert coordinates == three_bases[["lon", "lat"]].to_numpy().tolist()

    ranking = rank_new_base(tiny_model, tiny_area, cov, demand, top=4)
    listed = pd.read_csv(io.BytesIO(candidates_csv(ranking, cov, "any")))
    assert listed["zone"].tolist() == ranking["zone"].tolist()
    assert (listed["ranked_by"] == "any_gain").all()
    shapes = json.loads(candidates_geojson(ranking, cov, "any", tiny_area))
    assert [f["properties"]["zone"] for f in shapes["features"]] == ranking["zone"].tolist()
    assert shapes["features"][0]["properties"]["rank"] == 1


def test_polygon_zones(tiny_home, tiny_model, tiny_area):
    """A planner's polygons: coverage per polygon, exported with the exact polygons."""
    lat_lo, lon_lo, lat_hi, lon_hi = tiny_area.bbox
    lats, lons = np.linspace(lat_lo, lat_hi, 4), np.linspace(lon_lo, lon_hi, 4)
    features = []
    for i in range(3):
        for j in range(3):
            ring = [
                [lons[j], lats[i]],
                [lons[j + 1], lats[i]],
                [lons[j + 1], lats[i + 1]],
                [lons[j], lats[i + 1]],
                [lons[j], lats[i]],
            ]
            features.append(
                {
                    "type": "Feature",
                    "properties": {"id": 3 * i + j, "name": f"Sector {3 * i + j}"},
                    "geometry": {"type": "Polygon", "coordinates": [ring]},
                }
            )
    zones = ZoneFile.from_geojson({"type": "FeatureCollection", "features": features})
    trips = Home(tiny_home).load_training_trips(tiny_model)
    area = build_service_area(tiny_model, trips=trips, zones=zones)
    bases = default_bases(area)
    cov = fleet_coverage(tiny_model, area, bases, DEPARTURE, 15)
    assert {"name", "geometry"} <= set(cov.grid.columns)
    demand, source = zone_demand(area)
    assert "starting" in source and demand.sum() > 0
    document = json.loads(fleet_geojson(cov, demand))
    assert [f["geometry"] for f in document["features"]] == area.grid["geometry"].tolist()
    ranking = rank_new_base(tiny_model, area, cov, demand, top=3)
    assert len(ranking) == 3
    shapes = json.loads(candidates_geojson(ranking, cov, "any", area))
    assert (
        shapes["features"][0]["geometry"]
        == area.grid["geometry"][area.zone_index[ranking["zone"][0]]]
    )
    assert fleet.demand_weighted(cov.grid["p_any"], demand) <= ranking["any_after"][0]


def test_bases_follow_the_maps_zones(tiny_home, tiny_model, tiny_area):
    """Issue 31: bases placed on one map are located on another as the Predict page
    locates its places: renamed, moved into the polygon holding them, or removed."""
    from tests.app.test_zone_polygons import districts_geojson
    from vrvm.trips.home import Home
    from vrvm.trips.places.zone_files import ZoneFile

    hexagons = tiny_area
    districts = ZoneFile.from_geojson(json.loads(districts_geojson()), id_property="district")
    holder = districts.zone_index(hexagons.grid["lat"], hexagons.grid["lon"])
    inside = np.flatnonzero(holder >= 0)
    outside = int(np.flatnonzero(holder < 0)[0])
    same = next(i for i in inside[1:] if holder[i] == holder[inside[0]])  # one district
    zones = hexagons.grid["zone"].to_numpy()
    at_zones = fleet.bases_from_zones(hexagons, [zones[inside[0]], zones[same]])
    at_points = fleet.bases_at_points(
        hexagons,
        ["<b>Depot</b>", "Edge"],
        hexagons.grid["lat"].to_numpy()[[inside[0], outside]] + 1e-5,
        hexagons.grid["lon"].to_numpy()[[inside[0], outside]],
    )
    bases = fleet.combine_bases(at_zones, at_points)
    # the same zones: the same bases, the same object
    assert fleet.locate_bases(hexagons, bases) == (bases, None)
    # the boundaries rename the zones: the zone bases take the new names
    trips = Home(tiny_home).load_training_trips(tiny_model)
    named = build_service_area(tiny_model, trips=trips, boundaries=json.loads(districts_geojson()))
    renamed, notice = fleet.locate_bases(named, bases)
    assert notice is None and renamed["zone"].tolist() == bases["zone"].tolist()
    labels = named.grid.set_index("zone")["label"]
    assert renamed["label"].tolist() == labels[bases["zone"]].tolist()
    assert renamed["name"].tolist()[:2] == renamed["label"].tolist()[:2]
    assert renamed["name"].tolist()[2:] == ["<b>Depot</b>", "Edge"]
    # the districts become the zones: the two zone bases fall in one district (one
    # stays), the depot keeps its point and name, the edge is in no district
    polygons = build_service_area(tiny_model, trips=trips, zones=districts)
    moved, notice = fleet.locate_bases(polygons, bases)
    district = str(districts.ids[holder[inside[0]]])
    assert moved["zone"].tolist() == [district, district]
    assert moved["kind"].tolist() == ["zone", "point"]
    assert moved["name"].tolist() == [moved["label"][0], "<b>Depot</b>"]
    assert (moved["lat"][1], moved["lon"][1]) == (bases["lat"][2], bases["lon"][2])
    assert notice == (
        "The base 'Edge' lies in no zone of this map; the base "
        f"{bases['name'][1]!r} stands in the zone of another base: they were removed."
    )
    fleet.fleet_coverage(tiny_model, polygons, moved, "2024-03-05 08:15", 15.0)  # usable
