"""One engine, two steps: a small demonstration step (tests/fixtures/step-00-demo: one notebook, two
hidden tests, its own check package, no torch) is released, solved and graded from one course
folder next to Step 4, with the same commands and nothing else added; its grades, feedback and
reports are kept apart, and Step 4's grades are left exactly as they were (no regrade).

The course folder is a copy of source/ and data/ ($COURSE_ROOT); the engine is this checkout."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.example import answer_text
from conftest import ROOT, STEP, STEP4, bwrap_or_skip

pytestmark = pytest.mark.slow

DEMO = "step-00-demo"
FIXTURE = ROOT / "tests" / "fixtures" / DEMO
FIRST = STEP4.notebooks()[0]


def autograder(course: Path, home: Path, *args: str) -> str:
    env = {**os.environ, "COURSE_ROOT": str(course), "GRADER_HOME": str(home)}
    env.pop("NBGRADER_DB_URL", None)
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"autograder {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def answered(release: Path, source: Path, replace: dict[str, str] | None = None) -> str:
    """The released notebook with the instructor's answers, except `replace` (grade_id -> code)."""
    nb = json.loads(release.read_text(encoding="utf-8"))
    answers = {c["metadata"]["nbgrader"]["grade_id"]: answer_text(c)
               for c in json.loads(source.read_text(encoding="utf-8"))["cells"]
               if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    answers.update(replace or {})
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            cell["source"] = answers[gid]
    return json.dumps(nb)


def snapshot(home: Path) -> dict:
    """Step 4's grades: the csv report and every result file as bytes, the json report's records."""
    files = [home / "grades" / f"{STEP}.csv", *sorted((home / "work" / "results" / STEP).rglob("*.json"))]
    out = {str(p.relative_to(home)): p.read_bytes() for p in files}
    out["grades json records"] = json.dumps(json.loads((home / "grades" / f"{STEP}.json").read_text())["grades"])
    return out


def test_a_second_step_is_graded_beside_step_4_and_changes_nothing_of_it(tmp_path):
    bwrap_or_skip()
    course, home = tmp_path / "course", tmp_path / "home"
    shutil.copytree(ROOT / "source", course / "source", ignore=shutil.ignore_patterns("__pycache__"))
    (course / "data").mkdir()
    for data in (ROOT / "data").glob("*.txt"):
        shutil.copy(data, course / "data" / data.name)

    # Step 4 alone: one student hands in the first notebook
    autograder(course, home, "release", "--step", STEP)
    step4_class = tmp_path / "step4-class" / "ada"
    step4_class.mkdir(parents=True)
    (step4_class / f"{FIRST}.ipynb").write_text(
        answered(course / "release" / STEP / f"{FIRST}.ipynb", course / "source" / STEP / f"{FIRST}.ipynb"))
    autograder(course, home, "grade", str(step4_class.parent), "--step", STEP)
    before = snapshot(home)
    assert any(r["score"] not in ("", "0.0") for r in rows(home / "grades" / f"{STEP}.csv"))

    # the demonstration step is added: its folder, with notebooks and a check package; nothing else
    shutil.copytree(FIXTURE, course / "source" / DEMO)
    listed = autograder(course, home, "steps")
    assert f"{DEMO}: 1 notebooks, 2 hidden tests" in listed and f"{STEP}: " in listed, listed
    assert f"ready for {STEP}:" in autograder(course, home, "gradebook"), "the default step is the newest"

    autograder(course, home, "release", "--step", DEMO)
    released = course / "release" / DEMO / "01-word-counts.ipynb"
    text = released.read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "len(text.split())" not in text and "NotImplementedError" in text
    assert not (course / "release" / DEMO / "checks").exists(), "a step's checks must never be released"
    autograder(course, home, "solutions", "--step", DEMO)
    solved = json.loads((course / "solutions" / DEMO / "01-word-counts.ipynb").read_text(encoding="utf-8"))
    assert all(c.get("execution_count") for c in solved["cells"] if c["cell_type"] == "code" and c["source"])

    demo_class = tmp_path / "demo-class"
    source = course / "source" / DEMO / "01-word-counts.ipynb"
    for sid, replace in {"ada": {}, "blank": None,
                         "bob": {"word_count": "def word_count(text):\n    return len(text.split(' '))",
                                 "longest_word": "def longest_word(text):\n    return max(text.split(), key=len)"}
                         }.items():
        (demo_class / sid).mkdir(parents=True)
        content = released.read_text(encoding="utf-8") if replace is None else answered(released, source, replace)
        (demo_class / sid / "01-word-counts.ipynb").write_text(content, encoding="utf-8")
    autograder(course, home, "grade", str(demo_class), "--step", DEMO, "--workers", "1")    # 3 notebooks: 1 template

    scores = {(r["student"], r["grade_id"]): float(r["score"]) for r in rows(home / "grades" / f"{DEMO}.csv")}
    assert scores[("ada", "word_count_hidden")] == 2.0 and scores[("ada", "longest_word_hidden")] == 1.0
    assert scores[("blank", "word_count_hidden")] == 0.0 and scores[("blank", "longest_word_hidden")] == 0.0
    # split(" "): right on "one" only (1 of 4 cases); max without a default: raises on "" (2 of 3)
    assert scores[("bob", "word_count_hidden")] == 0.5 and scores[("bob", "longest_word_hidden")] == 0.67
    assert {s for s, _ in scores} == {"ada", "blank", "bob"}, "Step 4's student is not in the demo's report"
    assert (home / "feedback" / "bob" / DEMO / "01-word-counts.html").exists()
    assert not (home / "feedback" / "bob" / STEP).exists()

    # Step 4: the same reports and results, byte for byte; grading it again regrades nothing
    assert snapshot(home) == before
    again = autograder(course, home, "grade", str(step4_class.parent), "--step", STEP)
    assert "notebooks to grade" not in again, again
    assert snapshot(home) == before
