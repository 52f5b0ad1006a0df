"""A hidden test the grader cannot decide is graded by a person, in Chromium, with every request off the
machine refused:

* in a copy of the course, vic hands in 02-the-head with `scores_entrywise` bound to torch.vmap of a
  per-entry function (the process reader cannot see how vmap batches it), ada the solutions; `make
  grade` says one cell waits for review, and why; vic's table row counts nothing for it yet;
* vic's feedback page says a person will look at that cell;
* the formgrader's list of 02-the-head submissions shows vic's (only) as needing a manual grade; vic's
  submission page shows the cell's score box flagged and the grader's reason in the cell's output;
  the TA gives the cell its points in the score box;
* reloaded, the score is there and nothing is flagged; then `make grade`'s table (run again: nothing
  regraded), the Canvas CSV of `make export` and the feedback page of `make feedback` show one total,
  which counts the TA's points, and nothing waits for review any more.
"""
from __future__ import annotations

import csv
import json
import re
import time
import urllib.request

import pytest

from autograder.example import with_answers
from conftest import STEP, STEP4
from proof_corpus import UNDECIDED
from conftest import make
from .lab import Lab, copy_course, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-instructor")]

NOTEBOOK = "02-the-head"
CELL = "bonus_scores_entrywise"            # 3 points: values (1 of 3 decided here) and "one entry at a time"
VMAPPED = next(e for e in UNDECIDED if e.name == "r02-entrywise-vmapped")
GIVEN = 3.0                                 # the TA finds the vmapped per-entry function as asked


def _row(out: str, sid: str) -> str:
    return next(line for line in out.splitlines() if line.split()[:1] == [sid])


def _total(row: str) -> float:
    """The total column of a row of make grade's table (before "<n> of <m> to grade")."""
    return float(re.search(r"\s(-?[\d.]+)\s+\d+ of \d+ to grade", row)[1])


def _summary(page_html: str) -> dict:
    return json.loads(re.search(r'id="course-feedback-summary"[^>]*>(.*?)</script>', page_html, re.S)[1])


@pytest.fixture(scope="module")
def graded(chromium_path, tmp_path_factory):
    """A course copy where vic (the vmapped answer) and ada (the solutions) handed 02-the-head in, graded."""
    started = time.monotonic()
    course = copy_course(tmp_path_factory.mktemp("review"))
    # the written answer left as released (scored 0 at once): the hidden test is all that waits for a person
    unwritten = {"bonus_scale_width": "YOUR ANSWER HERE"}
    for sid, answers in (("vic", {**VMAPPED.answers, **unwritten}), ("ada", unwritten)):
        (course / "submissions" / sid).mkdir(parents=True)
        (course / "submissions" / sid / f"{NOTEBOOK}.ipynb").write_text(
            json.dumps(with_answers(STEP4, NOTEBOOK, answers), indent=1))
    out = make(course, "grade", "SUBMISSIONS=submissions", "WORKERS=2")
    print(f"\nclass graded (2 submissions of {NOTEBOOK}): {time.monotonic() - started:.0f} s")
    return course, out


@pytest.fixture(scope="module")
def formgrader(graded, tmp_path_factory):
    with Lab(graded[0], tmp_path_factory.mktemp("jupyter"), role="instructor") as lab:
        yield lab


def test_make_grade_says_the_cell_waits_for_review_and_counts_nothing_for_it(graded):
    course, out = graded
    assert "review: 1 cell waits for a person's review" in out, out[-3000:]
    assert re.search(rf"  vic {NOTEBOOK} {CELL}: waits for review: one entry at a time: .*torch\.vmap", out), out[-3000:]
    assert _row(out, "vic").endswith(", 1 to review") and "to review" not in _row(out, "ada")
    report = json.loads((course / "autograder" / "grades" / f"{STEP}.json").read_text())
    cell = next(g for g in report["grades"] if g["student"] == "vic" and g["grade_id"] == CELL)
    assert (cell["score"], cell["kind"]) == (None, "review")
    vic = next(s for s in report["submissions"] if s["student"] == "vic")
    assert vic["step"]["to_review"] == [f"{NOTEBOOK}/{CELL}"]


def test_the_student_s_feedback_says_a_person_will_look_at_it(graded, page):
    course, _ = graded
    feedback = course / "autograder" / "feedback" / "vic" / STEP / f"{NOTEBOOK}.html"
    summary = _summary(feedback.read_text())
    assert summary["step_totals"]["to_review"] == [f"{NOTEBOOK}/{CELL}"]
    assert any("waiting for a person's review" in line for line in summary["lines"]), summary["lines"]
    page.goto(feedback.as_uri())
    page.wait_for_selector(".course-summary")
    assert "waiting for a person's review" in page.locator(".course-summary").inner_text()
    output = page.locator(".output_subarea", has_text="waiting for a person's review").first
    output.scroll_into_view_if_needed()
    text = " ".join(output.inner_text().split())
    assert "a person will look at your code and give them" in text and "torch.vmap" in text, text
    heading = page.locator(".panel-heading", has_text=CELL).first.inner_text()
    assert "Score: waiting for a person's review, of 3" in heading, heading        # not "Score: 0.0 / 3.0"
    screenshot(page, "feedback-cell-waiting-for-review")


def _offline(context, lab) -> None:
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith((lab.url, "data:", "blob:", "file:")) else route.abort())


def _submissions(lab) -> dict[str, dict]:
    """student -> the formgrader's row for their 02-the-head submission."""
    with urllib.request.urlopen(f"{lab.url}/formgrader/api/submitted_notebooks/{STEP}/{NOTEBOOK}") as r:
        return {row["student"]: row for row in json.loads(r.read())}


def test_a_ta_sees_the_cell_needs_a_manual_grade_reads_why_and_gives_the_points(formgrader, browser_context, page):
    _offline(browser_context, formgrader)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    rows = _submissions(formgrader)
    assert rows["vic"]["needs_manual_grade"] is True and rows["ada"]["needs_manual_grade"] is False
    # the list of submissions: vic's alone is flagged as needing a manual grade
    page.goto(f"{formgrader.url}/formgrader/gradebook/{STEP}/{NOTEBOOK}")
    page.wait_for_selector("td.needs-manual-grade")
    page.locator("#toggle_names").click()                       # the names, shown
    flagged = page.locator("tr", has=page.locator('td.needs-manual-grade[data-search="needs manual grade"]'))
    assert flagged.count() == 1 and "vic" in flagged.first.inner_text(), flagged.first.inner_text()
    screenshot(page, "formgrader-review-listed")
    # vic's submission: the hidden test's score box is flagged, the reason is in the cell's output
    page.goto(f"{formgrader.url}/formgrader/submissions/{rows['vic']['id']}/")
    page.wait_for_selector("input.score")
    box = page.locator(f"#{CELL}")
    page.wait_for_function(f"document.getElementById('{CELL}').classList.contains('needs_manual_grade')", polling=100)
    assert box.input_value() == ""
    cell = page.locator("div.code_cell", has=page.locator(f"#{CELL}"))      # its input and its output
    text = " ".join(cell.inner_text().split())
    assert "waiting for a person's review" in text and "torch.vmap" in text, text
    assert "For the grader: this cell waits for your score (the parts decided above give 2 of 3" in text, text
    wide = cell.evaluate("""c => [...c.querySelectorAll('.output_subarea, .output_subarea pre')]
                                 .filter(e => e.scrollWidth > e.clientWidth + 1).length""")
    assert wide == 0, f"{wide} output boxes of the cell scroll sideways: the reason is cut off"
    box.scroll_into_view_if_needed()
    screenshot(page, "formgrader-review-cell-reason")
    with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT"):
        box.fill(f"{GIVEN:g}")
        page.keyboard.press("Tab")
    page.reload()
    page.wait_for_selector("input.score")
    page.wait_for_function(f"document.getElementById('{CELL}').value !== ''", polling=100)
    assert float(page.locator(f"#{CELL}").input_value()) == GIVEN
    assert not page.evaluate(f"document.getElementById('{CELL}').classList.contains('needs_manual_grade')")
    page.locator(f"#{CELL}").scroll_into_view_if_needed()
    screenshot(page, "formgrader-review-cell-graded")
    assert _submissions(formgrader)["vic"]["needs_manual_grade"] is False
    assert not errors, errors


def test_every_place_shows_the_total_with_the_ta_s_points(graded, formgrader):
    """After the TA's score (test above): the grade table, the Canvas CSV and the feedback page show one
    total, which counts the points given, and no cell waits for review."""
    from nbgrader.api import Gradebook
    course, first = graded
    home = course / "autograder"
    with Gradebook(f"sqlite:///{home / 'gradebook.db'}", "dl-course") as gb:
        grade = gb.find_grade(CELL, NOTEBOOK, STEP, "vic")
        assert (grade.manual_score, grade.needs_manual_grade, grade.auto_score) == (GIVEN, False, None)
    before = _total(_row(first, "vic"))
    out = make(course, "grade", "SUBMISSIONS=submissions")
    assert "notebooks to grade" not in out and "for a person's review (the grader" not in out
    row = _row(out, "vic")
    assert "to review" not in row
    table_total = _total(row)
    assert table_total == pytest.approx(before + GIVEN)
    assert table_total == _total(_row(out, "ada"))              # full marks, as the solutions get
    make(course, "export")
    canvas = list(csv.reader((home / "export" / f"canvas-{STEP}.csv").read_text().splitlines()))
    canvas_total = next(float(r[5]) for r in canvas[2:] if r[3] == "vic")
    make(course, "feedback")
    summary = _summary((home / "feedback" / "vic" / STEP / f"{NOTEBOOK}.html").read_text())
    assert summary["step_totals"]["to_review"] == []
    assert table_total == canvas_total == round(summary["step_totals"]["total"], 1), \
        (table_total, canvas_total, summary["step_totals"])
