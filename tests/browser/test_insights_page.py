"""The class report (`make insights`) in Chromium: its sections show, a judge's reason holding a student's
`<script>` and `<img onerror>` is text on it, and its policy runs no script and fetches nothing, not even
markup put into the page unescaped (a copy of the page with a script and a picture added by hand).
Screenshots: artifacts/screenshots/insights-*.png.
"""
from __future__ import annotations

import pytest

from autograder.publish.insights import build_report
from autograder.records.store import Store
from conftest import STEP4
from insights_class import HOSTILE, build_class

from .lab import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-insights")]

TITLE = f"What the class got wrong: {STEP4.name}"
SECTIONS = ("totals", "items", "review", "misconceptions", "notebooks")


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    from proof_corpus import CORRECT, UNDECIDED, WRONG
    home = tmp_path_factory.mktemp("insights-browser") / "grader"
    home.mkdir()
    build_class(home, STEP4.release, STEP4.name, 60, WRONG, UNDECIDED, CORRECT)
    report, paths = build_report(STEP4, Store(home, f"sqlite:///{home / 'gradebook.db'}"))
    return report, paths[0]


def opened(context, path):
    """A tab on `path`, with every request it completed ({url: None}) or that failed ({url: why}) and
    every message of its console recorded."""
    tab = context.new_page()
    requests, console = {}, []
    tab.on("requestfinished", lambda r: requests.__setitem__(r.url, None))
    tab.on("requestfailed", lambda r: requests.__setitem__(r.url, r.failure))
    tab.on("console", lambda m: console.append(m.text))
    tab.goto(path.as_uri())
    tab.wait_for_load_state("load")
    return tab, requests, console


def test_the_report_shows_its_sections_and_a_reasons_markup_as_text(browser_context, report_page):
    report, path = report_page
    tab, requests, console = opened(browser_context, path)
    try:
        assert tab.title() == TITLE
        for section in SECTIONS:
            assert tab.locator(f"section#{section}").is_visible(), section
        assert tab.locator("section#items table tr").count() == len(report.items) + 1
        assert tab.locator("section#items svg").count() >= 1 and tab.locator("section#totals svg").is_visible()
        review = tab.locator("section#review").inner_text()
        assert f"({len(report.review)})" in review and len(report.review) > 0
        hostile = tab.locator("section#misconceptions tr", has_text="a name the student chose")
        assert hostile.count() == 1
        assert "<script>document.title='owned'</script>" in hostile.inner_text()
        assert "onerror=\"document.title='owned'\"" in hostile.inner_text()
        assert tab.evaluate("document.scripts.length") == 0 and tab.locator("img").count() == 0
        assert tab.title() == TITLE                     # nothing of the reason ran
        assert requests == {path.as_uri(): None}        # the page alone: no style, font or picture fetched
        hostile.scroll_into_view_if_needed()
        screenshot(tab, "insights-misconceptions")
        tab.evaluate("window.scrollTo(0, 0)")
        screenshot(tab, "insights-page")
    finally:
        tab.close()


def test_the_pages_policy_blocks_script_put_into_it_unescaped(browser_context, report_page, tmp_path):
    """The page's own CSP, not only its escaping: the same page with a script and an `<img onerror>`
    written into it as markup runs neither, and Chromium says its policy refused them."""
    report, path = report_page
    forged = tmp_path / "forged.html"
    forged.write_text(path.read_text(encoding="utf-8").replace(
        "</body>", "<script>document.title='ran'</script><img src='x.png' onerror=\"document.title='ran'\">"
        "<div id='after'>end</div></body>"), encoding="utf-8")
    assert HOSTILE not in path.read_text(encoding="utf-8")
    tab, requests, console = opened(browser_context, forged)
    try:
        assert tab.locator("#after").is_visible()      # the forged markup is in the page
        tab.wait_for_timeout(300)
        assert tab.title() == TITLE
        # img-src 'none': the picture's request is refused by the policy, not merely missing
        assert requests == {forged.as_uri(): None, forged.with_name("x.png").as_uri(): "csp"}
        assert any("Content Security Policy" in m for m in console), console
    finally:
        tab.close()
