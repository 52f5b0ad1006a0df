"""One record of a result (autograder/records/): the typed records from the worker to every output, one
store that writes a score once and reads it back through one `load`, one function for a student's totals.

Without kernels: a small course of its own (one notebook whose grade cells are a hidden test, a bonus
question under the step's own prefix, a cell the default prefix would call a bonus, and a written answer),
a gradebook made with nbgrader's API and results recorded through the store.
"""
from __future__ import annotations

import csv
import io
import json
import os
import sys

import nbformat
import pytest
from nbgrader import utils as nbutils

from autograder.records import gradebook
from autograder.records.model import CellResult, NotebookResult, StudentResult
from autograder.records.store import Store, totals_by_student
from autograder.steps import Step
from test_term import term_files  # noqa: F401  (a fixture: a course.toml of the test's own)

STEP = "step-09-extra"
NOTEBOOK = "nb"
POINTS = {"t1": 10.0, "extra_1": 3.0, "bonus_x": 2.0, "w1": 4.0, "t2": 5.0, "r1": 6.0}


def _cell(grade_id: str, source: str, *, solution=False, markdown=False, outputs=()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source) if markdown else nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "solution": solution, "locked": not solution, "grade_id": grade_id,
                                 "points": POINTS[grade_id], "schema_version": 3}
    if not markdown:
        cell.outputs = list(outputs)
    return cell


def _score(value: float):
    return nbformat.v4.new_output("execute_result", data={"text/plain": f"{value:g}"}, execution_count=1)


def graded_notebook(written: str = "my answer") -> nbformat.NotebookNode:
    """A graded notebook as a worker hands it back: a hidden test with its partial score, a bonus question,
    a test the default `bonus_` prefix would miscount, a written answer, a failing test, a cell to review."""
    answer = _cell("w1", "YOUR ANSWER HERE", solution=True, markdown=True)
    answer.metadata["nbgrader"]["checksum"] = nbutils.compute_checksum(answer)
    answer.source = written
    failing = _cell("t2", "assert False", outputs=[nbformat.v4.new_output(
        "error", ename="AssertionError", evalue="no", traceback=[])])
    return nbformat.v4.new_notebook(cells=[
        _cell("t1", 'hidden("t1", globals())', outputs=[_score(7)]),
        _cell("extra_1", 'hidden("extra_1", globals())', outputs=[_score(2)]),
        _cell("bonus_x", 'hidden("bonus_x", globals())', outputs=[_score(1)]),
        answer, failing,
        _cell("r1", 'hidden("r1", globals())', outputs=[_score(2.5)]),
    ])


def judged(student: str, nb, answered: bool = True) -> NotebookResult:
    """The worker's judgement of `graded_notebook` (what judging.judge_notebook returns for it)."""
    written = CellResult("w1", None, 4.0, "", "manual") if answered else \
        CellResult("w1", 0.0, 4.0, "no answer given", "manual")
    return NotebookResult(student=student, notebook=NOTEBOOK, key="k", notebook_json=nbformat.writes(nb), cells=[
        CellResult("t1", 7.0, 10.0, "one part wrong"), CellResult("extra_1", 2.0, 3.0, "one part wrong"),
        CellResult("bonus_x", 1.0, 2.0, "one part wrong"), written,
        CellResult("t2", 0.0, 5.0, "AssertionError: no"),
        CellResult("r1", None, 6.0, "waits for review: code it cannot follow", "review")])


@pytest.fixture
def course(tmp_path, monkeypatch, term_files):  # noqa: F811  (the fixture, imported)
    """A step whose bonus questions are `extra_…` (BONUS_PREFIX), its gradebook, and a grader home."""
    root = tmp_path / "course"
    checks = root / "source" / STEP / "checks"
    checks.mkdir(parents=True)
    (checks / "__init__.py").write_text('TITLE = "Step 9: extra"\nBONUS_PREFIX = "extra_"\n')
    for folder in ("source", "release"):
        (root / folder / STEP).mkdir(parents=True, exist_ok=True)
        nbformat.write(graded_notebook("YOUR ANSWER HERE"), str(root / folder / STEP / f"{NOTEBOOK}.ipynb"))
    home = tmp_path / "home"
    home.mkdir()
    url = f"sqlite:///{home / 'gradebook.db'}"
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", url)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    with gradebook.opened(url) as gb:
        gb.add_assignment(STEP)
        gb.add_notebook(NOTEBOOK, STEP)
        for grade_id, points in POINTS.items():
            kind = "markdown" if grade_id == "w1" else "code"
            gb.add_grade_cell(grade_id, NOTEBOOK, STEP, max_score=points, cell_type=kind)
            gb.add_source_cell(grade_id, NOTEBOOK, STEP, cell_type=kind, source="", locked=grade_id != "w1",
                               checksum="")
        gb.add_solution_cell("w1", NOTEBOOK, STEP)
    step = Step(STEP, root)
    monkeypatch.setattr("autograder.steps.find_step", lambda name=None, root_=None, **_: step)
    return step, Store(home, url)


def test_the_step_declares_its_bonus_questions(course):
    step, _ = course
    assert step.bonus_prefix == "extra_" and step.is_bonus("extra_1") and not step.is_bonus("bonus_x")


def test_the_store_writes_the_scores_the_worker_judged_as_nbgrader_would_have_derived_them(course):
    """A score is written once, from the worker's judgement; the gradebook then holds what nbgrader's own
    SaveAutoGrades derives from the graded notebook's outputs, the cell to review flagged for a person."""
    from nbgrader.preprocessors import SaveAutoGrades
    step, store = course
    for sid, text in (("ada", "my answer"), ("bea", "YOUR ANSWER HERE")):
        nb = graded_notebook(text)
        store.record(STEP, judged(sid, nb, answered=sid == "ada"), 1_700_000_000.0)
        # nbgrader's own way, for a twin student
        with gradebook.opened(store.url) as gb:
            gradebook.create_submission(gb, STEP, f"{sid}-nbgrader")
        SaveAutoGrades().preprocess(nb, {"nbgrader": {"notebook": NOTEBOOK, "assignment": STEP,
                                                      "student": f"{sid}-nbgrader", "db_url": store.url}})
    with gradebook.opened(store.url) as gb:
        for sid in ("ada", "bea"):
            ours = {g.name: (g.auto_score, g.needs_manual_grade) for g in
                    gb.find_submission_notebook(NOTEBOOK, STEP, sid).grades}
            theirs = {g.name: (g.auto_score, g.needs_manual_grade) for g in
                      gb.find_submission_notebook(NOTEBOOK, STEP, f"{sid}-nbgrader").grades}
            assert ours.pop("r1") == (None, True)          # waits for a person, whatever the outputs say
            assert theirs.pop("r1") == (2.5, False)
            assert ours == theirs, sid
            comments = {c.name: c.auto_comment for c in gb.find_submission_notebook(NOTEBOOK, STEP, sid).comments}
            twin = {c.name: c.auto_comment for c in
                    gb.find_submission_notebook(NOTEBOOK, STEP, f"{sid}-nbgrader").comments}
            assert comments == twin
        assert gb.find_grade("w1", NOTEBOOK, STEP, "bea").auto_score == 0     # left as released: 0, "No response."
        assert gb.find_comment("w1", NOTEBOOK, STEP, "bea").auto_comment == "No response."


def test_every_reader_shows_one_total(course):
    """The report (table and grades.json), the feedback page's summary, the per-notebook export and Canvas's
    CSV read the store's one record: the same totals, on a step whose bonus prefix is its own (`extra_`), with
    a grader's score for a written answer and a student known only to the gradebook (another shard's)."""
    from autograder.lms.export import canvas_csv, notebooks_csv
    from autograder.publish.feedback import summary_for
    from autograder.publish.report import write_reports
    step, store = course
    store.record(STEP, judged("ada", graded_notebook()), 1_700_000_000.0)
    with gradebook.opened(store.url) as gb:           # bea: graded by another shard (no result file here)
        gradebook.create_submission(gb, STEP, "bea")
        for grade_id, score in (("t1", 10.0), ("extra_1", 3.0), ("bonus_x", 2.0), ("t2", 5.0), ("r1", 0.0)):
            row = gb.find_grade(grade_id, NOTEBOOK, STEP, "bea")
            row.auto_score, row.needs_manual_grade = score, False
        gb.find_grade("w1", NOTEBOOK, STEP, "bea").needs_manual_grade = True
        gb.db.commit()
        ada_w1 = gb.find_grade("w1", NOTEBOOK, STEP, "ada")      # a TA's score in the formgrader
        ada_w1.manual_score, ada_w1.needs_manual_grade = 3.0, False
        gb.db.commit()
    loaded = store.load(step)
    assert [s.student for s in loaded] == ["ada", "bea"] and all(isinstance(s, StudentResult) for s in loaded)
    assert loaded[1].notebooks[NOTEBOOK].key == "gradebook"
    totals = totals_by_student(loaded)
    ada, bea = totals["ada"]["step"], totals["bea"]["step"]
    # ada: required t1 7 + bonus_x 1 (a required cell here) + w1 3 + t2 0, r1 waits; bonus extra_1 2
    assert (ada["required"], ada["required_max"], ada["bonus"], ada["bonus_max"], ada["total"]) == (11, 27, 2, 3, 13)
    assert ada["to_review"] == ["nb/r1"] and ada["to_grade"] == []
    assert (bea["required"], bea["bonus"], bea["total"], bea["to_grade"]) == (17, 3, 20, ["nb/w1"])

    write_reports(step, loaded, [], say=lambda *a: None)
    report = json.loads(store.grades(STEP)[1].read_text())
    assert {s["student"]: s["step"] for s in report["submissions"]} == {"ada": ada, "bea": bea}
    assert {r["grade_id"]: r["bonus"] for r in report["grades"] if r["student"] == "ada"}["extra_1"] is True
    for sid, mine in (("ada", ada), ("bea", bea)):
        summary = summary_for(store.url, STEP, sid)
        assert summary["step_totals"] == mine
        assert any(line.startswith("step total") and f"{mine['total']:6.1f} / 27" in line
                   for line in summary["lines"]), summary["lines"]
    with gradebook.opened(store.url) as gb:
        per_notebook = list(csv.DictReader(io.StringIO(notebooks_csv(gb, [STEP]))))
        canvas = list(csv.reader(io.StringIO(canvas_csv(gb, [STEP]))))
    assert {r["student"]: float(r["final_score"]) for r in per_notebook} == {"ada": 13.0, "bea": 20.0}
    assert canvas[1][-1] == "27"                                     # Points Possible: the required points
    assert {row[3]: float(row[-1]) for row in canvas[2:]} == {"ada": 13.0, "bea": 20.0}


def test_a_result_file_keeps_its_shape_and_reads_back_whole(course):
    step, store = course
    result = judged("ada", graded_notebook())
    store.record(STEP, result, 1_700_000_000.0)
    on_disk = json.loads(store.result_file(STEP, "ada", NOTEBOOK).read_text())
    assert "notebook_json" not in on_disk and on_disk["cells"][0] == {
        "grade_id": "t1", "score": 7.0, "max_score": 10.0, "error": "one part wrong", "kind": "auto"}
    back = store.result(STEP, "ada", NOTEBOOK)
    result.notebook_json = None
    assert back == result
    missing = store.record_unreadable(STEP, "cy", NOTEBOOK, "not submitted", "missing")
    assert set(json.loads(store.result_file(STEP, "cy", NOTEBOOK).read_text())) == {
        "student", "notebook", "key", "cells", "notes", "events", "seconds", "kernel_starts"}
    assert not missing.graded and {c.score for c in missing.cells} == {0.0}
    store.result_file(STEP, "dee", NOTEBOOK).parent.mkdir(parents=True)
    store.result_file(STEP, "dee", NOTEBOOK).write_text("{ not json")        # a broken file: not a result
    assert store.result(STEP, "dee", NOTEBOOK) is None
    assert [r.student for r in store.results(STEP)] == ["ada", "cy"]


def test_a_gradebook_in_a_folder_shared_with_a_group_is_writable_by_the_group(tmp_path):
    """`make hub` shares the grading home with the instructors' group (setgid): a gradebook `make grade`
    makes there is group-writable, so an instructor's formgrader can save scores; elsewhere nothing changes."""
    import stat
    shared, plain = tmp_path / "shared", tmp_path / "plain"
    for folder in (shared, plain):
        folder.mkdir()
        (folder / "gradebook.db").write_bytes(b"")
        (folder / "gradebook.db").chmod(0o644)
    shared.chmod(0o2775)
    gradebook.share_with_folder_group(shared / "gradebook.db")
    gradebook.share_with_folder_group(plain / "gradebook.db")
    gradebook.share_with_folder_group(shared / "missing.db")          # nothing there yet: nothing to do
    assert stat.S_IMODE((shared / "gradebook.db").stat().st_mode) == 0o664
    assert stat.S_IMODE((plain / "gradebook.db").stat().st_mode) == 0o644


def test_a_sqlite_url_names_its_file_and_another_database_none():
    """The one reading of a gradebook's URL as a file (autograder/course.py `sqlite_path`): the gradebook's
    group sharing and the shards' lock beside it use it."""
    from pathlib import Path

    from autograder.course import sqlite_path
    assert sqlite_path("sqlite:////srv/grading/gradebook.db") == Path("/srv/grading/gradebook.db")
    assert sqlite_path("sqlite:///gradebook.db") == Path("gradebook.db")
    assert sqlite_path("sqlite:///:memory:") is None
    assert sqlite_path("postgresql://grader@db/course") is None


def test_what_a_command_makes_in_a_shared_grading_home_is_writable_by_the_group(tmp_path):
    """The folders a command run as root makes in a grading home shared with the instructors' group
    (submitted/, autograded/, feedback/, grades/, ...) are writable by that group: an instructor's formgrader
    collects and grades into them (autograder/course.py `share_with_home_group`); elsewhere the umask holds."""
    import stat
    import subprocess
    from conftest import ROOT
    modes = {}
    for name, mode in (("shared", 0o2775), ("plain", 0o755)):
        home = tmp_path / name
        home.mkdir()
        home.chmod(mode)
        env = {k: v for k, v in os.environ.items() if k not in ("NBGRADER_DB_URL",)}
        env.update(GRADER_HOME=str(home), NBGRADER_DB_URL=f"sqlite:///{home / 'gradebook.db'}")
        done = subprocess.run([sys.executable, "-c", "import os, sys; os.umask(0o022); from autograder.__main__ "
                               "import main; sys.exit(main(['report']))"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        modes[name] = stat.S_IMODE((home / "grades").stat().st_mode)
    assert modes["shared"] & 0o020 and modes["shared"] & stat.S_ISGID, oct(modes["shared"])
    assert not modes["plain"] & 0o020, oct(modes["plain"])
