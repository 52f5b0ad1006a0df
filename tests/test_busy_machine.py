"""A grade does not depend on how busy the machine was: the red-team batch's honest cases and the runaways
a time limit stops (TIMED), and the example class's ada (every answer of every notebook right: the most
computing any student does), graded again with the grading's processes (the grader, its workers, fork
server, templates and kernels) held to 0.3 of a CPU together (tests/starve.py: a CPU quota on their control
group, the share a busy machine leaves them; processes that only compute on every core where no quota can
be set), get exactly the scores of the idle runs, which are the session's own (the red-team batch of
tests/test_redteam.py and the example class of conftest.example_class: graded once per session, shared).

Cell limits count the kernel's CPU time (autograder/kernel/execute.py): a runaway is stopped by the same
limit, with about the same CPU time used, however long it took on the clock. The figures of both
runs are reported side by side."""
from __future__ import annotations

import csv
import json
import os
import sys
import time
from pathlib import Path

import pytest

from conftest import GRADES_CSV, STEP, STEP4, bwrap_or_skip, run_once
from starve import busy as busy_machine
from test_redteam import CASES, RUN, SANDBOX, grade_the_corpus

pytestmark = pytest.mark.slow

# The cases a clock decides, and the honest ones: every runaway that a time limit stops (CPU time, the
# ceilings for waiting, a kernel's restarts and the replay of its cells), graded again on a busy machine.
# Left to the idle batch: the runaways an exit, a signal, a memory, process or message bound decides
# whatever the clock says (sys.exit, os._exit, segfault, killall, memory bombs, the fork bomb, prints,
# descriptors, widgets, frames; input(), which fails at once), and the student who spends the whole time
# budget on purpose (100 s, more on a busy clock): the budget counts as the notebook's ceiling does, which
# the runaways here prove load-free, and tests/test_student_budget.py and the idle batch prove it spent.
# And loop-in-fn: a loop inside the student's function, stopped in the check cell and in the test that
# calls it (12 s of CPU a batch): a CPU limit stops it as it stops `loop`, which is here; the idle batch
# proves it stopped in a function.
TIMED = ("loop", "sleep", "stubborn", "forks", "dies-early", "dies-thrice", "print-in-fn",
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


def only_ada(klass: Path) -> Path:
    """The example class with only ada's folder left (a whole class of one: its grades CSV is written)."""
    for path in klass.iterdir():
        if path.name != EXAMPLE_STUDENT:
            path.unlink()
    assert [p.name for p in klass.iterdir()] == [EXAMPLE_STUDENT]
    return klass


def grade_busy(base: Path) -> dict:
    """The runaway and honest cases, and the example class's ada, graded on a busy machine. ada's
    correct answers run every hidden test to its end, the longest a limit could cut short; half's and
    blank's blank answers fail at once whatever the load (their scores idle are proven by test_grading)."""
    from autograder.example import build
    from autograder.grading.grade import grade
    redteam, example = base / "redteam", base / "example"
    redteam.mkdir()
    example.mkdir()
    load = []
    with busy_machine(BUSY_CPUS) as load_, pytest.MonkeyPatch.context() as mp:
        load_started = started = time.monotonic()
        grade_the_corpus(redteam, "warm", BUSY)
        redteam_seconds = time.monotonic() - started
        load.append(os.getloadavg()[0])
        mp.setenv("GRADER_HOME", str(example / "home"))
        mp.setenv("NBGRADER_DB_URL", f"sqlite:///{example / 'home' / 'gradebook.db'}")
        mp.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        started = time.monotonic()
        grade(STEP4, only_ada(build(STEP4, example / "class")), workers=2, sandbox=SANDBOX, quiet=True,
              feedback=False)
        example_seconds = time.monotonic() - started
        load.append(os.getloadavg()[0])
        busy_seconds = time.monotonic() - load_started
    return {"redteam_seconds": redteam_seconds, "example_seconds": example_seconds, "load": load,
            "how": load_.how, "busy_seconds": busy_seconds, "throttled_seconds": load_.throttled_seconds}


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
    hogged, idle = scores(base / "redteam" / "home"), scores(idle_redteam)
    students = {c.student for c in BUSY}
    idle = {k: v for k, v in idle.items() if k[0] in students}
    assert {k[0] for k in hogged} == students and hogged == idle, \
        {k: (v, idle.get(k)) for k, v in hogged.items() if v != idle.get(k)}
    example_hogged = scores(base / "example" / "home")
    example_idle = {k: v for k, v in scores(example_class[0]).items() if k[0] == EXAMPLE_STUDENT}
    assert {k[0] for k in example_hogged} == {EXAMPLE_STUDENT} and example_hogged == example_idle, \
        {k: (v, example_idle.get(k)) for k, v in example_hogged.items() if v != example_idle.get(k)}
    how = (f"a quota of {BUSY_CPUS} CPU, held back {data['throttled_seconds']:.0f} s" if data["how"] == "quota"
           else "a hog per core")
    record_property("measured", f"busy machine ({how}) for {data['busy_seconds']:.0f} s, load average "
                                f"{' / '.join(f'{x:.1f}' for x in data['load'])}; runaway and honest cases "
                                f"{data['redteam_seconds']:.0f} s, the example class's {EXAMPLE_STUDENT} {data['example_seconds']:.0f} s")


def test_runaways_are_stopped_by_the_same_limit_idle_and_busy(busy, idle_redteam, record_property):
    base, _ = busy
    hogged, idle = stopped(base / "redteam" / "home"), stopped(idle_redteam)
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
    for line in figures:
        record_property("measured", line)


def test_the_student_budget_counts_the_same_on_a_busy_machine(busy, example_class, record_property):
    """ada's notebooks, idle and busy, count about the same of her time budget (autograder/kernel/execute.py
    leaves the machine's load out): every notebook counts at least the CPU time its kernels used (the
    kernel's and the grader's waits for a CPU, measured apart, can overlap: leaving both out took a busy
    notebook's count below its own computing, to 0 s for one), and the step's total busy is within
    BUDGET_TOLERANCE of idle."""
    base, _ = busy
    idle, hogged = budgets(example_class[0], EXAMPLE_STUDENT), budgets(base / "example" / "home", EXAMPLE_STUDENT)
    assert idle and set(hogged) == set(idle), (sorted(hogged), sorted(idle))
    for name in sorted(idle):
        for how, (used, cpu) in (("idle", idle[name]), ("busy", hogged[name])):
            assert used >= cpu - 0.05, (name, how, used, cpu)
    idle_total, busy_total = sum(u for u, _ in idle.values()), sum(u for u, _ in hogged.values())
    assert abs(busy_total - idle_total) <= BUDGET_TOLERANCE * idle_total, (idle, hogged)
    record_property("measured", "the student budget used, idle / busy: " + ", ".join(
        f"{name[:2]} {idle[name][0]:.1f} / {hogged[name][0]:.1f} s" for name in sorted(idle))
        + f"; the step {idle_total:.1f} / {busy_total:.1f} s")
