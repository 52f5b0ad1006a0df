"""The test profile's CPU figure counts the whole process tree of a test worker: a grandchild that computes
and is still running (the grader's kernels under its fork server), and one that ended and was reaped by
its parent. A fixture's row names the module of the test it was set up for."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "--rootdir", str(run), str(run)], cwd=run, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    fixtures = sorted((r["fixture"], r["module"]) for r in read(profile) if r["kind"] == "fixture")
    assert fixtures == [("per_module", "test_first"), ("per_module", "test_second"), ("shared", "test_first")]
    table = summarise(profile)
    assert "| shared | session | 1 | 0 | 0 | test_first |" in table, table
    assert "| per_module | module | 2 | 0 | 0 | test_first, test_second |" in table, table
