"""Grading written answers by hand, as an instructor and a TA do it, in Chromium, with every request
off the machine refused (a course graded offline):

* a term in a copy of the course: ada, blank and half hand 01-on-paper in through the exchange
  (half last), `make collect`, `make grade`;
* the formgrader's submission page opens (it answered HTTP 500 before), MathJax from the Jupyter
  server typesets the answer, and the formgrader's own keyboard flow works: a TA scores the same
  written answer of every student, moving with its next/previous-submission shortcuts (Ctrl+. and
  Ctrl+,), typing a score and a comment with TeX, saving with Escape;
* loaded again (the last reloaded, the others reached back with Ctrl+,), each score and comment is
  still there;
* then every place that shows half's total shows the same new one: the table of `make grade`
  (run again, nothing regraded), the Canvas CSV of `make export`, `make return-feedback` and the
  student's `make my-feedback`, and the feedback page, whose comment shows its formula as MathML.
"""
from __future__ import annotations

import csv
import json
import re
import time
import urllib.request

import pytest

from autograder.example import filled
from conftest import STEP, STEP4, NOTEBOOK_NAMES
from conftest import make
from .formgrader import give_score, student_of, submission_ready
from .lab import Lab, copy_course, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-instructor")]

FIRST = NOTEBOOK_NAMES[0]                 # 01-on-paper: five written answers
ANSWER = "coupling_expectation"           # the written answer the TA grades for everyone
SCORES = {"ada": 2.0, "blank": 0.0, "half": 1.5}
COMMENT = r"Almost: the expectation is over $J \sim A_{i\cdot}$, so $\mathbb{E}[v_J] = \sum_j A_{ij} v_j$."


@pytest.fixture(scope="module")
def term(chromium_path, tmp_path_factory):
    """A course copy where ada, blank and half (last) handed 01-on-paper in, collected and graded."""
    started = time.monotonic()
    course = copy_course(tmp_path_factory.mktemp("by-hand"))
    make(course, "fetch")
    mine = course / "notebooks" / STEP
    for name in NOTEBOOK_NAMES[1:]:
        (mine / f"{name}.ipynb").unlink()
    for sid, keep in (("ada", lambda cid, i: True), ("blank", lambda cid, i: False), ("half", lambda cid, i: i < 3)):
        (mine / f"{FIRST}.ipynb").write_text(json.dumps(filled(STEP4, FIRST, keep), indent=1))
        assert f"handed in as {sid}" in make(course, "submit", f"STUDENT={sid}")
        time.sleep(1.1)
    make(course, "collect")
    make(course, "grade", "SUBMISSIONS=autograder/collected", "WORKERS=2")
    print(f"\nterm set up (fetch, 3 submissions, collect, grade): {time.monotonic() - started:.0f} s")
    return course


@pytest.fixture(scope="module")
def formgrader(term, tmp_path_factory):
    with Lab(term, tmp_path_factory.mktemp("jupyter"), role="instructor") as lab:
        yield lab


def _submissions(lab) -> dict[str, str]:
    """submission id -> student, for 01-on-paper."""
    with urllib.request.urlopen(f"{lab.url}/formgrader/api/submitted_notebooks/{STEP}/{FIRST}") as r:
        return {row["id"]: row["student"] for row in json.loads(r.read())}


def _offline(context, lab) -> None:
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith((lab.url, "data:", "blob:", "file:")) else route.abort())


def test_a_ta_grades_one_written_answer_of_every_student_with_the_keyboard(formgrader, browser_context, page):
    started = time.monotonic()
    _offline(browser_context, formgrader)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    ids = _submissions(formgrader)
    assert sorted(ids.values()) == sorted(SCORES)
    first = sorted(ids)[0]
    page.goto(f"{formgrader.url}/formgrader/submissions/{first}/")
    submission_ready(page)
    assert page.locator(".rendered_html .MathJax, .rendered_html .MathJax_Display").count() > 0
    screenshot(page, "formgrader-submission")
    page.locator(f"#{ANSWER}").click()
    seen = []
    for step in range(len(SCORES)):
        student = student_of(page, ids)
        seen.append(student)
        assert page.evaluate("document.activeElement.id") == ANSWER, \
            f"{student}: the shortcut did not bring the same score box back to focus"
        give_score(page, ANSWER, SCORES[student])
        page.keyboard.press("Tab")                                  # ... then the comment
        assert page.evaluate("document.activeElement.id") == f"{ANSWER}-comment", \
            page.evaluate("document.activeElement.id")
        page.keyboard.type(COMMENT if student == "half" else f"Scored {SCORES[student]:g} for {student}.")
        with page.expect_response(lambda r: "/formgrader/api/comment/" in r.url and r.request.method == "PUT"):
            page.keyboard.press("Escape")                           # defocus: saves
        page.locator(f"#{ANSWER}").click()
        if step == 1:
            screenshot(page, "formgrader-keyboard-grading")
        if step < len(SCORES) - 1:
            with page.expect_navigation():
                page.keyboard.press("Control+.")                    # the same box, next submission
            submission_ready(page)
    assert sorted(seen) == sorted(SCORES)
    # each kept its score and comment, read from its page loaded again from the server: the last one
    # reloaded, then back through the others with Ctrl+, (each a new load of the previous submission's
    # page, as a reload is; loading a page reached that way again proved nothing more)
    for back, sid in enumerate(reversed(seen)):
        if back:
            with page.expect_navigation():
                page.keyboard.press("Control+,")
        else:
            page.reload()
        submission_ready(page)
        assert student_of(page, ids) == sid, (back, seen)
        page.wait_for_function(f"document.getElementById('{ANSWER}').value !== ''", polling=100)
        assert float(page.locator(f"#{ANSWER}").input_value()) == SCORES[sid], sid
        kept = page.locator(f"#{ANSWER}-comment").input_value()
        assert kept == (COMMENT if sid == "half" else f"Scored {SCORES[sid]:g} for {sid}."), (sid, kept)
        if sid == "half":
            page.locator(f"#{ANSWER}").scroll_into_view_if_needed()
            screenshot(page, "formgrader-half-kept-after-reload")
    assert not errors, errors
    print(f"\nkeyboard grading of {len(SCORES)} students, reloads included: {time.monotonic() - started:.1f} s")


def _half_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.split()[:1] == ["half"])


def test_every_place_shows_half_s_new_total(term, formgrader):
    """Right after the manual grades (test above): the grade table, the Canvas CSV, the returned
    feedback page and `make my-feedback` show one total, which counts the 1.5 points given."""
    from nbgrader.api import Gradebook
    home = term / "autograder"
    with Gradebook(f"sqlite:///{home / 'gradebook.db'}", "dl-course") as gb:
        grade = gb.find_grade(ANSWER, FIRST, STEP, "half")
        assert grade.manual_score == SCORES["half"], "the formgrader's score is not in the gradebook"
        comment = gb.find_comment(ANSWER, FIRST, STEP, "half")
        assert comment.manual_comment == COMMENT
    out = make(term, "grade", "SUBMISSIONS=autograder/collected")
    assert "notebooks to grade" not in out                  # nothing regraded: the table alone is new
    row = _half_line(out).split()
    table_total = float(row[-6])
    still_open = int(row[-5])                                # "<n> of 5 to grade"
    make(term, "export")
    canvas = list(csv.reader((home / "export" / f"canvas-{STEP}.csv").read_text().splitlines()))
    canvas_total = next(float(r[5]) for r in canvas[2:] if r[3] == "half")
    out = make(term, "return-feedback")
    assert "feedback for 3 students" in out, out
    out = make(term, "my-feedback")
    assert "scores of half" in out, out
    mine = float(re.search(r"step total\s+([\d.]+) /", out)[1])
    page = (home / "feedback" / "half" / STEP / f"{FIRST}.html").read_text()
    summary = json.loads(re.search(r'id="course-feedback-summary"[^>]*>(.*?)</script>', page, re.S)[1])
    assert table_total == canvas_total == mine == round(summary["step_totals"]["total"], 1), \
        (table_total, canvas_total, mine, summary["step_totals"])
    assert SCORES["half"] <= summary["notebooks"][FIRST]["score"]
    assert still_open == len(summary["step_totals"]["to_grade"]), (row, summary["step_totals"]["to_grade"])
    assert f"{ANSWER}" not in summary["step_totals"]["to_grade"] and \
        f"{FIRST}/{ANSWER}" not in summary["step_totals"]["to_grade"]
    comment_html = page[page.index("<b>Comments:</b>"):]
    assert "<math" in comment_html[:3000] and "\\mathbb" not in comment_html[:3000], comment_html[:600]


def test_the_returned_feedback_page_shows_the_total_and_the_comment(term, page):
    """The student's returned page (after the test above) in Chromium: the summary's total, the
    grader's comment with its formula laid out, nothing sideways-scrolling."""
    returned = sorted((term / "notebooks" / STEP / "feedback").glob(f"*/{FIRST}.html"))
    assert returned, "make my-feedback put no page in notebooks/<step>/feedback/"
    page.goto(returned[-1].as_uri())
    page.wait_for_selector(".course-summary")
    comment = page.locator(".panel-footer", has_text="Almost").first
    comment.scroll_into_view_if_needed()
    box = page.evaluate("""() => { const m = [...document.querySelectorAll('.panel-footer math')];
                                   return m.map(e => e.getBoundingClientRect().width); }""")
    assert box and all(w > 0 for w in box), box
    wide = page.evaluate("""() => [...document.querySelectorAll('.output_subarea, .output_subarea pre')]
                                 .filter(e => e.scrollWidth > e.clientWidth + 1).length""")
    assert wide == 0, f"{wide} output boxes scroll sideways"
    screenshot(page, "feedback-comment-with-formula")
