"""`make setup` grades the example class (ada, blank, half) in a grader home of its own: a fresh
course's gradebook, reports, formgrader and exports hold none of those pretend students.

The example class is the session's (conftest.example_class: `python -m autograder example` with the
run's own course grading home, graded once and shared); its export runs in a copy of that home."""
import csv
import io
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, STEP

pytestmark = pytest.mark.slow


def test_a_fresh_course_exports_no_example_student(example_class, tmp_path):
    example, data = example_class
    assert "its own grader home" in data["printed"]
    # the example's grades are where the README says, with its three students
    assert example.name == "example"
    example_csv = example / "grades" / f"{STEP}.csv"
    assert {row["student"] for row in csv.DictReader(io.StringIO(example_csv.read_text()))} == {"ada", "blank", "half"}
    # the course's own grader home: the command left nothing in it but the example's home
    assert [p.name for p in example.parent.iterdir()] == ["example"]
    home = tmp_path / "grading"
    shutil.copytree(example, home / "example", ignore=shutil.ignore_patterns("*.lock"))
    env = {**os.environ, "GRADER_HOME": str(home)}
    env.pop("NBGRADER_DB_URL", None)
    export = subprocess.run([sys.executable, "-m", "autograder", "export"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert export.returncode == 0, export.stdout + export.stderr
    canvas = list(csv.reader(io.StringIO((home / "export" / f"canvas-{STEP}.csv").read_text())))
    assert [row[0] for row in canvas] == ["Student", "Points Possible"], canvas
    notebooks = (home / "export" / f"notebooks-{STEP}.csv").read_text().splitlines()
    assert len(notebooks) == 1, notebooks            # the header alone
    for name in ("ada", "blank", "half"):
        assert name not in export.stdout
