"""Training never leaves worker processes behind when its parent dies (issue 12, "Workers").

Real parent processes train with loky workers and are killed; then no process that
inherited the parent's environment may survive. Processes are found by a random token
in their environment rather than by walking the parent's children: orphans are
re-parented (to init or a subreaper), which is exactly when a walk would miss them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow_process,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"),
        reason="parent-death tests need Linux process semantics (prctl, /proc via psutil)",
    ),
]
psutil = pytest.importorskip("psutil", reason="psutil (installed with vrvm[dask]) lists processes")

from tests._waiting import START_S, wait_until  # noqa: E402 (after the skip for psutil)
from tools.processes import TOKEN_ENV, tagged  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
N_JOBS = 2
# The watchdog polls every 0.5 s, but a worker's watchdog starts only once Python and
# joblib are loaded (0.3 s idle; at load 11 on two cores 3-10 s, BENCHMARKS.md, issue 32).
# How fast orphans go is measured by benchmarks/bench_worker_leak.py; this deadline only
# bounds a failure, and stays well under loky's idle timeout (300 s), which would end
# an idle orphan without any watchdog.
GONE_S = 90.0

# Busy for about 20 s on two cores, printing "members k/4" as members complete. Fixed
# widths: the workers start on the members at once (with "auto", they first select the
# widths, tested on its own below).
LIBRARY_PARENT = """
import vrvm
from vrvm.trips.synthetic import synthetic_city
model = vrvm.TravelTimeModel(
    n_members=4, n_jobs={n_jobs}, random_state=0, kernel_widths={widths}
)
def report(done, total, elapsed_s, phase):
    print(f"{{phase}} {{done}}/{{total}}", flush=True)
model.fit(synthetic_city({n_trips}, seed=0), progress=report)
print("fitted", flush=True)
"""
FIRST_MEMBER = "members 1/4"  # three members are still being fitted
FIXED_WIDTHS = "[1.0, 2.0]"

# Trains in a thread that then ends, as the dashboard trains in a Streamlit script
# thread, and stays up like the server with the reusable workers idle.
THREAD_PARENT = """
import threading, time
import vrvm
from vrvm.trips.synthetic import synthetic_city

def fit():
    vrvm.TravelTimeModel(
        n_members=2, n_jobs={n_jobs}, random_state=0, kernel_widths={widths}
    ).fit(synthetic_city(2000, seed=0))

for _ in range(2):
    thread = threading.Thread(target=fit)
    thread.start()
    thread.join()
    print("fitted", flush=True)
time.sleep(600)
"""


def _is_worker(proc) -> bool:
    try:
        return "loky.backend.popen_loky_posix" in " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _describe(procs) -> list[str]:
    out = []
    for proc in procs:
        try:
            out.append(f"{proc.pid} (ppid {proc.ppid()}): {' '.join(proc.cmdline())[:120]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


class Parent:
    """A parent process with a token in its environment; ends what it leaves on exit."""

    def __init__(self, argv: list[str], tmp_path: Path):
        self.token = uuid.uuid4().hex
        env = {**os.environ, TOKEN_ENV: self.token, "VRVM_HOME": str(tmp_path / "home")}
        # output to a file, not a pipe: a surviving orphan would hold a pipe open
        self.log = tmp_path / "parent.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
            )

    def descendants(self) -> list:
        return [p for p in tagged(self.token) if p.pid != self.proc.pid]

    def output(self) -> str:
        return self.log.read_text()

    def workers(self) -> list:
        return [p for p in self.descendants() if _is_worker(p)]

    def wait_for_workers(self, n: int = N_JOBS) -> list:
        return wait_until(
            lambda: len(workers := self.workers()) >= n and workers,
            START_S,
            f"{n} loky workers of the parent",
            process=self.proc,
            details=self.output,
        )

    def wait_for_output(self, text: str, count: int = 1) -> None:
        wait_until(
            lambda: self.output().count(text) >= count,
            START_S,
            f"the parent printing {text!r} {count} times",
            process=self.proc,
            details=self.output,
        )

    def kill_and_wait_until_alone(self, signum: int = signal.SIGKILL) -> float:
        """Signal the parent; the seconds until none of its processes is left."""
        assert self.descendants(), "nothing to leave behind: the test would prove nothing"
        os.kill(self.proc.pid, signum)
        self.proc.wait(timeout=60)
        killed = time.monotonic()
        wait_until(
            lambda: not self.descendants(),
            GONE_S,
            "no process of the killed parent left",
            details=lambda: "\n".join(_describe(self.descendants())),
        )
        return time.monotonic() - killed

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        # a failed test must not leak either: end what is left by pid, workers first,
        # so that the resource trackers still see their pipe close and clean up
        for workers_first in (True, False):
            for proc in self.descendants():
                if _is_worker(proc) == workers_first:
                    try:
                        proc.kill()
                    except psutil.NoSuchProcess:
                        pass
            psutil.wait_procs(self.descendants(), timeout=5)


@pytest.fixture
def parent(tmp_path):
    started = []

    def start(argv: list[str]) -> Parent:
        started.append(Parent(argv, tmp_path))
        return started[-1]

    yield start
    for p in started:
        p.close()


def _python(code: str, widths: str = FIXED_WIDTHS, n_trips: int = 20000) -> list[str]:
    code = textwrap.dedent(code).format(n_jobs=N_JOBS, widths=widths, n_trips=n_trips)
    return [sys.executable, "-c", code]


# ---------------------------------------------------------------------- the watchdog itself


def test_watch_parent_exits_at_once_when_the_parent_is_already_gone():
    # pid 1 is never our parent: as if the parent died before the initializer ran
    code = "from vrvm.engine._watchdog import watch_parent\nwatch_parent(1, False)\nprint('alive')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1, done.stderr
    assert "alive" not in done.stdout


@pytest.mark.parametrize("pdeathsig", [True, False], ids=["prctl", "polling-thread"])
def test_watched_child_dies_with_its_parent(parent, pdeathsig):
    # The parent starts a watched child from its main thread and waits; only the
    # child's watchdog can end it (prctl alone, or the polling thread alone).
    if pdeathsig:
        child = (
            "import signal, time\n"
            "from vrvm.engine._watchdog import _set_parent_death_signal\n"
            "assert _set_parent_death_signal(signal.SIGKILL)\n"
            "print('watching', flush=True)\n"
            "time.sleep(600)\n"
        )
    else:
        child = (
            "import os, time\n"
            "from vrvm.engine._watchdog import watch_parent\n"
            "watch_parent(os.getppid(), False)\n"
            "print('watching', flush=True)\n"
            "time.sleep(600)\n"
        )
    p = parent(
        _python(
            f"""
            import subprocess, sys, time
            subprocess.Popen([sys.executable, "-c", {child!r}])
            time.sleep(600)
            """
        )
    )
    p.wait_for_output("watching")
    p.kill_and_wait_until_alone()


def test_initializer_starts_the_watchdog_without_importing_vrvm(tmp_path):
    # A worker unpickles its initializer before its first task: unpickling it must not
    # import vrvm (seconds of numpy, pandas, scikit-learn with no watchdog yet).
    from joblib.externals.loky.backend import reduction

    from vrvm.engine._watchdog import watchdog_kwargs

    kwargs = watchdog_kwargs()
    assert kwargs["initargs"] == ()
    assert kwargs["initializer"] == watchdog_kwargs()["initializer"]  # executor reused
    pickled = tmp_path / "initializer.pickle"
    with open(pickled, "wb") as f:
        reduction.dump(kwargs["initializer"], f)
    worker = (
        "import os, pickle, sys, threading\n"
        f"initializer = pickle.loads(open({str(pickled)!r}, 'rb').read())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('vrvm', 'numpy')))\n"
        "initializer()\n"  # this test's process is the parent: it watches it
        "print([t.name for t in threading.enumerate()])\n"
    )
    done = subprocess.run([sys.executable, "-c", worker], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "['MainThread', 'vrvm-parent-watchdog']"]


SLOW_IMPORT = """
import os, pathlib, time
if os.getpid() != int(os.environ["SLOW_IMPORT_PARENT"]):  # in a worker: import for ever
    pathlib.Path(os.environ["SLOW_IMPORT_MARKS"], str(os.getpid())).touch()
    time.sleep(600)

def task():
    return os.getpid()
"""


def test_sigkill_while_workers_import_leaves_no_process(parent, tmp_path):
    # the workers are stuck importing the module of their first task when the parent dies
    modules, marks = tmp_path / "modules", tmp_path / "marks"
    modules.mkdir()
    marks.mkdir()
    (modules / "slow_import_task.py").write_text(SLOW_IMPORT)
    code = f"""
        import os, sys
        os.environ["SLOW_IMPORT_PARENT"] = str(os.getpid())
        os.environ["SLOW_IMPORT_MARKS"] = {str(marks)!r}
        sys.path.insert(0, {str(modules)!r})
        os.environ["PYTHONPATH"] = {str(modules)!r}
        from joblib import delayed
        import slow_import_task
        from vrvm.engine._watchdog import watched_parallel
        watched_parallel({N_JOBS})(delayed(slow_import_task.task)() for _ in range({N_JOBS}))
        """
    p = parent([sys.executable, "-c", textwrap.dedent(code)])
    wait_until(
        lambda: len(list(marks.iterdir())) >= N_JOBS,
        START_S,
        f"{N_JOBS} workers importing the module of their task",
        process=p.proc,
        details=p.output,
    )
    p.kill_and_wait_until_alone(signal.SIGKILL)


# ---------------------------------------------------------------------- real training


@pytest.mark.parametrize("stage", ["workers-starting", "members-being-fitted"])
def test_sigkill_mid_training_leaves_no_process(parent, stage):
    # as soon as the workers exist they are still starting (the initializer may not have
    # run yet, vrvm is being imported); once a member is reported, the others are being
    # fitted
    p = parent(_python(LIBRARY_PARENT))
    p.wait_for_workers()
    if stage == "members-being-fitted":
        p.wait_for_output(FIRST_MEMBER)
    p.kill_and_wait_until_alone(signal.SIGKILL)


def test_sigterm_mid_training_leaves_no_process(parent):
    p = parent(_python(LIBRARY_PARENT))
    p.wait_for_output(FIRST_MEMBER)
    assert "fitted" not in p.output()  # the kill lands mid-fit
    p.kill_and_wait_until_alone(signal.SIGTERM)


def test_cli_killed_mid_training_leaves_no_process(parent, tmp_path):
    # `vrvm demo` selects its widths ("auto"): kill once the first member is reported,
    # with three still being fitted
    argv = [sys.executable, "-m", "vrvm", "demo", "--out", str(tmp_path / "model")]
    argv += ["--trips", "20000", "--members", "4", "--n-jobs", str(N_JOBS)]
    p = parent(argv)
    p.wait_for_output("members: 1/4 done")
    p.kill_and_wait_until_alone(signal.SIGKILL)


def test_idle_workers_of_a_thread_are_reused_and_die_with_the_parent(parent):
    # The dashboard's case: no prctl (the training thread ends after each fit), so the
    # reusable workers must survive the thread, be reused by the next fit, and still
    # go when the process is killed.
    p = parent(_python(THREAD_PARENT))
    p.wait_for_output("fitted", 1)
    first = {w.pid for w in p.descendants() if _is_worker(w)}
    p.wait_for_output("fitted", 2)
    second = {w.pid for w in p.descendants() if _is_worker(w)}
    assert len(first) == N_JOBS
    assert second == first, "the workers did not outlive the thread that started them"
    p.kill_and_wait_until_alone(signal.SIGKILL)


def test_sigkill_during_width_selection_leaves_no_process(parent):
    # the first workers of an "auto" fit score candidate widths for several seconds
    # before any member is fitted: killed once they exist, before a member is reported
    p = parent(_python(LIBRARY_PARENT, widths="'auto'"))
    p.wait_for_workers()
    p.kill_and_wait_until_alone(signal.SIGKILL)
    assert FIRST_MEMBER not in p.output(), "the kill came after the width selection"


def test_width_selection_and_members_share_the_workers(parent):
    # One set of workers per fit: joblib reuses its executor only when both Parallel
    # calls pass the same initializer; otherwise every fit spawns its workers twice.
    p = parent(_python(LIBRARY_PARENT, widths="'auto'", n_trips=4000))
    seen: set[int] = set()

    def fitted() -> bool:
        seen.update(w.pid for w in p.workers())
        return "fitted" in p.output()

    wait_until(fitted, START_S, "the fit to end", process=p.proc, details=p.output)
    assert len(seen) == N_JOBS, f"{len(seen)} workers started for one fit"
