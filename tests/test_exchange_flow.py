"""The course on one machine, end to end through the Makefile, in a copy of the course:
a student fetches the step (twice, without losing work), validates, submits; the instructor
collects, grades with the project's grader and returns the feedback; the student fetches it."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.example import filled

from conftest import GRADES_CSV, NOTEBOOK_NAMES, STEP, STEP4, copy_course

pytestmark = pytest.mark.slow
VENV = Path(sys.executable).parent.parent        # the environment running the tests


def make(course: Path, *args: str, ok: bool = True) -> str:
    env = {k: v for k, v in os.environ.items()
           if k not in ("GRADER_HOME", "NBGRADER_DB_URL", "NBGRADER_EXCHANGE", "PYTHONPATH", "MAKEFLAGS")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["make", "-s", *args, f"VENV={VENV}"], cwd=course, env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    if ok:
        assert proc.returncode == 0, f"make {' '.join(args)} failed:\n{out[-4000:]}"
    return out


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return copy_course(tmp_path_factory.mktemp("course"))


def test_round_trip_fetch_validate_submit_collect_grade_feedback(course):
    release = course / "release" / STEP
    mine = course / "notebooks" / STEP
    first, later = NOTEBOOK_NAMES[0], NOTEBOOK_NAMES[1:]

    # a notebook released later (the step's notebooks arrive over the week)
    held_back = None
    if later:
        held_back = (later[-1], (release / f"{later[-1]}.ipynb").read_bytes())
        (release / f"{later[-1]}.ipynb").unlink()

    out = make(course, "fetch")
    assert "copied" in out
    fetched = sorted(p.name for p in mine.glob("*.ipynb"))
    assert fetched == sorted(p.name for p in release.glob("*.ipynb"))
    for path in release.glob("*.ipynb"):
        assert (mine / path.name).read_bytes() == path.read_bytes()

    # the student answers the first notebook
    answered = json.dumps(filled(STEP4, first, lambda cid, i: True), indent=1).encode()
    (mine / f"{first}.ipynb").write_bytes(answered)

    if held_back:
        (release / f"{held_back[0]}.ipynb").write_bytes(held_back[1])
    out = make(course, "fetch")
    assert (mine / f"{first}.ipynb").read_bytes() == answered, "a second fetch overwrote the student's work"
    assert "never overwritten" in out
    if held_back:
        assert (mine / f"{held_back[0]}.ipynb").read_bytes() == held_back[1], "the notebook released later was not fetched"

    out = make(course, "validate", ok=not later)
    assert f"validate: {first}.ipynb: passes every test" in out
    assert f"validate: {STEP} is due " in out, "validate does not show the due date (course.toml)"
    for name in later:
        assert f"validate: {name}.ipynb:" in out and f"validate: {name}.ipynb: passes" not in out

    out = make(course, "submit", "STUDENT=ada")
    assert "handed in as ada" in out
    inbound = list((course / "exchange" / "dl-course" / "inbound").glob(f"ada+{STEP}+*"))
    assert len(inbound) == 1 and (inbound[0] / f"{first}.ipynb").read_bytes() == answered

    out = make(course, "collect")
    collected = course / "autograder" / "collected" / "ada" / STEP
    assert (collected / f"{first}.ipynb").read_bytes() == answered
    assert "make grade SUBMISSIONS=autograder/collected" in out

    out = make(course, "grade", "SUBMISSIONS=autograder/collected", "WORKERS=1")     # one student: one kernel template
    assert "could not be graded" not in out, out[-3000:]
    with open(course / "autograder" / GRADES_CSV, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["student"] == "ada" and r["kind"] == "auto"]
    assert {r["notebook"] for r in rows} == set(NOTEBOOK_NAMES)
    for r in rows:
        if r["notebook"] == first:
            assert float(r["score"]) == float(r["max_score"]), r
        elif float(r["max_score"]) > 0:
            assert float(r["score"]) == 0, r

    out = make(course, "return-feedback")
    assert "feedback for 1 students" in out and "ada" in out
    assert len(list((course / "exchange" / "dl-course" / "feedback").glob("*.html"))) == len(NOTEBOOK_NAMES)

    out = make(course, "my-feedback")
    pages = sorted((mine / "feedback").glob("*/*.html"))
    assert sorted(p.stem for p in pages) == sorted(NOTEBOOK_NAMES), out
    html = next(p for p in pages if p.stem == first).read_text()
    assert "Hidden tests:" in html
    for secret in ("BEGIN HIDDEN TESTS", "hidden(", "autograder.checks"):
        assert secret not in html

    # a new submission that nobody graded yet gets no feedback that belongs to the old one
    (mine / f"{first}.ipynb").write_bytes(answered + b"\n")
    make(course, "submit", "STUDENT=ada")
    make(course, "collect")
    out = make(course, "return-feedback")
    assert "ada: the newest submission is not graded yet" in out
