"""An answer run through exec of an encoded string, as a TA and its student meet it, in Chromium, with every
request off the machine refused:

* in a copy of the course, eve hands in 02-the-head with `scores_entrywise` written as
  `exec(base64.b64decode(...))` of per-entry loops (a comment in them carries markup that would run, a
  right-to-left override and a terminal escape); `make grade` sends the process part to review (the
  reader cannot follow exec);
* the formgrader's page of eve's submission shows, below the cell's output and marked for the grader
  only, the decoded loops and the values the answer returned on the hidden cases; the markup shows as
  text and runs nothing, the override and the escape show as their escapes;
* eve's feedback page says a person will look at the cell and holds none of it.
"""
from __future__ import annotations

import base64
import json
import time
import urllib.request

import pytest

from autograder.example import with_answers
from conftest import STEP, STEP4
from conftest import make
from .lab import Lab, copy_course, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-instructor")]

NOTEBOOK = "02-the-head"
CELL = "bonus_scores_entrywise"
LOOPS = ("# <img src=x onerror=\"window.__pwned = 1\"><script>window.__pwned = 2</script>"
         " \u202eright-to-left\u202c \x1b]0;title\x07\n"
         "def scores_entrywise(q, k):\n"
         "    B, T, d_head = q.shape\n"
         "    scores = torch.zeros(B, T, T, dtype=q.dtype)\n"
         "    for b in range(B):\n"
         "        for i in range(T):\n"
         "            for j in range(T):\n"
         "                scores[b, i, j] = (q[b, i] * k[b, j]).sum()\n"
         "    return scores\n")
ENCODED = f"import base64\nexec(base64.b64decode({base64.b64encode(LOOPS.encode()).decode()!r}))"


@pytest.fixture(scope="module")
def graded(chromium_path, tmp_path_factory):
    started = time.monotonic()
    course = copy_course(tmp_path_factory.mktemp("decoded"))
    answers = {"scores_entrywise": ENCODED, "bonus_scale_width": "YOUR ANSWER HERE"}
    (course / "submissions" / "eve").mkdir(parents=True)
    (course / "submissions" / "eve" / f"{NOTEBOOK}.ipynb").write_text(
        json.dumps(with_answers(STEP4, NOTEBOOK, answers), indent=1))
    out = make(course, "grade", "SUBMISSIONS=submissions", "WORKERS=1")
    print(f"\neve graded ({NOTEBOOK}): {time.monotonic() - started:.0f} s")
    assert "review: 1 cell waits for a person's review" in out and "exec" in out, out[-3000:]
    return course


@pytest.fixture(scope="module")
def formgrader(graded, tmp_path_factory):
    with Lab(graded, tmp_path_factory.mktemp("jupyter"), role="instructor") as lab:
        yield lab


def _offline(context, lab) -> None:
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith((lab.url, "data:", "blob:", "file:")) else route.abort())


def test_the_ta_sees_the_decoded_loops_and_the_values_inert(formgrader, browser_context, page):
    _offline(browser_context, formgrader)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    with urllib.request.urlopen(f"{formgrader.url}/formgrader/api/submitted_notebooks/{STEP}/{NOTEBOOK}") as r:
        (row,) = [row for row in json.loads(r.read()) if row["student"] == "eve"]
    assert row["needs_manual_grade"] is True
    page.goto(f"{formgrader.url}/formgrader/submissions/{row['id']}/")
    page.wait_for_selector("input.score")
    cell = page.locator("div.code_cell", has=page.locator(f"#{CELL}"))
    view = cell.locator(".course-grader-view")
    assert view.count() == 1, "the review cell shows no view for the grader"
    view.scroll_into_view_if_needed()
    text = view.inner_text()
    assert "For the grader only" in text and "exec(...) runs:" in text, text
    source = view.locator("pre.decoded-source").first.inner_text()
    assert "for j in range(T):" in source and "scores[b, i, j] = (q[b, i] * k[b, j]).sum()" in source, source
    assert '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>' in source, source
    assert "\\u202eright-to-left\\u202c" in source and "\\x1b]0;title\\x07" in source, source
    assert "\u202e" not in source and "\x1b" not in source
    assert page.evaluate("window.__pwned") is None
    assert cell.locator(".course-grader-view img, .course-grader-view script").count() == 0
    assert "What the answer returned on the hidden cases" in text and "one sequence of one token" in text, text
    assert "shape (1, 1, 1), float32" in text and "this submission's own inputs" in text, text
    # the cell's own output (the student's too) quotes none of it
    output = " ".join(cell.locator(".output_subarea").first.inner_text().split())
    assert "waiting for a person's review" in output and "for j in range(T)" not in output, output
    view.locator("pre.decoded-source").first.scroll_into_view_if_needed()
    screenshot(page, "formgrader-review-decoded-source")
    assert not errors, errors


def test_the_student_s_feedback_says_a_person_will_look_and_shows_none_of_it(graded, page):
    feedback = graded / "autograder" / "feedback" / "eve" / STEP / f"{NOTEBOOK}.html"
    html = feedback.read_text()
    for secret in ("course-grader-view", "For the grader only", "window.__pwned", "right-to-left",
                   "returned on the hidden cases"):
        assert secret not in html, secret
    page.goto(feedback.as_uri())
    page.wait_for_selector(".course-summary")
    heading = page.locator(".panel-heading", has_text=CELL).first.inner_text()
    assert "Score: waiting for a person's review" in heading, heading
    assert "scores[b, i, j] = (q[b, i] * k[b, j]).sum()" not in page.content()
