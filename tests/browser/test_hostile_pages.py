"""No script a student writes runs in the pages that show her submission, in Chromium: the feedback
page she opens and the formgrader's page where an instructor grades it (served on the Jupyter
server's origin, with the instructor's session). Every vector of tests/hostile.py is in mallory's
written answers and in an answer cell's outputs (tests/browser/hostile_class.py), several times over:
as markdown, as HTML(...), as Markdown(...), plus JavaScript, SVG and picture outputs with forged
metadata. Each would set `window.__pwned`, log 1337 and open an alert: the test records all three,
hovers over and focuses what the answer shows, clicks its links and buttons, and reads every URL
left in the page. What is legitimate (markdown formatting, formulas, a table, a pasted picture, a
matplotlib picture, an HTML table) must still show.

Nothing a student wrote may fetch a URL either: every request vector of tests/hostile.py names
REQUEST_HOST, which this module's Chromium maps onto a loopback listener (`--host-resolver-rules`);
the pages are opened, hovered over and clicked through, and the listener must receive nothing. The
same vectors in a page that neither cleans nor restricts (a file, as the feedback page is; a page
served over http from loopback, as the formgrader is) reach it, so a listener that hears nothing
means something. And a student's markup with the page's own classes, styles or a formula's \\style lays
a full-page overlay with a fake score and a fake "regrade" button: the true score and the grading
controls stay on top (screenshots artifacts/screenshots/overlay-*.png).
"""
from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from conftest import STEP
from hostile import (FAKE_SCORE, MARK, OVERLAY_HTML, REQUEST_HOST, REQUEST_HTML,
                     REQUEST_MARKDOWN)
from .hostile_class import HOSTILE, hostile_class
from .lab import LAUNCH_ARGS, Lab, copy_course, screenshot

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


class Listener(http.server.ThreadingHTTPServer):
    """A loopback HTTP server that records every connection and every request it receives."""
    daemon_threads = True

    def __init__(self):
        self.connections, self.requests = 0, []
        super().__init__(("127.0.0.1", 0), _Record)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def verify_request(self, request, client_address):
        self.connections += 1
        return True

    def heard(self) -> set[str]:
        """The vector ids (r07, r50...) of the paths requested so far."""
        return {m[1] for m in (re.match(r"/+(r\d\d)", path) for _, path in self.requests) if m}

    def clear(self) -> None:
        self.connections, self.requests = 0, []


class _Record(http.server.BaseHTTPRequestHandler):
    def _answer(self):
        self.server.requests.append((self.command, self.path))
        body = b"" if self.command == "HEAD" else b"."
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = do_PUT = do_OPTIONS = _answer

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def listener():
    server = Listener()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def chromium(chromium_path, listener):
    """This module's Chromium: REQUEST_HOST resolves to the loopback listener (and nothing else is
    reached: a name the rules do not map does not resolve)."""
    from playwright.sync_api import sync_playwright
    rules = f"--host-resolver-rules=MAP {REQUEST_HOST} 127.0.0.1:{listener.port}, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, headless=True, args=LAUNCH_ARGS + [rules])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def home(chromium_path, example_class, tmp_path_factory):
    return hostile_class(tmp_path_factory, example_class)


class Requests:
    """Every request a page asks for beyond its own origin and its own data (Chromium reports a
    request its Content-Security-Policy blocks too: none may even be asked for, as cleaning leaves
    no URL of a student's in the page)."""

    def __init__(self, page, own: tuple[str, ...]):
        self.sent: list[str] = []
        page.on("request", lambda r: None if r.url.startswith(own + ("data:", "blob:", "about:"))
                else self.sent.append(r.url))


def _assert_nothing_fetched(page, listener: Listener, sent: Requests, where: str) -> None:
    page.wait_for_timeout(1000)
    assert not sent.sent, f"{where}: the page sent requests beyond itself: {sent.sent[:10]}"
    assert listener.connections == 0 and not listener.requests, \
        f"{where}: the listener received {listener.connections} connections: {listener.requests[:10]}"
    urls = [u for u in page.evaluate(URLS) if u[1] != "href" or "#" not in u[2]]
    foreign = [u for u in urls if not u[2].startswith("data:image/")
               and not (u[1] == "href" and u[2].split("#")[0] == page.url.split("#")[0])
               and REQUEST_HOST in u[2]]
    assert not foreign, f"{where}: URLs to the listener's host left in the page: {foreign[:10]}"


class Watch:
    """What a page does that only script could: dialogs, console lines with the mark, page errors."""

    def __init__(self, page):
        self.dialogs, self.console, self.errors = [], [], []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: self.console.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def marked(self) -> list[str]:
        return [line for line in self.console if MARK in line]


CLICKED = ("a", "button", "summary", "input", "details", "x-custom", "p", "div", "img")


# Per element of the student's content, read in one call: its tag, whether it shows (Playwright's
# is_visible: a box that is not empty, and not visibility: hidden) and whether a child of it shows.
SHOWN = """els => els.map(e => {
  const shows = el => { const r = el.getBoundingClientRect();
                        return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  return [e.tagName.toLowerCase(), shows(e), [...e.children].some(shows)];
})"""


def _poke(page) -> int:
    """Hover over, focus and click what the student's content shows (links, buttons, summaries,
    anything with a handler it might have kept). Navigation is refused: a click that leaves the page
    comes back. Returns the number of elements touched. An element that is clicked is hovered over by
    the click itself (Playwright moves the mouse onto it, then presses), so it is not hovered over
    first a second time. An element that is only hovered over is hovered over through its children
    when one of them shows: the pointer on a child is on its parent too (mouseover bubbles up,
    mouseenter and :hover reach every element the pointer is in), so only the innermost are hovered
    over. Tags, what shows and which children show are read in one call; an element that did not
    show then (inside a closed <details>, say) is asked again when its turn comes, after the clicks
    before it."""
    touched = 0
    handles = page.query_selector_all(f":is({CONTENT}) *")
    shown = page.evaluate(SHOWN, handles)
    for handle, (tag, visible, child_shows) in zip(handles, shown):
        try:
            if not visible and not handle.is_visible():
                continue
            if tag not in CLICKED:
                if visible and child_shows:
                    continue
                handle.hover(timeout=500, force=True)
                touched += 1
                continue
            url = page.url
            handle.click(timeout=500, force=True, no_wait_after=True)
            touched += 1
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
    table = page.locator("table", has=page.locator("th", has_text="legit html"))   # its class is not the page's to keep
    assert table.locator("td", has_text="42").count() == 1, f"{where}: the HTML table is gone"
    sizes = page.evaluate("""() => [...document.images].filter(i => i.src.startsWith('data:image/png'))
                                    .map(i => [i.naturalWidth, i.naturalHeight, i.closest('.output_subarea') ? 'out' : 'md'])""")
    assert [24, 24, "md"] in sizes, f"{where}: the pasted picture does not show: {sizes}"
    assert any(w >= 100 and kind == "out" for w, h, kind in sizes), f"{where}: the matplotlib picture does not show: {sizes}"


def test_feedback_page_runs_no_script_and_shows_the_answer(home, page, listener):
    started = time.monotonic()
    feedback = home / "feedback" / HOSTILE / STEP / "01-on-paper.html"
    html = feedback.read_text(encoding="utf-8")
    assert "http-equiv=\"Content-Security-Policy\"" in html
    assert 'alt="r01"' in html and 'alt="r50 markdown picture"' in html      # the vectors are in the page, inert
    watch = Watch(page)
    listener.clear()
    sent = Requests(page, ("file://",))
    page.goto(feedback.as_uri())
    page.wait_for_selector(".course-summary")
    screenshot(page, "hostile-feedback-top")
    _assert_nothing_ran(page, watch, "feedback page")
    _assert_nothing_fetched(page, listener, sent, "feedback page")
    touched = _poke(page)
    _assert_nothing_ran(page, watch, "feedback page, after hovering and clicking")
    _assert_nothing_fetched(page, listener, sent, "feedback page, after hovering and clicking")
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


def _wait_for(page, predicate: str, seconds: float = 60) -> None:
    """Wait until `predicate` (a function's source) is true in the page. Playwright's own
    wait_for_function evaluates a string inside the page, which the formgrader's policy forbids (no
    'unsafe-eval'): this asks from outside, as page.evaluate does."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(predicate):
        assert time.monotonic() < deadline, f"not true within {seconds:.0f} s: {predicate}"
        page.wait_for_timeout(200)


def _submission_id(lab, student: str, notebook: str = "01-on-paper") -> str:
    with urllib.request.urlopen(f"{lab.url}/formgrader/api/submitted_notebooks/{STEP}/{notebook}") as r:
        rows = json.loads(r.read())
    return next(row["id"] for row in rows if row["student"] == student)


def test_formgrader_submission_page_runs_no_script_and_shows_the_answer(formgrader, page, listener):
    started = time.monotonic()
    watch = Watch(page)
    listener.clear()
    sent = Requests(page, (formgrader.url,))
    url = f"{formgrader.url}/formgrader/submissions/{_submission_id(formgrader, HOSTILE)}/"
    with page.expect_response(url) as response:
        page.goto(url)
    assert "img-src 'self' data:" in response.value.text() and "base-uri 'none'" in response.value.text()
    page.wait_for_selector("input.score")
    _wait_for(page, "() => !!(window.MathJax && MathJax.loaded === true && MathJax.Hub.queue.pending === 0"
                    " && !MathJax.Hub.queue.running)")
    screenshot(page, "hostile-formgrader-top")
    _assert_nothing_ran(page, watch, "formgrader")
    _assert_nothing_fetched(page, listener, sent, "formgrader")
    touched = _poke(page)
    _assert_nothing_ran(page, watch, "formgrader, after hovering and clicking")
    _assert_nothing_fetched(page, listener, sent, "formgrader, after hovering and clicking")
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
    the folder maps codes to students, the secret it keeps (its owner's alone) gives a later run the same
    codes, no page names the student, and the HTML each PDF is printed from holds nothing that runs."""
    from pypdf import PdfReader

    from autograder.publish.pdfs import anonymous_codes, student_html, written_answers
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
    assert oct((grader / "pdfs" / ".anonymous-secret").stat().st_mode & 0o777) == "0o600"
    code = next(c for c, sid in key.items() if sid == HOSTILE)
    text = "\n".join(page.extract_text() for page in PdfReader(grader / "pdfs" / "anonymous" / STEP / f"{code}.pdf").pages)
    assert code in text and HOSTILE not in text and "Legit bold" in text and "/ 2" in text
    # a second run draws its codes from the secret the first one kept (what `make pdfs` calls, without
    # printing the PDFs again)
    assert anonymous_codes(grader / "pdfs", STEP, sorted(key.values())) == {sid: c for c, sid in key.items()}
    notebook = json.loads((grader / "autograded" / HOSTILE / STEP / "01-on-paper.ipynb").read_text())
    answers = written_answers(notebook)
    assert len(answers) == 5 and not [dangers(a["question"] + a["answer"]) for a in answers if
                                      dangers(a["question"] + a["answer"])]
    assert student_html(code, STEP, {"01-on-paper": notebook}).count("class='box'") == 5   # a score box each
    print(f"\npdfs: {len(written)} anonymous PDFs in {seconds:.1f} s")


# ---- the listener hears the vectors where nothing stops them ---------------------------------

def _raw_markdown(source: str) -> str:
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
    return MarkdownWithMath(renderer=IPythonRenderer(escape=False, anchor_link_text="")).render(source)


RAW_VECTORS = [("html", v) for v in REQUEST_HTML] + [("markdown", _raw_markdown(v)) for v in REQUEST_MARKDOWN]


def _open(page, url: str) -> None:
    """Open `url` and give what it loads a moment (a page whose media never finish loading still counts)."""
    try:
        page.goto(url, wait_until="domcontentloaded", timeout=15_000)
    except Exception:
        pass
    page.wait_for_timeout(400)


HEARING_SECONDS = 10      # the longest a control waits for a request it expects (a busy machine delays them)


def _heard_in_raw_pages(page, listener: Listener, open_raw, expected: set[str]) -> dict[str, list[str]]:
    """Each request vector alone in a page of the given origin that neither cleans nor restricts
    it, loaded, then its links and buttons clicked: {vector id: the paths the listener received}. A
    vector of `expected` is waited for until the listener hears it (at most HEARING_SECONDS: on a busy
    machine an iframe's request came after the fixed moment the others are given)."""
    heard = {}
    for kind, vector in RAW_VECTORS:
        vid = re.search(r"/r(\d\d)", vector)[0][1:]
        listener.clear()
        open_raw(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body><p>raw</p>{vector}</body></html>")
        for handle in page.query_selector_all("a, button, input[type=image]"):
            try:
                handle.click(timeout=500, force=True, no_wait_after=True)
                page.wait_for_timeout(150)
            except Exception:
                pass
        page.wait_for_timeout(150)
        deadline = time.monotonic() + HEARING_SECONDS
        while vid in expected and not listener.requests and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        heard[vid] = sorted(path for _, path in listener.requests)
    return heard


# What Chromium does not fetch even from a raw page: an SVG <use> of another origin, an icon <link> in
# the body, a relative picture (the page's own server, not the listener), a quote's cite, an SVG in a
# picture's data, and r51-r53, which markdown's own renderer percent-encodes (its tab, its backslash).
INERT_EVEN_RAW = {"r13", "r23", "r40", "r41", "r42", "r51", "r52", "r53"}
# Paths a browser reads as `//host` in an http(s) page; in a file:// page they name a file.
SLASH_PATHS = {"r04", "r05", "r06", "r31", "r55"}
ALL_REQUEST_VECTORS = {f"r{i:02d}" for i in range(1, 43)} | {f"r{i}" for i in range(50, 58)}
HEARD_OVER_HTTP = ALL_REQUEST_VECTORS - INERT_EVEN_RAW
HEARD_EVERYWHERE = HEARD_OVER_HTTP - SLASH_PATHS


class RawPages(http.server.ThreadingHTTPServer):
    """Pages served as they are, over http from the loopback address (as the formgrader is): no
    cleaning, no policy. (A page Playwright fulfils itself has no address, so Chromium's Private
    Network Access refuses its requests to loopback: a real server it is.)"""
    daemon_threads = True

    def __init__(self):
        self.pages: dict[str, str] = {}
        super().__init__(("127.0.0.1", 0), _Serve)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def url(self, html: str) -> str:
        path = f"/raw/{len(self.pages)}.html"
        self.pages[path] = html
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


class _Serve(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = self.server.pages.get(self.path, "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_listener_hears_the_vectors_where_nothing_stops_them(page, listener, tmp_path):
    """The control for the tests above: the same vectors in pages without cleaning or a policy, as a
    file (the feedback page is one) and over http from loopback (as the formgrader is served)."""
    counter = iter(range(10_000))

    def open_file(html: str) -> None:
        path = tmp_path / f"raw-{next(counter)}.html"
        path.write_text(html, encoding="utf-8")
        _open(page, path.as_uri())

    server = RawPages()
    try:
        on_file = _heard_in_raw_pages(page, listener, open_file, HEARD_EVERYWHERE)
        on_server = _heard_in_raw_pages(page, listener, lambda html: _open(page, server.url(html)), HEARD_OVER_HTTP)
    finally:
        server.shutdown()
        server.server_close()
    heard_file = {v for v, paths in on_file.items() if paths}
    heard_server = {v for v, paths in on_server.items() if paths}
    print(f"\nraw pages: {len(RAW_VECTORS)} request vectors; the listener heard {len(heard_file)} of them from a "
          f"file page ({sum(map(len, on_file.values()))} requests) and {len(heard_server)} over http "
          f"({sum(map(len, on_server.values()))} requests)")
    print("  not heard over http (inert even raw in Chromium, or needing script):", sorted(set(on_server) - heard_server))
    assert set(on_file) == set(on_server) == ALL_REQUEST_VECTORS, sorted(on_file)
    assert HEARD_EVERYWHERE <= heard_file, sorted(HEARD_EVERYWHERE - heard_file)
    assert HEARD_OVER_HTTP <= heard_server, sorted(HEARD_OVER_HTTP - heard_server)


def test_poking_reaches_every_handler_it_does_not_touch_directly(page, tmp_path):
    """The control for _poke: in a raw page, handlers on elements it only hovers over through their
    children (mouseover, mouseenter, mouseleave), on what it clicks, and inside a <details> its click
    opened all run."""
    page_html = """<!doctype html><html><body><div class="text_cell_render">
      <div onmouseover="(window.hit = window.hit || []).push('over')"><span><i onmouseover="(window.hit = window.hit || []).push('leaf')">deep</i> text</span></div>
      <p onmouseenter="(window.hit = window.hit || []).push('enter')"><b>bold</b></p>
      <section><p onclick="(window.hit = window.hit || []).push('click')"><span>x</span></p></section>
      <div id="hov" onmouseleave="(window.hit = window.hit || []).push('leave')"><em>a</em></div>
      <details><span onmouseover="(window.hit = window.hit || []).push('inside')">in</span></details>
      <a href="#top" onfocus="(window.hit = window.hit || []).push('focus')">link</a>
    </div></body></html>"""
    path = tmp_path / "poke.html"
    path.write_text(page_html, encoding="utf-8")
    _open(page, path.as_uri())
    touched = _poke(page)
    page.mouse.move(0, 0)
    hits = set(page.evaluate("window.hit || []"))
    assert {"leaf", "over", "enter", "click", "leave", "inside", "focus"} <= hits, (sorted(hits), touched)


# ---- overlays: the true score and the grading controls stay on top ---------------------------

STUDENT = ".text_cell_render, .output_subarea"
COVERED = """(selector) => {
  const el = document.querySelector(selector);
  el.scrollIntoView({block: 'center'});
  const r = el.getBoundingClientRect();
  const points = [[r.left + 3, r.top + 3], [r.left + r.width / 2, r.top + r.height / 2], [r.right - 3, r.bottom - 3]];
  return points.map(([x, y]) => document.elementFromPoint(x, y))
               .filter(top => !(top && (top === el || el.contains(top))))
               .map(top => top ? top.tagName.toLowerCase() + '.' + top.className + ' ' + top.textContent.slice(0, 40) : 'nothing');
}"""
POSITIONED = """(selector) => [...document.querySelectorAll(selector)].flatMap(box => [...box.querySelectorAll('*')])
  .filter(e => { const p = getComputedStyle(e).position;
                 return p === 'fixed' || p === 'sticky' || (p === 'absolute' && !e.closest('.MathJax, .MathJax_Display')); })
  .map(e => e.tagName.toLowerCase() + '.' + e.className + ' ' + getComputedStyle(e).position)"""
INJECT = """([where, html]) => { const box = document.createElement('div'); box.id = 'raw-overlay';
  box.innerHTML = html; (where ? document.querySelector(where) : document.body).appendChild(box); }"""


def _assert_true_score_on_top(page, target: str, where: str, answer_text: str, shot: str) -> None:
    """`target` (the page's own score or control) is what a click there reaches, no element of a
    student's content is laid out of its flow, and a raw overlay put inside the student's box stays
    in it; the same overlay put in the page's body does cover the target (the check can fail)."""
    assert page.locator("text=" + FAKE_SCORE.split()[0]).count() >= 1, f"{where}: the overlay's text is not in the page"
    assert not page.evaluate(POSITIONED, STUDENT), f"{where}: student content out of flow: {page.evaluate(POSITIONED, STUDENT)}"
    assert not page.evaluate(COVERED, target), f"{where}: {target} is covered by {page.evaluate(COVERED, target)}"
    box = page.locator(STUDENT.split(",")[0], has_text=answer_text).first
    box.scroll_into_view_if_needed()
    screenshot(page, f"overlay-{shot}-answer")
    page.evaluate(COVERED, target)
    screenshot(page, f"overlay-{shot}-controls")
    # the second layer: markup that escaped cleaning would still be clipped in the answer's box
    box.evaluate("(b, html) => { const d = document.createElement('div'); d.id = 'raw-in-box'; d.innerHTML = html; b.appendChild(d); }",
                 "".join(OVERLAY_HTML))
    box.scroll_into_view_if_needed()
    screenshot(page, f"overlay-{shot}-raw-in-the-answer-box")
    assert not page.evaluate(COVERED, target), f"{where}: a raw overlay in the answer's box covers {target}"
    page.evaluate("() => document.getElementById('raw-in-box').remove()")
    page.evaluate(INJECT, [None, OVERLAY_HTML[1]])
    assert page.evaluate(COVERED, target), f"{where}: the control overlay in the page's body does not cover {target}"
    screenshot(page, f"overlay-{shot}-control-unprotected")
    page.evaluate("() => document.getElementById('raw-overlay').remove()")
    assert not page.evaluate(COVERED, target)


def test_no_overlay_covers_the_true_score_in_the_feedback_page(home, page):
    feedback = home / "feedback" / HOSTILE / STEP / "01-on-paper.html"
    page.goto(feedback.as_uri())
    page.wait_for_selector(".course-summary")
    page.evaluate("() => window.scrollTo(0, 0)")
    screenshot(page, "overlay-feedback-top")
    assert not page.evaluate(COVERED, ".course-summary"), page.evaluate(COVERED, ".course-summary")
    _assert_true_score_on_top(page, ".course-summary", "feedback page", "The variance is d_k", "feedback")


def test_no_overlay_covers_the_grading_controls_in_the_formgrader(formgrader, page):
    page.goto(f"{formgrader.url}/formgrader/submissions/{_submission_id(formgrader, HOSTILE)}/")
    page.wait_for_selector("input.score")
    _wait_for(page, "() => !!(window.MathJax && MathJax.loaded === true && MathJax.Hub.queue.pending === 0"
                    " && !MathJax.Hub.queue.running)")
    for target in ("input.score#variance_proof", "#variance_proof-comment", ".navbar .breadcrumb"):
        assert not page.evaluate(COVERED, target), f"formgrader: {target} is covered by {page.evaluate(COVERED, target)}"
    _assert_true_score_on_top(page, "input.score#variance_proof", "formgrader", "The variance is d_k", "formgrader")
