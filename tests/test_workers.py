"""Grading workers are forked from a fork server that imported the grader and the steps' checks once
(autograder/worker.py): a new worker starts with them imported, and with the grader's environment and
folder as they are when the pool starts, not as they were when the fork server started."""
from __future__ import annotations

import concurrent.futures as cf
import os
import sys
import tempfile
from pathlib import Path

import pytest


def _look() -> dict:
    from autograder import worker
    return {"fork server ends at once": worker.ENDS_AT_ONCE, "GRADER_HOME": os.environ.get("GRADER_HOME"), "tmp": tempfile.gettempdir(), "cwd": os.getcwd(),
            "imported": sorted(m for m in ("torch", "autograder.judging", "autograder.probeserver", "nbformat")
                               if m in sys.modules)}


def test_a_worker_starts_with_the_grader_imported_and_the_environment_of_now(monkeypatch, tmp_path):
    from multiprocessing import forkserver

    from autograder.grade import start_worker, worker_context
    context = worker_context()
    assert context.get_start_method() == "forkserver"
    forkserver.ensure_running()            # the fork server runs with the environment of this moment
    monkeypatch.setenv("GRADER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with cf.ProcessPoolExecutor(1, mp_context=context, initializer=start_worker,
                                initargs=(dict(os.environ), str(tmp_path))) as pool:
        seen = pool.submit(_look).result(timeout=300)
    assert seen["GRADER_HOME"] == str(tmp_path / "home")
    assert seen["tmp"] == str(tmp_path) and seen["cwd"] == str(tmp_path)
    assert seen["imported"] == ["autograder.judging", "autograder.probeserver", "nbformat", "torch"], seen
    assert seen["fork server ends at once"]         # set in the fork server, whose memory the worker copies


def test_only_the_fork_server_ends_without_finishing_its_interpreter():
    """The fork server ends at once when the grader is done (no second of tearing torch down); any other
    process that imports the worker module (the grader, a spawned worker) exits as usual, code kept."""
    import subprocess
    done = subprocess.run([sys.executable, "-c", "import sys, autograder.worker as w; "
                           "print(w.ENDS_AT_ONCE, flush=True); sys.exit(3)"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert (done.returncode, done.stdout.strip()) == (3, "False"), done.stderr[-2000:]


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")    # nbgrader's add_submission, as it is
def test_a_gradebook_that_cannot_take_the_step_stops_the_run_and_keeps_what_it_holds(grading_home, tmp_path):
    """The gradebook is set up while the workers start grading: when it refuses the step (it holds
    submissions of a notebook the step no longer has), the run stops with the reason, nothing is
    recorded and the gradebook keeps what it held."""
    import shutil

    from nbgrader.api import Gradebook

    from autograder.course import COURSE_ID, db_url
    from autograder.grade import grade
    from autograder.gradebook import GradebookInUse
    from conftest import STEP4
    url = db_url()
    with Gradebook(url, COURSE_ID) as gb:
        gb.update_or_create_assignment(STEP4.name)
        gb.add_notebook("00-gone", STEP4.name)
        gb.add_student("ada")
        gb.add_submission(STEP4.name, "ada")
    submissions = tmp_path / "class"
    students = [f"s{i}" for i in range(6)]
    for sid in students:
        (submissions / sid).mkdir(parents=True)
        shutil.copy(STEP4.release / "02-the-head.ipynb", submissions / sid / "02-the-head.ipynb")
    with pytest.raises(GradebookInUse, match="holds grades for another set"):
        grade(STEP4, submissions, workers=1, feedback=False, quiet=True, sandbox="none")
    results = list((grading_home / "work" / "results").rglob("*.json"))
    assert results == [], f"recorded although the gradebook refused: {results}"
    assert not (grading_home / "autograded").exists()
    with Gradebook(url, COURSE_ID) as gb:
        assert {nb.name for nb in gb.find_assignment(STEP4.name).notebooks} == {"00-gone"}
        assert [s.student.id for s in gb.find_assignment(STEP4.name).submissions] == ["ada"]
