"""Benchmark of ``vrvm predict`` on hostile model directories (issue 32, item 10).

Each case builds a model directory from a small fitted model (2 members, 800 synthetic
trips), breaks it as an attacker would (fixing the checksum in ``model.json`` where
that matters), and runs ``python -m vrvm predict DIR QUERIES --out -`` in a fresh
process, under an address-space limit (``--limit-gb``, so that a loader reading
``/dev/zero`` fails instead of taking the machine's memory) and a timeout
(``--timeout-s``, for a loader blocked on a FIFO). Per case: the exit status, the
seconds, the peak resident memory of the process (``wait4``'s ``ru_maxrss``, 190-200 MB
of it Python and imports) and the first line of its error output.

Cases: ``deflate-bomb`` (a 2 GiB array of zeros deflated to about 2 MB), ``npz->/dev/zero``
and ``json->/dev/zero`` (symbolic links), ``json-fifo`` and ``npz-fifo`` (named pipes),
``header-1e12`` (a ``.npy`` header claiming 10^12 elements, the manifest agreeing),
``weights-1e300`` (a member's weights set to 1e300, saved with a valid checksum) and
``intact`` (the untouched model, for the cost of the checks).

Usage::

    python benchmarks/bench_hostile_model.py --label after
    python benchmarks/bench_hostile_model.py --src /tmp/old-checkout --label before

``--src DIR`` runs the ``vrvm`` package found in DIR (an older checkout) instead of
this one. Prints a Markdown table and writes raw JSON under the label to
``benchmarks/results/bench_hostile_model.json`` (other labels are kept). POSIX only.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
BOMB_VALUES = 2**28  # 2 GiB of float64 zeros
CHUNK_VALUES = 2**22


def _fix_checksum(model_dir: Path, arrays: dict | None = None) -> None:
    manifest_path = model_dir / "model.json"
    document = json.loads(manifest_path.read_text())
    document["arrays_sha256"] = hashlib.sha256((model_dir / "arrays.npz").read_bytes()).hexdigest()
    if arrays is not None:
        document["arrays"] = arrays
    manifest_path.write_text(json.dumps(document))


def _deflate_bomb(model_dir: Path) -> None:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (BOMB_VALUES,)}
    )
    chunk = np.zeros(CHUNK_VALUES).tobytes()
    with zipfile.ZipFile(model_dir / "arrays.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("w.npy", "w", force_zip64=True) as member:
            member.write(header.getvalue())
            for _ in range(BOMB_VALUES // CHUNK_VALUES):
                member.write(chunk)
    _fix_checksum(model_dir, {"w": {"shape": [BOMB_VALUES], "dtype": "<f8"}})


def _header_1e12(model_dir: Path) -> None:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
    )
    with zipfile.ZipFile(model_dir / "arrays.npz", "w") as archive:
        archive.writestr("w.npy", header.getvalue() + bytes(64))
    _fix_checksum(model_dir, {"w": {"shape": [10**12], "dtype": "<f8"}})


def _symlink(name: str):
    def build(model_dir: Path) -> None:
        (model_dir / name).unlink()
        (model_dir / name).symlink_to("/dev/zero")

    return build


def _fifo(name: str):
    def build(model_dir: Path) -> None:
        (model_dir / name).unlink()
        os.mkfifo(model_dir / name)

    return build


def _huge_weights(model_dir: Path) -> None:
    from vrvm.trips.model.model_format import FORMAT_NAME
    from vrvm.trips.store.model_dir import load_model_dir, save_model_dir

    manifest = json.loads((model_dir / "model.json").read_text())
    version = manifest["format_version"]
    metadata, arrays = load_model_dir(
        model_dir, format_name=FORMAT_NAME, max_format_version=version
    )
    arrays["m000__mean"] = np.full_like(arrays["m000__mean"], 1e300)
    save_model_dir(
        model_dir,
        metadata=metadata,
        arrays=arrays,
        format_name=FORMAT_NAME,
        format_version=version,
    )


CASES = {
    "deflate-bomb": _deflate_bomb,
    "npz->/dev/zero": _symlink("arrays.npz"),
    "json->/dev/zero": _symlink("model.json"),
    "json-fifo": _fifo("model.json"),
    "npz-fifo": _fifo("arrays.npz"),
    "header-1e12": _header_1e12,
    "weights-1e300": _huge_weights,
    "intact": lambda model_dir: None,
}


def run_case(model_dir: Path, queries: Path, args) -> dict:
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = str(Path(args.src).resolve())
    limit = int(args.limit_gb * 2**30)

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    cmd = [sys.executable, "-m", "vrvm", "predict", str(model_dir), str(queries), "--out", "-"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=err, env=env, preexec_fn=limit_memory, cwd=tempfile.gettempdir()
        )
        deadline = started + args.timeout_s
        status = None
        while time.perf_counter() < deadline:
            pid, wait_status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(wait_status)
                break
            time.sleep(0.02)
        timed_out = status is None
        if timed_out:
            proc.kill()
            _, wait_status, usage = os.wait4(proc.pid, 0)
        # reaped by wait4 (for its rusage): tell Popen, which would otherwise wait again
        proc.returncode = os.waitstatus_to_exitcode(wait_status)
        seconds = time.perf_counter() - started
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
        out.seek(0)
        n_out = len(out.read().splitlines())
    return {
        "status": "timeout" if timed_out else status,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "output_rows": max(n_out - 1, 0),
        "message": (lines[-1] if lines else "")[:300],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", help="run the vrvm package of this checkout")
    parser.add_argument("--limit-gb", type=float, default=4.0)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--label", default="run")
    args = parser.parse_args()

    from vrvm import TravelTimeModel
    from vrvm.trips.synthetic import synthetic_city

    results = {}
    with tempfile.TemporaryDirectory(prefix="vrvm-hostile-") as tmp:
        tmp = Path(tmp)
        model = TravelTimeModel(n_members=2, kernel_widths=[1.0, 2.0], max_basis=60, random_state=0)
        model.fit(synthetic_city(800, seed=0))
        queries = tmp / "queries.csv"
        synthetic_city(100, seed=1).to_csv(queries, index=False)
        for name in args.cases:
            model_dir = model.save(tmp / name.replace("/", "_").replace(">", ""))
            CASES[name](model_dir)
            results[name] = run_case(model_dir, queries, args)
            print(f"{name}: {results[name]}", file=sys.stderr, flush=True)

    print(f"\n{args.label} (limit {args.limit_gb:g} GB, timeout {args.timeout_s:g} s)\n")
    print("| case | exit | seconds | peak RSS (MB) | rows out | message |")
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        message = r["message"].replace("|", "\\|")
        print(
            f"| {name} | {r['status']} | {r['seconds']:.2f} | {r['peak_rss_mb']:,.0f} | "
            f"{r['output_rows']} | {message} |"
        )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "bench_hostile_model.json"
    runs = json.loads(out.read_text()) if out.exists() else {}
    runs[args.label] = {
        "meta": {
            "args": vars(args),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "load_avg": list(os.getloadavg()),
        },
        "cases": results,
    }
    out.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
