"""The test profile's CPU figure counts the whole process tree of a test worker: a grandchild that computes
and is still running (the grader's kernels under its fork server), and one that ended and was reaped by
its parent. A fixture's row names the module of the test it was set up for. The sampled column ("CPU s,
every process") gives each module every process its worker started, those that left the tree too, and
nothing of the machine's other work or made up."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from pytest import approx

from profiling import _cpu, _tree_cpu

SPIN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"
# a child that starts a grandchild which spins, reaps it, then waits to be read
PARENT = (
    "import subprocess, sys, time\n"
    "subprocess.run([sys.executable, '-c', {spin!r}])\n"
    "grandchild = subprocess.Popen([sys.executable, '-c', {spin!r}])\n"
    "grandchild.wait()\n"
    "print('done', flush=True)\n"
    "time.sleep(30)\n"
)


def test_the_tree_counts_descendants_the_worker_did_not_reap():
    before_tree, before_own = _tree_cpu(), _cpu()
    child = subprocess.Popen(
        [sys.executable, "-c", PARENT.format(spin=SPIN.format(s=0.6))], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "done"
        time.sleep(0.2)
        tree, own = _tree_cpu() - before_tree, _cpu() - before_own
    finally:
        child.kill()
        child.wait()
    # two grandchildren spun 0.6 s each, reaped by the child, which is still running: only the tree sees them
    assert tree >= 1.2, tree
    assert own < 0.5, own


# a run of its own with the profiler on: a session's fixture and a module's, asked for by two modules
RUN_CONFTEST = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "import pytest\n"
    "sys.path.insert(0, {tests!r})\n"
    "from profiling import Profiler\n"
    "def pytest_configure(config):\n"
    "    config.pluginmanager.register(Profiler(Path({folder!r})), 'test-profiler')\n"
    "@pytest.fixture(scope='session')\n"
    "def shared():\n"
    "    time.sleep(0.06)\n"
    "@pytest.fixture(scope='module')\n"
    "def per_module():\n"
    "    time.sleep(0.06)\n"
)
RUN_TEST = "def test_it(shared, per_module):\n    pass\n"


def test_a_fixture_is_listed_under_the_module_of_the_test_it_was_set_up_for(tmp_path):
    """A module's fixture under each module that set it up; a session's fixture under the module whose test
    first asked for it, not under the run's folder (which a session has for its path)."""
    from pathlib import Path

    from profiling import read, summarise
    run, profile = tmp_path / "fresh", tmp_path / "profile"
    run.mkdir()
    (run / "conftest.py").write_text(RUN_CONFTEST.format(tests=str(Path(__file__).parent), folder=str(profile)))
    for name in ("test_first", "test_second"):
        (run / f"{name}.py").write_text(RUN_TEST)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}    # this run's options are not the inner run's
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)       # the plugin reads the grader's meters
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "--rootdir", str(run), str(run)], cwd=run, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    fixtures = sorted((r["fixture"], r["module"]) for r in read(profile) if r["kind"] == "fixture")
    assert fixtures == [("per_module", "test_first"), ("per_module", "test_second"), ("shared", "test_first")]
    table = summarise(profile)
    assert "| shared | session | 1 | 0 | 0 | test_first |" in table, table
    assert "| per_module | module | 2 | 0 | 0 | test_first, test_second |" in table, table


# every process, sampled (profiling.Attribution): readings of /proc made up here. The run's pid is 100, its
# worker 200 (a child of the run's pid), running test_a then test_b.
def proc(ppid, start, own, reaped=0.0):
    from profiling import Proc

    return Proc(ppid, start, own, reaped)


RUN, WORKER = 100, 200
OTHERS = {1: proc(0, 0, 50.0), 90: proc(1, 5, 10.0)}  # init, and someone else's work on the machine


def readings(*snapshots, now=None):
    """The attribution after each snapshot (t = 0, 1, 2, ...), the worker running `now` (test_a)."""
    from profiling import Attribution

    attribution = Attribution(RUN)
    given = [attribution.read(float(t), {**OTHERS, **procs}, now or {WORKER: ("test_a", -1.0)})
             for t, procs in enumerate(snapshots)]
    return attribution, given


def test_a_process_that_left_the_tree_keeps_its_workers_module():
    """Chromium's zygote (301) reparented to init when its browser (300) closed, and a renderer it forks
    after: both still count for the worker's module; the run's own process for no module."""
    attribution, given = readings(
        {RUN: proc(1, 10, 1.0), WORKER: proc(RUN, 11, 1.0), 300: proc(WORKER, 20, 0.5), 301: proc(300, 21, 0.5)},
        {RUN: proc(1, 10, 1.2), WORKER: proc(RUN, 11, 1.0), 301: proc(1, 21, 2.5), 302: proc(301, 40, 0.7)},
    )
    assert given[0] == {}  # the first reading is the baseline
    assert given[1] == approx({"test_a": 2.0 + 0.7, None: 0.2}), given[1]  # 300's last seconds: lost, not reaped


def test_a_reaped_process_counts_its_last_seconds_once_and_none_are_made_up():
    """301 ended and was reaped by 300, whose `reaped` holds 301's whole time: only what 301 used since
    its last reading counts, with what a child 300 reaped unseen used. 302 ended after it was reparented
    to init: its last seconds are lost. 303's parent does not wait for it (its `reaped` does not grow):
    nothing is taken from the parent's own time."""
    _, given = readings(
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 300: proc(WORKER, 20, 1.0),
         301: proc(300, 21, 2.0, reaped=0.5)},
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 300: proc(WORKER, 20, 1.0, reaped=3.0 + 0.75)},
    )
    assert given[1] == approx({"test_a": 3.75 - 2.5}), given[1]  # 301's last 0.5 s, its unseen sibling's 0.75 s
    _, given = readings(
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 302: proc(WORKER, 22, 1.0)},
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 302: proc(1, 22, 2.0)},
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0)},
    )
    assert given[1:] == [approx({"test_a": 1.0}), {}], given
    _, given = readings(
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 300: proc(WORKER, 20, 1.0), 303: proc(300, 23, 1.0)},
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 300: proc(WORKER, 20, 1.25)},
    )
    assert given[1] == approx({"test_a": 0.25}), given[1]


def test_a_reused_pid_with_another_start_time_is_another_process():
    """Pid 300 was the worker's child and is someone else's process now; pid 90 was someone else's and is
    now a child of the worker: the first is not counted, the second counts all it used."""
    _, given = readings(
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 300: proc(WORKER, 20, 1.0)},
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 300: proc(1, 60, 9.0), 90: proc(WORKER, 61, 0.4)},
    )
    assert given[1] == approx({"test_a": 0.4}), given[1]


def test_processes_outside_the_run_are_not_counted():
    """Someone else's process (90, and 400 that it starts) and one that was already running beside the
    run (500, a child of init): none counts, however much they compute; a process left outside stays
    outside, and one started below the run's pid counts."""
    attribution, given = readings(
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.0), 500: proc(1, 3, 1.0)},
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.5), 500: proc(1, 3, 9.0), 400: proc(90, 30, 4.0)},
        {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, 0.5), 500: proc(1, 3, 19.0), 400: proc(90, 30, 9.0),
         600: proc(WORKER, 31, 0.3)},
    )
    assert given[1:] == [approx({"test_a": 0.5}), approx({"test_a": 0.3})], given
    assert dict(attribution.modules) == approx({"test_a": 0.8})


def test_a_worker_that_changed_modules_between_readings_splits_the_cpu_by_the_time_each_held_it():
    """test_a at the reading at t=1, test_b (since 1.75) at t=2: of the 2 s used between, a quarter is
    test_b's; then test_b's alone."""
    from profiling import Attribution

    attribution = Attribution(RUN)
    worker = lambda own: {RUN: proc(1, 10, 0.0), WORKER: proc(RUN, 11, own)}  # noqa: E731
    attribution.read(0.0, worker(0.0), {WORKER: ("test_a", -1.0)})
    assert attribution.read(1.0, worker(1.0), {WORKER: ("test_a", -1.0)}) == {"test_a": 1.0}
    assert attribution.read(2.0, worker(3.0), {WORKER: ("test_b", 1.75)}) == {"test_a": 1.5, "test_b": 0.5}
    assert attribution.read(3.0, worker(4.0), {WORKER: ("test_b", 1.75)}) == {"test_b": 1.0}
    # a worker before its first test: the run's CPU, no module's
    fresh = Attribution(RUN)
    fresh.read(0.0, worker(0.0), {})
    assert fresh.read(1.0, worker(2.0), {WORKER: ("test_a", 0.5)}) == {None: 1.0, "test_a": 1.0}


def test_without_xdist_the_runs_own_children_count_for_its_module():
    """A run without xdist (`-p no:xdist`): the run's own process is the worker, and what it starts (a hub,
    Chromium's driver, a course command) and their children count for the module it runs, not for none."""
    from profiling import Attribution

    attribution = Attribution(RUN)
    now = {RUN: ("test_a", -1.0)}
    attribution.read(0.0, {**OTHERS, RUN: proc(1, 10, 0.0), 300: proc(RUN, 20, 1.0)}, now)
    given = attribution.read(1.0, {**OTHERS, RUN: proc(1, 10, 0.5), 300: proc(RUN, 20, 3.0),
                                   301: proc(300, 30, 0.25)}, now)
    assert given == approx({"test_a": 0.5 + 2.0 + 0.25}), given


def test_a_stat_line_is_read_whatever_the_process_is_named():
    from profiling import _TICK, parse_stat

    text = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 1 0 0 0 {u} {s} {cu} {cs} 20 0 1 0 777 1 1\n"
    pid, p = parse_stat(text.format(u=3 * _TICK, s=_TICK, cu=2 * _TICK, cs=0))
    assert (pid, p.ppid, p.start, p.own, p.reaped) == (4242, 17, 777, 4.0, 2.0)


# a run of its own with the profiler on, as tests/conftest.py registers it, on two workers: test_spin's
# child computes and is reaped by the worker; its daemon computes after its parent ended (it left the
# tree): only the sampled column counts the daemon
SAMPLED_CONFTEST = (
    "import os, sys\n"
    "from pathlib import Path\n"
    "sys.path.insert(0, {tests!r})\n"
    "from profiling import Profiler\n"
    "def pytest_configure(config):\n"
    "    if Profiler.records_here():\n"
    "        config.pluginmanager.register(Profiler(Path(os.environ['TEST_PROFILE'])), 'test-profiler')\n"
)
SAMPLED_SPIN = (
    "import subprocess, sys, time\n"
    "from pathlib import Path\n"
    "SPIN = {spin!r}\n"
    "def test_child():\n"
    "    subprocess.run([sys.executable, '-c', SPIN.format(s=0.6)], check=True)\n"
    "def test_daemon(tmp_path):\n"
    "    done = tmp_path / 'done'\n"
    "    daemon = SPIN.format(s=1.0) + f'open({{str(done)!r}}, \"w\").close()\\n'\n"
    "    parent = ('import subprocess, sys, time\\n'\n"
    "              f'subprocess.Popen([sys.executable, \"-c\", {{daemon!r}}], start_new_session=True)\\n'\n"
    "              'time.sleep(1.5)\\n')\n"
    "    subprocess.run([sys.executable, '-c', parent], check=True)\n"
    "    end = time.monotonic() + 60\n"
    "    while not done.exists() and time.monotonic() < end:\n"
    "        time.sleep(0.1)\n"
    "    assert done.exists()\n"
)
SAMPLED_QUIET = "def test_quiet():\n    pass\n"


def test_a_run_on_two_workers_samples_every_process(tmp_path):
    from pathlib import Path

    from profiling import read

    run, profile = tmp_path / "fresh", tmp_path / "profile"
    run.mkdir()
    (run / "conftest.py").write_text(SAMPLED_CONFTEST.format(tests=str(Path(__file__).parent)))
    (run / "test_spin.py").write_text(SAMPLED_SPIN.format(spin=SPIN))
    (run / "test_quiet.py").write_text(SAMPLED_QUIET)
    # a run of its own, also when this one is profiled on xdist's workers
    ours = ("PYTEST_ADDOPTS", "TEST_PROFILE_OWNER", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT")
    env = {k: v for k, v in os.environ.items() if k not in ours}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)       # the plugin reads the grader's meters
    env.update(TEST_PROFILE=str(profile), TEST_PROFILE_EVERY="0.2")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadscope",
                           "-p", "no:cacheprovider", "--rootdir", str(run), "--basetemp", str(tmp_path / "inner"),
                           str(run)], cwd=run, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    table = (profile / "profile.md").read_text()
    assert "| module | tests | wall s | CPU s | CPU s, every process | share of the workers' time |" in table, table
    assert "CPU s, every process: each process's CPU read from /proc every 0.2 s" in table, table
    (sampler,) = [r for r in read(profile) if r["kind"] == "sampler"]
    tree = sum(r["cpu"] for r in read(profile) if r["kind"] == "test" and r["module"] == "test_spin")
    row = next(line for line in table.splitlines() if line.startswith("| test_spin |"))
    assert int(row.split("|")[5]) == round(sampler["modules"]["test_spin"]), (row, sampler)
    # the child's 0.6 s and the daemon's 1.0 s; the tree misses the daemon's
    assert sampler["modules"]["test_spin"] >= 1.5, (sampler, tree)
    assert sampler["modules"]["test_spin"] >= tree + 0.6, (sampler, tree)
    assert set(sampler["modules"]) <= {"test_spin", "test_quiet"}, sampler  # the controller runs no module
    assert sampler["own_cpu"] < 0.25 * sampler["wall"], sampler  # its start (Python, pytest) included
    assert sampler["machine_busy"] >= sum(sampler["modules"].values()) * 0.9, sampler


def test_the_table_puts_the_sampled_cpu_beside_the_trees_and_says_what_the_sampler_saw(tmp_path):
    import json

    from profiling import summarise

    tests = [{"kind": "test", "test": f"test_{m}.py::t", "module": f"test_{m}", "wall": w, "cpu": c, "worker": "gw0",
              "ended": 0.0} for m, w, c in (("slow", 30.0, 4.0), ("quick", 10.0, 2.0))]
    session = {"kind": "session", "wall": 60.0, "workers": 2}
    (tmp_path / "gw0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tests))
    (tmp_path / "main.jsonl").write_text(json.dumps(session) + "\n")
    table = summarise(tmp_path)  # no sampler: the column is there, empty
    assert "| test_slow | 1 | 30 | 4 | - | 75.0 % |" in table, table
    sampler = {"kind": "sampler", "every": 1.0, "readings": 61, "wall": 60.0, "own_cpu": 0.3,
               "modules": {"test_slow": 45.0, "test_quick": 3.0}, "unattributed": 12.0,
               "machine_busy": 96.0, "machine_idle": 24.0, "ended": 0.0}
    (tmp_path / "sampler.jsonl").write_text(json.dumps(sampler) + "\n")
    lines = summarise(tmp_path).splitlines()
    assert lines[1] == (
        "CPU s, every process: each process's CPU read from /proc every 1 s (61 readings; the sampler used 0.3 s"
        " of CPU, 0.50 % of one CPU): the run's processes used 1.0 CPU-minutes, 0.8 of them given to modules"
        " (80.0 %); the machine's CPUs were busy 1.6 CPU-minutes and idle 0.4 over the run (/proc/stat), the"
        " modules' share of the busy time 50.0 %."
    ), lines[1]
    assert lines[3:7] == [
        "| module | tests | wall s | CPU s | CPU s, every process | share of the workers' time |",
        "|---|---:|---:|---:|---:|---:|",
        "| test_slow | 1 | 30 | 4 | 45 | 75.0 % |",
        "| test_quick | 1 | 10 | 2 | 3 | 25.0 % |",
    ], lines
