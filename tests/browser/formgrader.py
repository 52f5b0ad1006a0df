"""nbgrader's formgrader in Chromium, as an instructor grades a written answer by hand on a
submission's page: the page ready, whose submission it is, a score typed and saved. Used on a plain
`make formgrader` server (test_grading_by_hand.py) and on the course's JupyterHub (test_hub_flow.py)."""
from __future__ import annotations

import re


def submission_ready(page) -> None:
    """The submission page's score boxes are there and MathJax (served by the Jupyter server) has loaded.
    Asked every 100 ms: Playwright's default asks on every animation frame, which keeps Chromium drawing
    frames while it waits (an idle JupyterLab page: 0.6-0.8 s of CPU per 10 s of waiting, 0.2 s at 100 ms)."""
    page.wait_for_selector("input.score")
    page.wait_for_function("window.MathJax && MathJax.loaded === true", timeout=60_000, polling=100)


def student_of(page, ids: dict[str, str]) -> str:
    """The student whose submission the page shows; `ids`: submission id -> student (the formgrader's
    api/submitted_notebooks/<step>/<notebook>)."""
    match = re.search(r"/submissions/([0-9a-f]+)/", page.url)
    assert match, page.url
    return ids[match[1]]


def give_score(page, answer: str, score: float) -> None:
    """Type a score into the grade box of the answer cell `answer` and leave it (Tab), as the formgrader
    saves on change; returns once the formgrader's PUT of the grade has succeeded."""
    with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT") as saved:
        page.locator(f"#{answer}").fill(f"{score:g}")
        page.keyboard.press("Tab")                              # the formgrader's next input: extra credit
    assert saved.value.ok, f"the formgrader did not save the score of {answer}: HTTP {saved.value.status}"
