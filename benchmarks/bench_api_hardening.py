"""The API under issue 32's probe: bad departures, 2,000 isochrone levels, other clients.

Starts ``vrvm serve --home HOME`` (one worker) on 127.0.0.1 from a source tree
(``--src``, default this checkout; pass an export of an older commit to measure it
before a change), then:

* **predict alone**: one keep-alive client sends single-trip ``POST /v1/predict``
  requests (as :mod:`bench_api` does) for ``--seconds``: p50/p95 latency;
* **bad departures**: each of issue 32's and issue 31's values (``9999-12-31``,
  ``0001-01-01``, ``2262-04-12``, ``"99999999999"``, ``"-1"``) as ``depart`` of
  ``/v1/predict`` and ``/v1/matrix``, each followed by a valid predict on the *same*
  connection (``http.client``): the status of both, and whether the connection was
  reset;
* **2,000 isochrone levels**: one ``GET /v1/isochrone`` with 2,000 ``p`` values, timed,
  while the predict client keeps running: its p50/p95 during that request.

Results go to ``benchmarks/results/api_hardening.json`` (``--out``), with the machine.

Usage::

    python benchmarks/bench_api_hardening.py --home HOME [--src DIR] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from bench_api import _free_port, _machine, _trip_bodies, _wait_ready

RESULTS = Path(__file__).resolve().parent / "results" / "api_hardening.json"
BAD_DEPARTURES = ["9999-12-31T00:00:00", "0001-01-01T00:00:00", "2262-04-12T00:00:00",
                  "99999999999", "-1"]  # fmt: skip
LEVELS = 2000


def _start(home: Path, port: int, src: Path, log) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(src)}  # before the editable install
    env.pop("VRVM_API_TOKEN", None)
    command = [sys.executable, "-m", "vrvm", "serve", "--home", str(home), "--port", str(port)]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=src)


async def _predict_client(base: str, bodies: list[bytes], stop: threading.Event, out: list):
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=base, timeout=300.0) as client:
        i = 0
        while not stop.is_set():
            started = time.perf_counter()
            answer = await client.post(
                "/v1/predict", content=bodies[i % len(bodies)], headers=headers
            )
            out.append((time.perf_counter() - started, answer.status_code))
            i += 1


def _stats(samples: list) -> dict:
    ms = 1e3 * np.asarray([s for s, _ in samples])
    return {
        "requests": len(samples),
        "errors": sum(status != 200 for _, status in samples),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
    }


def _predict_while(base: str, bodies: list[bytes], work, min_s: float) -> tuple[dict, object]:
    """Predict latencies from one client while ``work()`` runs (at least ``min_s``)."""
    stop = threading.Event()
    samples: list = []
    thread = threading.Thread(
        target=lambda: asyncio.run(_predict_client(base, bodies, stop, samples))
    )
    thread.start()
    time.sleep(1.0)  # the client is warm
    samples.clear()
    started = time.perf_counter()
    result = work()
    time.sleep(max(0.0, min_s - (time.perf_counter() - started)))
    stop.set()
    thread.join(timeout=600)
    return _stats(samples), result


def _bad_departures(base: str, zones: list[dict], valid: bytes) -> list[dict]:
    host, port = base.removeprefix("http://").split(":")
    a, b = zones[0]["zone"], zones[1]["zone"]
    rows = []
    for depart in BAD_DEPARTURES:
        for path, body in (
            ("/v1/predict", {"trips": [{"origin": {"zone": a}, "destination": {"zone": b},
                                        "depart": depart}]}),
            ("/v1/matrix", {"origins": [{"zone": a}], "destinations": [{"zone": b}],
                            "depart": depart}),
        ):  # fmt: skip
            conn = http.client.HTTPConnection(host, int(port), timeout=60)
            headers = {"content-type": "application/json"}
            row = {"path": path, "depart": depart}
            try:
                conn.request("POST", path, json.dumps(body), headers)
                answer = conn.getresponse()
                answer.read()
                row["status"] = answer.status
                local = conn.sock.getsockname() if conn.sock else None
                try:
                    conn.request("POST", "/v1/predict", valid, headers)
                    after = conn.getresponse()
                    after.read()
                    same = conn.sock is not None and conn.sock.getsockname() == local
                    row["next_on_same_connection"] = after.status if same else "reconnected"
                except (ConnectionError, http.client.HTTPException) as exc:
                    row["next_on_same_connection"] = type(exc).__name__
            finally:
                conn.close()
            rows.append(row)
    return rows


def _isochrone(base: str, origin_zone: str) -> dict:
    params = [("origin_zone", origin_zone), ("within", 900), ("depart", "2024-03-12T08:00:00")]
    params += [("p", f"{(i + 1) / (LEVELS + 1):.6f}") for i in range(LEVELS)]
    started = time.perf_counter()
    answer = httpx.get(base + "/v1/isochrone", params=params, timeout=900.0)
    return {
        "levels": LEVELS,
        "status": answer.status_code,
        "seconds": round(time.perf_counter() - started, 3),
        "detail": answer.json().get("detail") if answer.status_code != 200 else None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", required=True, help="data home to serve (a trained model)")
    parser.add_argument("--src", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--label", default="")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile("w+") as log:
        server = _start(Path(args.home), port, Path(args.src), log)
        try:
            ready = _wait_ready(base, server)
            zones = sorted(
                httpx.get(base + "/v1/zones", timeout=30).json()["zones"],
                key=lambda z: -z["trip_ends"],
            )
            bodies = _trip_bodies(base, 512)
            alone, _ = _predict_while(base, bodies, lambda: None, args.seconds)
            bad = _bad_departures(base, zones, bodies[0])
            during, iso = _predict_while(
                base, bodies, lambda: _isochrone(base, zones[0]["zone"]), 3.0
            )
            alone_after, _ = _predict_while(base, bodies, lambda: None, args.seconds)
        finally:
            server.terminate()
            server.wait(timeout=60)
    result = {
        "label": args.label,
        "src": args.src,
        "machine": _machine(),
        "model": ready["model"],
        "predict_alone": alone,
        "bad_departures": bad,
        "isochrone_2000_levels": iso,
        "predict_during_isochrone": during,
        "predict_alone_after": alone_after,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
