"""Written answers graded offline (`make written-scores`): the CSV out, with each student's answer;
back in, the scores and comments saved as the formgrader saves them and the answers marked graded;
a file with any bad line imports nothing and names every bad line."""
from __future__ import annotations

import csv
import io
import json

import pytest

from autograder.csvout import text_of
from conftest import STEP
from test_term import small_gradebook, term_files  # noqa: F401  (a fixture)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The small gradebook made once (nbgrader creates a gradebook through alembic: seconds), copied per test."""
    mp = pytest.MonkeyPatch()
    try:
        path = tmp_path_factory.mktemp("template") / "gradebook.db"
        small_gradebook(path, mp)            # ada, bea, cy: notebook nb, a written answer w1 of 4 points
    finally:
        mp.undo()
    return path


@pytest.fixture
def home(tmp_path, monkeypatch, term_files, template):
    import os
    import shutil
    import sys
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(template, home / "gradebook.db")
    url = f"sqlite:///{home / 'gradebook.db'}"
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", url)
    graded = home / "autograded" / "ada" / STEP
    graded.mkdir(parents=True)
    cell = {"cell_type": "markdown", "metadata": {"nbgrader": {"solution": True, "grade": True, "grade_id": "w1",
                                                               "points": 4}}, "source": ["=HYPERLINK(\"x\")\n", "because"]}
    (graded / "nb.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return home, url


def read(path):
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def grades(url):
    from nbgrader.api import Gradebook
    with Gradebook(url, "dl-course") as gb:
        out = {}
        for sid in ("ada", "bea", "cy"):
            grade = gb.find_grade("w1", "nb", STEP, sid)
            comment = gb.find_comment("w1", "nb", STEP, sid)
            out[sid] = (grade.manual_score, grade.needs_manual_grade, comment.manual_comment)
        return out


def test_export_lists_every_written_answer_with_the_answer_text(home):
    from autograder.publish.written import COLUMNS, export_written
    path = export_written(STEP, say=lambda *a: None)
    rows = read(path)
    assert list(rows[0]) == COLUMNS
    assert [(r["student"], r["notebook"], r["grade_id"], r["max_score"], r["score"]) for r in rows] == \
           [("ada", "nb", "w1", "4.0", ""), ("bea", "nb", "w1", "4.0", ""), ("cy", "nb", "w1", "4.0", "")]
    # a formula-like answer, escaped, its line break marked (a reader splitting by `;` would end the row there)
    assert rows[0]["answer"] == "'=HYPERLINK(\"x\")\u23cebecause"
    assert text_of(rows[0]["answer"]) == "=HYPERLINK(\"x\")\nbecause"


def test_import_scores_comments_and_marks_graded(home, tmp_path):
    from autograder.records.store import Store, totals_by_student
    from autograder.steps import find_step
    from autograder.publish.written import export_written, import_written
    _, url = home
    rows = read(export_written(STEP, say=lambda *a: None))
    rows[0].update(score="3.5", comment="'-1: no units, $x^2$")      # the writer's escaping, as a spreadsheet keeps it
    rows[1].update(score="4", comment="fine")                         # cy left empty: skipped
    out = tmp_path / "filled.csv"
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert import_written(STEP, out, say=lambda *a: None) == 2
    assert grades(url) == {"ada": (3.5, False, "-1: no units, $x^2$"), "bea": (4.0, False, "fine"),
                           "cy": (None, True, None)}
    totals = totals_by_student(Store(tmp_path / "no-results", url).load(find_step(STEP)))
    assert totals["ada"]["notebooks"]["nb"]["to_grade"] == [] and totals["cy"]["notebooks"]["nb"]["to_grade"] == ["w1"]
    assert totals["ada"]["notebooks"]["nb"]["score"] == pytest.approx(5 + 3.5)


@pytest.mark.parametrize("bad, words", [
    ("zed,nb,w1,4,3,,", "line 3 (zed/nb/w1): no such student"),
    ("ada,nb,t1,10,3,,", "line 3 (ada/nb/t1): no written answer with that notebook and grade id"),
    ("ada,other,w1,4,3,,", "no written answer with that notebook"),
    ("bea,nb,w1,4,5,,", "score 5 is not within 0..4"),
    ("bea,nb,w1,4,-1,,", "score -1 is not within 0..4"),
    ("bea,nb,w1,4,lots,,", "score 'lots' is not a number"),
    ("bea,nb,w1,4,nan,,", "not within"),
    ("ada,nb,w1,4,1,,", "the same answer as line 2"),
])
def test_a_bad_line_imports_nothing_and_is_named(home, tmp_path, bad, words):
    from autograder.publish.written import WrittenScoresError, import_written
    _, url = home
    before = grades(url)
    path = tmp_path / "bad.csv"
    path.write_text("student,notebook,grade_id,max_score,score,comment,answer\nada,nb,w1,4,2,good,\n" + bad + "\n")
    with pytest.raises(WrittenScoresError, match="nothing imported") as err:
        import_written(STEP, path, say=lambda *a: None)
    assert words in str(err.value)
    assert grades(url) == before                                        # the good line 2 was not applied either


def test_a_file_without_the_columns_says_which(home, tmp_path):
    from autograder.publish.written import WrittenScoresError, import_written
    path = tmp_path / "x.csv"
    path.write_text("who,what\n")
    with pytest.raises(WrittenScoresError, match="missing: grade_id, notebook, score, student"):
        import_written(STEP, path)
