"""The course on a real JupyterHub (`make hub`), in Chromium, one browser with a profile per person:
three students log in with local accounts, fetch the step, validate a notebook and submit in the
Assignments tab, one of them after the due date; the instructor collects the submissions with the Collect
button of the hub's formgrader (into the grading home's submitted/), grades them there with this
project's grader (the grades read from the store), scores a written answer by hand in the formgrader
and returns the feedback; each student fetches it and sees the store's totals, with the hand-given
points and the lateness where they apply.

The first student hands the release in as fetched, the second and the third their own answers to its
first notebook alone (the example class's answers, all of them and the first three; the notebooks not
handed in are graded as missing, which keeps the grading short). Each validates that notebook, the
quickest; the second also answers and validates a notebook with sliders (SLIDER, not handed in): its
Validate answers with its verdict, not after the 30 s cell timeout nbgrader's own Execute waits out on a
slider cell (the students' servers run the short-polling Execute their nbgrader configuration names).
Each Validate's time from the press to the verdict is reported (not asserted). The third submits after
the step's due date, the others have an extension (tests/hub.py). The instructor's Collect runs as the
instructor's account: it reads the exchange's inbound folder, which `make hub` left readable by the
instructors' group, and writes submitted/ in the grading home shared with that group, the folders it
makes writable by the group. The grade table shows the late one's penalty. The instructor scores a
written answer of the second student on its formgrader page; the store's total rises by those points. Each student's
feedback page shows the store's total, the second's without that answer among those still to grade,
the third's lateness and penalty, the others' on time with their extension. Screenshots in
artifacts/screenshots/hub-*.png. The hub is the run's one hub (conftest.hub_session). Every user's server
leaves off what it would do for nothing (`make hub`'s configuration: jupyter_lsp, with no language server
installed; JupyterLab's build check at each page load, with no build possible): the configuration says so
and the hub's log, which holds the servers', shows neither.

The same hub also runs ngshare as its service (tests/hub.py add_ngshare: the lines `make hub` writes
with `[hub] exchange = "ngshare"`), and one more student's server has ngshare-exchange as its nbgrader
exchange, and so has one more instructor's: the course goes into ngshare, the student fetches, validates
and submits in the Assignments tab, that instructor presses Collect in the hub's formgrader (the course's
collect from ngshare, into a grading home of its own), the grader grades the submission there into the
store, return-feedback returns it through ngshare, and the student fetches the feedback and reads the
store's total.

Then a burst: twenty more students of the roster log in at once, without a browser (the login form,
their servers spawned side by side, the requests the Assignments tab and JupyterLab's save make, with
the pages' XSRF tokens), fetch, sign their first notebook and press Submit at the same moment; the
exchange holds one submission each and collect finds every notebook of every one, each signed by its
own student."""
import grp
import json
import os
import pwd
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.classroom.hub import GRADERS_GROUP, SHORT_POLLS
from autograder.course import COURSE_ID
from autograder.example import filled
from autograder.term import parse_timestamp
from conftest import ROOT, STEP4, uses
from hub import VALIDATE_PROBE, listening, python

from .formgrader import give_score, student_of, submission_ready
from .hubpages import log_in, open_assignments, shot

pytestmark = [pytest.mark.browser, pytest.mark.hub, pytest.mark.slow]

FIRST = STEP4.notebooks()[0]              # 01-on-paper: the quickest to validate; five written answers
SLIDER = "05-attention-as-smoothing"      # a notebook with sliders: its Validate timed beside FIRST's
WRITTEN = "coupling_expectation"          # the written answer the instructor scores by hand
HAND_SCORE = 1.5


def course(hub: dict, *args: str, timeout: int = 900) -> str:
    """A course command as the instructor runs it on the hub's machine (the hub's exchange, the test's
    own grading home)."""
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, env={**os.environ, **hub["env"]},
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def stored(hub: dict) -> dict:
    """student -> what the store holds of their grading: notebooks, totals, the term's record (read as the
    course's commands read it, without rfc3987_syntax: autograder/__main__.py)."""
    probe = subprocess.run([sys.executable, "-c", (
        "import sys; sys.modules.setdefault('rfc3987_syntax', None)\n"
        "import json; from autograder.records.store import Store; from autograder.steps import find_step\n"
        f"results = Store.current().load(find_step({STEP4.name!r}))\n"
        "print(json.dumps({r.student: {'notebooks': sorted(r.notebooks), 'totals': r.totals, 'term': r.term}"
        " for r in results}, default=str))")],
        cwd=ROOT, env={**os.environ, **hub["env"]}, capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    return json.loads(probe.stdout.strip().splitlines()[-1])


def short(account: str) -> str:
    return account.removeprefix("hubt-")


def new_page(chromium):
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(120_000)
    return context, context.new_page()


def logged_in(chromium, hub: dict, account: str, who: str, record_property, contexts: list, pages: dict):
    """A new page (its context kept in `contexts`, the page in `pages` under the account) logged in as
    `account`; the seconds to a usable JupyterLab recorded as `who`'s login. Returns the page."""
    context, page = new_page(chromium)
    contexts.append(context)
    pages[account] = page
    to_lab = log_in(page, hub, account)
    record_property("measured", f"hub: {who}'s login to a usable JupyterLab (server spawned): {to_lab:.1f} s")
    return page


def done_with(account: str, contexts: list, pages: dict) -> None:
    """The account's page closed once its part is proven (its context out of `contexts`): an open
    JupyterLab keeps Chromium, the proxy and the user's server busy with its polls while the rest of
    the test runs."""
    page = pages.pop(account)
    contexts.remove(page.context)
    page.context.close()


def validate(page, fetched, notebook: str) -> tuple[str, float]:
    """Validate pressed on a notebook of the fetched step in the Assignments tab: the dialog's text and the
    seconds from the press to the verdict."""
    row = fetched.locator(".nested_list_item").filter(has_text=notebook).first
    started = time.monotonic()
    row.get_by_role("button", name="Validate").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=300_000)
    return dialog.inner_text(), time.monotonic() - started


def hand_in(page, hub: dict, student: str, answers, passes: bool,
            slider: bool = False) -> tuple[list[str], dict[str, float]]:
    """In the student's JupyterLab: the Assignments tab, Fetch; `answers` (None: the release as fetched)
    the answer cells of the first notebook the student filled in, as the example class fills them;
    Validate on that notebook, which `passes` or not; with `slider`, SLIDER answered too and validated
    (it passes); Submit: the whole step as fetched, or the one notebook the student answered (the others
    deleted). Returns the notebooks handed in and the seconds each Validate took, by notebook."""
    name = short(student)
    open_assignments(page)
    released = page.locator("#released_assignments_list")
    released.get_by_text(STEP4.name).wait_for()
    released.get_by_role("button", name="Fetch").click()
    fetched = page.locator("#fetched_assignments_list")
    fetched.get_by_text(STEP4.name).first.wait_for()
    home = Path(f"/home/{student}") / STEP4.name
    assert sorted(p.name for p in home.glob("*.ipynb")) == sorted(f"{n}.ipynb" for n in STEP4.notebooks())
    shot(page, f"{name}-01-fetched")
    for notebook in ([FIRST] if answers is not None else []) + ([SLIDER] if slider else []):
        mine = home / f"{notebook}.ipynb"                       # the student's work in the notebook
        mine.write_text(json.dumps(filled(STEP4, notebook, answers), indent=1))
        account = pwd.getpwnam(student)
        os.chown(mine, account.pw_uid, account.pw_gid)

    fetched.get_by_text(STEP4.name).first.click()               # its notebooks, each with Validate
    text, seconds = validate(page, fetched, FIRST)
    took = {FIRST: seconds}
    shot(page, f"{name}-02-validated")
    assert "Validation Results" in text, text[:2000]
    if passes:
        assert "Success! Your notebook passes all the tests." in text, text[:2000]
    else:                                                       # an answer left as released
        assert "The following cell failed" in text, text[:2000]
    page.locator(".jp-Dialog").get_by_role("button", name="Ok").click()
    if slider:                                                  # its verdict, not a cell's timeout
        page.locator(".jp-Dialog").wait_for(state="detached")
        text, took[SLIDER] = validate(page, fetched, SLIDER)
        shot(page, f"{name}-02-validated-slider")
        assert "Success! Your notebook passes all the tests." in text, text[:2000]
        page.locator(".jp-Dialog").get_by_role("button", name="Ok").click()

    if answers is not None:                                     # the answered notebook alone
        for other in STEP4.notebooks()[1:]:
            (home / f"{other}.ipynb").unlink()
    fetched.get_by_role("button", name="Submit").first.click()
    page.locator("#submitted_assignments_list").get_by_text(STEP4.name).first.wait_for()
    shot(page, f"{name}-03-submitted")
    return (sorted(STEP4.notebooks()) if answers is None else [FIRST]), took


def collect_in_formgrader(page, hub: dict, teacher: str, students: list[str] | None = None) -> tuple[str, float]:
    """The instructor's formgrader on the hub, Manage Assignments: the step's row, its Collect button (the
    cloud icon) pressed, as an instructor collects; waits for nbgrader's dialog saying it succeeded and for
    the row's count of submissions to show every student (`students`, or the hub's three). Returns the
    dialog's text (the collect's log) and the seconds from the press to the dialog."""
    page.goto(f"{hub['url']}/user/{teacher}/formgrader/manage_assignments")
    row = page.locator("#main-table tr").filter(has=page.locator("td.name", has_text=STEP4.name))
    button = row.locator("td.collect a")
    button.wait_for()
    started = time.monotonic()
    with page.expect_response(lambda r: r.url.endswith(f"/formgrader/api/assignment/{STEP4.name}/collect")) as sent:
        button.click()
    assert sent.value.ok, (sent.value.status, sent.value.text()[:3000])
    done = page.locator("#success-modal, #error-modal")
    done.wait_for()
    seconds = time.monotonic() - started
    text = done.inner_text()
    assert done.get_attribute("id") == "success-modal", text[:3000]
    page.wait_for_function(
        "([step, n]) => [...document.querySelectorAll('#main-table tr')].some(r =>"
        " r.querySelector('td.name')?.textContent.trim() === step"
        " && r.querySelector('td.num-submissions')?.textContent.trim() === String(n))",
        arg=[STEP4.name, len(students or hub["students"])], polling=200)
    shot(page, f"{short(teacher)}-02-collected")
    return text, seconds


def grade_by_hand(page, hub: dict, teacher: str, student: str) -> None:
    """The instructor's formgrader on the hub: the first notebook's submissions, then the student's
    submission page, where the written answer WRITTEN gets HAND_SCORE."""
    base = f"{hub['url']}/user/{teacher}/formgrader"
    page.goto(f"{base}/gradebook/{STEP4.name}/{FIRST}")
    page.wait_for_function("document.querySelectorAll('td a.name-shown').length >= 3")
    names = page.locator("td a.name-shown").all_text_contents()         # under "Submission #<n>"
    assert len(names) == 3 and all(any(sid in n for n in names) for sid in hub["students"]), names
    shot(page, f"{short(teacher)}-03-formgrader-submissions")
    answer = page.request.get(f"{base}/api/submitted_notebooks/{STEP4.name}/{FIRST}")
    assert answer.ok, answer.status
    ids = {row["id"]: row["student"] for row in answer.json()}
    assert sorted(ids.values()) == sorted(hub["students"]), ids
    page.goto(f"{base}/submissions/{next(i for i, s in ids.items() if s == student)}/")
    submission_ready(page)
    assert student_of(page, ids) == student
    give_score(page, WRITTEN, HAND_SCORE)
    page.locator(f"#{WRITTEN}").scroll_into_view_if_needed()
    shot(page, f"{short(teacher)}-04-written-answer-scored")


def read_feedback(page, hub: dict, student: str) -> tuple[str, dict]:
    """Fetch Feedback in the student's Assignments tab (still open since the submission): the pages the
    grader wrote for them; then their first notebook's page: its summary as shown and as the page carries it."""
    submitted = page.locator("#submitted_assignments_list")
    assert not submitted.get_by_text("view feedback").count()
    submitted.get_by_role("button", name="Fetch Feedback").first.click()
    submitted.get_by_text("view feedback").first.wait_for()      # the tab lists it once the fetch is done
    expected = sorted(p.name for p in (Path(hub["env"]["GRADER_HOME"]) / "feedback" / student / STEP4.name).glob(
        "*.html"))
    assert f"{FIRST}.html" in expected, expected
    feedback = Path(f"/home/{student}") / STEP4.name / "feedback"
    pages = sorted(p.name for p in feedback.glob("*/*.html"))
    assert pages == expected, pages
    shot(page, f"{short(student)}-04-feedback-fetched")
    first = next(feedback.glob(f"*/{FIRST}.html"))
    page.goto(f"{hub['url']}/user/{student}/files/{first.relative_to(Path('/home') / student)}")
    page.wait_for_load_state()
    seen = page.locator(".course-summary").inner_text()
    summary = json.loads(page.locator("#course-feedback-summary").text_content())
    shot(page, f"{short(student)}-05-feedback-page")
    return seen, summary


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
    assert "load_subconfig" not in (students / "nbgrader_config.py").read_text()
    page = json.loads((students / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"]["@jupyter/nbgrader:formgrader"] is True
    for role in ("students", "instructors"):            # no build offered, nor checked at each page load
        page = json.loads((students.parent / role / "labconfig" / "page_config.json").read_text())
        assert page["buildAvailable"] is False and page["buildCheck"] is False, (role, page)
        server = json.loads((students.parent / role / "jupyter_server_config.json").read_text())
        assert server["ServerApp"]["jpserver_extensions"]["jupyter_lsp"] is False, (role, server)
    # a student's Validate runs the short-polling Execute from the copy beside the configuration (nothing but
    # the polling), read as the student's server reads it, as the student: nothing of the grader is
    # imported, nor on the server's path
    assert (students / "course_short_polls.py").read_text() == SHORT_POLLS.read_text()
    student = hub["students"][0]
    probe = subprocess.run(["runuser", "-u", student, "--", "env", "-i", f"HOME=/home/{student}",
                            f"JUPYTER_CONFIG_PATH={students}", "PATH=/usr/bin:/bin", python(), "-c", VALIDATE_PROBE],
                           cwd=f"/home/{student}", capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr[-3000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen["preprocessors"][-1] == "course_short_polls.Execute" and seen["short_polls"] == [True], seen
    assert seen["grader_imported"] == [] and seen["grader_found"] is False, seen
    instructors = (Path(hub["folder"]) / "hub" / "jupyter" / "instructors" / "nbgrader_config.py").read_text()
    assert f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})" in instructors, instructors
    assert repr(hub["env"]["GRADER_HOME"]) in instructors and repr(hub["env"]["NBGRADER_DB_URL"]) in instructors
    for teacher in hub["instructors"]:                  # where the formgrader finds the course
        assert (Path(f"/home/{teacher}") / "dl-course").resolve() == ROOT
    grading = Path(hub["env"]["GRADER_HOME"]).stat()    # shared with the instructors' group, setgid
    assert grading.st_gid == grp.getgrnam(GRADERS_GROUP).gr_gid and stat.S_IMODE(grading.st_mode) == 0o2775, \
        (grading, oct(grading.st_mode))
    assert set(grp.getgrnam(GRADERS_GROUP).gr_mem) == set(hub["instructors"] + hub["ngshare_instructors"])
    released = Path(hub["env"]["NBGRADER_EXCHANGE"]) / "dl-course" / "outbound" / STEP4.name
    assert sorted(p.name for p in released.glob("*.ipynb")) == sorted(f"{n}.ipynb" for n in STEP4.notebooks())
    # the submissions' folder: students write into it, the instructors' group lists it (their formgrader's
    # Collect), nobody else does
    inbound = (Path(hub["env"]["NBGRADER_EXCHANGE"]) / "dl-course" / "inbound").stat()
    assert inbound.st_gid == grp.getgrnam(GRADERS_GROUP).gr_gid and stat.S_IMODE(inbound.st_mode) == 0o2773, \
        (inbound, oct(inbound.st_mode))
    assert "share_with_home_group()" in instructors


def test_three_students_hand_in_one_late_the_instructor_grades_a_written_answer_by_hand_each_sees_the_feedback(
        hub_session, chromium, record_property):
    hub = hub_session
    blank, answered, late = hub["students"]
    assert late == hub["late"]
    teacher = hub["instructors"][0]
    # student -> (the answers typed into the first notebook, whether its validation passes[, SLIDER validated too])
    work = {blank: (None, False),
            answered: (lambda cid, i: True, True, True), late: (lambda cid, i: i < 3, False)}
    uses("browser")
    started = time.monotonic()
    contexts, pages, handed_in = [], {}, {}
    try:
        for student in hub["students"]:                 # one after the other: the late one submits last
            page = logged_in(chromium, hub, student, short(student), record_property, contexts, pages)
            handed_in[student], took = hand_in(page, hub, student, *work[student])
            for notebook, seconds in took.items():      # a figure, not asserted: the machine is shared
                record_property("measured", f"hub: Validate in the Assignments tab, {short(student)}'s {notebook}: "
                                            f"{seconds:.1f} s from the press to the verdict")
        submitted_at = time.monotonic()

        # the instructor collects in the hub's formgrader (Manage Assignments, Collect): it runs as the
        # instructor's account, reads the exchange's inbound (`make hub` gave it to the instructors' group)
        # and writes into the grading home's submitted/, where the grader grades them in place
        page = logged_in(chromium, hub, teacher, "the instructor", record_property, contexts, pages)
        shot(page, f"{short(teacher)}-01-lab")
        log, seconds = collect_in_formgrader(page, hub, teacher)
        record_property("measured", f"hub: the formgrader's Collect, pressed to its dialog: {seconds:.1f} s")
        assert all(f"Collecting submission: {s} {STEP4.name}" in log for s in hub["students"]), log[-3000:]
        graders = grp.getgrnam(GRADERS_GROUP)
        home = Path(hub["env"]["GRADER_HOME"])
        teacher_uid = pwd.getpwnam(teacher).pw_uid
        for student in hub["students"]:
            collected = home / "submitted" / student / STEP4.name
            assert sorted(p.stem for p in collected.glob("*.ipynb")) == handed_in[student]
            assert (collected / "timestamp.txt").is_file() and (collected / "submission_secret.txt").is_file()
            for folder in (home / "submitted", collected.parent):   # made by the instructor's formgrader:
                info = folder.stat()                                 # the instructors' group's to write
                assert (info.st_uid, info.st_gid) == (teacher_uid, graders.gr_gid), (folder, info)
                assert info.st_mode & stat.S_IWGRP and info.st_mode & stat.S_ISGID, (folder, oct(info.st_mode))
            # the submission's own folder: in the exchange writable by all (nbgrader's submit), here not
            assert collected.stat().st_mode & stat.S_IWGRP and not collected.stat().st_mode & stat.S_IWOTH, \
                oct(collected.stat().st_mode)
        grading = time.monotonic()
        table = course(hub, "grade", str(home / "submitted"), "--workers", "1")  # one warm-kernel template, not two
        record_property("measured", f"hub: grading the three students: {time.monotonic() - grading:.1f} s")
        graded = stored(hub)
        assert sorted(graded) == sorted(hub["students"]), graded
        for student, got in graded.items():                 # a notebook not handed in is graded as missing
            assert got["notebooks"] == sorted(STEP4.notebooks()), (student, got["notebooks"])
        totals = {s: got["totals"]["step"] for s, got in graded.items()}
        assert totals[blank]["total"] < totals[late]["total"] < totals[answered]["total"], totals
        assert f"{FIRST}/{WRITTEN}" in totals[answered]["to_grade"], totals[answered]
        # the late one: past the due date and its grace, a penalty; the others on time, with their extension
        term = {s: got["term"] for s, got in graded.items()}
        assert term[late]["seconds_late"] > term[late]["grace_seconds"] and totals[late]["late_penalty"] > 0, \
            (term[late], totals[late])
        for student in (blank, answered):
            assert term[student]["seconds_late"] == 0 and totals[student]["late_penalty"] == 0, term[student]
        rows = {line.split()[0]: line for line in table.splitlines() if line.split() and line.split()[0] in graded}
        assert f"{-totals[late]['late_penalty']:.1f}" in rows[late].split(), (rows[late], table[-3000:])
        assert not re.search(r"(^|\s)-\d", rows[answered]), rows[answered]        # no penalty in its row

        # the instructor grades a written answer of the second student in the hub's formgrader, which
        # runs as the instructor's account: `make hub` shared the grading home with the instructors'
        # group, and the gradebook `make hub` made in it as root is writable by that group
        gradebook = home / "gradebook.db"
        assert gradebook.stat().st_uid == 0 and gradebook.stat().st_gid == graders.gr_gid, gradebook.stat()
        assert gradebook.stat().st_mode & stat.S_IWGRP and teacher in graders.gr_mem, (oct(gradebook.stat().st_mode),
                                                                                      graders)
        by_hand = time.monotonic()
        grade_by_hand(page, hub, teacher, answered)
        record_property("measured", f"hub: a written answer scored in the formgrader: {time.monotonic() - by_hand:.1f} s")
        done_with(teacher, contexts, pages)
        after = stored(hub)
        for student, got in after.items():
            step = got["totals"]["step"]
            if student == answered:
                assert step["total"] == pytest.approx(totals[student]["total"] + HAND_SCORE), (step, totals[student])
                assert f"{FIRST}/{WRITTEN}" not in step["to_grade"], step
                assert len(step["to_grade"]) == len(totals[student]["to_grade"]) - 1, step
            else:
                assert step["total"] == totals[student]["total"], (student, step, totals[student])

        out = course(hub, "return-feedback")
        assert "feedback for 3 students" in out, out
        for student in hub["students"]:
            seen, summary = read_feedback(pages[student], hub, student)
            step = after[student]["totals"]["step"]
            assert summary["student"] == student and summary["step_totals"]["total"] == pytest.approx(step["total"])
            shown = re.search(r"step total\s+([\d.]+) /", seen)
            assert shown and float(shown[1]) == round(step["total"], 1), seen
            assert f"Your scores for {STEP4.name}" in seen, seen
            when = next(line for line in seen.splitlines() if line.startswith("submitted "))
            if student == late:
                assert re.search(r": \d+ hours?( \d+ minutes?)? late$", when) and "extension" not in when, when
                assert f"late penalty -{step['late_penalty']:g})" in seen, seen
            else:
                assert when.endswith(": on time") and "with an extension of" in when, when
                assert "no late penalty" in seen, seen
            if student == answered:
                written = next(line for line in seen.splitlines() if line.startswith(FIRST))
                assert f"{len(step['to_grade'])} written answers still to be graded" in written, written
                assert WRITTEN not in summary["notebooks"][FIRST]["to_grade"], summary["notebooks"][FIRST]
            done_with(student, contexts, pages)
        # the users' servers (their logs are the hub's) left off what they would do for nothing
        # (hub.LEAN_SERVER, LEAN_PAGE): no language-server extension, no build check from JupyterLab's page
        log = (Path(hub["folder"]) / "hub.log").read_text(errors="replace")
        assert "nbgrader.server_extensions.assignment_list | extension was successfully loaded" in log
        assert "jupyter_lsp | extension was successfully" not in log and "/lab/api/build" not in log
    except Exception:
        for who, page in pages.items():             # what each person saw when it failed
            try:
                shot(page, f"FAILED-{short(who)}")
            except Exception:                       # a page already gone: the failure itself matters
                pass
        raise
    finally:
        for context in contexts:
            context.close()
    record_property("measured", f"hub: the last submission to every student's feedback seen (collect, grade, "
                                f"a written answer by hand, return, fetch): {time.monotonic() - submitted_at:.1f} s")
    record_property("measured", f"hub: three students and an instructor from the first login to the last "
                                f"feedback: {time.monotonic() - started:.1f} s")


# ---- the same hub with ngshare as the exchange --------------------------------------------------

def cpu_seconds(roots: list[int]) -> dict[int, float]:
    """pid -> CPU seconds (its own and its reaped children's) of every process under `roots` (roots included)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(entry.name)] = int(fields[1])
            cpu[int(entry.name)] = sum(int(x) for x in fields[11:15]) / ticks
    def under(pid: int) -> bool:
        while pid > 1:
            if pid in roots:
                return True
            pid = parent.get(pid, 0)
        return False
    return {pid: seconds for pid, seconds in cpu.items() if under(pid)}


def test_a_student_hands_in_through_ngshare_on_the_same_hub_the_instructor_grades_and_returns_feedback(
        hub_session, chromium, record_property):
    """The run's hub also runs ngshare as its service, and its student and instructor on it (tests/hub.py
    add_ngshare) have servers whose nbgrader exchange is ngshare-exchange: the course goes into ngshare
    (`hub --publish`, with NBGRADER_EXCHANGE=ngshare, as `make hub` does for a hub on ngshare), the student
    fetches, validates and submits in the Assignments tab, the instructor presses Collect in the hub's
    formgrader (the course's collect from ngshare, as the instructor's account, into the grading home's
    submitted/ of its own), `grade` grades it there into the store, `return-feedback` returns it through
    ngshare, and the student fetches the feedback in the Assignments tab and reads the store's total on
    its page. Handed in again unchanged, `collect` (the course's command, as the hub's grader service)
    takes the newest, each notebook keeping the first one's time, and return-feedback does not return
    the old feedback as about it. Nothing of it goes through the folder exchange."""
    hub = hub_session
    student = hub["ngshare"][0]
    teacher = hub["ngshare_instructors"][0]
    home = Path(hub["ngshare_home"])                        # a grading home of its own (tests/hub.py)
    env = {**hub["env"], "NBGRADER_EXCHANGE": "ngshare", "GRADER_HOME": str(home),
           "NBGRADER_DB_URL": f"sqlite:///{home / 'gradebook.db'}"}
    ngshare = {**hub, "env": env}
    mine = Path(hub["folder"]) / "hub" / "jupyter" / "ngshare-students" / "nbgrader_config.py"
    assert "ngshare_exchange.ExchangeSubmit" in mine.read_text() and "Exchange.root" not in mine.read_text()
    theirs = (Path(hub["folder"]) / "hub" / "jupyter" / "ngshare-instructors" / "nbgrader_config.py").read_text()
    assert theirs.rstrip().endswith("c.ExchangeFactory.collect = 'autograder.classroom.collecting.NgshareCollect'")
    assert repr(str(home)) in theirs, theirs
    assert "'name': 'ngshare'" in (Path(hub["folder"]) / "hub" / "jupyterhub_config.py").read_text()
    roots = [os.getpid(), hub["pid"]]
    cpu_before = cpu_seconds(roots)
    started = time.monotonic()
    out = course(ngshare, "hub", "--publish")
    assert "to ngshare" in out, out
    record_property("measured", f"hub on ngshare: the course and the step into ngshare: {time.monotonic() - started:.1f} s")
    uses("browser")
    contexts, pages = [], {}
    try:
        page = logged_in(chromium, hub, student, f"{short(student)} on ngshare", record_property, contexts, pages)
        handed_in, _ = hand_in(page, hub, student, lambda cid, i: True, True)
        submitted_at = time.monotonic()

        # the instructor presses Collect in the hub's formgrader: the course's collect from ngshare, as the
        # instructor's account, into the grading home's submitted/, where the grader grades it in place
        desk = logged_in(chromium, hub, teacher, "the instructor on ngshare", record_property, contexts, pages)
        log, seconds = collect_in_formgrader(desk, hub, teacher, [student])
        record_property("measured", f"hub on ngshare: the formgrader's Collect, pressed to its dialog: {seconds:.1f} s")
        assert f"Collecting submission: {student} {STEP4.name}" in log, log[-3000:]
        collected = home / "submitted" / student / STEP4.name
        assert sorted(p.stem for p in collected.glob("*.ipynb")) == handed_in
        assert (collected / "timestamp.txt").is_file()
        graders, teacher_uid = grp.getgrnam(GRADERS_GROUP), pwd.getpwnam(teacher).pw_uid
        for folder in (home / "submitted", collected.parent):    # the instructors' group's to write
            info = folder.stat()
            assert (info.st_uid, info.st_gid) == (teacher_uid, graders.gr_gid), (folder, info)
            assert info.st_mode & stat.S_IWGRP and info.st_mode & stat.S_ISGID, (folder, oct(info.st_mode))
        for path in [collected, *collected.iterdir()]:              # nothing writable by every account
            assert not path.stat().st_mode & stat.S_IWOTH, (path, oct(path.stat().st_mode))
        done_with(teacher, contexts, pages)

        course(ngshare, "grade", str(home / "submitted"), "--workers", "2")
        graded = stored(ngshare)
        assert list(graded) == [student] and graded[student]["notebooks"] == sorted(STEP4.notebooks()), graded
        step = graded[student]["totals"]["step"]
        assert step["total"] > 0 and step["late_penalty"] == 0, step
        out = course(ngshare, "return-feedback")
        assert "feedback for 1 students" in out and student in out, out
        seen, summary = read_feedback(page, ngshare, student)
        assert summary["student"] == student and summary["step_totals"]["total"] == pytest.approx(step["total"])
        shown = re.search(r"step total\s+([\d.]+) /", seen)
        assert shown and float(shown[1]) == round(step["total"], 1), seen
        feedback_seen = time.monotonic()
        # handed in again, nothing changed (the Assignments tab's request): the course's collect takes the
        # newest submission, and each notebook keeps the time of the first, read from the student's
        # submissions in ngshare; return-feedback does not return the first one's feedback as about it
        first = (collected / "timestamp.txt").read_text()
        xsrf = max((c for c in page.context.cookies() if c["name"] == "_xsrf" and f"/user/{student}".startswith(
            c["path"].rstrip("/"))), key=lambda c: len(c["path"]))["value"]
        again = page.request.post(f"{hub['url']}/user/{student}/assignments/submit", headers={"X-XSRFToken": xsrf},
                                  form={"course_id": COURSE_ID, "assignment_id": STEP4.name})
        assert again.ok and again.json()["success"], again.text()[:2000]
        done_with(student, contexts, pages)
        out = course(ngshare, "collect")
        assert "1 new submissions" in out, out
        newest = home / "collected" / student / STEP4.name
        assert (newest / "timestamp.txt").read_text() != first
        times = json.loads((newest / "notebook_times.json").read_text())
        assert sorted(times) == [f"{n}.ipynb" for n in handed_in], times
        assert {parse_timestamp(t) for t in times.values()} == {parse_timestamp(first)}, (times, first)
        out = course(ngshare, "return-feedback")
        assert f"{student}: the feedback is not about the newest submission" in out and "feedback for" not in out, out
    except Exception:
        for who, shown_page in pages.items():
            try:
                shot(shown_page, f"FAILED-{short(who)}")
            except Exception:
                pass
        raise
    finally:
        for context in contexts:
            context.close()
    inbound = Path(hub["env"]["NBGRADER_EXCHANGE"]) / COURSE_ID / "inbound"      # the folder exchange: not used
    assert not any(p.name.startswith(f"{student}+") for p in inbound.iterdir())
    cpu_after = cpu_seconds(roots)
    cpu = sum(seconds - cpu_before.get(pid, 0.0) for pid, seconds in cpu_after.items())
    record_property("measured", f"hub on ngshare: the submission to the feedback seen (the formgrader's Collect, "
                                f"grade, return, fetch): {feedback_seen - submitted_at:.1f} s")
    record_property("measured", f"hub on ngshare: the whole test {time.monotonic() - started:.1f} s, {cpu:.0f} s of "
                                f"CPU (this test's processes, the hub's and the users' servers)")


# ---- a burst: every student of a class hands in at the same moment ------------------------------

class Student:
    """A student's browser session on the hub without a browser: the login form, the server the hub
    spawns, then the calls the Assignments tab makes to nbgrader's server extension and those JupyterLab
    makes to save a notebook (the same requests, each with the page's XSRF token)."""

    def __init__(self, hub: dict, account: str):
        import requests
        self.hub, self.account, self.http = hub, account, requests.Session()
        self.base = f"{hub['url']}/user/{account}"

    def _xsrf(self, url: str) -> str:
        """The XSRF token the page at `url` was given (the cookie with the longest path over it)."""
        found = [c for c in self.http.cookies if c.name == "_xsrf"
                 and url.startswith(f"{self.hub['url']}{c.path.rstrip('/')}")]
        assert found, f"{self.account}: no XSRF cookie for {url}"
        return max(found, key=lambda c: len(c.path)).value

    def log_in(self, timeout: float = 300) -> float:
        """The hub's login form; then, while the hub spawns the server, its progress followed as the hub's
        spawn-pending page follows it in a browser (one event stream, not a request every moment), until
        the server is ready; then its JupyterLab page, through the hub's OAuth. Returns the seconds."""
        hub = self.hub["url"]
        started = time.monotonic()
        self.http.get(f"{hub}/hub/login", timeout=60).raise_for_status()
        landed = self.http.post(f"{hub}/hub/login", timeout=120, data={
            "username": self.account, "password": f"dev-{self.account}", "_xsrf": self._xsrf(f"{hub}/hub/login")})
        landed.raise_for_status()
        if not landed.url.startswith(f"{self.base}/lab"):   # the spawn-pending page: the spawn's progress
            last = {}
            with self.http.get(f"{hub}/hub/api/users/{self.account}/server/progress", stream=True, timeout=timeout,
                               params={"_xsrf": self._xsrf(f"{hub}/hub/api")}) as events:
                events.raise_for_status()
                for line in events.iter_lines(decode_unicode=True):
                    if line.startswith("data:"):
                        last = json.loads(line.removeprefix("data:"))
                        if last.get("ready") or last.get("failed"):
                            break
            assert last.get("ready"), f"{self.account}: the hub's spawn did not get ready ({landed.url}): {last}"
            landed = self.http.get(f"{self.base}/lab", timeout=120)
        assert landed.status_code == 200 and landed.url.startswith(f"{self.base}/lab") \
            and "jupyter-config-data" in landed.text, (self.account, landed.status_code, landed.url)
        return time.monotonic() - started

    def post(self, path: str, **data) -> dict:
        answer = self.http.post(f"{self.base}/{path}", data=data, timeout=300,
                                headers={"X-XSRFToken": self._xsrf(f"{self.base}/lab")})
        answer.raise_for_status()
        return answer.json()

    def fetch(self) -> None:
        listed = self.post("assignments/fetch", course_id=COURSE_ID, assignment_id=STEP4.name)
        assert listed["success"] and any(a["assignment_id"] == STEP4.name and a["status"] == "fetched"
                                         for a in listed["value"]), listed

    def sign(self) -> str:
        """The student's own line in the first notebook, saved through the contents API as JupyterLab
        saves it: each submission can be told apart from every other."""
        path = f"api/contents/{STEP4.name}/{FIRST}.ipynb"
        nb = self.http.get(f"{self.base}/{path}", timeout=60).json()["content"]
        mark = f"handed in by {self.account}"
        nb["cells"].append({"cell_type": "markdown", "metadata": {}, "source": mark, "id": "burst-mark"})
        self.http.put(f"{self.base}/{path}", json={"type": "notebook", "format": "json", "content": nb}, timeout=60,
                      headers={"X-XSRFToken": self._xsrf(f"{self.base}/lab")}).raise_for_status()
        return mark

    def submit(self) -> dict:
        return self.post("assignments/submit", course_id=COURSE_ID, assignment_id=STEP4.name)

    def stop(self) -> None:
        """The student's server stopped through the hub's API, as the hub's control panel does."""
        self.http.delete(f"{self.hub['url']}/hub/api/users/{self.account}/server", timeout=120,
                         headers={"X-XSRFToken": self._xsrf(f"{self.hub['url']}/hub/api")})



def test_a_class_of_twenty_hands_in_at_the_same_moment_and_nothing_is_lost(hub_session, record_property):
    """Twenty more students log in at once (their servers spawned side by side), fetch the step and sign
    its first notebook; then all twenty press Submit at the same moment. The instructor's collect finds
    every one of them with every notebook of the step, each first notebook with its own student's line,
    and the exchange holds exactly one submission each."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier, BrokenBarrierError

    hub = hub_session
    burst = hub["burst"]
    assert len(burst) == 20 and not set(burst) & set(hub["students"])
    students = [Student(hub, account) for account in burst]
    gate = Barrier(len(students))

    def one(student: Student) -> dict:
        try:
            to_lab = student.log_in()
            student.fetch()
            mark = student.sign()
        except BaseException:
            gate.abort()                            # the others stop waiting: this failure is reported
            raise
        gate.wait(timeout=600)                      # every one of them ready: Submit at the same moment
        pressed = time.monotonic()
        answer = student.submit()
        return {"to_lab": to_lab, "mark": mark, "pressed": pressed, "done": time.monotonic(), "answer": answer}

    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=len(students)) as pool:
            futures = [pool.submit(one, s) for s in students]
        failed = [(account, f.exception()) for account, f in zip(burst, futures) if f.exception() is not None]
        # the student whose failure broke the gate, not the others' BrokenBarrierError
        cause = next(((a, e) for a, e in failed if not isinstance(e, BrokenBarrierError)), failed[0] if failed else None)
        if cause is not None:
            raise AssertionError(f"{cause[0]}: {type(cause[1]).__name__}: {cause[1]} "
                                 f"({len(failed)} of {len(students)} students stopped)") from cause[1]
        runs = {account: f.result() for account, f in zip(burst, futures)}
    finally:
        with ThreadPoolExecutor(max_workers=len(students)) as pool:
            list(pool.map(lambda s: s.stop(), students))
    for account, run in runs.items():
        listed = run["answer"]                      # the assignment list after the submit, or why it failed
        assert listed["success"] and any(a["assignment_id"] == STEP4.name and a["status"] == "submitted"
                                         for a in listed["value"]), (account, listed)
    inbound = Path(hub["env"]["NBGRADER_EXCHANGE"]) / COURSE_ID / "inbound"
    for account in burst:
        mine = [p for p in inbound.iterdir() if p.name.startswith(f"{account}+{STEP4.name}+")]
        assert len(mine) == 1, (account, [p.name for p in mine])
    out = course(hub, "collect")
    for account, run in runs.items():
        assert account in out, out[-3000:]
        collected = Path(hub["env"]["GRADER_HOME"]) / "collected" / account / STEP4.name
        assert sorted(p.stem for p in collected.glob("*.ipynb")) == sorted(STEP4.notebooks()), account
        first = json.loads((collected / f"{FIRST}.ipynb").read_text(encoding="utf-8"))
        marks = ["".join(c["source"]) for c in first["cells"] if c.get("id") == "burst-mark"]
        assert marks == [run["mark"]], (account, marks)
    logins = sorted(r["to_lab"] for r in runs.values())
    submits = max(r["done"] for r in runs.values()) - min(r["pressed"] for r in runs.values())
    record_property("measured", f"hub: a burst of {len(burst)} students logging in at once: their servers usable "
                                f"in {logins[len(logins) // 2]:.1f} s (median), {logins[-1]:.1f} s (slowest); all "
                                f"{len(burst)} submissions done {submits:.1f} s after Submit was pressed; "
                                f"collected: {len(burst)} of {len(burst)}, nothing lost; "
                                f"the whole burst {time.monotonic() - started:.1f} s")
