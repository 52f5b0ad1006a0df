"""nbgrader's Validate button, pressed by a student: its dialog's verdict on a solved notebook
(success) and on an untouched one (the failing cells listed, each for the right reason).
One JupyterLab server serves the whole module, over a temporary copy of the course, and one tab
opens its notebooks one after another.
"""
from __future__ import annotations

import json
import time

import pytest

from autograder.example import filled

from conftest import ROOT, STEP, STEP4, nbgrader_meta
from .lab import Lab, copy_course, open_notebook, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-validate")]

RELEASED = sorted(p.stem for p in (ROOT / "release" / STEP).glob("*.ipynb"))
# the notebooks whose provided code draws sliders (ipywidgets): Validate runs them as it runs the others
SLIDERS = {name for name in RELEASED if "ipywidgets" in (ROOT / "release" / STEP / f"{name}.ipynb").read_text()}
CHECK_CELL_ERRORS = {"NotImplementedError", "AssertionError", "NameError"}


@pytest.fixture(scope="module")
def lab(chromium_path, tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("course"))
    mine = course / "notebooks" / STEP          # a student's folder: the release, and a solved copy
    mine.mkdir(parents=True)
    for name in RELEASED:
        (mine / f"{name}.ipynb").write_bytes((ROOT / "release" / STEP / f"{name}.ipynb").read_bytes())
        (mine / f"{name}-solved.ipynb").write_text(json.dumps(filled(STEP4, name, lambda cid, i: True), indent=1))
    with Lab(course, tmp_path_factory.mktemp("jupyter")) as server:
        yield server


@pytest.fixture
def page(lab_tab):
    """The module's one tab (conftest.lab_tab): JupyterLab is loaded once, each notebook opened in it."""
    return lab_tab


def released(name: str) -> list[dict]:
    return json.loads((ROOT / "release" / STEP / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def validate(page, lab, path: str) -> dict:
    """Press nbgrader's Validate button; return the dialog's verdict, the failing cells it lists and the
    seconds from the press to the verdict."""
    open_notebook(page, lab, path)
    page.locator(".jp-NotebookPanel-toolbar .validate-button").click()
    started = time.monotonic()
    message = page.locator(".jp-Dialog #validation-message")
    message.wait_for(timeout=240_000)
    seconds = time.monotonic() - started
    verdict = message.evaluate(
        """m => ({classes: [...m.classList], text: m.textContent,
                 failed: [...m.querySelectorAll(':scope > div.jp-RenderedText')].map(d => d.innerText)})""")
    return {**verdict, "seconds": seconds}


@pytest.mark.parametrize("name", RELEASED)
def test_validate_says_success_on_a_solved_notebook(lab, page, name, record_property):
    """A student who answered everything correctly sees success (a warning printed on stderr in a
    test cell would make nbgrader's Validate report the cell as failed). The time to the verdict is
    reported, the slider notebooks' beside the others'."""
    verdict = validate(page, lab, f"notebooks/{STEP}/{name}-solved.ipynb")
    record_property("measured", f"Validate on a solved {name}{' (sliders)' if name in SLIDERS else ''}: "
                                f"{verdict['seconds']:.1f} s from the press to the verdict")
    screenshot(page, f"validate-solved-{name}")
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
