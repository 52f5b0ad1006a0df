"""A hidden test its check cannot decide goes to a person, never against the student: the review state
from the verdict (autograder/checks/framework.py) through judging (the cell's score is empty, kind
"review", its output says why) into nbgrader's gradebook (no auto_score, `needs_manual_grade`: the
formgrader lists it with the written answers), and every total (the table, grades.json, the feedback
summary, the exports) counts it as an ungraded written answer is counted, until a TA's score counts.
`make grade`'s summary lists one line per student and reason, for the cells waiting and for the files
that could not be graded alike, and stops after a fixed number of lines.

Without kernels: a small gradebook (tests/test_term.py) whose 10-point test cell `t1` a check could not
decide. The whole path in a graded notebook and in the formgrader is tests/browser/test_grading_by_hand.py.
"""
from __future__ import annotations

import json
import types

import nbformat
import pytest

from autograder.checks.framework import Check, Verdict
from autograder.records.store import Store, totals_by_student
from autograder.steps import find_step
from conftest import STEP
from test_term import small_gradebook, term_files  # noqa: F401  (a fixture)

STEP_NS = types.SimpleNamespace(name=STEP)


def undecided_verdict() -> Verdict:
    verdict = Verdict()
    verdict.add("values", True)
    verdict.add("edge cases", False, "T = 1 fails")
    verdict.add_review("one entry at a time", "`f` is bound to the result of `torch.vmap(...)`", weight=2)
    return verdict


def test_a_verdict_with_an_undecided_part_waits_for_review_and_takes_nothing_for_it():
    verdict = undecided_verdict()
    assert verdict.needs_review and [p.name for p in verdict.reviewed()] == ["one entry at a time"]
    assert verdict.fraction == pytest.approx(1 / 4)                # decided: 1 of 4 weights earned
    assert [p.name for p in verdict.failures()] == ["edge cases"]  # the undecided part is no failure
    report = verdict.report(4)
    flat = " ".join(report.split())
    assert flat.startswith("Hidden tests: waiting for a person's review. 1 of 4 points are decided; 2 wait")
    assert "\n  ? one entry at a time: waiting for a person's review.\n" in report
    assert "Why: `f` is bound to the result of `torch.vmap(...)`." in flat
    assert "The grader could not decide this part, so it takes no points for it: a person will look at your code" in flat
    assert max(len(line) for line in report.splitlines()) <= 100      # the formgrader does not wrap outputs
    assert verdict.review_text() == ("waits for review: one entry at a time: `f` is bound to the result of "
                                     "`torch.vmap(...)`; also lost: edge cases: T = 1 fails")
    decided = Verdict()
    decided.add("values", True)
    assert not decided.needs_review and decided.report(2) == "Hidden tests: 2 of 2 points.\n  ✓ values"


class Undecided(Check):
    grade_id = "t1"
    points = 10

    def judge(self, data, ctx):
        return undecided_verdict()


def judged_cell():
    """A hidden test cell judged by a check that cannot decide a part: (its CellResult, the cell)."""
    from autograder.grading.judging import _judge_hidden
    cell = nbformat.v4.new_code_cell('hidden("t1", globals())')
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t1", "points": 10,
                                 "schema_version": 3, "locked": True}
    server = types.SimpleNamespace(checks={"t1": Undecided()}, results={"t1": [1, 2]})
    return _judge_hidden(cell, "t1", 10.0, server), cell


def test_judging_leaves_the_cell_unscored_and_tells_the_ta_and_the_student_why():
    result, cell = judged_cell()
    assert (result.score, result.kind) == (None, "review")
    assert result.error.startswith("waits for review: one entry at a time: `f` is bound")
    text = " ".join(cell.outputs[0]["text"].split())
    assert "waiting for a person's review" in text and "torch.vmap" in text
    assert "For the grader: this cell waits for your score (the parts decided above give 2.5 of 10" in text
    # anything scoring the cell by nbgrader's own rule gets the decided points, never full marks
    from nbgrader.utils import determine_grade
    assert determine_grade(cell)[0] == pytest.approx(2.5)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The small gradebook made once (nbgrader creates a gradebook through alembic: seconds), copied per test."""
    mp = pytest.MonkeyPatch()
    try:
        path = tmp_path_factory.mktemp("template") / "gradebook.db"
        small_gradebook(path, mp)
    finally:
        mp.undo()
    return path


@pytest.fixture
def course(tmp_path, monkeypatch, term_files, template):
    """A grader home with the small gradebook: ada's t1 judged by an undecided check and recorded as
    grading records it (the store: no auto_score, flagged for a person), bea's and cy's t1 scored 5 by their checks."""
    import shutil
    from autograder.records.model import CellResult, NotebookResult
    from autograder.records.store import Store
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(template, home / "gradebook.db")
    url = f"sqlite:///{home / 'gradebook.db'}"
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", url)
    cell_result, cell = judged_cell()
    nb = nbformat.v4.new_notebook(cells=[cell])
    result = NotebookResult(student="ada", notebook="nb", key="k", notebook_json=nbformat.writes(nb),
                            cells=[cell_result, CellResult("w1", None, 4.0, "", "manual")])
    Store(home, url).record(STEP, result, 0)
    results = [NotebookResult.from_json(json.loads((home / "work" / "results" / STEP / "ada" / "nb.json").read_text()))]
    for sid in ("bea", "cy"):
        results.append(NotebookResult(student=sid, notebook="nb", key="k", cells=[
            CellResult("t1", 5.0, 10.0, "", "auto"), CellResult("w1", None, 4.0, "", "manual")]))
    return home, url, results


def ta_scores(url, score):
    """What the formgrader's score box does (nbgrader's GradeHandler.put)."""
    from nbgrader.api import Gradebook
    with Gradebook(url, "dl-course") as gb:
        grade = gb.find_grade("t1", "nb", STEP, "ada")
        grade.manual_score = score
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        gb.db.commit()


def test_the_gradebook_lists_the_cell_as_needing_a_manual_grade_until_a_ta_scores_it(course):
    from nbgrader.api import Gradebook
    from autograder.lms.export import notebooks_csv, canvas_csv
    from autograder.records.totals import summary_lines
    home, url, _ = course

    def from_gradebook(gb, step):
        return totals_by_student(Store(home, url).load(find_step(step), gb=gb))
    with Gradebook(url, "dl-course") as gb:
        grade = gb.find_grade("t1", "nb", STEP, "ada")
        assert (grade.auto_score, grade.manual_score, grade.needs_manual_grade) == (None, None, True)
        assert gb.find_submission_notebook("nb", STEP, "ada").needs_manual_grade
        assert grade.score == 0                                # nbgrader counts nothing for it yet
        totals = from_gradebook(gb, STEP)["ada"]
        rows = {r.split(",")[0]: r for r in notebooks_csv(gb, [STEP]).splitlines()[1:]}
        canvas = canvas_csv(gb, [STEP])
    nb = totals["notebooks"]["nb"]
    assert (nb["score"], nb["to_review"], nb["to_grade"]) == (0, ["t1"], ["w1"])
    assert totals["step"]["to_review"] == ["nb/t1"]
    lines = summary_lines("ada", totals)
    assert "1 hidden test waiting for a person's review" in lines[0]
    assert any(line.startswith("waiting for a person's review: nb/t1") and "a person will look at your code" in line
               for line in lines), lines
    assert ",t1," in rows["ada"] and ",w1,t1," in rows["ada"]          # written_to_grade, review_to_grade
    assert "ada,,,ada,,0" in canvas.splitlines()[2]
    # the TA gives 8 of 10 in the formgrader: it counts everywhere, and nothing waits any more
    ta_scores(url, 8.0)
    with Gradebook(url, "dl-course") as gb:
        grade = gb.find_grade("t1", "nb", STEP, "ada")
        assert (grade.manual_score, grade.needs_manual_grade, grade.score) == (8.0, False, 8.0)
        totals = from_gradebook(gb, STEP)["ada"]
        canvas = canvas_csv(gb, [STEP])
    assert (totals["notebooks"]["nb"]["score"], totals["notebooks"]["nb"]["to_review"]) == (8.0, [])
    assert totals["step"]["to_review"] == [] and "ada,,,ada,,8" in canvas.splitlines()[2]
    # a TA who clears the box puts the cell back among those waiting: no score appears from nowhere
    ta_scores(url, None)
    with Gradebook(url, "dl-course") as gb:
        assert gb.find_grade("t1", "nb", STEP, "ada").needs_manual_grade
        assert from_gradebook(gb, STEP)["ada"]["notebooks"]["nb"]["to_review"] == ["t1"]


def test_the_reports_count_it_as_an_ungraded_answer_and_take_the_ta_s_score(course, monkeypatch):
    from autograder.records import gradebook
    monkeypatch.setattr(gradebook, "release_grade_cells", lambda step: {"nb": {"t1": 10.0, "w1": 4.0}})
    from autograder.publish.report import review_lines, table
    home, url, results = course
    ada = results[0].cells[0]
    assert (ada.score, ada.kind) == (None, "review")
    out = table(results, STEP4_like())
    row = next(line for line in out.splitlines() if line.startswith("ada"))
    assert row.split()[1] == "0.0" and row.endswith("1 of 1 to grade, 1 to review"), row
    assert "to review" not in next(line for line in out.splitlines() if line.startswith("bea"))
    lines = review_lines(results, STEP4_like())
    assert lines[0].startswith("review: 1 cell waits for a person's review") and "formgrader" in lines[0]
    assert lines[1].startswith("  ada nb t1: waits for review: one entry at a time") and len(lines) == 2
    ta_scores(url, 8.0)
    store = Store(home, url)
    results = [r for s in store.load(STEP4_like()) for r in s.notebooks.values()]     # the scores given since
    assert results[0].cells[0].score == 8.0 and results[0].cells[0].error.startswith(
        "scored by a grader after review (one entry at a time")
    assert review_lines(results, STEP4_like()) == []
    assert table(results, STEP4_like()).splitlines()[2].split()[1] == "8.0"
    # a shard's results rebuilt from the gradebook alone know the cell too (no result file in this home)
    ta_scores(url, None)
    (home / "work" / "results" / STEP / "ada" / "nb.json").unlink()
    rebuilt = {s.student: s.notebooks["nb"] for s in store.load(STEP4_like())}
    assert {r.key for r in rebuilt.values()} == {"gradebook"}
    t1 = next(c for c in rebuilt["ada"].cells if c.grade_id == "t1")
    assert (t1.score, t1.kind) == (None, "review")
    assert next(c for c in rebuilt["bea"].cells if c.grade_id == "t1").kind == "auto"


def STEP4_like():
    """The step as the reports ask for it: its name and which cells are bonus ones."""
    return types.SimpleNamespace(name=STEP, is_bonus=lambda grade_id: grade_id.startswith("bonus_"))


def test_one_student_adds_one_review_item_per_reason():
    """A line the reader cannot follow (globals() bound in a cell) reaches every process cell of that
    student: `make grade` lists them as one item with the shared reason, not one line each; another
    reason, or another student, is another item."""
    from autograder.records.model import CellResult, NotebookResult
    from autograder.publish.report import review_lines
    shared = "waits for review: one entry at a time: a cell uses globals, which can change what the code does"
    other = "waits for review: keys visited one at a time: `A` defines `__iter__`, which the grader does not follow"

    def cell(gid, why):
        return CellResult(gid, None, 3.0, why, "review")
    results = [NotebookResult("mallory", "02-the-head", "k", [cell("bonus_scores_entrywise", shared)]),
               NotebookResult("mallory", "06-going-further", "k", [cell("bonus_online_softmax", shared),
                                                                   cell("bonus_streaming_attention", shared),
                                                                   cell("bonus_fit_exponent", other)]),
               NotebookResult("ada", "02-the-head", "k", [cell("bonus_scores_entrywise", shared)])]
    lines = review_lines(results, STEP4_like())
    assert lines[0].startswith("review: 5 cells wait for a person's review"), lines
    items = lines[1:]
    assert len(items) == 3, items
    assert items[0].startswith("  ada 02-the-head bonus_scores_entrywise: waits for review"), items
    assert items[1].startswith("  mallory, 3 cells for one reason (02-the-head bonus_scores_entrywise, "
                               "06-going-further bonus_online_softmax, 06-going-further bonus_streaming_attention)"), items
    assert items[1].endswith(shared) and items[2].startswith("  mallory 06-going-further bonus_fit_exponent"), items
    many = [NotebookResult(f"s{i:02}", "02-the-head", "k", [cell("bonus_scores_entrywise", shared)]) for i in range(25)]
    assert review_lines(many, STEP4_like())[-1] == f"  ... and 5 more (grades/{STEP}.csv: kind review)"


def test_one_student_adds_one_line_of_unreadable_files_per_problem():
    """A student's folder of a thousand stray notebooks filled `make grade`'s summary with a thousand lines
    ("files that could not be graded"): it is one line per student and problem, with the count, and the list
    stops after MAX_ITEMS lines; grades.json keeps every file."""
    from autograder.publish.report import MAX_ITEMS, problem_lines
    stray = "not a notebook of this step (expected one of: 01-on-paper)"
    problems = [{"student": "mallory", "notebook": None, "file": f"mallory/junk{i}.ipynb", "problem": stray}
                for i in range(1000)]
    problems.append({"student": "mallory", "notebook": None, "file": "mallory/x.zip", "problem": "could not be read"})
    problems.append({"student": "ada", "notebook": None, "file": "ada/junk.ipynb", "problem": stray})
    lines = problem_lines(problems, STEP4_like())
    assert lines[:2] == ["", "files that could not be graded:"], lines
    items = lines[2:]
    assert len(items) == 3, items
    assert items[0].startswith("  mallory, 1000 files (mallory/junk0.ipynb, mallory/junk1.ipynb, ") and items[0].endswith(
        f"): {stray}"), items[0][:400]
    assert len(items[0]) < 600, len(items[0])
    assert items[1:] == ["  mallory: mallory/x.zip: could not be read", f"  ada: ada/junk.ipynb: {stray}"]
    many = [{"student": f"s{i:02}", "notebook": None, "file": f"s{i:02}/a.ipynb", "problem": stray} for i in range(25)]
    lines = problem_lines(many, STEP4_like())
    assert len(lines) == 2 + MAX_ITEMS + 1 and lines[-1] == f"  ... and {25 - MAX_ITEMS} more (grades/{STEP}.json: problems)"
    assert problem_lines([], STEP4_like()) == []
