"""A student's Run All in JupyterLab on each released notebook, before answering, runs top to bottom and
only the unanswered cells complain (an answer cell with NotImplementedError, a "check your work" cell with
NotImplementedError, AssertionError or NameError; provided code never shows an error; every notebook tells
the student an answer is missing); the student has Validate and no instructor tools.

What is checked is what the page shows: prompts, error outputs, dialogs (read from the DOM).
One JupyterLab server serves the whole module, over a temporary copy of the course, and one tab
opens its notebooks one after another.
"""
from __future__ import annotations

import json

import pytest

from conftest import ROOT, STEP, nbgrader_meta
from .lab import Lab, copy_course, dialogs, open_notebook, run_all, screenshot, scroll_to

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-student")]

RELEASED = sorted(p.stem for p in (ROOT / "release" / STEP).glob("*.ipynb"))
# a "check your work" cell may fail before the answer exists, but only because of it
CHECK_CELL_ERRORS = {"NotImplementedError", "AssertionError", "NameError"}


@pytest.fixture(scope="module")
def lab(chromium_path, tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("course"))
    mine = course / "notebooks" / STEP          # a student's folder, as `make fetch` leaves it
    mine.mkdir(parents=True)
    for name in RELEASED:
        (mine / f"{name}.ipynb").write_bytes((ROOT / "release" / STEP / f"{name}.ipynb").read_bytes())
    with Lab(course, tmp_path_factory.mktemp("jupyter")) as server:
        yield server


@pytest.fixture
def page(lab_tab):
    """The module's one tab (conftest.lab_tab): JupyterLab is loaded once, each notebook opened in it."""
    return lab_tab


@pytest.fixture(scope="module")
def shown_now() -> dict:
    """{"path": the notebook the module's tab shows now}, set by a Run All test that passed: the test of
    the student's tools runs right after the Run All of the same notebook (RIGHT_AFTER) and reads that page."""
    return {}


# tests/browser/conftest.py puts each of these right after the case of the other test with the same id
RIGHT_AFTER = {"test_the_student_has_validate_and_no_instructor_tools": "test_run_all_on_the_release_shows_only_what_is_missing"}


def released(name: str) -> list[dict]:
    return json.loads((ROOT / "release" / STEP / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("name", RELEASED)
def test_run_all_on_the_release_shows_only_what_is_missing(lab, page, shown_now, name):
    shown_now.clear()
    open_notebook(page, lab, f"notebooks/{STEP}/{name}.ipynb")
    shown = run_all(page)
    expected = released(name)
    assert [c.kind for c in shown] == [c["cell_type"] for c in expected], \
        f"{name}: the page shows other cells than the notebook holds"
    problems, missing = [], 0
    for cell, source in zip(shown, expected):
        if cell.kind != "code" or not "".join(source["source"]).strip():
            continue
        meta = nbgrader_meta(source)
        where = f"cell {cell.index} ({source.get('id')})"
        if not cell.ran:
            problems.append(f"{where} never ran")
        names = [e for e, _ in cell.errors()]
        missing += names.count("NotImplementedError")
        if meta.get("solution"):
            wrong = [e for e in names if e != "NotImplementedError"]
            if wrong:
                problems.append(f"{where}: an unanswered cell shows {wrong[0]} instead of NotImplementedError")
        elif meta.get("grade"):
            wrong = [e for e in names if e not in CHECK_CELL_ERRORS]
            if wrong:
                problems.append(f"{where}: a check cell crashed with {wrong[0]}")
        elif names:
            text = cell.errors()[0][1].strip().splitlines()[-1]
            problems.append(f"{where}: provided code shows an error: {text}")
    first_error = next((c.index for c in shown if c.errors()), None)
    scroll_to(page, first_error if first_error is not None else 0)
    screenshot(page, f"student-release-{name}")
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)
    assert missing > 0, f"{name}: no NotImplementedError tells the student that an answer is missing"
    assert "Error displaying widget" not in page.content()
    assert not any("Select Kernel" in d for d in dialogs(page))
    shown_now["path"] = f"notebooks/{STEP}/{name}.ipynb"      # passed: its page is as Run All left it


@pytest.mark.parametrize("name", RELEASED[:1])
def test_the_student_has_validate_and_no_instructor_tools(lab, page, shown_now, name):
    """`make lab` leaves nbgrader's instructor tools out: no "Create Assignment" panel, no formgrader.
    Read on the notebook's page its Run All test left open (run alone: the notebook opened here)."""
    path = f"notebooks/{STEP}/{name}.ipynb"
    if shown_now.get("path") != path:
        open_notebook(page, lab, path)
    assert page.locator(".jp-NotebookPanel-toolbar .validate-button").count() == 1
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    items = page.eval_on_selector_all('ul[role="menu"] .lm-Menu-itemLabel', "els => els.map(e => e.textContent)")
    screenshot(page, "student-nbgrader-menu")
    page.keyboard.press("Escape")
    assert "Formgrader" not in items and "Assignment List" in items, items
    assert page.get_by_text("Create Assignment").count() == 0
