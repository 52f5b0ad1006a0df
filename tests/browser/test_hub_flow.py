"""The course on a real JupyterHub (`make hub`), in Chromium: a student logs in with a local account,
opens the Assignments tab, fetches the step, validates a notebook and submits; the instructor collects
the submission and this project's grader grades it, its grades read from the store; the feedback is
returned, and the student fetches it in the Assignments tab and sees its page with the totals. Screenshots in
artifacts/screenshots/hub-*.png. The hub is the run's one hub (conftest.hub_session)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, STEP4, uses
from hub import listening

from .hubpages import log_in, open_assignments, shot

pytestmark = [pytest.mark.browser, pytest.mark.hub, pytest.mark.slow]


def course(hub: dict, *args: str, timeout: int = 900) -> str:
    """A course command as the instructor runs it on the hub's machine (the hub's exchange, the test's
    own grading home)."""
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, env={**os.environ, **hub["env"]},
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_make_hub_serves_a_login_and_knows_the_course(hub_session, record_property):
    hub = hub_session
    record_property("measured", f"hub: `make hub` to a usable login page: {hub['seconds_to_login']:.1f} s")
    assert listening(hub["port"]) and listening(hub["port"] + 1)
    config = (Path(hub["folder"]) / "hub" / "jupyterhub_config.py").read_text()
    for line in ("authenticator_class = 'pam'", "spawner_class = 'localprocess'", "default_url = '/lab'",
                 "'nbgrader-dl-course'", "'formgrade-dl-course'"):
        assert line in config, line
    students = (Path(hub["folder"]) / "hub" / "jupyter" / "students")
    assert "JupyterHubAuthPlugin" in (students / "nbgrader_config.py").read_text()
    assert json.loads((students / "labconfig" / "page_config.json").read_text())["disabledExtensions"][
        "@jupyter/nbgrader:formgrader"] is True
    released = Path(hub["env"]["NBGRADER_EXCHANGE"]) / "dl-course" / "outbound" / STEP4.name
    assert sorted(p.name for p in released.glob("*.ipynb")) == sorted(f"{n}.ipynb" for n in STEP4.notebooks())


def test_a_student_fetches_validates_and_submits_in_the_assignments_tab_is_graded_and_sees_the_feedback(
        hub_session, chromium, record_property):
    hub = hub_session
    student = hub["students"][0]
    uses("browser")
    started = time.monotonic()
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(120_000)
    page = context.new_page()
    try:
        to_lab = log_in(page, hub, student)
        record_property("measured", f"hub: a student's login to a usable JupyterLab (server spawned): {to_lab:.1f} s")
        shot(page, "01-student-lab")

        open_assignments(page)
        released = page.locator("#released_assignments_list")
        released.get_by_text(STEP4.name).wait_for()
        shot(page, "02-assignments-released")
        released.get_by_role("button", name="Fetch").click()
        fetched = page.locator("#fetched_assignments_list")
        fetched.get_by_text(STEP4.name).first.wait_for()
        home = Path(f"/home/{student}") / STEP4.name
        assert sorted(p.name for p in home.glob("*.ipynb")) == sorted(f"{n}.ipynb" for n in STEP4.notebooks())
        shot(page, "03-assignments-fetched")

        fetched.get_by_text(STEP4.name).first.click()               # its notebooks, each with Validate
        first = STEP4.notebooks()[0]
        row = fetched.locator(".nested_list_item").filter(has_text=first).first
        row.get_by_role("button", name="Validate").click()
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for(timeout=300_000)
        text = dialog.inner_text()
        shot(page, "04-validated")
        assert "Validation Results" in text and "The following cell failed" in text, text[:2000]   # the release, unanswered
        dialog.get_by_role("button", name="Ok").click()

        fetched.get_by_role("button", name="Submit").first.click()
        submitted = page.locator("#submitted_assignments_list")
        submitted.get_by_text(STEP4.name).first.wait_for()
        shot(page, "05-submitted")
    finally:
        context.close()
    submitted_at = time.monotonic()

    out = course(hub, "collect")
    assert student in out
    collected = Path(hub["env"]["GRADER_HOME"]) / "collected" / student / STEP4.name
    assert sorted(p.name for p in collected.glob("*.ipynb")) == sorted(f"{n}.ipynb" for n in STEP4.notebooks())
    course(hub, "grade", str(Path(hub["env"]["GRADER_HOME"]) / "collected"), "--workers", "2")
    probe = subprocess.run([sys.executable, "-c", (
        "import json; from autograder.records.store import Store; from autograder.steps import find_step\n"
        f"results = Store.current().load(find_step({STEP4.name!r}))\n"
        "print(json.dumps({r.student: [sorted(r.notebooks), r.totals] for r in results}, default=str))")],
        cwd=ROOT, env={**os.environ, **hub["env"]}, capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    grades = json.loads(probe.stdout.strip().splitlines()[-1])
    assert list(grades) == [student], grades
    notebooks, totals = grades[student]
    assert notebooks == sorted(STEP4.notebooks()), notebooks
    assert totals, totals

    out = course(hub, "return-feedback")
    assert student in out, out
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(120_000)
    page = context.new_page()
    try:
        log_in(page, hub, student)
        open_assignments(page)
        submitted = page.locator("#submitted_assignments_list")
        submitted.get_by_role("button", name="Fetch Feedback").first.click()
        feedback = Path(f"/home/{student}") / STEP4.name / "feedback"
        expected = sorted(f"{n}.html" for n in STEP4.notebooks())
        deadline = time.monotonic() + 120       # the fetch copies the pages one by one: wait for all of them
        while sorted(p.name for p in feedback.glob("*/*.html")) != expected and time.monotonic() < deadline:
            time.sleep(0.5)
        pages = sorted(p.name for p in feedback.glob("*/*.html"))
        assert pages == expected, pages
        shot(page, "06-feedback-fetched")
        first = next(feedback.glob(f"*/{STEP4.notebooks()[0]}.html"))
        page.goto(f"{hub['url']}/user/{student}/files/{first.relative_to(Path('/home') / student)}")
        page.wait_for_load_state()
        seen = page.inner_text("body")
        shot(page, "07-feedback-page")
        assert f"Your scores for {STEP4.name}" in seen and "step total" in seen, seen[:2000]   # the totals, from the store
    finally:
        context.close()
    record_property("measured", f"hub: submit to feedback seen (collect, grade, return, fetch): "
                                f"{time.monotonic() - submitted_at:.1f} s")
    record_property("measured", f"hub: one student from login to their feedback: {time.monotonic() - started:.1f} s")
