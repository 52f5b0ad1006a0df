"""Hostile and broken submissions, graded in one batch with an honest class (tests/redteam_corpus.py).

The whole corpus is written into one submissions folder and graded once, the way `make grade`
does it (autograder.grading.grade.grade, two workers, a temporary GRADER_HOME), in the bwrap sandbox
when it works here, in warm kernels (the default; tests/test_redteam_cold.py grades again, in
cold ones, the cases that differ there). Then every case is checked: the exact score of each test cell, the reason
given for every lost point, the notes, the reported file problems; and the batch as a whole:
the honest students get full marks, no grade is left empty, the submissions are unchanged.

The batch runs under tighter limits than production (autograder.kernel.execute.Limits) so that the
bombs and runaways are cheap: 6 s of CPU per cell instead of 120, 2 GiB of memory instead of 6, 5 s of
waiting per cell instead of 30, and a time budget of 100 s per student instead of 600.
Cases marked sandbox_only (fork bombs, reading other students' files, the network) are never
graded without bwrap: without a sandbox a fork bomb of root is not bounded, and reading the
gradebook succeeds (the field notes' tampering table). The batch itself needs bwrap: without it
every test skips, saying why (a failure with REQUIRE_SANDBOX=1).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.kernel import sandbox
from conftest import GRADES_CSV, GRADES_JSON, STEP, STEP4, bwrap_or_skip, kernels_or_skip, kernels_under, run_once
from redteam_corpus import Case, Ctx, corpus

# one batch for the whole session, graded by whichever worker needs it first (run_once)
pytestmark = pytest.mark.slow

SANDBOX = "bwrap" if sandbox.bwrap_problem() is None else "none"
# A cell's CPU limit is what every runaway burns before it is stopped, in the warm batch, the cold one and
# on the busy machine: 6 s, not the course's default (8 s before: each runaway burnt 2 s more in each of
# the three batches, about half a CPU-minute a run), because the heaviest cell of the batch that nothing
# stopped used 3.0-3.7 s of CPU (memsplit's answer cell, its forked children touching memory until the
# kernel's group ends them; measured on a loaded machine; each result names its heaviest cell, and
# test_runaway_cells_are_stopped_by_the_limit_they_reached fails before an unstopped cell comes near the
# limit). A whole notebook may use more: the limit is a cell's. (leak-03's check_perturbation_hidden, the
# judge calling the leaking check about 150 times, used 3.5-5.1 s while the leak formatted its arguments
# twice a call, once for stdout and once for stderr; 2.5 s since it formats them once.)
LIMITS = {"cell_timeout": 6, "notebook_timeout": 150, "memory_bytes": 2 * 2**30, "cell_wait_timeout": 5,
          "student_budget": 100}
# The share of a cell's CPU limit that the heaviest cell nothing stopped may use.
HONEST_SHARE = 0.8
# What grading one notebook may make a grading worker hold at its peak (torch and the checks imported:
# about 220 MiB; an honest notebook adds little), whatever the kernel sends it.
WORKER_PEAK_BYTES = 1 * 2**30
# The attacks on resources (tests/redteam_corpus.py resource_cases), whose peaks are reported.
RESOURCE_ATTACKS = ("memsplit", "descriptors", "probe-lists", "probe-values", "probe-idle", "widgets", "print",
                    "membomb", "forkbomb", "frames")
CASES = corpus()
RUN = [c for c in CASES if SANDBOX == "bwrap" or not c.sandbox_only]
# The cases a module grades and checks, read from the module the tests are collected in:
# all of them here; tests/test_redteam_cold.py sets its own GRADED, those that differ on cold kernels.
GRADED = RUN


def pytest_generate_tests(metafunc):
    """Each test that takes a `case` runs once for every case its module grades (GRADED)."""
    if "case" in metafunc.fixturenames:
        graded = metafunc.module.GRADED
        metafunc.parametrize("case", graded, ids=[c.student for c in graded])


@pytest.fixture(scope="module")
def cases(request) -> list[Case]:
    """The cases this module grades (its GRADED)."""
    return list(request.module.GRADED)


@dataclass
class Graded:
    """What grading made of one case."""
    case: Case
    rows: dict           # grade_id -> row of grades.csv
    result: dict         # the result record (work/results/<student>/<notebook>.json)
    notes: list
    problems: list       # file problems reported for this student, as "file: problem"
    home: Path

    def output_of(self, grade_id: str) -> str:
        """The text outputs of a cell in the grader's run (the instructor's copy, work/runs: in the graded notebook,
        a cell that ran after a hidden test shows the grader's words and the output handed in)."""
        path = self.home / "work" / "runs" / STEP / self.case.student / f"{self.case.profile.notebook}.ipynb"
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)
        return "".join("".join(o.get("text", "")) if isinstance(o.get("text"), list) else o.get("text", "")
                       for o in cell.get("outputs", []))


@dataclass
class Batch:
    ctx: Ctx
    graded: dict          # student -> Graded
    before: dict          # hashes of every submitted file before grading
    after: dict
    accepted: list        # connections the loopback server received
    problems: list        # the file problems grade(STEP4) returned
    students: list        # the students grade(STEP4) returned results for
    left: list            # processes of the batch's kernels still running after it


def _hashes(folder: Path) -> dict:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            out[str(path.relative_to(folder))] = "link:" + os.readlink(path)
        elif path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            out[str(path.relative_to(folder))] = digest.hexdigest()
    return out


def grade_the_corpus(base: Path, kernels: str, cases: list[Case], also=None) -> dict:
    """Write `cases` into base/submissions, grade them into base/home in `kernels` ("warm", the
    grader's default, or "cold"); return what the tests read. `also(submissions)`, if given, writes more
    students' folders beside the cases, graded in the same run (tests/test_busy_machine.py adds the example
    class's ada)."""
    from autograder.grading.grade import grade
    submissions, home = base / "submissions", base / "home"
    submissions.mkdir()
    # the workers' scratch folders (and so every kernel's command line) under a folder of this batch
    scratch = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                accepted.append(server.accept()[1])
            except OSError:
                pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    ctx = Ctx(submissions=submissions, home=home, port=port, limits=LIMITS)
    for case in cases:
        case.write(ctx, submissions / case.student)
    if also is not None:
        also(submissions)
    before = _hashes(submissions)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("GRADER_HOME", str(home))
            mp.delenv("NBGRADER_DB_URL", raising=False)
            mp.setenv("TMPDIR", str(scratch))
            # nbgrader runs `alembic` from this environment to create the gradebook (as `make` arranges)
            mp.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
            returned = grade(STEP4, submissions, workers=2, sandbox=SANDBOX, feedback=False, limits=LIMITS,
                             quiet=True, kernels=kernels)
    finally:
        stop.set()
        thread.join()
        server.close()
    left = kernels_under(scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    return {"port": port, "before": before, "after": _hashes(submissions), "accepted": [str(a) for a in accepted],
            "problems": returned["problems"], "graded": sorted({r["student"] for r in returned["results"]}),
            "left": left}


@pytest.fixture(scope="module")
def kernels() -> str:
    """The kernels this module grades the corpus in: warm, the grader's default (tests/test_redteam_cold.py
    runs the same tests on cold kernels)."""
    return "warm"


@pytest.fixture(scope="module")
def batch(tmp_path_factory, kernels, cases) -> Batch:
    kernels_or_skip(bwrap_or_skip(), kernels)     # warm kernels in bwrap need root: a skip, never a cold batch
    base, data = run_once(tmp_path_factory, f"redteam-{kernels}", lambda folder: grade_the_corpus(folder, kernels, cases))
    submissions, home = base / "submissions", base / "home"
    ctx = Ctx(submissions=submissions, home=home, port=data["port"], limits=LIMITS)
    with open(home / GRADES_CSV, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    report = json.loads((home / GRADES_JSON).read_text(encoding="utf-8"))
    graded = {}
    for case in cases:
        nb = case.profile.notebook
        result_file = home / "work" / "results" / STEP / case.student / f"{nb}.json"
        graded[case.student] = Graded(
            case=case,
            rows={r["grade_id"]: r for r in rows if r["student"] == case.student and r["notebook"] == nb},
            result=json.loads(result_file.read_text()) if result_file.exists() else {},
            notes=report["notes"].get(f"{case.student}/{nb}", []),
            problems=[f"{p['file']}: {p['problem']}" for p in report["problems"] if p["student"] == case.student],
            home=home)
    return Batch(ctx, graded, data["before"], data["after"], data["accepted"], data["problems"],
                 data["graded"], data["left"])


def _score(row) -> float | None:
    return None if row["score"] in ("", None) else float(row["score"])


def test_case_gets_the_grade_it_deserves(batch, case):
    graded = batch.graded[case.student]
    scores = {gid: _score(graded.rows[gid]) for gid in case.scores if gid in graded.rows}
    assert scores == case.scores, (graded.rows, graded.notes, graded.problems)
    for gid, regex in case.reasons.items():
        assert re.search(regex, graded.rows[gid]["error"]), (gid, regex, graded.rows[gid]["error"])
    for regex in case.notes:
        assert any(re.search(regex, note) for note in graded.notes), (regex, graded.notes)
    if case.problem:
        assert any(re.search(case.problem, p) for p in graded.problems), (case.problem, graded.problems)
    if case.check:
        case.check(batch.ctx, graded)


def test_every_lost_point_has_a_reason(batch, case):
    for gid, row in batch.graded[case.student].rows.items():
        if row["kind"] != "auto":
            continue
        assert _score(row) is not None, f"{gid}: no score"        # never an empty grade
        if _score(row) < float(row["max_score"]):
            assert row["error"].strip(), f"{gid}: points lost without a reason"


def test_honest_students_get_full_marks_in_the_same_batch(batch, cases):
    honest = [c for c in cases if c.kind == "honest" and c.name == "honest"]
    assert honest
    for case in honest:
        rows = batch.graded[case.student].rows
        assert all(_score(rows[g]) == float(rows[g]["max_score"]) for g in case.scores), rows


def test_every_notebook_was_graded_in_the_kernels_asked_for(batch, kernels):
    """The corpus proves the kernels it was graded in: none of its notebooks that ran in a kernel (the
    unreadable files run in none) fell back to another kind. (Warm kernels in the sandbox need a grader
    run by root: elsewhere the warm batch skips, saying why, and fails with REQUIRE_WARM=1.)"""
    kinds = {student: g.result.get("kernels") for student, g in batch.graded.items() if g.result.get("kernel_starts")}
    assert kinds and set(kinds.values()) == {kernels}, {s: k for s, k in kinds.items() if k != kernels}


def test_submissions_are_never_modified(batch):
    assert batch.before == batch.after


def test_the_network_was_never_reached(batch):
    assert batch.accepted == []


def test_bad_files_are_reported_by_name_and_the_batch_goes_on(batch, cases):
    problems = batch.problems
    assert problems or not any(c.problem for c in cases), "the batch's bad files were not reported"
    for p in problems:
        assert p["file"] and p["problem"]
        assert (batch.ctx.submissions / p["file"].split(":", 1)[0]).exists() or \
            (batch.ctx.submissions / p["file"].split(":", 1)[0]).is_symlink(), p
    assert {c.student for c in cases} <= set(batch.students)


def test_every_grade_cell_has_a_score_in_the_gradebook(batch, cases):
    from nbgrader.api import Gradebook
    url = f"sqlite:///{batch.ctx.home / 'gradebook.db'}"
    with Gradebook(url, "dl-course") as gb:
        for case in cases:
            submission = gb.find_submission_notebook(case.profile.notebook, STEP, case.student)
            manual = {c.name for c in submission.notebook.solution_cells}
            for grade in submission.grades:
                if grade.name in manual:
                    continue
                assert grade.auto_score is not None, (case.student, grade.name)
                assert grade.auto_score == case.scores[grade.name], (case.student, grade.name, grade.auto_score)


def test_no_kernel_outlives_the_batch(batch):
    assert batch.left == []


def test_the_grader_and_every_kernel_stay_within_their_stated_memory(batch, kernels, cases, record_property):
    """Each result records its worker's peak while grading it and each kernel's control group's peak
    (autograder/grading/grade.py, autograder/kernel/cgroups.py): no attack makes a grading worker hold more
    than WORKER_PEAK_BYTES, no kernel (its children and folders included) more than its limit."""
    measured = []
    for student, graded in sorted(batch.graded.items()):
        result = graded.result
        if not result.get("kernel_starts"):
            continue
        assert result["worker_peak_bytes"] < WORKER_PEAK_BYTES, (student, result["worker_peak_bytes"])
        for peak in result["kernel_peaks"]:
            assert peak.get("memory_bytes", 0) <= LIMITS["memory_bytes"], (student, peak)
        if graded.case.name in RESOURCE_ATTACKS:
            kernels_peak = max((p.get("memory_bytes", 0) for p in result["kernel_peaks"]), default=0)
            measured.append(f"{graded.case.name} worker {result['worker_peak_bytes'] / 2**20:.0f} MiB, "
                            f"kernel {kernels_peak / 2**20:.0f} MiB")
    assert measured and len(measured) == len([c for c in cases if c.name in RESOURCE_ATTACKS]), measured
    record_property("measured", f"red-team peaks ({kernels} kernels): " + "; ".join(measured))


def test_runaway_cells_are_stopped_by_the_limit_they_reached(batch, kernels, cases, record_property):
    """The runaways stop at a CPU-time limit when they compute, at the ceiling for a cell's waiting when
    they wait; each result says which, and what the cell had used."""
    from redteam_corpus import WAITS
    expected = {"loop": "cell CPU time", "stubborn": "cell CPU time", "loop-in-fn": "cell CPU time",
                "sleep": "cell waiting", "wait-in-fn": "cell waiting", **dict.fromkeys(WAITS, "cell waiting")}
    if SANDBOX == "bwrap":
        expected["forkbomb"] = "cell CPU time"
    graded_names = {c.name for c in cases}
    expected = {name: limit for name, limit in expected.items() if name in graded_names}
    assert len(expected) >= 3, f"the batch holds too few of the runaways to prove anything: {sorted(expected)}"
    figures = []
    for name, limit in expected.items():
        graded = next(g for g in batch.graded.values() if g.case.name == name)
        stopped = graded.result["stopped"]         # (a function that loops stops its check cell and its test)
        assert stopped and {s["limit"] for s in stopped} == {limit}, (name, stopped)
        figures += [f"{name} '{s['cell']}' {s['cpu_seconds']:.1f} s CPU / {s['wall_seconds']:.1f} s wall"
                    for s in stopped]
    record_property("measured", f"runaway cells ({kernels} kernels): " + "; ".join(figures))
    # the limit is the batch's, and no cell it did not stop comes near it (each result names its notebook's
    # heaviest cell)
    for graded in batch.graded.values():
        for s in graded.result.get("stopped", []):
            if s["limit"] == "cell CPU time":
                assert s["cpu_seconds"] >= LIMITS["cell_timeout"], (graded.case.name, s)
    unstopped = [g for g in batch.graded.values()
                 if g.result and not g.result.get("stopped") and g.result.get("cpu_seconds")]
    assert unstopped and all(g.result.get("heaviest_cell", {}).get("cpu_seconds", -1) >= 0 for g in unstopped), \
        [g.case.name for g in unstopped if not g.result.get("heaviest_cell")]
    # a notebook that computed has a heaviest cell that did (one whose cells only wait, wait-everywhere's until
    # its budget ends, may use less than the 0.01 s a figure is rounded to in each)
    assert any(g.result["cpu_seconds"] >= 1 for g in unstopped), "no notebook the limits left alone computed"
    assert all(g.result["heaviest_cell"]["cpu_seconds"] > 0 for g in unstopped if g.result["cpu_seconds"] >= 1), \
        [(g.case.name, g.result["cpu_seconds"], g.result["heaviest_cell"]) for g in unstopped
         if g.result["cpu_seconds"] >= 1 and not g.result["heaviest_cell"]["cpu_seconds"] > 0]
    heaviest = max((g.result["heaviest_cell"]["cpu_seconds"], g.case.name, g.result["heaviest_cell"]["cell"])
                   for g in unstopped)
    record_property("measured", f"heaviest cell no limit stopped ({kernels} kernels): {heaviest[2]} of "
                                f"{heaviest[1]}, {heaviest[0]:.2f} s CPU; the cell limit {LIMITS['cell_timeout']} s")
    assert heaviest[0] < HONEST_SHARE * LIMITS["cell_timeout"], \
        f"{heaviest[1]}'s cell {heaviest[2]} used {heaviest[0]:.1f} s of CPU, near the batch's cell limit: raise LIMITS"


def _check_source_lines() -> set[str]:
    """Distinctive lines of the grader's checks: none is in anything a student is given."""
    root = Path(__file__).resolve().parents[1]
    given = "\n".join(p.read_text(encoding="utf-8") for folder in ("release", "dlcourse", "autograder/runtime")
                      for p in sorted((root / folder).rglob("*")) if p.suffix in (".py", ".ipynb"))
    lines = set()
    checks = [*sorted((root / "autograder" / "checks").glob("*.py")), *sorted(STEP4.checks_dir.glob("*.py")),
              root / "source" / "course_plugin.py"]      # the probe server and the case key are in autograder/checks/
    for path in checks:
        for line in path.read_text(encoding="utf-8").splitlines():
            text = line.strip()
            if len(text) >= 24 and text not in given:
                lines.add(text)
    return lines


def _flat(data) -> str:
    """A notebook or a result as one text, its strings' newlines and quotes as written."""
    return json.dumps(data, ensure_ascii=False).replace("\\n", "\n").replace('\\"', '"')


def _submitted_text(folder: Path) -> str:
    """Everything a student submitted, as text: a line of a check that the student wrote too (a correct
    answer can be a line of a reference) is the student's own, not a leak."""
    texts = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        try:
            texts.append(_flat(json.loads(raw)))
        except ValueError:
            texts.append(raw)
    return "\n".join(texts)


def test_no_line_of_a_check_reaches_a_graded_notebook_or_its_feedback(batch):
    import html

    from autograder.grading.grade import write_feedback
    lines = _check_source_lines()
    assert len(lines) > 500                            # the checks are large: the test has something to find
    home = batch.ctx.home
    for path in sorted((home / "autograded").rglob("*.ipynb")) + sorted((home / "work" / "results").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))      # a notebook or a result: JSON
        flat = _flat(data)
        leaked = [line for line in lines if line in flat]
        if leaked:          # lines the student submitted are their own
            student = path.relative_to(home).parts[1 if path.suffix == ".ipynb" else 3]
            own = _submitted_text(batch.ctx.submissions / student)
            leaked = [line for line in leaked if line not in own]
        assert leaked == [], f"{path.relative_to(home)}: {leaked[:3]}"
    # the feedback HTML of the students who tried hardest, written as `make feedback` writes it
    students = sorted(s for s in batch.graded if s.startswith(("grader-knowledge", "detect-probe", "honest")))
    assert students
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADER_HOME", str(home))
        mp.delenv("NBGRADER_DB_URL", raising=False)
        mp.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        write_feedback(STEP4, students, quiet=True, only_these=True)
    # (a case's own check may have written its student's pages already: the argument-leak cases do)
    pages = sorted((home / "feedback").rglob("*.html"))
    assert set(students) <= {p.relative_to(home / "feedback").parts[0] for p in pages}
    for page in pages:
        text = html.unescape(page.read_text(encoding="utf-8", errors="replace"))
        leaked = [line for line in lines if line in text]
        if leaked:          # lines the student submitted are their own
            own = _submitted_text(batch.ctx.submissions / page.relative_to(home / "feedback").parts[0])
            leaked = [line for line in leaked if line not in html.unescape(own)]
        assert leaked == [], f"{page.name}: {leaked[:3]}"
