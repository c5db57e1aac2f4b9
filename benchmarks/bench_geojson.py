"""What a boundary (zone) GeoJSON upload costs: time and peak memory, kept or refused.

Each case goes through what the dashboard does with an upload: ``save_boundaries``
(read, checked and kept in a fresh data home), then what the map does with it:
``load_boundaries`` (``parse_geojson``, and the polygons read again to check them),
``place_names`` for 2,500 random points in the zones' bounding box (the dashboard's
largest hexagon grid; the box itself is not timed) and ``build_service_area`` of a
small model of the synthetic city with its trips and the file as boundaries (what
every page builds: the file simplified for drawing, the idle hexagons drawn with it,
the zones named; ``map s``). ``total s`` is the sum of the steps, or the time to the
refusal; a case still running after :data:`TIMEOUT_S` is stopped. Cases:

``nyc_taxi_zones``, ``chicago_community_areas``
    The real files (``../shared/data/nyc_taxi_zones.geojson``,
    ``../shared/data/chicago_community_areas.geojson``); skipped when absent.
``polygon_5e5``
    One valid polygon of 500,000 vertices (a circle; 7 decimals: 12 MB): the most a
    boundary file holds (``MAX_BOUNDARY_VERTICES``).
``polygon_1e6``
    One valid polygon of 1,000,000 vertices (25 MB): refused on the bytes since the
    boundary files' vertex cap (kept before, in 13.7 s and 830 MB).
``vertices_2m``
    Two such polygons of 1,000,001 vertices each (46 MB): refused on the bytes.
``nesting_100k``
    100,000 nested arrays: refused on the bytes, before parsing.
``empty_arrays_15m``
    A zone whose property holds 15 million empty arrays (45 MB that would parse to
    about 1.5 GB): refused on the bytes, before parsing.
``features_50k``
    50,000 tiny triangles, one zone each (refused since issue 32: a boundary file
    holds at most 20,000 features, ``BOUNDARY_LIMITS``).
``features_100k``
    100,000 tiny triangles (18 MB): issue 32's file that was kept and then failed
    the map on every page (its features and the idle hexagons were named together).
``zigzag_20k``, ``zigzag_200k``
    One ring of 20,000 (200,000) vertices zig-zagging out and back across itself:
    invalid, and ``shapely.make_valid`` takes 18 s (more than three minutes) on it.
``name_40mb``
    One small triangle whose ``name`` property holds 40 MB of text.

Each case runs in a fresh child process (``python bench_geojson.py --child CASE FILE``)
that reads the upload's bytes, then runs the chain twice: untraced, for the wall-clock
times and the resident memory (``ru_maxrss`` of the child, and its growth over the
resident size just before the chain), then under ``tracemalloc`` for the peak of Python
allocations (numpy buffers included; GEOS's own allocations only in the resident size).
The uploads are generated in the parent, so generating them costs the child nothing.

Run from the repository root::

    python benchmarks/bench_geojson.py [--cases polygon_1e6,vertices_2m] [--no-trace]
        [--max-vertices 2000000] [--json benchmarks/results/bench_geojson.json]

Prints a Markdown table (and the messages of the refused cases).

Results (2026-11, 2 cores shared with other work, load average about 3; times vary by
tens of percent): the NYC taxi zones (263 zones, 98,192 vertices) take 0.65 s through
the three steps, 41 MB traced at the peak; the polygon of a million vertices 5.2 s and
207 MB traced (261 MB resident growth; ``place_names`` 0.75 s, down from 35.6 s when
the points were tested with an STRtree ``covered_by`` query, which walks every vertex
for each point); the 2,000,002 vertices are refused in 4.3 s at 337 MB traced; the
100,000 nested arrays in 2 ms and the 15 million empty arrays in 0.46 s, both before
parsing (43 MB: the scan's copy of the bytes); 50,000 small zones 6.5 s and 111 MB
(refused since issue 32). Since the boundary files' 500,000-vertex cap (2026-11-27,
load average about 2.7): the polygon of half a million vertices is kept in 4.1 s (530 MB
peak resident), the million-vertex polygon refused on the bytes in 0.12 s (1 MB of
growth; 9.9 s and 830 MB to keep it under the former cap, same load) and the 2,000,002
vertices in 0.46 s. Issue 32's cases (the map step, 100,000 features, zig-zag
rings, a 40 MB name), before and after: ``BENCHMARKS.md``, "Issue 32: bounded uploads".

``--parsers [scan,json,...]`` times the readers of a zone file's bytes alone instead, each
in a fresh child (CPU and wall seconds, growth of the peak resident size): the byte scan,
the scan and :mod:`json` (in use), :mod:`json`, orjson, pyogrio (GDAL) and
``shapely.from_geojson`` (GEOS) alone, and two ways of building the polygons of a parsed
document (:data:`PARSERS`)::

    python benchmarks/bench_geojson.py --parsers --repeat 3 --cases nyc_taxi_zones,...

Results (2026-11-27, load average 8-12 on the 2 cores: CPU seconds, which the load
stretches less than wall time): every library builds the whole document before a limit
can apply. The 15 million empty arrays (43 MB): the scan refuses them in 0.42 s and
43 MB; json takes 7.1 s and 1,077 MB, orjson 6.9 s and 1,305 MB, GEOS 2.4 s and 986 MB,
GDAL 1.3 s and 980 MB and then refuses them ("too complex"). The million-vertex polygon:
refused by the scan in 0.17 s and 36 MB; json 1.8 s and 185 MB, GDAL 1.5 s and 512 MB.
The 100,000 nested arrays: the scan 6 ms; json stops at Python's recursion limit,
orjson parses them all, GDAL does not recognise the format. The NYC taxi zones: scan and
json 0.29 s and 42 MB (the scan 0.05 s), json alone 0.17 s, GDAL 0.11 s and 6 MB (but
into typed columns, not the JSON document the checks and the map read). Polygons of the
parsed NYC zones: 0.04 s from the rings' arrays, 0.27 s by ``shapely.from_geojson`` of
each geometry. Hence ``vrvm.trips.places.zone_files`` keeps its own scan in front of
:mod:`json` (its docstring says why).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # vrvm is imported in the child, from this checkout
DATA = REPO.parent / "shared" / "data"
N_POINTS = 2_500
LON0, LAT0 = -87.70, 41.80


# ------------------------------------------------------------------ uploads


def circle_feature(n: int, name: str, lon: float = LON0, lat: float = LAT0) -> str:
    """A GeoJSON Feature of one valid polygon of ``n`` + 1 vertices (closed), as text."""
    t = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    x = np.append(lon + 0.5 * np.cos(t), lon + 0.5)
    y = np.append(lat + 0.5 * np.sin(t), lat)
    ring = ",".join(map("[{:.7f},{:.7f}]".format, x, y))
    return (
        f'{{"type":"Feature","properties":{{"name":"{name}"}},'
        f'"geometry":{{"type":"Polygon","coordinates":[[{ring}]]}}}}'
    )


def collection(features: list[str]) -> bytes:
    return ('{"type":"FeatureCollection","features":[' + ",".join(features) + "]}").encode()


def tiny_features(n: int) -> bytes:
    """``n`` triangles of 50 m in a grid, each named."""
    parts = []
    for k in range(n):
        x, y = LON0 + (k % 250) * 1e-3, LAT0 + (k // 250) * 1e-3
        parts.append(
            f'{{"type":"Feature","properties":{{"id":{k},"name":"Zone {k}"}},'
            '"geometry":{"type":"Polygon","coordinates":'
            f"[[[{x:.4f},{y:.4f}],[{x + 5e-4:.4f},{y:.4f}],[{x:.4f},{y + 5e-4:.4f}],"
            f"[{x:.4f},{y:.4f}]]]}}}}"
        )
    return collection(parts)


def empty_arrays(n: int) -> bytes:
    ring = f"[[{LON0},{LAT0}],[{LON0 + 0.01},{LAT0}],[{LON0},{LAT0 + 0.01}],[{LON0},{LAT0}]]"
    junk = "[" + "[]," * (n - 1) + "[]]"
    return collection(
        [
            '{"type":"Feature","properties":{"name":"Junk","junk":' + junk + "},"
            '"geometry":{"type":"Polygon","coordinates":[' + ring + "]}}"
        ]
    )


def zigzag_ring(n: int) -> bytes:
    """One Polygon whose ring of ``n`` vertices zig-zags out and back across itself.

    Out: teeth between two latitudes; back: the same teeth half a tooth later, so that
    every tooth of the way back crosses two of the way out (about ``n`` crossings, an
    invalid ring that ``shapely.make_valid`` repairs into about ``n / 2`` pieces).
    """
    half = n // 2
    k = np.arange(half)
    out_x = LON0 + k * 1e-4
    out_y = LAT0 + np.where(k % 2 == 0, 0.0, 0.01)
    back_x = out_x[::-1] + 0.5e-4
    back_y = LAT0 + np.where(k % 2 == 0, 0.01, 0.0)
    x = np.concatenate([out_x, back_x, out_x[:1]])
    y = np.concatenate([out_y, back_y, out_y[:1]])
    ring = ",".join(map("[{:.7f},{:.7f}]".format, x, y))
    return collection(
        [
            '{"type":"Feature","properties":{"name":"Zig-zag"},'
            '"geometry":{"type":"Polygon","coordinates":[[' + ring + "]]}}"
        ]
    )


def long_name(n_bytes: int) -> bytes:
    """One small triangle whose ``name`` property holds ``n_bytes`` of text."""
    ring = f"[[{LON0},{LAT0}],[{LON0 + 0.01},{LAT0}],[{LON0},{LAT0 + 0.01}],[{LON0},{LAT0}]]"
    return collection(
        [
            '{"type":"Feature","properties":{"name":"' + "N" * n_bytes + '"},'
            '"geometry":{"type":"Polygon","coordinates":[' + ring + "]}}"
        ]
    )


def upload(case: str) -> bytes | None:
    """The bytes of a case (None: a real file that is absent)."""
    if case == "nyc_taxi_zones":
        path = DATA / "nyc_taxi_zones.geojson"
    elif case == "chicago_community_areas":
        path = DATA / "chicago_community_areas.geojson"
    elif case == "polygon_5e5":
        return collection([circle_feature(499_999, "Big")])
    elif case == "polygon_1e6":
        return collection([circle_feature(999_999, "Big")])
    elif case == "vertices_2m":
        return collection(
            [
                circle_feature(1_000_000, "West", lon=LON0 - 1.2),
                circle_feature(1_000_000, "East", lon=LON0 + 1.2),
            ]
        )
    elif case == "nesting_100k":
        return b"[" * 100_000 + b"]" * 100_000
    elif case == "empty_arrays_15m":
        return empty_arrays(15_000_000)
    elif case == "features_50k":
        return tiny_features(50_000)
    elif case == "features_100k":
        return tiny_features(100_000)
    elif case == "zigzag_200k":
        return zigzag_ring(200_000)
    elif case == "zigzag_20k":
        return zigzag_ring(20_000)
    elif case == "name_40mb":
        return long_name(40 * 2**20)
    else:
        raise ValueError(f"unknown case {case!r}")
    return path.read_bytes() if path.is_file() else None


CASES = (
    "nyc_taxi_zones",
    "chicago_community_areas",
    "polygon_5e5",
    "polygon_1e6",
    "vertices_2m",
    "nesting_100k",
    "empty_arrays_15m",
    "features_50k",
    "features_100k",
    "zigzag_20k",
    "zigzag_200k",
    "name_40mb",
)


# ------------------------------------------------------------------ the child


def _rss_mb() -> float:
    """The resident size of this process now, in MB (Linux ``/proc/self/status``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _map_model():
    """A small model of the synthetic city and its trips, for the map step."""
    from vrvm import TravelTimeModel, synthetic_city

    trips = synthetic_city(600, seed=1)
    model = TravelTimeModel(n_members=1, kernel_widths=[2.0], max_basis=20, random_state=0)
    return model.fit(trips), trips


def _chain(data: bytes, home: Path, model=None, trips=None) -> dict:
    """Save the upload, load it back, name 2,500 points, build the map: times, or the
    refusal."""
    from vrvm.services.map import area as area_svc
    from vrvm.services.map import boundaries as svc
    from vrvm.trips.places.zone_files import ZoneFileError

    times = {}
    started = time.perf_counter()
    try:
        entry = svc.save_boundaries(home, data, "upload.geojson")
    except ZoneFileError as error:
        times["save_s"] = time.perf_counter() - started
        return {"outcome": "refused", "message": str(error), **times}
    times["save_s"] = time.perf_counter() - started
    started = time.perf_counter()
    document = svc.load_boundaries(home, entry.name)
    times["load_s"] = time.perf_counter() - started
    lat_lo, lon_lo, lat_hi, lon_hi = svc.boundary_zones(document).bounds  # not timed
    rng = np.random.default_rng(0)
    lat = rng.uniform(lat_lo, lat_hi, N_POINTS)
    lon = rng.uniform(lon_lo, lon_hi, N_POINTS)
    started = time.perf_counter()
    names = svc.place_names(lat, lon, document)
    times["place_names_s"] = time.perf_counter() - started
    if model is not None:  # what every page does with the file shown on the map
        started = time.perf_counter()
        try:
            area = area_svc.build_service_area(model, trips=trips, boundaries=document)
            times["map_note"] = getattr(area, "boundary_problem", None)
        except ValueError as error:
            times["map_note"] = f"the map failed: {error}"
        times["map_s"] = time.perf_counter() - started
    return {
        "outcome": "kept",
        "zones": entry.n_zones,
        "named_points": sum(bool(n) for n in names),
        **times,
    }


def child(case: str, path: Path, trace: bool) -> dict:
    """One case in this (fresh) process: times and memory of the chain."""
    import vrvm.services.map.boundaries  # noqa: F401 - imports before the baseline

    data = path.read_bytes()
    from vrvm.trips.places._zone_checks import tally_json

    model, trips = _map_model()

    tally = tally_json(data)
    with tempfile.TemporaryDirectory() as home:
        rss_before = _rss_mb()
        result = _chain(data, Path(home) / "first", model, trips)
        steps = ("save_s", "load_s", "place_names_s", "map_s")
        result["total_s"] = sum(result.get(step, 0.0) for step in steps)
        max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        result.update(
            case=case,
            file_mb=len(data) / 2**20,
            vertices=tally.pairs,
            rss_before_mb=rss_before,
            max_rss_mb=max_rss,
            rss_growth_mb=max_rss - rss_before,
        )
        if trace:
            tracemalloc.start()
            _chain(data, Path(home) / "traced", model, trips)
            result["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return result


# ------------------------------------------------------------------ parsers alone

PARSERS = ("scan", "scan+json", "json", "orjson", "pyogrio", "shapely", "rings", "from_geojson")
"""What ``--parsers`` compares on each upload's bytes (the byte cap is passed by all):

``scan``
    ``tally_json``: the byte scan alone (depth, arrays, vertices, parsing cost).
``scan+json``
    ``read_json``: the scan, then :mod:`json` only on what it lets through (in use).
``json``, ``orjson``
    The parser alone, the byte cap its only bound (orjson: skipped when absent, it is
    no dependency).
``pyogrio``
    ``pyogrio.read_arrow`` of the bytes (GDAL's GeoJSON driver, into Arrow columns).
``shapely``
    ``shapely.from_geojson`` of the whole text (GEOS: the geometries, no properties).
``rings``, ``from_geojson``
    The polygons built from the parsed document (parsed before the clock starts):
    ``polygons_of`` (each ring one numpy array, three vectorised shapely calls; in use),
    or each geometry written back to text for ``shapely.from_geojson``.
"""


def _peak_reset() -> float:
    """Reset this process's peak resident size (Linux); its resident size now, in MB."""
    Path("/proc/self/clear_refs").write_text("5")
    return _rss_mb()


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def parser_child(parser: str, path: Path) -> dict:
    """One parser on one upload in this (fresh) process: CPU and wall time, peak growth."""
    import io

    import shapely

    from vrvm.services.map.boundaries import BOUNDARY_LIMITS
    from vrvm.trips.places._zone_checks import read_json, tally_json
    from vrvm.trips.places.zone_files import ZoneFileError

    data = path.read_bytes()
    small = b'{"type":"FeatureCollection","features":[]}'
    if parser == "orjson":
        try:
            import orjson
        except ImportError:
            return {"parser": parser, "outcome": "orjson is not installed"}
    if parser == "pyogrio":
        import pyogrio

        pyogrio.read_arrow(io.BytesIO(small))  # GDAL's drivers registered before the baseline
    if parser in ("rings", "from_geojson"):
        from vrvm.trips.places._zone_checks import polygons_of

        try:
            features = json.loads(data)["features"]
        except (ValueError, RecursionError, KeyError, TypeError) as error:
            return {"parser": parser, "outcome": f"not a parsed collection ({error!r:.60})"}
    calls = {
        "scan": lambda: f"{tally_json(data).pairs:,} vertices counted",
        "scan+json": lambda: type(read_json("upload", data, BOUNDARY_LIMITS)).__name__,
        "json": lambda: type(json.loads(data.decode("utf-8-sig"))).__name__,
        "orjson": lambda: type(orjson.loads(data)).__name__,
        "pyogrio": lambda: f"{pyogrio.read_arrow(io.BytesIO(data))[1].num_rows:,} rows",
        "shapely": lambda: shapely.from_geojson(data).geom_type,
        "rings": lambda: (
            f"{len(polygons_of('upload', features, 'skip', BOUNDARY_LIMITS)[0])} polygons"
        ),
        "from_geojson": lambda: (
            f"{len(shapely.from_geojson([json.dumps(f['geometry']) for f in features]))} polygons"
        ),
    }
    rss_before = _peak_reset()
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        outcome = "read: " + calls[parser]()
    except ZoneFileError as error:
        outcome = f"refused: {error.problem}"
    except Exception as error:  # what the library says of the file
        outcome = f"{type(error).__name__}: {error}"
    return {
        "parser": parser,
        "outcome": outcome.splitlines()[0][:160],
        "cpu_s": time.process_time() - cpu_started,
        "wall_s": time.perf_counter() - started,
        "peak_growth_mb": _peak_mb() - rss_before,
    }


def run_parsers(cases: list[str], parsers: list[str], repeat: int) -> list[dict]:
    """Each parser on each case, each in a fresh child, the least CPU time of ``repeat``."""
    results = []
    for case in cases:
        data = upload(case)
        if data is None:
            print(f"{case}: file absent from {DATA}, skipped", file=sys.stderr)
            continue
        with tempfile.NamedTemporaryFile(suffix=".geojson", delete=False) as file:
            file.write(data)
        try:
            for parser in parsers:
                runs = []
                for _ in range(repeat):
                    command = [sys.executable, __file__, "--parser-child", parser, file.name]
                    done = subprocess.run(
                        command, capture_output=True, text=True, timeout=TIMEOUT_S
                    )
                    if done.returncode:  # a crash of the library is a result too
                        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
                        runs.append({"parser": parser, "outcome": f"the child failed: {last}"})
                    else:
                        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
                best = min(runs, key=lambda r: r.get("cpu_s", math.inf))
                results.append({"case": case, "file_mb": len(data) / 2**20, **best})
                print(f"{case} {parser}: {best.get('cpu_s', 0.0):.2f} s", file=sys.stderr)
        finally:
            os.unlink(file.name)
    return results


def parser_table(results: list[dict]) -> str:
    rows = ["| case | file MB | parser | CPU s | wall s | peak RSS growth MB | outcome |"]
    rows.append("|" + "---|" * 7)
    for r in results:
        if "cpu_s" not in r:
            rows.append(
                f"| {r['case']} | {r['file_mb']:.1f} | {r['parser']} | | | | {r['outcome']} |"
            )
            continue
        outcome = r["outcome"].replace("|", "/")
        rows.append(
            f"| {r['case']} | {r['file_mb']:.1f} | {r['parser']} | {r['cpu_s']:.3f} | "
            f"{r['wall_s']:.3f} | {r['peak_growth_mb']:.0f} | {outcome} |"
        )
    return "\n".join(rows)


# ------------------------------------------------------------------ the parent


TIMEOUT_S = 240.0
"""A case still running after this long is stopped and reported as such."""


def run(case: str, trace: bool, max_vertices: int | None = None) -> dict | None:
    data = upload(case)
    if data is None:
        print(f"{case}: file absent from {DATA}, skipped", file=sys.stderr)
        return None
    with tempfile.NamedTemporaryFile(suffix=".geojson", delete=False) as file:
        file.write(data)
    del data
    try:
        command = [sys.executable, __file__, "--child", case, file.name]
        command += [] if trace else ["--no-trace"]
        command += [] if max_vertices is None else ["--max-vertices", str(max_vertices)]
        started = time.perf_counter()
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, check=True, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            seconds = time.perf_counter() - started
            return {"case": case, "outcome": "timeout", "total_s": seconds}
    finally:
        os.unlink(file.name)
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: list[dict]) -> str:
    head = (
        "| case | file MB | vertices | outcome | save s | load s | place_names s | map s "
        "| total s | traced peak MB | RSS growth MB | max RSS MB |"
    )
    rows = [head, "|" + "---|" * 12]
    for r in results:
        if r["outcome"] == "timeout":
            rows.append(f"| {r['case']} | | | still running after {r['total_s']:.0f} s |")
            continue
        plural = "s" * (r.get("zones") != 1)
        outcome = f"kept, {r['zones']:,} zone{plural}" if r["outcome"] == "kept" else "refused"
        cells = [
            r["case"],
            f"{r['file_mb']:.1f}",
            f"{r['vertices']:,}",
            outcome,
            f"{r['save_s']:.2f}",
            f"{r['load_s']:.2f}" if "load_s" in r else "-",
            f"{r['place_names_s']:.2f}" if "place_names_s" in r else "-",
            f"{r['map_s']:.2f}" if "map_s" in r else "-",
            f"{r['total_s']:.2f}",
            f"{r['traced_peak_mb']:.0f}" if "traced_peak_mb" in r else "-",
            f"{r['rss_growth_mb']:.0f}",
            f"{r['max_rss_mb']:.0f}",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--trace", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--max-vertices",
        type=int,
        help="the boundary files' vertex cap for this run (the figures of another cap: "
        "2000000 was the cap before MAX_BOUNDARY_VERTICES)",
    )
    parser.add_argument(
        "--parsers",
        nargs="?",
        const=",".join(PARSERS),
        help="compare the parsers alone on each case's bytes instead (comma-separated, "
        f"default all: {', '.join(PARSERS)})",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per parser (least CPU)")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "FILE"), help=argparse.SUPPRESS)
    parser.add_argument("--parser-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.parser_child:
        print(json.dumps(parser_child(args.parser_child[0], Path(args.parser_child[1]))))
        return 0
    if args.parsers:
        cases = [case.strip() for case in args.cases.split(",")]
        results = run_parsers(cases, args.parsers.split(","), args.repeat)
        print(parser_table(results))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        return 0
    if args.max_vertices is not None and args.child:
        import dataclasses

        from vrvm.services.map import boundaries

        boundaries.BOUNDARY_LIMITS = dataclasses.replace(
            boundaries.BOUNDARY_LIMITS, max_vertices=args.max_vertices
        )
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.trace)))
        return 0
    results = []
    for case in args.cases.split(","):
        result = run(case.strip(), args.trace, args.max_vertices)
        if result is not None:
            results.append(result)
            print(f"{case}: {result['total_s']:.1f} s", file=sys.stderr)
    print(table(results))
    for r in results:
        if r["outcome"] == "refused":
            print(f"\n{r['case']}: {r['message']}")
        elif r.get("map_note"):
            print(f"\n{r['case']} (map): {r['map_note']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
