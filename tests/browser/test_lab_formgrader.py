"""The instructor's JupyterLab after grading a class: nbgrader's formgrader lists the step and its
submissions, with the scores the grader recorded.

A small class (autograder.example: ada with every answer, blank with the release, half with half
the answers) is graded by the project's grader into a temporary grading home (once per session,
shared with tests/test_grading.py); JupyterLab is then started on a copy of the course with
GRADER_HOME and NBGRADER_DB_URL pointing at a copy of it, as `make formgrader` would be after
`make grade`.
"""
from __future__ import annotations

import csv
import shutil

import pytest

from conftest import GRADES_CSV, STEP
from .lab import Lab, copy_course, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-instructor")]
STUDENTS = ("ada", "blank", "half")


@pytest.fixture(scope="module")
def graded(chromium_path, example_class, tmp_path_factory):
    """The example class as graded once per session (conftest.example_class), in a copy of its
    grading home that the formgrader may write to."""
    home = tmp_path_factory.mktemp("grader") / "home"
    shutil.copytree(example_class[0], home, ignore=shutil.ignore_patterns("*.lock"))
    env = {"GRADER_HOME": str(home), "NBGRADER_DB_URL": f"sqlite:///{home / 'gradebook.db'}"}
    with open(home / GRADES_CSV, newline="") as f:
        totals = {}
        for row in csv.DictReader(f):
            if row["score"] != "":
                totals[row["student"]] = totals.get(row["student"], 0.0) + float(row["score"])
    course = copy_course(tmp_path_factory.mktemp("course"))
    with Lab(course, tmp_path_factory.mktemp("jupyter"), env=env, role="instructor") as lab:
        yield lab, totals


def table(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "table tbody tr", "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.innerText.trim()))")


def test_formgrader_lists_the_step_and_its_submissions(graded, page):
    lab, _ = graded
    page.goto(f"{lab.url}/formgrader")
    page.wait_for_selector(f"table tbody tr:has-text('{STEP}')", timeout=60_000)
    page.wait_for_timeout(500)
    screenshot(page, "formgrader-assignments")
    row = next((r for r in table(page) if r and r[0] == STEP), None)
    assert row is not None, f"the formgrader does not list {STEP}: {table(page)}"
    assert str(len(STUDENTS)) in row, f"{STEP} should show {len(STUDENTS)} submissions: {row}"


def test_formgrader_lists_every_student_with_a_score(graded, page):
    lab, totals = graded
    page.goto(f"{lab.url}/formgrader/manage_submissions/{STEP}")
    for student in STUDENTS:
        page.wait_for_selector(f"table tbody tr:has-text('{student}')", timeout=60_000)
    page.wait_for_timeout(500)
    screenshot(page, "formgrader-submissions")
    rows = {student: r for r in table(page) for student in STUDENTS if student in r}   # the Student ID column
    assert set(rows) == set(STUDENTS), f"the formgrader lists {table(page)}"
    for student in STUDENTS:
        total = totals[student]
        assert any(cell.replace(" ", "").startswith(f"{total:g}/") for cell in rows[student]), \
            f"{student}'s autograded total {total:g} is not on the row: {rows[student]}"
        assert not any("needs autograding" in cell for cell in rows[student]), \
            f"{student} was graded, but the formgrader says: {rows[student]}"
    assert totals["ada"] > totals["half"] > totals["blank"] == 0


def test_the_instructor_has_nbgrader_s_tools(graded, page):
    lab, _ = graded
    page.goto(f"{lab.url}/lab?reset")
    page.wait_for_selector(".jp-LabShell", timeout=60_000)
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    items = page.eval_on_selector_all('ul[role="menu"] .lm-Menu-itemLabel', "els => els.map(e => e.textContent)")
    page.keyboard.press("Escape")
    assert "Formgrader" in items, items
    assert page.get_by_text("Create Assignment").count() >= 1
