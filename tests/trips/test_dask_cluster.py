"""Training on a real Dask cluster: a scheduler and workers started as processes.

The client sends paths and row groups, never rows; the model equals the local fit,
and a worker killed mid-fit costs a retry, never a wrong model.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from tests._waiting import START_S
from vrvm.trips.files.dataset import TripDataset
from vrvm.trips.model.training import fit_dataset
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.synthetic import synthetic_city

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow_process

FAST = {
    "n_members": 3,
    "kernel_widths": [1.0, 2.0],
    "max_basis": 100,
    "subsample_size": 800,
    "random_state": 0,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask(*args) -> subprocess.Popen:
    exe = shutil.which("dask")
    command = [exe, *args] if exe else [sys.executable, "-m", "dask", *args]
    return subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # killed as a group below
    )


@pytest.fixture
def cluster():
    """A scheduler and two single-threaded workers, each its own process."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [_dask("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")]
    workers = [
        _dask("worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard")
        for _ in range(2)
    ]
    procs += workers
    try:
        # deadlines, not waits: the processes import Dask (tens of seconds on a busy machine)
        with distributed.Client(address, timeout=START_S) as client:
            client.wait_for_workers(2, timeout=START_S)
        yield address, workers
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    trips = synthetic_city(9000, seed=0)
    trips.to_parquet(root / "trips.parquet", row_group_size=1000)
    return TripDataset(root / "trips.parquet", part_rows=1000)


@pytest.fixture(scope="module")
def queries():
    return synthetic_city(200, seed=5)


@pytest.fixture(scope="module")
def local(data):
    model = TravelTimeModel(**FAST)
    fit_dataset(model, data)
    return model


def test_a_fit_on_the_cluster_equals_the_local_fit(cluster, data, local, queries):
    address, _ = cluster
    on_cluster = TravelTimeModel(**FAST, backend="dask", client=address)
    fit_dataset(on_cluster, data)
    a, b = on_cluster.predict_dist(queries), local.predict_dist(queries)
    np.testing.assert_allclose(a.loc, b.loc, rtol=1e-8)
    np.testing.assert_allclose(a.scale, b.scale, rtol=1e-8)
    np.testing.assert_array_equal(on_cluster.shard_sizes_, local.shard_sizes_)
    assert on_cluster.training_summary_["sha256"] == local.training_summary_["sha256"]


def test_a_worker_killed_mid_fit_costs_a_retry_not_a_wrong_model(cluster, data, local, queries):
    address, workers = cluster
    killed = []

    def progress(done, total, elapsed, phase):
        if phase == "statistics" and not killed:
            os.killpg(workers[0].pid, signal.SIGKILL)  # its tasks are rescheduled
            killed.append(time.time())

    model = TravelTimeModel(**FAST, backend="dask", client=address)
    fit_dataset(model, data, progress=progress)
    assert killed and workers[0].wait(timeout=START_S) != 0
    a, b = model.predict_dist(queries), local.predict_dist(queries)
    np.testing.assert_allclose(a.loc, b.loc, rtol=1e-8)
    np.testing.assert_allclose(a.scale, b.scale, rtol=1e-8)


def test_a_scheduler_that_is_not_there_is_a_clear_error(data):
    import dask

    model = TravelTimeModel(**FAST, backend="dask", client=f"tcp://127.0.0.1:{_free_port()}")
    with (
        dask.config.set({"distributed.comm.timeouts.connect": "2s"}),
        pytest.raises(OSError, match="cannot connect to the Dask scheduler"),
    ):
        fit_dataset(model, data)
