"""Chromium for the browser tests, or a clear skip (a failure when REQUIRE_BROWSER=1, as in CI)."""
from __future__ import annotations

import os

import pytest

from conftest import uses

from .lab import LAUNCH_ARGS, VIEWPORT, find_chromium, screenshot

REQUIRED = os.environ.get("REQUIRE_BROWSER") == "1"


def unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"REQUIRE_BROWSER=1, but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's Chromium and the playwright package, or a skip (a failure with REQUIRE_BROWSER=1).
    Fixtures that start a JupyterLab server ask for this first, so nothing starts in vain."""
    path = find_chromium()
    if path is None:
        unavailable("Chromium is not installed (`sudo make system-deps` installs Debian's chromium; "
                    "or set CHROMIUM=/path/to/chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable("the Python package playwright is not installed (`make install`)")
    uses("browser")
    return path


@pytest.fixture(scope="module")
def chromium(chromium_path):
    """A headless Chromium for one test module. Playwright's synchronous API keeps an asyncio loop
    running on this thread while it is open, and other tests in the same worker call asyncio.run:
    so it is opened per module and closed when the module is done."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, headless=True, args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def browser_context(chromium):
    """One browser profile per module: pages share JupyterLab's cached scripts."""
    context = chromium.new_context(viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    try:
        yield context
    finally:
        context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.browser_failed = report.failed


def _screenshot_if_failed(tab, request) -> None:
    if getattr(request.node, "browser_failed", False):
        try:
            screenshot(tab, f"FAILED-{request.node.name}")
        except Exception:
            pass


@pytest.fixture
def page(browser_context, request):
    """A fresh tab; when the test fails, a screenshot of it is kept as FAILED-<test>.png."""
    tab = browser_context.new_page()
    try:
        yield tab
    finally:
        _screenshot_if_failed(tab, request)
        tab.close()


@pytest.fixture(scope="module")
def module_tab(browser_context):
    """One tab for a module's notebooks: JupyterLab is loaded in it once, and lab.open_notebook opens
    each notebook in that JupyterLab, as a student goes from one notebook to the next."""
    tab = browser_context.new_page()
    try:
        yield tab
    finally:
        tab.close()


@pytest.fixture
def lab_tab(module_tab, request):
    """The module's tab (module_tab) for one test; when the test fails, a screenshot as FAILED-<test>.png."""
    try:
        yield module_tab
    finally:
        _screenshot_if_failed(module_tab, request)


def pytest_collection_modifyitems(session, config, items):
    """A module's RIGHT_AFTER = {test: earlier test}: each of `test`'s cases runs right after the case
    of `earlier test` with the same parameters (test_lab_solutions: a notebook's slider test while the
    page its Run All left is still open; test_lab_student: the student's tools read on the page of
    01-on-paper's Run All). After tests/conftest.py's ordering of the modules; a whole
    module stays in one place, so --dist loadscope still hands it to one worker in this order."""
    def key(item, name):
        return (item.module.__name__, name, getattr(getattr(item, "callspec", None), "id", None))

    moving = {}
    for item in items:
        after = getattr(getattr(item, "module", None), "RIGHT_AFTER", {}).get(getattr(item, "originalname", None))
        if after:
            moving[key(item, after)] = moving.get(key(item, after), []) + [item]
    if not moving:
        return
    moved = {id(i) for group in moving.values() for i in group}
    ordered = []
    for item in items:
        if id(item) in moved:
            continue
        ordered.append(item)
        ordered.extend(moving.pop(key(item, getattr(item, "originalname", None)), []))
    for group in moving.values():          # their earlier test was deselected or not collected
        ordered.extend(group)
    items[:] = ordered
