"""The red-team corpus again, graded in cold kernels (a fresh kernel started per notebook): the
grader's fallback where warm kernels cannot be had (`--kernels cold`, no fork, a template that died).
The same batch tests as tests/test_redteam.py, which grades the whole corpus in warm kernels.

Only the cases whose grading differs between warm and cold kernels are graded again here, picked
by what they exercise: a cold kernel is a process the grader starts itself (not a fork of a
template), killed, restarted and bounded by the sandbox as a process of its own. So:

* honest: full marks, the baseline of the batch (the untouched release raises in its answer cells whatever
  kernel runs them: its zeros and their reasons are the warm batch's, tests/test_redteam.py);
* runaway: a loop ignoring SIGINT stopped at the CPU-time limit (a cold kernel's CPU time read, the
  kernel killed when the interrupt does not stop it), a sleep stopped by the ceiling for waiting (the
  interrupt that ends a cell, as it ends a plain loop), and kernels that die (os._exit, a segfault, dying
  before the first answer, dying three times until the restarts run out): interrupting, killing and
  restarting a cold kernel. The plain loop (8 s of CPU a batch) is not graded again: the two above
  take every step of its grading, and tests/test_cpu_limits.py stops one in a cold kernel by its CPU time;
* kill: a kernel that kills its parent, PID 1 and everything it may signal;
* fork: children up to the process limit, a fork bomb, children holding descriptors open;
* memory: a memory bomb, and memory split over forked children and in-memory folders.

What the kernel kind cannot change is left to the warm batch: tampered, malformed and unreadable
files never reach a kernel, and the cheats (patched torch, forged results, the probe server's
bounds) are answered by the grader's side of the connection, the same for both kinds.
"""
import pytest

from test_redteam import *  # noqa: F401,F403  (the tests, collected again here with the fixtures below)
from test_redteam import CASES, RUN, pytestmark  # noqa: F401

# the cases graded again in cold kernels, by what they exercise (the docstring says why these)
COLD_CASES = {
    "honest": ("honest",),
    "runaway": ("stubborn", "sleep", "osexit", "segfault", "dies-early", "dies-thrice"),
    "kill": ("killall",),
    "fork": ("forks", "forkbomb", "descriptors"),
    "memory": ("membomb", "memsplit"),
}
GRADED = [c for c in RUN if any(c.name in names for names in COLD_CASES.values())]


@pytest.fixture(scope="module")
def kernels() -> str:
    return "cold"


def test_the_cold_batch_holds_each_case_it_names():
    """A case renamed or dropped from the corpus would silently leave its kind out of the cold batch."""
    names = {c.name for c in CASES}
    missing = [name for kind in COLD_CASES.values() for name in kind if name not in names]
    assert not missing, f"the corpus has no case named {missing}: update COLD_CASES"
    runnable = {c.name for c in RUN}
    assert {c.name for c in GRADED} == {n for kind in COLD_CASES.values() for n in kind if n in runnable}
