"""The test profile's CPU figure counts the whole process tree of a test worker: a grandchild that computes
and is still running (the grader's kernels under its fork server), and one that ended and was reaped by
its parent."""

from __future__ import annotations

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
