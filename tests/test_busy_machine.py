"""A grade does not depend on how busy the machine was: the red-team batch's honest cases and the runaways
a time limit stops (TIMED), and the example class's ada (every answer of every notebook right: the most
computing any student does), graded again, in one run, with the grading's processes (the grader, its
workers, fork server, templates and kernels) held to 0.3 of a CPU together (tests/starve.py: a CPU quota on
their control group, the share a busy machine leaves them; processes that only compute on every core where
no quota can be set), get exactly the scores of the idle runs, which are the session's own (the red-team
batch of tests/test_redteam.py and the example class of conftest.example_class: graded once per session,
shared).

Cell limits count the kernel's CPU time (autograder/kernel/execute.py): a runaway is stopped by the same
limit, with about the same CPU time used, however long it took on the clock. The figures of both
runs are reported side by side."""
from __future__ import annotations

import csv
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import GRADES_CSV, STEP, STEP4, bwrap_or_skip, run_once
from starve import busy as busy_machine
from test_redteam import CASES, RUN, grade_the_corpus

pytestmark = pytest.mark.slow

# The cases a clock decides, and the honest ones: the runaways that a time limit stops (CPU time, the
# ceilings for waiting, a kernel's restarts and the replay of its cells; all but the two loops below),
# graded again on a busy machine.
# Left to the idle batch: the runaways an exit, a signal, a memory, process or message bound decides
# whatever the clock says (sys.exit, os._exit, segfault, killall, memory bombs, the fork bomb, prints,
# descriptors, widgets, frames; input(), which fails at once), and the student who spends the whole time
# budget on purpose (100 s, more on a busy clock): the budget counts as the notebook's ceiling does, which
# the runaways here prove load-free, and tests/test_student_budget.py and the idle batch prove it spent.
# And two loops: loop-in-fn, a loop inside the student's function, stopped in the check cell and in the test
# that calls it (12 s of CPU a batch): a CPU limit stops it as it stops `stubborn`, which is here; the idle
# batch proves it stopped in a function. And `loop` itself (6 s of CPU and a restart a batch), a plain loop
# at the top of a cell: every step of its grading is here, taken by `stubborn` (the CPU-time limit of a
# warm kernel in the sandbox, reached under the quota; the kill when the interrupt does not stop it) and by
# the waits (the interrupt ending a cell under the quota), and tests/test_cpu_limits.py
# (test_a_computing_cell_slowed_by_the_machine_is_stopped_by_its_cpu_time_not_the_clock) stops a plain loop
# under a quota by its CPU time and runs the next cell.
TIMED = ("sleep", "stubborn", "forks", "dies-early", "dies-thrice", "print-in-fn",
         "wait-pipe", "wait-event", "wait-select", "wait-naps", "wait-child", "wait-join", "wait-stubborn",
         "wait-in-fn")
EXAMPLE_STUDENT = "ada"
BUDGET_TOLERANCE = 0.35      # of the budget a step uses idle: measured 17-22 % more busy (0.3 CPU), the suite running
BUSY_CPUS = 0.3             # the CPUs the grading's processes get together while the machine is busy
BUSY = [c for c in RUN if c.kind == "honest" or (c.kind == "runaway" and c.name in TIMED)]


def scores(home: Path) -> dict:
    with open(home / GRADES_CSV, newline="", encoding="utf-8") as f:
        return {(r["student"], r["notebook"], r["grade_id"]): r["score"] for r in csv.DictReader(f) if r["kind"] == "auto"}


def budgets(home: Path, student: str) -> dict:
    """notebook -> (the student's budget it used, its kernels' CPU seconds), from the result files."""
    out = {}
    for path in (home / "work" / "results" / STEP / student).glob("*.json"):
        result = json.loads(path.read_text())
        out[path.stem] = (result["budget"]["used"], result["cpu_seconds"])
    return out


def stopped(home: Path) -> dict:
    """(student, notebook) -> the cells a limit stopped, from the result files."""
    return {(path.parent.name, path.stem): json.loads(path.read_text()).get("stopped", [])
            for path in (home / "work" / "results" / STEP).rglob("*.json")}


def add_ada(klass: Path):
    """What writes the example class's ada (built into `klass`) into a submissions folder."""
    def write(submissions: Path) -> None:
        from autograder.example import build
        shutil.copytree(build(STEP4, klass) / EXAMPLE_STUDENT, submissions / EXAMPLE_STUDENT)
    return write


def grade_busy(base: Path) -> dict:
    """The runaway and honest cases, and the example class's ada, graded on a busy machine in one run
    (base/home: one pool of workers, their templates and one gradebook, where two runs paid for each
    twice), under the batch's LIMITS: ada's notebooks too, tighter than the defaults of her idle run, which
    only makes a limit likelier to cut her short (test_runaways_are_stopped_by_the_same_limit_idle_and_busy
    checks that none did). ada's correct answers run every hidden test to its end, the longest a limit
    could cut short; half's and blank's blank answers fail at once whatever the load (their scores idle are
    proven by test_grading)."""
    with busy_machine(BUSY_CPUS) as load_:
        started = time.monotonic()
        grade_the_corpus(base, "warm", BUSY, also=add_ada(base / "class"))
        busy_seconds = time.monotonic() - started
        load = os.getloadavg()[0]
    return {"load": load, "how": load_.how, "busy_seconds": busy_seconds, "throttled_seconds": load_.throttled_seconds}


def test_every_timed_case_is_a_runaway_of_the_corpus():
    runaways = {c.name for c in CASES if c.kind == "runaway"}
    assert set(TIMED) <= runaways, sorted(set(TIMED) - runaways)


@pytest.fixture(scope="module")
def idle_redteam(tmp_path_factory):
    bwrap_or_skip()
    base, _ = run_once(tmp_path_factory, "redteam-warm", lambda folder: grade_the_corpus(folder, "warm", RUN))
    return base / "home"


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    bwrap_or_skip()
    base, data = run_once(tmp_path_factory, "busy-machine", grade_busy)
    return base, data


def test_every_score_on_a_busy_machine_equals_the_idle_runs(busy, idle_redteam, example_class, record_property):
    base, data = busy
    graded, idle = scores(base / "home"), scores(idle_redteam)
    students = {c.student for c in BUSY}
    assert {k[0] for k in graded} == students | {EXAMPLE_STUDENT}, sorted({k[0] for k in graded})
    hogged = {k: v for k, v in graded.items() if k[0] in students}
    idle = {k: v for k, v in idle.items() if k[0] in students}
    assert hogged == idle, {k: (v, idle.get(k)) for k, v in hogged.items() if v != idle.get(k)}
    example_hogged = {k: v for k, v in graded.items() if k[0] == EXAMPLE_STUDENT}
    example_idle = {k: v for k, v in scores(example_class[0]).items() if k[0] == EXAMPLE_STUDENT}
    assert example_hogged and example_hogged == example_idle, \
        {k: (v, example_idle.get(k)) for k, v in example_hogged.items() if v != example_idle.get(k)}
    how = (f"a quota of {BUSY_CPUS} CPU, held back {data['throttled_seconds']:.0f} s" if data["how"] == "quota"
           else "a hog per core")
    record_property("measured", f"busy machine ({how}) for {data['busy_seconds']:.0f} s, load average "
                                f"{data['load']:.1f}; the runaway and honest cases and the example class's "
                                f"{EXAMPLE_STUDENT} graded in one run")


def test_runaways_are_stopped_by_the_same_limit_idle_and_busy(busy, idle_redteam, record_property):
    base, _ = busy
    hogged, idle = stopped(base / "home"), stopped(idle_redteam)
    figures = []
    for case in BUSY:
        key = (case.student, case.profile.notebook)
        now, before = hogged[key], idle[key]
        assert [(s["cell"], s["limit"]) for s in now] == [(s["cell"], s["limit"]) for s in before], \
            (case.student, now, before)
        for a, b in zip(before, now):
            figures.append(f"{case.name}: {a['limit']}, idle {a['cpu_seconds']:.1f} s CPU / {a['wall_seconds']:.1f} s "
                           f"wall, busy {b['cpu_seconds']:.1f} s CPU / {b['wall_seconds']:.1f} s wall")
    assert figures
    # ada, graded in the same run under the batch's tighter limits: no limit stopped a cell of hers, busy
    ada = {nb: cells for (student, nb), cells in hogged.items() if student == EXAMPLE_STUDENT}
    assert ada and not any(ada.values()), ada
    for line in figures:
        record_property("measured", line)


def test_the_student_budget_counts_the_same_on_a_busy_machine(busy, example_class, record_property):
    """ada's notebooks, idle and busy, count about the same of her time budget (autograder/kernel/execute.py
    leaves the machine's load out): every notebook counts at least the CPU time its kernels used (the
    kernel's and the grader's waits for a CPU, measured apart, can overlap: leaving both out took a busy
    notebook's count below its own computing, to 0 s for one), and the step's total busy is within
    BUDGET_TOLERANCE of idle."""
    base, _ = busy
    idle, hogged = budgets(example_class[0], EXAMPLE_STUDENT), budgets(base / "home", EXAMPLE_STUDENT)
    assert idle and set(hogged) == set(idle), (sorted(hogged), sorted(idle))
    for name in sorted(idle):
        for how, (used, cpu) in (("idle", idle[name]), ("busy", hogged[name])):
            assert used >= cpu - 0.05, (name, how, used, cpu)
    idle_total, busy_total = sum(u for u, _ in idle.values()), sum(u for u, _ in hogged.values())
    assert abs(busy_total - idle_total) <= BUDGET_TOLERANCE * idle_total, (idle, hogged)
    record_property("measured", "the student budget used, idle / busy: " + ", ".join(
        f"{name[:2]} {idle[name][0]:.1f} / {hogged[name][0]:.1f} s" for name in sorted(idle))
        + f"; the step {idle_total:.1f} / {busy_total:.1f} s")
