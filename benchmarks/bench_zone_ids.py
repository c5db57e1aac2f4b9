"""What zone-id trips cost: trip ends moved to a representative point of their zone.

Trip files that give zone ids instead of coordinates (NYC TLC records since 2016-07:
``PULocationID``/``DOLocationID``) are read by placing each end at its zone's
representative point (:meth:`vrvm.trips.places.zone_files.ZoneFile.representative_points`, a
point guaranteed inside the polygon). This script measures what that costs on real trips
that have both: the NYC 2016 sample (``../shared/data/nyc_taxi_2016_sample.csv``, the
6,000 ``train`` and 2,000 ``valid`` rows that carry a duration) and the 263 NYC taxi
zones (``../shared/data/nyc_taxi_zones.geojson``, ``LocationID``).

Each end is assigned its zone with :meth:`ZoneFile.zone_of` and moved to the zone's
point; reported: the share of ends inside a zone, the share of intra-zone trips (both
ends in one zone: their straight-line distance becomes 0), the displacement of trip
ends (km) and the change in straight-line trip distance. With ``--model`` (default on;
``--no-model`` skips it), ``TravelTimeModel(n_members=4, random_state=0)`` is trained on
a random 80 % (``numpy.random.default_rng(0)``) of the trips with both ends in a zone,
once on the coordinates and once on the zone points, and both are scored on the other
20 % in the same form (``model.evaluate``: CRPS, NLL, interval coverage), on all of
them and on the intra-zone ones.

Run from the repository root::

    python benchmarks/bench_zone_ids.py [--no-model] [--json benchmarks/results/bench_zone_ids.json]

Results (2026-11, ``benchmarks/results/bench_zone_ids.json``; 8,000 trips, every end
inside one of the 263 zones, 161 zones used):

* trip ends move by 0.36 km at the median and 0.69 km at the 90th percentile (max
  3.3 km; the zones at trip ends cover 0.69 km² at the median);
* 4.5 % of trips are intra-zone: their straight-line distance (median 0.63 km, 90th
  percentile 1.14 km, median duration 246 s) becomes 0;
* straight-line trip distance changes by 0.32 km at the median (0.83 km at the 90th
  percentile), 13.6 % relative at the median (57 % at the 90th percentile; trips of at
  least 100 m), with almost no bias (median change +0.01 km);
* the model (6,400 training trips, 1,600 held out) loses about 7 %: CRPS 151.9 s ->
  162.2 s, NLL 6.86 -> 6.95, MAE of the median 210 s -> 226 s; the intervals stay
  calibrated (90 %: coverage 0.912 -> 0.920) but widen (mean width 893 s -> 1,002 s).
  On the 59 held-out intra-zone trips the two are alike (CRPS 130.9 s vs 125.3 s: too
  few trips to tell apart).

Times of day: the sample has no dates, only ``weekday`` (1 = Sunday), ``hour`` and
``minute`` of New York local time, so ``start_time`` is put in the week of Monday
1970-01-05 (America/New_York): enough for the model's time-of-day and weekend inputs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from vrvm import TravelTimeModel
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.places.zone_files import ZoneFile

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
REFERENCE_MONDAY = pd.Timestamp("1970-01-05")


def canonical_trips(raw: pd.DataFrame) -> pd.DataFrame:
    """The sample's rows with a duration as canonical trips (coordinates as given)."""
    rows = raw.dropna(subset=["duration"]).reset_index(drop=True)
    # weekday 1 = Sunday ... 7 = Saturday -> days after Monday 1970-01-05 (Sunday = 6)
    days = (rows["weekday"].to_numpy() - 2) % 7
    local = (
        REFERENCE_MONDAY
        + pd.to_timedelta(days, unit="D")
        + pd.to_timedelta(rows["hour"], unit="h")
        + pd.to_timedelta(rows["minute"], unit="min")
    )
    return pd.DataFrame(
        {
            "origin_lat": rows["pickup_latitude"].astype(float),
            "origin_lon": rows["pickup_longitude"].astype(float),
            "dest_lat": rows["dropoff_latitude"].astype(float),
            "dest_lon": rows["dropoff_longitude"].astype(float),
            "start_time": pd.DatetimeIndex(local).tz_localize("America/New_York"),
            "travel_time_s": rows["duration"].astype(float),
        }
    )


def zone_points(trips: pd.DataFrame, zones: ZoneFile) -> tuple[pd.DataFrame, dict]:
    """Trips with both ends moved to their zone's point, and what the move did."""
    o_zone = zones.zone_of(trips["origin_lat"], trips["origin_lon"])
    d_zone = zones.zone_of(trips["dest_lat"], trips["dest_lon"])
    o_in, d_in = o_zone != None, d_zone != None  # noqa: E711 - elementwise
    both = o_in & d_in
    o_lat, o_lon = zones.representative_points(o_zone)
    d_lat, d_lon = zones.representative_points(d_zone)
    moved = trips.assign(origin_lat=o_lat, origin_lon=o_lon, dest_lat=d_lat, dest_lon=d_lon)
    shift_km = np.concatenate(
        [
            haversine_km(trips["origin_lat"], trips["origin_lon"], o_lat, o_lon)[o_in],
            haversine_km(trips["dest_lat"], trips["dest_lon"], d_lat, d_lon)[d_in],
        ]
    )
    before = haversine_km(
        trips["origin_lat"], trips["origin_lon"], trips["dest_lat"], trips["dest_lon"]
    )
    after = haversine_km(o_lat, o_lon, d_lat, d_lon)
    intra = both & (o_zone == d_zone)
    change = (after - before)[both]
    longer = both & (before >= 0.1)  # relative change of trips of at least 100 m
    relative = np.abs(after - before)[longer] / before[longer]
    intra_before = before[intra]
    zone_area = zones.area_km2[zones.positions(np.concatenate([o_zone[o_in], d_zone[d_in]]))]
    summary = {
        "n_trips": len(trips),
        "share_ends_in_a_zone": float((o_in.sum() + d_in.sum()) / (2 * len(trips))),
        "share_trips_both_ends_in_a_zone": float(both.mean()),
        "share_intra_zone_trips": float(intra.sum() / both.sum()),
        "n_zones_used": len(set(o_zone[o_in]) | set(d_zone[d_in])),
        "end_displacement_km": {
            "median": float(np.median(shift_km)),
            "p90": float(np.percentile(shift_km, 90)),
            "max": float(shift_km.max()),
        },
        "zone_area_km2_at_trip_ends": {
            "median": float(np.median(zone_area)),
            "p90": float(np.percentile(zone_area, 90)),
        },
        "straight_line_km_before": {
            "median": float(np.median(before[both])),
            "mean": float(np.mean(before[both])),
        },
        "straight_line_km_after": {
            "median": float(np.median(after[both])),
            "mean": float(np.mean(after[both])),
        },
        "distance_change_km": {
            "median": float(np.median(change)),
            "median_abs": float(np.median(np.abs(change))),
            "p90_abs": float(np.percentile(np.abs(change), 90)),
        },
        "distance_change_relative": {
            "median_abs": float(np.median(relative)),
            "p90_abs": float(np.percentile(relative, 90)),
        },
        "intra_zone_trips": {
            "straight_line_km_before_median": float(np.median(intra_before)),
            "straight_line_km_before_p90": float(np.percentile(intra_before, 90)),
            "duration_s_median": float(np.median(trips["travel_time_s"][intra])),
        },
    }
    return moved[both].reset_index(drop=True), {"both": both, **summary}


def compare_models(trips: pd.DataFrame, moved: pd.DataFrame, both: np.ndarray) -> dict:
    """Train on coordinates and on zone points (same trips, same split), score both.

    The hold-out is a seeded random 20 % of the rows (the same rows in both forms);
    each model is scored on its own form of them, on all of them and on the intra-zone
    trips among them (whose zone form has both ends at one point).
    """
    exact = trips[both].reset_index(drop=True)
    rng = np.random.default_rng(0)
    in_test = np.zeros(len(exact), dtype=bool)
    in_test[rng.permutation(len(exact))[: round(0.2 * len(exact))]] = True
    same_point = (moved["origin_lat"] == moved["dest_lat"]) & (
        moved["origin_lon"] == moved["dest_lon"]
    )
    intra_test = in_test & same_point.to_numpy()
    results = {
        "n_train": int((~in_test).sum()),
        "n_test": int(in_test.sum()),
        "n_test_intra_zone": int(intra_test.sum()),
    }
    for label, frame in (("coordinates", exact), ("zone_points", moved)):
        model = TravelTimeModel(n_members=4, random_state=0)
        started = time.perf_counter()
        model.fit(frame[~in_test].reset_index(drop=True))
        fit_s = time.perf_counter() - started
        scores = model.evaluate(frame[in_test].reset_index(drop=True))
        intra = model.evaluate(frame[intra_test].reset_index(drop=True))
        results[label] = {
            "fit_s": round(fit_s, 1),
            "all": {k: v for k, v in scores.items() if _is_plain(v)},
            "intra_zone": {k: v for k, v in intra.items() if _is_plain(v)},
        }
    return results


def _is_plain(value) -> bool:
    if isinstance(value, dict):
        return all(_is_plain(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    return isinstance(value, (int, float, str, bool)) or value is None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trips", type=Path, default=DATA / "nyc_taxi_2016_sample.csv")
    parser.add_argument("--zones", type=Path, default=DATA / "nyc_taxi_zones.geojson")
    parser.add_argument("--model", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    zones = ZoneFile.read(args.zones, id_property="LocationID")
    trips = canonical_trips(pd.read_csv(args.trips))
    moved, summary = zone_points(trips, zones)
    both = summary.pop("both")
    summary["zone_file"] = {
        "file": args.zones.name,
        "zones": len(zones),
        "fingerprint": zones.fingerprint,
    }
    if args.model:
        summary["model"] = compare_models(trips, moved, both)
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
