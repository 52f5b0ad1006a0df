"""Grading workers are forked from a fork server that imported the grader and the steps' checks once
(autograder/grading/worker.py): a new worker starts with them imported, and with the grader's environment and
folder as they are when the pool starts, not as they were when the fork server started."""
from __future__ import annotations

import concurrent.futures as cf
import os
import sys
import tempfile
from pathlib import Path

import pytest


def _look() -> dict:
    from autograder.grading import worker
    return {"fork server ends at once": worker.ENDS_AT_ONCE, "GRADER_HOME": os.environ.get("GRADER_HOME"), "tmp": tempfile.gettempdir(), "cwd": os.getcwd(),
            "imported": sorted(m for m in ("torch", "autograder.grading.judging", "autograder.checks.probeserver", "nbformat")
                               if m in sys.modules)}


def test_a_worker_starts_with_the_grader_imported_and_the_environment_of_now(monkeypatch, tmp_path):
    from multiprocessing import forkserver

    from autograder.grading.grade import start_worker, worker_context
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
    assert seen["imported"] == ["autograder.checks.probeserver", "autograder.grading.judging", "nbformat", "torch"], seen
    assert seen["fork server ends at once"]         # set in the fork server, whose memory the worker copies


def test_only_the_fork_server_ends_without_finishing_its_interpreter():
    """The fork server ends at once when the grader is done (no second of tearing torch down); any other
    process that imports the worker module (the grader, a spawned worker) exits as usual, code kept."""
    import subprocess
    done = subprocess.run([sys.executable, "-c", "import sys, autograder.grading.worker as w; "
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
    from autograder.grading.grade import grade
    from autograder.records.gradebook import GradebookInUse
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


def _my_groups() -> dict:
    from autograder.kernel import cgroups
    found = cgroups.cgroups()
    own = cgroups._own_groups()
    memory = next(((point, root) for kind, point, root, opts in cgroups._mounts()
                   if (kind == "cgroup" and "memory" in opts) or (kind == "cgroup2" and found.version == 2)), None)
    path = own.get("memory" if found.version == 1 else "")
    folder = cgroups._inside(memory[0], memory[1], path)
    limit = folder / ("memory.limit_in_bytes" if found.version == 1 else "memory.max")
    return {"pid": os.getpid(), "group": str(folder), "limit": int(limit.read_text().split()[0])}


def test_a_worker_runs_in_a_memory_bounded_group_of_its_own_removed_after_it(monkeypatch, tmp_path):
    """Each grading worker joins a control group of its own, limited to WORKER_MEMORY_BYTES (what its
    kernels' messages make it hold costs that worker alone); the grader removes it once the worker is gone."""
    from autograder.kernel import cgroups
    from autograder.grading.grade import _sweep_after_dead_workers, start_worker, worker_context
    from autograder.kernel.limits import WORKER_MEMORY_BYTES
    if cgroups.cgroups() is None:
        pytest.skip(f"no control groups here: {cgroups.problem()}")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    with cf.ProcessPoolExecutor(2, mp_context=worker_context(), initializer=start_worker,
                                initargs=(dict(os.environ), str(tmp_path))) as pool:
        seen = [pool.submit(_my_groups).result(timeout=300) for _ in range(4)]
    groups = {s["group"] for s in seen}
    assert all(g.endswith("-worker") and "/autograder/" in g for g in groups), groups
    assert len(groups) == len({s["pid"] for s in seen})          # one group per worker
    assert {s["limit"] for s in seen} == {WORKER_MEMORY_BYTES}
    assert _my_groups()["group"] not in groups                 # the grader itself stays where it was
    _sweep_after_dead_workers()
    assert not any(Path(g).exists() for g in groups), groups


def test_the_folders_of_a_worker_that_died_are_removed_and_no_others(monkeypatch, tmp_path):
    """A worker killed (its memory limit, kill -9) leaves its template's and jobs' folders: they are
    marked with their owner and removed once it is gone, at the start of a run and when a worker dies;
    a living process's folders and folders without the mark stay."""
    import subprocess

    from autograder.kernel import leftovers
    from autograder.grading.grade import grade
    from conftest import STEP4
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)      # worked out again from $TMPDIR
    made = subprocess.run([sys.executable, "-c", "import os, sys; from autograder.kernel import leftovers\n"
                           "for p in ('grade-w-', 'warm-template-', 'grade-', 'relay-'):\n"
                           "    print(leftovers.made(p, dir=sys.argv[1]), flush=True)\n"
                           "os._exit(9)", str(tmp_path)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    dead = [Path(line) for line in made.stdout.split()]
    assert len(dead) == 4 and all(p.is_dir() for p in dead), (made.stdout, made.stderr[-2000:])
    alive = leftovers.made("grade-w-", dir=tmp_path)
    unmarked = tmp_path / "grade-unmarked"
    unmarked.mkdir()
    (tmp_path / "class").mkdir()
    monkeypatch.setenv("GRADER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NBGRADER_DB_URL", raising=False)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    grade(STEP4, tmp_path / "class", workers=1, feedback=False, quiet=True, sandbox="none")     # a run starts
    assert not any(p.exists() for p in dead), [p for p in dead if p.exists()]
    assert alive.is_dir() and unmarked.is_dir()
