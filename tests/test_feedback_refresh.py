"""Feedback written again after a grader's score is written only for the students it is stale for: a
written answer scored for one student of the example class rewrites that student's pages, with the
new total, and the page a failed feedback left missing; every other page stays as it was, byte for byte.

The example class is the session's (conftest.example_class, graded once and shared), refreshed in a
copy of its grading home."""
from __future__ import annotations

import shutil

import pytest

from conftest import STEP, STEP4

pytestmark = pytest.mark.slow
ANSWER, NOTEBOOK = "map_written", "01-on-paper"      # a written answer of half's, not scored yet


def pages(home) -> dict:
    """Every feedback page: path -> (bytes, mtime in ns)."""
    return {str(p.relative_to(home)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted((home / "feedback").glob(f"*/{STEP}/*.html"))}


def shown_total(folder) -> float:
    """The step total half's pages show (the summary the feedback writer puts into each page)."""
    from autograder.publish.feedback import feedback_summary
    return feedback_summary(folder)["step_totals"]["total"]


def test_only_the_stale_and_the_missing_pages_are_written_again(example_class, tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    from autograder.grading.grade import refresh_stale_feedback, stale_feedback

    home = tmp_path / "example"
    shutil.copytree(example_class[0], home, ignore=shutil.ignore_patterns("*.lock"))
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_DB_URL", f"sqlite:///{home / 'gradebook.db'}")
    assert stale_feedback(STEP4) == [], "the example class's pages are stale before any score was given"
    half_page = home / "feedback" / "half" / STEP / f"{NOTEBOOK}.html"
    total_before = shown_total(half_page.parent)
    lost = home / "feedback" / "blank" / STEP / "03-the-tests.html"     # as a failed feedback leaves it
    lost.unlink()
    before = pages(home)

    with Gradebook(f"sqlite:///{home / 'gradebook.db'}", "dl-course") as gb:
        grade = gb.find_grade(ANSWER, NOTEBOOK, STEP, "half")
        assert grade.manual_score is None and grade.auto_score is None, "the answer was scored already"
        grade.manual_score = 1.5
        gb.db.commit()
    said = []
    assert refresh_stale_feedback(STEP4, say=said.append) == ["half"]
    assert len(said) == 1 and "1 students' pages are older than their scores" in said[0] and "half" in said[0]

    after = pages(home)
    rewritten = {p for p in after if p not in before or after[p][1] != before[p][1]}
    assert {p.split("/")[1] for p in rewritten} == {"half", "blank"}, sorted(rewritten)
    assert str(lost.relative_to(home)) in after, "the missing page was not written again"
    assert {p for p in rewritten if p.split("/")[1] == "half"} == {p for p in after if p.split("/")[1] == "half"}
    untouched = [p for p in after if p.split("/")[1] == "ada"]
    assert untouched and all(after[p] == before[p] for p in untouched), "ada's pages were written again"
    assert shown_total(half_page.parent) == pytest.approx(total_before + 1.5)
    assert stale_feedback(STEP4) == []
