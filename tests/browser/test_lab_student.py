"""A student in JupyterLab: Run All on each released notebook, and nbgrader's Validate button.

What is checked is what the page shows: prompts, error outputs, dialogs (read from the DOM).
One JupyterLab server serves the whole module, over a temporary copy of the course.
"""
from __future__ import annotations

import json

import pytest

from autograder.example import filled

from conftest import ROOT, STEP, nbgrader_meta
from .lab import Lab, cells, copy_course, dialogs, open_notebook, run_all, screenshot, scroll_to

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-student")]

RELEASED = sorted(p.stem for p in (ROOT / "release" / STEP).glob("*.ipynb"))
# a "check your work" cell may fail before the answer exists, but only because of it
CHECK_CELL_ERRORS = {"NotImplementedError", "AssertionError", "NameError"}


@pytest.fixture(scope="module")
def lab(chromium, tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("course"))
    mine = course / "notebooks" / STEP          # a student's folder: the release, and a solved copy
    mine.mkdir(parents=True)
    for name in RELEASED:
        (mine / f"{name}.ipynb").write_bytes((ROOT / "release" / STEP / f"{name}.ipynb").read_bytes())
        (mine / f"{name}-solved.ipynb").write_text(json.dumps(filled(name, lambda cid, i: True), indent=1))
    with Lab(course, tmp_path_factory.mktemp("jupyter")) as server:
        yield server


def released(name: str) -> list[dict]:
    return json.loads((ROOT / "release" / STEP / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("name", RELEASED)
def test_run_all_on_the_release_shows_only_what_is_missing(lab, page, name):
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


def validate(page, lab, path: str) -> dict:
    """Press nbgrader's Validate button; return the dialog's verdict and the failing cells it lists."""
    open_notebook(page, lab, path)
    page.locator(".jp-NotebookPanel-toolbar .validate-button").click()
    message = page.locator(".jp-Dialog #validation-message")
    message.wait_for(timeout=240_000)
    verdict = message.evaluate(
        """m => ({classes: [...m.classList], text: m.textContent,
                 failed: [...m.querySelectorAll(':scope > div.jp-RenderedText')].map(d => d.innerText)})""")
    return verdict


def test_validate_says_success_on_a_solved_notebook(lab, page):
    name = RELEASED[0]
    verdict = validate(page, lab, f"notebooks/{STEP}/{name}-solved.ipynb")
    screenshot(page, "validate-solved")
    assert "validation-success" in verdict["classes"], f"Validate on a solved {name}: {verdict['text'][:2000]}"
    assert "Success! Your notebook passes all the tests." in verdict["text"]


def test_validate_lists_the_failing_cells_of_an_unsolved_notebook(lab, page):
    name = RELEASED[0]
    verdict = validate(page, lab, f"notebooks/{STEP}/{name}.ipynb")
    screenshot(page, "validate-unsolved")
    assert "validation-failed" in verdict["classes"], f"Validate on the untouched {name}: {verdict['text'][:2000]}"
    assert verdict["text"].count("The following cell failed:") >= 1
    # the dialog alternates: a failing cell's source, then why it failed
    listed = dict(zip(verdict["failed"][0::2], verdict["failed"][1::2]))
    graded = {"".join(c["source"]).strip(): c for c in released(name) if nbgrader_meta(c).get("grade")}
    for source, why in listed.items():
        cell = graded.get(source.strip())
        assert cell is not None, f"Validate lists a cell that is neither a test nor a written answer:\n{source[:300]}"
        if cell["cell_type"] == "markdown":
            assert "You did not provide a response" in why
        else:
            assert any(e in why for e in CHECK_CELL_ERRORS), f"a test cell fails for another reason:\n{why[-500:]}"
    # before answering, every written answer and every test that runs code fails, and nothing else
    expected = {s for s, c in graded.items()
                if c["cell_type"] == "markdown" or any(line.strip() and not line.strip().startswith("#")
                                                       for line in s.splitlines())}
    assert {s.strip() for s in listed} == expected
