"""No script a student writes runs in the pages that show her submission, in Chromium: the feedback
page she opens and the formgrader's page where an instructor grades it (served on the Jupyter
server's origin, with the instructor's session). Every vector of tests/hostile.py is in mallory's
written answers and in an answer cell's outputs (tests/browser/hostile_class.py), several times over:
as markdown, as HTML(...), as Markdown(...), plus JavaScript, SVG and picture outputs with forged
metadata. Each would set `window.__pwned`, log 1337 and open an alert: the test records all three,
hovers over and focuses what the answer shows, clicks its links and buttons, and reads every URL
left in the page. What is legitimate (markdown formatting, formulas, a table, a pasted picture, a
matplotlib picture, an HTML table) must still show.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import STEP
from hostile import MARK
from .hostile_class import HOSTILE, hostile_class
from .lab import Lab, copy_course, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-instructor")]

CONTENT = ".text_cell_render, .output_subarea"
# Every attribute that holds a URL, resolved by the browser: none may run script or show a document.
URLS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('[href],[src],[action],[formaction],[data],[srcdoc],[background],[poster]')) {
    for (const name of ['href','src','action','formaction','data','srcdoc','background','poster']) {
      if (!el.hasAttribute(name)) continue;
      let url = el.getAttribute(name);
      try { url = new URL(url, document.baseURI).href; } catch (e) {}
      out.push([el.tagName.toLowerCase(), name, url.slice(0, 120)]);
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def home(chromium_path, example_class, tmp_path_factory):
    return hostile_class(tmp_path_factory, example_class)


class Watch:
    """What a page does that only script could: dialogs, console lines with the mark, page errors."""

    def __init__(self, page):
        self.dialogs, self.console, self.errors = [], [], []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: self.console.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def marked(self) -> list[str]:
        return [line for line in self.console if MARK in line]


def _poke(page) -> int:
    """Hover over, focus and click what the student's content shows (links, buttons, summaries,
    anything with a handler it might have kept). Navigation is refused: a click that leaves the page
    comes back. Returns the number of elements touched."""
    touched = 0
    handles = page.query_selector_all(f":is({CONTENT}) *")
    for handle in handles:
        try:
            if not handle.is_visible():
                continue
            handle.hover(timeout=500, force=True)
            touched += 1
            tag = handle.evaluate("e => e.tagName.toLowerCase()")
            if tag in ("a", "button", "summary", "input", "details", "x-custom", "p", "div", "img"):
                url = page.url
                handle.click(timeout=500, force=True, no_wait_after=True)
                if page.url.split("#")[0] != url.split("#")[0]:
                    page.go_back()
        except Exception:
            continue
    return touched


def _assert_nothing_ran(page, watch: Watch, where: str) -> None:
    page.wait_for_timeout(500)
    pwned = page.evaluate("window.__pwned || 0")
    assert pwned == 0, f"{where}: a script ran {pwned} times"
    assert not watch.dialogs, f"{where}: dialogs opened: {watch.dialogs}"
    assert not watch.marked(), f"{where}: the payload logged: {watch.marked()}"
    bad = [u for u in page.evaluate(URLS)
           if u[2].lower().startswith(("javascript:", "vbscript:", "data:text", "data:application"))
           or (u[1] == "srcdoc")]
    assert not bad, f"{where}: URLs that run or show a document survive: {bad}"
    frames = page.evaluate("document.body.querySelectorAll('iframe, object, embed, form, meta, base, link, style').length")
    assert frames == 0, f"{where}: {frames} frames, forms, metas, bases or style sheets in the page's body"


def _assert_legitimate_content_shows(page, where: str) -> None:
    assert page.locator("strong", has_text="Legit bold").count() >= 1, f"{where}: markdown bold is gone"
    assert page.locator("em", has_text="legit italic").count() >= 1, f"{where}: markdown italic is gone"
    assert page.locator("th", has_text="legit").count() >= 1, f"{where}: the markdown table is gone"
    assert page.locator("table.legit-table td", has_text="42").count() == 1, f"{where}: the HTML table is gone"
    sizes = page.evaluate("""() => [...document.images].filter(i => i.src.startsWith('data:image/png'))
                                    .map(i => [i.naturalWidth, i.naturalHeight, i.closest('.output_subarea') ? 'out' : 'md'])""")
    assert [24, 24, "md"] in sizes, f"{where}: the pasted picture does not show: {sizes}"
    assert any(w >= 100 and kind == "out" for w, h, kind in sizes), f"{where}: the matplotlib picture does not show: {sizes}"


def test_feedback_page_runs_no_script_and_shows_the_answer(home, page):
    started = time.monotonic()
    feedback = home / "feedback" / HOSTILE / STEP / "01-on-paper.html"
    html = feedback.read_text(encoding="utf-8")
    assert "http-equiv=\"Content-Security-Policy\"" in html
    watch = Watch(page)
    page.goto(feedback.as_uri())
    page.wait_for_selector(".course-summary")
    screenshot(page, "hostile-feedback-top")
    _assert_nothing_ran(page, watch, "feedback page")
    touched = _poke(page)
    _assert_nothing_ran(page, watch, "feedback page, after hovering and clicking")
    _assert_legitimate_content_shows(page, "feedback page")
    assert page.locator(".rendered_html math").count() >= 1, "formulas are not MathML in the feedback page"
    long_line = page.locator("pre", has_text="270 characters").first
    assert long_line.evaluate("e => e.getBoundingClientRect().height") > 30, "the long line does not wrap"
    wide = page.evaluate("""() => [...document.querySelectorAll('.output_subarea, .output_subarea pre')]
                                 .filter(e => e.scrollWidth > e.clientWidth + 1).length""")
    assert wide == 0, f"{wide} output boxes of the feedback page scroll sideways"
    page.locator("strong", has_text="Legit bold").first.scroll_into_view_if_needed()
    screenshot(page, "hostile-feedback-legit-answer")
    print(f"\nfeedback page: {touched} elements hovered/clicked, {time.monotonic() - started:.1f} s")
    assert touched > 50


@pytest.fixture(scope="module")
def formgrader(home, tmp_path_factory):
    grader = tmp_path_factory.mktemp("hostile-grader") / "home"
    shutil.copytree(home, grader)
    env = {"GRADER_HOME": str(grader), "NBGRADER_DB_URL": f"sqlite:///{grader / 'gradebook.db'}"}
    course = copy_course(tmp_path_factory.mktemp("course"))
    with Lab(course, tmp_path_factory.mktemp("jupyter"), env=env, role="instructor") as lab:
        yield lab


def _submission_id(lab, student: str, notebook: str = "01-on-paper") -> str:
    with urllib.request.urlopen(f"{lab.url}/formgrader/api/submitted_notebooks/{STEP}/{notebook}") as r:
        rows = json.loads(r.read())
    return next(row["id"] for row in rows if row["student"] == student)


def test_formgrader_submission_page_runs_no_script_and_shows_the_answer(formgrader, browser_context, page):
    started = time.monotonic()
    browser_context.route("**/*", lambda route: route.continue_()
                          if route.request.url.startswith((formgrader.url, "data:", "blob:")) else route.abort())
    watch = Watch(page)
    page.goto(f"{formgrader.url}/formgrader/submissions/{_submission_id(formgrader, HOSTILE)}/")
    page.wait_for_selector("input.score")
    page.wait_for_function("window.MathJax && MathJax.loaded === true", timeout=60_000)
    screenshot(page, "hostile-formgrader-top")
    _assert_nothing_ran(page, watch, "formgrader")
    touched = _poke(page)
    _assert_nothing_ran(page, watch, "formgrader, after hovering and clicking")
    _assert_legitimate_content_shows(page, "formgrader")
    assert page.locator(".rendered_html .MathJax, .rendered_html .MathJax_Display").count() >= 1, \
        "MathJax did not typeset the answer's formula"
    assert not [e for e in watch.errors if "MathJax" in e], watch.errors
    page.locator("strong", has_text="Legit bold").first.scroll_into_view_if_needed()
    screenshot(page, "hostile-formgrader-legit-answer")
    print(f"\nformgrader: {touched} elements hovered/clicked, {time.monotonic() - started:.1f} s")
    assert touched > 50


def test_written_answer_pdfs_are_clean_and_anonymous_on_request(home, tmp_path):
    """`make pdfs ANON=1` on the class with mallory: each PDF is named by its code, the key beside
    the folder maps codes to students, the same codes come back on a second run, no page names the
    student, and the HTML each PDF is printed from holds nothing that runs."""
    from pypdf import PdfReader

    from autograder.pdfs import student_html, written_answers
    from hostile import dangers
    from .lab import ROOT
    grader = tmp_path / "home"
    shutil.copytree(home, grader)
    env = dict(os.environ, GRADER_HOME=str(grader), NBGRADER_DB_URL=f"sqlite:///{grader / 'gradebook.db'}")

    def make_pdfs() -> list:
        """`make pdfs ANON=1`, as a command (this process's Chromium is playwright's sync API already)."""
        out = subprocess.run([sys.executable, "-m", "autograder", "pdfs", "--step", STEP, "--anonymous"], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout + out.stderr
        return sorted((grader / "pdfs" / "anonymous" / STEP).glob("*.pdf"))
    started = time.monotonic()
    written = make_pdfs()
    seconds = time.monotonic() - started
    key_file = grader / "pdfs" / f"anonymous-key-{STEP}.csv"
    key = dict(line.split(",") for line in key_file.read_text().split()[1:])
    assert sorted(key.values()) == ["ada", "blank", "half", HOSTILE]
    assert sorted(p.stem for p in written) == sorted(key) and all(p.parent.name == STEP for p in written)
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    code = next(c for c, sid in key.items() if sid == HOSTILE)
    text = "\n".join(page.extract_text() for page in PdfReader(grader / "pdfs" / "anonymous" / STEP / f"{code}.pdf").pages)
    assert code in text and HOSTILE not in text and "Legit bold" in text and "/ 2" in text
    again = make_pdfs()
    assert sorted(p.stem for p in again) == sorted(key)
    notebook = json.loads((grader / "autograded" / HOSTILE / STEP / "01-on-paper.ipynb").read_text())
    answers = written_answers(notebook)
    assert len(answers) == 5 and not [dangers(a["question"] + a["answer"]) for a in answers if
                                      dangers(a["question"] + a["answer"])]
    assert student_html(code, STEP, {"01-on-paper": notebook}).count("class='box'") == 5   # a score box each
    print(f"\npdfs: {len(written)} anonymous PDFs in {seconds:.1f} s")
