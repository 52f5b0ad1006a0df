"""Through `make grade`'s code path: the example class gets the grades it deserves."""
import csv
import json
import os
import subprocess
import sys

import pytest

from autograder.example import with_answers

from conftest import GRADES_CSV, GRADES_JSON, NOTEBOOK_NAMES, ROOT, STEP, STEP4

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(example_class):
    """The example class, graded once per session (conftest.example_class): home, run, rerun."""
    home, data = example_class
    run = {**data["run"], "stamps": data["stamps"], "stamps_after_rerun": data["stamps_after_rerun"]}
    return home, run, data["rerun"]


def rows(home):
    with open(home / GRADES_CSV, newline="") as f:
        return list(csv.DictReader(f))


def test_solutions_score_full_marks_on_every_autograded_cell(graded):
    home, run, _ = graded
    ada = [r for r in rows(home) if r["student"] == "ada" and r["kind"] == "auto"]
    assert {r["notebook"] for r in ada} == set(NOTEBOOK_NAMES)
    for r in ada:
        assert float(r["score"]) == float(r["max_score"]), f"ada loses points in {r['notebook']}/{r['grade_id']}: {r['error']}"
    manual = [r for r in rows(home) if r["student"] == "ada" and r["kind"] == "manual"]
    assert manual and all(r["score"] == "" for r in manual), "written answers wait for a grader"


def test_untouched_release_scores_zero_everywhere(graded):
    home, _, _ = graded
    blank = [r for r in rows(home) if r["student"] == "blank"]
    assert {r["notebook"] for r in blank} == set(NOTEBOOK_NAMES)
    for r in blank:
        if float(r["max_score"]) > 0:
            assert float(r["score"]) == 0, f"the untouched release earns points in {r['notebook']}/{r['grade_id']}"
            assert r["error"], f"no reason given for {r['grade_id']}"


def test_half_done_submission_scores_between(graded):
    home, _, _ = graded
    auto = [r for r in rows(home) if r["student"] == "half" and r["kind"] == "auto"]
    got = sum(float(r["score"]) for r in auto)
    assert 0 < got < sum(float(r["max_score"]) for r in auto)


def test_gradebook_holds_the_same_scores_as_the_report(graded):
    from nbgrader.api import Gradebook
    home, _, _ = graded
    with Gradebook(f"sqlite:///{home / 'gradebook.db'}", "dl-course") as gb:
        for r in rows(home):
            grade = gb.find_grade(r["grade_id"], r["notebook"], STEP, r["student"])
            if r["score"] == "":
                assert grade.auto_score is None and grade.needs_manual_grade
            else:
                assert grade.auto_score == pytest.approx(float(r["score"]))


def test_feedback_for_every_student_and_notebook_without_hidden_tests(graded):
    home, _, _ = graded
    for student in ("ada", "blank", "half"):
        for name in NOTEBOOK_NAMES:
            html = (home / "feedback" / student / STEP / f"{name}.html").read_text()
            for secret in ("BEGIN HIDDEN TESTS", "hidden(", "autograder.checks", "BEGIN SOLUTION"):
                assert secret not in html, f"{student}/{name} feedback shows {secret!r}"
            assert "Hidden tests:" in html


def test_regrading_without_force_reuses_every_result(graded):
    home, run, rerun = graded
    key = lambda results: sorted((r["student"], r["notebook"], json.dumps(r["cells"], sort_keys=True)) for r in results)
    assert key(run["results"]) == key(rerun["results"])
    # reused, not regraded: no notebook's result was written again
    assert len(run["stamps"]) == len(key(run["results"])) > 0
    assert run["stamps_after_rerun"] == run["stamps"], "the rerun regraded notebooks it had results for"


def test_results_come_back_by_student_and_notebook_whatever_order_the_workers_finished_in(graded):
    """Two workers finish in any order; grade() returns its results sorted, graded and reused alike."""
    _, run, rerun = graded
    for results in (run["results"], rerun["results"]):
        order = [(r["student"], r["notebook"]) for r in results]
        assert len(order) == 3 * len(NOTEBOOK_NAMES) and order == sorted(order), order


def test_make_grade_prints_the_table_and_writes_both_reports(tmp_path):
    home = tmp_path / "grader"
    submissions = tmp_path / "class"
    (submissions / "ada").mkdir(parents=True)
    first = NOTEBOOK_NAMES[0]
    (submissions / "ada" / f"{first}.ipynb").write_text(json.dumps(with_answers(STEP4, first, {})), encoding="utf-8")
    env = {"GRADER_HOME": str(home), "NBGRADER_DB_URL": f"sqlite:///{home / 'gradebook.db'}",
           "PATH": f"{ROOT / '.venv' / 'bin'}:/usr/bin:/bin", "WORKERS": "1"}
    proc = subprocess.run(["make", "-s", "grade", f"SUBMISSIONS={submissions}", "WORKERS=1", f"PYTHON={sys.executable}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"grades/{STEP}.csv" in proc.stdout
    data = json.loads((home / GRADES_JSON).read_text())
    # the table: a header with one column per notebook, and ada's row with her points in each
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("student"))
    assert header.split()[1:1 + len(NOTEBOOK_NAMES)] == [n.split("-", 1)[0] for n in sorted(NOTEBOOK_NAMES)]
    row = next(line for line in lines if line.split()[:1] == ["ada"]).split()
    auto = [g for g in data["grades"] if g.get("kind") != "manual"]
    per_notebook = [sum(g["score"] or 0 for g in auto if g["notebook"] == n) for n in sorted(NOTEBOOK_NAMES)]
    assert per_notebook[0] > 0 and not any(per_notebook[1:])         # the solution of one notebook, no other
    assert [float(v) for v in row[1:1 + len(NOTEBOOK_NAMES)]] == pytest.approx(per_notebook), row
    assert {g["notebook"] for g in data["grades"]} == set(NOTEBOOK_NAMES)
    assert all(set(g) >= {"student", "notebook", "grade_id", "score", "max_score", "error"} for g in data["grades"])
    missing = [g for g in data["grades"] if g["notebook"] != first]
    assert len(missing) >= len(NOTEBOOK_NAMES) - 1
    assert all(g["error"] == "not submitted" and g["score"] == 0 for g in missing)


def test_make_grade_without_submissions_says_how_to_use_it():
    proc = subprocess.run(["make", "-s", "grade"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0 and "usage: make grade SUBMISSIONS=" in proc.stdout


BLANK_PLAIN = "03-the-tests"       # the notebook with the most hidden checks with points
# ada's notebooks under plain nbgrader: the three whose provided cells are light. 04-06 build and train
# heads in their provided cells (2-5 s of CPU each per run, in a cold kernel that imports torch) and hold no
# kind of graded cell that 01-03 lack (answers, written answers, hidden tests with points, bonus ones): what
# nbgrader records on them is what their hidden tests return in a kernel, the in-kernel judging this test
# proves nbgrader records as the grader scores, and tests/test_rerun_safe.py runs every notebook of the step
# with its solutions in a real kernel, each hidden test cell showing full marks. PROOF_FULL=1 (`make proof`)
# hands in all six.
ADA_PLAIN = NOTEBOOK_NAMES if os.environ.get("PROOF_FULL") == "1" else \
    [n for n in NOTEBOOK_NAMES if n.startswith(("01-", "02-", "03-"))]


def test_plain_nbgrader_autograde_agrees_with_the_grader_on_honest_submissions(graded, tmp_path):
    """The class through `nbgrader autograde` (hidden checks judged inside the kernel, each returning its
    points as the cell's partial credit, with nbgrader's own case draws): every autograded cell gets the
    same score as the grader gives it, so instructors may use either. ada (every answer right) hands in
    the step's light notebooks (ADA_PLAIN: 01-03, every notebook with PROOF_FULL=1; the solutions of
    04-06 show full marks on their hidden tests in a real kernel in tests/test_rerun_safe.py, as the
    grader gives them); blank (the untouched release) the notebook with the most hidden checks
    with points (BLANK_PLAIN), so that a real kernel's provided cells run without any answer and nbgrader
    records the 0 each check returns; the same in-kernel judging gives the untouched release nothing in
    every other notebook's cells with points (tests/test_grader_proof_quick.py, without the kernel), as
    the grader does (above). half's notebooks are cells of ada's and cells of blank's, nothing new. One
    `nbgrader autograde` grades both, in a copy of the course's grading folder."""
    import shutil
    from nbgrader.api import Gradebook
    from autograder.nbgrader_cmd import NBGRADER_MAIN      # `python -m nbgrader`, without rfc3987_syntax
    home, _, _ = graded
    plain = tmp_path / "plain"
    for student, names in (("ada", ADA_PLAIN), ("blank", [BLANK_PLAIN])):
        folder = plain / "submitted" / student / STEP
        folder.mkdir(parents=True)
        for name in [f"{n}.ipynb" for n in names] + ["timestamp.txt"]:
            shutil.copy(home / "submitted" / student / STEP / name, folder / name)
    shutil.copy(home / "gradebook.db", plain / "gradebook.db")
    url = f"sqlite:///{plain / 'gradebook.db'}"
    proc = subprocess.run([sys.executable, "-c", NBGRADER_MAIN, "autograde", STEP, "--force"],
                          cwd=ROOT, env={**os.environ, "GRADER_HOME": str(plain), "NBGRADER_DB_URL": url},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = [r for r in rows(home) if r["kind"] == "auto"
            and ((r["student"] == "ada" and r["notebook"] in ADA_PLAIN)
                 or (r["student"] == "blank" and r["notebook"] == BLANK_PLAIN))]
    assert {r["notebook"] for r in ours if r["student"] == "ada"} == set(ADA_PLAIN)
    assert sum(float(r["max_score"]) > 0 for r in ours if r["student"] == "blank") >= 5, "blank's notebook has its checks"
    with Gradebook(url, "dl-course") as gb:
        for r in ours:
            theirs = gb.find_grade(r["grade_id"], r["notebook"], STEP, r["student"]).auto_score
            assert theirs == pytest.approx(float(r["score"])), \
                f"{r['student']}/{r['notebook']}/{r['grade_id']}: nbgrader gives {theirs}, the grader {r['score']}"


def test_formgrader_counts_every_graded_submission_as_autograded(graded):
    """nbgrader's formgrader calls a submission autograded only when the gradebook's time stamp
    equals submitted/<student>/<step>/timestamp.txt (otherwise: "needs autograding")."""
    from nbgrader.api import Gradebook, SubmittedAssignment
    from nbgrader.utils import parse_utc
    home, _, _ = graded
    with Gradebook(f"sqlite:///{home / 'gradebook.db'}", "dl-course") as gb:
        stamps = {s.student.id: s.timestamp for s in gb.db.query(SubmittedAssignment).all()}
    assert set(stamps) == {"ada", "blank", "half"}
    for student, stamp in stamps.items():
        on_disk = parse_utc((home / "submitted" / student / STEP / "timestamp.txt").read_text().strip())
        assert (home / "autograded" / student / "step-04").is_dir()
        assert on_disk == stamp, f"{student}: submitted at {on_disk}, the gradebook says {stamp}"
