"""Load benchmark of the HTTP API: the real server on 127.0.0.1, concurrent clients.

Starts ``vrvm serve --home HOME --port PORT`` as its own process (the demo model is
built in HOME first when it has none), waits for ``/readyz``, then:

* single-trip ``POST /v1/predict`` (random busy zone pairs, quantiles 0.5 and 0.9,
  P(T <= 600 s), indices and support: the full answer) from 1, 8 and 32 concurrent
  clients, each a keep-alive connection sending its next request when the previous
  answer arrives, for ``--seconds`` seconds after a warm-up: p50/p95/p99 latency,
  requests per second and errors;
* a 100 x 100 ``POST /v1/matrix`` (median, mean and one quantile), timed end to end
  over ``--matrix-repeats`` runs.

The clients run in this process (asyncio, httpx); its CPU time is reported, since on a
2-core machine they compete with the server. Results go to
``benchmarks/results/api.json``. Targets (issue 15, this 2-core machine): p95 <= 50 ms
for one trip at 8 concurrent clients, >= 150 requests/s sustained, the 100 x 100
matrix under 1 s, zero errors.

Usage::

    python benchmarks/bench_api.py [--home DIR] [--seconds 20] [--clients 1,8,32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "api.json"
TARGETS = {"p95_ms_at_8": 50.0, "requests_per_s": 150.0, "matrix_100_s": 1.0}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_server(home: Path, port: int, log, workers: int = 1) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "vrvm",
        "serve",
        "--home",
        str(home),
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def _wait_ready(base: str, server: subprocess.Popen, timeout_s: float = 900.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode}")
        try:
            answer = httpx.get(base + "/readyz", timeout=2.0)
            if answer.status_code == 200:
                return answer.json()
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the server was not ready within {timeout_s:.0f} s")


def _trip_bodies(base: str, n: int, seed: int = 0, cold: bool = False) -> list[bytes]:
    """``n`` single-trip bodies: warm, pairs of the 40 busiest zones on one day (a
    dispatch desk asking about the same bases); cold, pairs of any zones on any day of
    2024, so that almost no trip's free-flow time is already known to the server."""
    zones = httpx.get(base + "/v1/zones", timeout=30).json()["zones"]
    busy = zones if cold else sorted(zones, key=lambda z: -z["trip_ends"])[:40]
    rng = np.random.default_rng(seed)
    bodies = []
    for _ in range(n):
        a, b = rng.choice(len(busy), 2, replace=False)
        minute = int(rng.integers(6 * 60, 21 * 60))
        day = np.datetime64("2024-01-01") + int(rng.integers(0, 366)) if cold else "2024-03-12"
        body = {
            "trips": [
                {
                    "origin": {"zone": busy[a]["zone"]},
                    "destination": {"lat": busy[b]["lat"], "lon": busy[b]["lon"]},
                    "depart": f"{day}T{minute // 60:02d}:{minute % 60:02d}:00",
                }
            ],
            "quantiles": [0.5, 0.9],
            "within_s": [600],
        }
        bodies.append(json.dumps(body).encode())
    return bodies


async def _client(base, bodies, offset, stop_at, latencies, errors):
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=base, timeout=30.0) as client:
        i = offset
        while time.perf_counter() < stop_at:
            body = bodies[i % len(bodies)]
            i += 1
            started = time.perf_counter()
            try:
                answer = await client.post("/v1/predict", content=body, headers=headers)
                ok = answer.status_code == 200 and len(answer.json()["results"]) == 1
            except httpx.HTTPError:
                ok = False
            latencies.append(time.perf_counter() - started)
            if not ok:
                errors.append(1)


async def _load(base: str, bodies: list[bytes], clients: int, seconds: float) -> dict:
    warm: list[float] = []
    await asyncio.gather(
        *(
            _client(base, bodies, 97 * k, time.perf_counter() + 2.0, warm, [])
            for k in range(clients)
        )
    )
    latencies: list[float] = []
    errors: list[int] = []
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    stop_at = started + seconds
    await asyncio.gather(
        *(_client(base, bodies, 13 * k, stop_at, latencies, errors) for k in range(clients))
    )
    wall = time.perf_counter() - started
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    ms = 1e3 * np.asarray(latencies)
    return {
        "clients": clients,
        "seconds": round(wall, 2),
        "requests": len(latencies),
        "errors": len(errors),
        "requests_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1),
        "max_ms": round(float(ms.max()), 1),
        "client_cpu_s": round((cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime), 2),
    }


def _matrix(base: str, repeats: int) -> dict:
    zones = httpx.get(base + "/v1/zones", timeout=30).json()["zones"]
    points = [{"zone": z["zone"]} for z in zones[:100]]
    body = {
        "origins": points,
        "destinations": points,
        "depart": "2024-03-12T08:00:00",
        "quantiles": [0.9],
    }
    times = []
    with httpx.Client(base_url=base, timeout=120.0) as client:
        client.post("/v1/matrix", json={**body, "origins": points[:5]})  # warm-up
        for _ in range(repeats):
            started = time.perf_counter()
            answer = client.post("/v1/matrix", json=body)
            times.append(time.perf_counter() - started)
            if answer.status_code != 200 or len(answer.json()["pairs"]) != 10_000:
                raise RuntimeError(f"matrix failed: {answer.status_code} {answer.text[:200]}")
    return {
        "pairs": 10_000,
        "repeats": repeats,
        "median_s": round(float(np.median(times)), 3),
        "max_s": round(float(np.max(times)), 3),
    }


def _machine() -> dict:
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", help="data home to serve (default: a temporary one)")
    parser.add_argument("--seconds", type=float, default=20.0, help="per client count")
    parser.add_argument("--clients", default="1,8,32", help="concurrent clients, comma-separated")
    parser.add_argument("--matrix-repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2, help="server processes (vrvm serve)")
    parser.add_argument("--label", default="", help="a label stored with the results")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--server-log", help="keep the server's log in this file")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="every request a new pair and day (any zones, any day of 2024) instead of "
        "512 requests between the 40 busiest zones on one day, cycled",
    )
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not counts or min(counts) < 1 or max(counts) > 256 or not 0 < args.seconds <= 600:
        parser.error("clients must be 1..256 and seconds in (0, 600]")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(args.home) if args.home else Path(tmp) / "home"
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        log_path = Path(args.server_log) if args.server_log else Path(tmp) / "server.log"
        with open(log_path, "wb") as log:
            server = _start_server(home, port, log, args.workers)
            try:
                ready = _wait_ready(base, server)
                bodies = _trip_bodies(base, 60_000 if args.cold else 512, cold=args.cold)
                runs = []
                for clients in counts:
                    run = asyncio.run(_load(base, bodies, clients, args.seconds))
                    print(json.dumps(run), flush=True)
                    runs.append(run)
                matrix = _matrix(base, args.matrix_repeats)
                print(json.dumps({"matrix": matrix}), flush=True)
            finally:
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
    result = {
        "label": args.label,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": _machine(),
        "model": ready["model"],
        "workers": args.workers,
        "cold": args.cold,
        "command": "python benchmarks/bench_api.py " + " ".join(argv or sys.argv[1:]),
        "predict_single_trip": runs,
        "matrix_100x100": matrix,
        "targets": TARGETS,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
