"""`make setup` grades the example class (ada, blank, half) in a grader home of its own: a fresh
course's gradebook, reports, formgrader and exports hold none of those pretend students."""
import csv
import io
import os
import subprocess
import sys

import pytest

from conftest import ROOT, STEP

pytestmark = pytest.mark.slow


def test_a_fresh_course_exports_no_example_student(tmp_path):
    home = tmp_path / "grading"
    env = {**os.environ, "GRADER_HOME": str(home)}
    env.pop("NBGRADER_DB_URL", None)
    run = subprocess.run([sys.executable, "-m", "autograder", "example", "--workers", "2", "--no-feedback"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "its own grader home" in run.stdout
    # the example's grades are where the README says, with its three students
    example_csv = home / "example" / "grades" / f"{STEP}.csv"
    assert {row["student"] for row in csv.DictReader(io.StringIO(example_csv.read_text()))} == {"ada", "blank", "half"}
    # the course's own grader home: no student graded, none in its gradebook
    assert not (home / "grades").exists() and not (home / "submitted").exists()
    export = subprocess.run([sys.executable, "-m", "autograder", "export"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert export.returncode == 0, export.stdout + export.stderr
    canvas = list(csv.reader(io.StringIO((home / "export" / f"canvas-{STEP}.csv").read_text())))
    assert [row[0] for row in canvas] == ["Student", "Points Possible"], canvas
    notebooks = (home / "export" / f"notebooks-{STEP}.csv").read_text().splitlines()
    assert len(notebooks) == 1, notebooks            # the header alone
    for name in ("ada", "blank", "half"):
        assert name not in export.stdout
