"""The grader against a real PostgreSQL gradebook (a throwaway server this module starts):
the same scores as with SQLite, one grade per student, notebook and grade cell, regrading changes
nothing, and the cluster recipe (autograder/cluster/grade-shard.sh, shards running at once on a
fresh database, then `python -m autograder report`) loses no grade.

Without PostgreSQL's server programs these tests skip and say why; with REQUIRE_POSTGRES=1 (CI
sets it after `make system-deps`) they fail instead."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import RELEASE
from autograder.example import filled
from autograder.grading.grade import grade
from autograder.records.gradebook import release_grade_cells
from autograder.shards import shard_of

from conftest import GRADES_CSV, NOTEBOOK_NAMES, ROOT, STEP, STEP4, uses
from pgserver import PostgresServer, missing_reason

# Each graded class belongs to one test (pytest-xdist may spread a module's tests over workers,
# and a module fixture would then grade its class once per worker).
pytestmark = pytest.mark.slow
FIRST, SECOND = NOTEBOOK_NAMES[0], NOTEBOOK_NAMES[1]


@pytest.fixture(scope="module")
def pg():
    reason = missing_reason()
    if reason:
        if os.environ.get("REQUIRE_POSTGRES") == "1":
            pytest.fail(f"REQUIRE_POSTGRES=1 but {reason}")
        pytest.skip(reason)
    server = PostgresServer()
    try:
        server.start()
        uses("PostgreSQL")
        yield server
    finally:
        server.stop()


def write(path: Path, nb: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def small_class(dest: Path) -> Path:
    """Three students, the two quickest notebooks: every answer, the release, half the answers.
    The notebooks they did not hand in score zero without being run (a row per grade cell all the same)."""
    release = {n: json.loads((RELEASE / STEP / f"{n}.ipynb").read_text()) for n in (FIRST, SECOND)}
    for name in (FIRST, SECOND):
        write(dest / "ada" / f"{name}.ipynb", filled(STEP4, name, lambda cid, i: True))
        write(dest / "blank" / f"{name}.ipynb", release[name])
    write(dest / "half" / f"{SECOND}.ipynb", filled(STEP4, SECOND, lambda cid, i: i % 2 == 0))
    return dest


def gradebook_rows(url: str) -> list[tuple]:
    """Every grade row: (student, notebook, grade_id, auto_score, manual_score, needs_manual_grade)."""
    from nbgrader.api import Gradebook, Grade, SubmittedNotebook, SubmittedAssignment, Student, Notebook, GradeCell
    with Gradebook(url, "dl-course") as gb:
        q = (gb.db.query(Student.id, Notebook.name, GradeCell.name, Grade.auto_score, Grade.manual_score,
                         Grade.needs_manual_grade)
             .join(SubmittedAssignment, SubmittedAssignment.student_id == Student.id)
             .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
             .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
             .join(Grade, Grade.notebook_id == SubmittedNotebook.id)
             .join(GradeCell, GradeCell.id == Grade.cell_id))
        return sorted(tuple(row) for row in q.all())


def assert_one_grade_per_cell(rows: list[tuple], students: set[str]) -> None:
    wanted = {(s, nb, g) for s in students for nb, cells in release_grade_cells(STEP4).items() for g in cells}
    keys = [r[:3] for r in rows]
    assert len(keys) == len(set(keys)), f"duplicate grades: {sorted(k for k in set(keys) if keys.count(k) > 1)[:5]}"
    assert set(keys) == wanted, (f"missing: {sorted(wanted - set(keys))[:5]}; "
                                 f"unexpected: {sorted(set(keys) - wanted)[:5]}")


def report_rows(home: Path) -> list[tuple]:
    with open(home / GRADES_CSV, newline="") as f:
        return sorted((r["student"], r["notebook"], r["grade_id"], r["score"], r["max_score"], r["kind"])
                      for r in csv.DictReader(f))


def test_postgres_gradebook_matches_sqlite_and_regrading_changes_nothing(pg, tmp_path, monkeypatch):
    """The small class graded into SQLite, into PostgreSQL, and into PostgreSQL again with --force: one
    grade per student, notebook and grade cell; the same scores; nothing changed. One grading worker each
    time: the workers hold no gradebook connection (autograder/grading/worker.py), the grader's own
    process records every result as it comes, whatever their number (a second worker's warm template
    cost about 2 s of CPU a grading here)."""
    submissions = small_class(tmp_path / "class")
    out = {}
    for name, url in (("sqlite", f"sqlite:///{tmp_path / 'sqlite' / 'gradebook.db'}"),
                      ("postgres", pg.create_database("compare"))):
        monkeypatch.setenv("GRADER_HOME", str(tmp_path / name))
        monkeypatch.setenv("NBGRADER_DB_URL", url)
        grade(STEP4, submissions, workers=1, quiet=True, feedback=False)
        out[name] = {"url": url, "rows": gradebook_rows(url), "report": report_rows(tmp_path / name)}
    grade(STEP4, submissions, workers=1, quiet=True, feedback=False, force=True)
    regraded = {"rows": gradebook_rows(out["postgres"]["url"]), "report": report_rows(tmp_path / "postgres")}

    assert_one_grade_per_cell(out["postgres"]["rows"], {"ada", "blank", "half"})
    assert out["postgres"]["rows"] == out["sqlite"]["rows"]
    assert out["postgres"]["report"] == out["sqlite"]["report"]
    ada = [r for r in out["postgres"]["rows"] if r[0] == "ada" and r[1] == FIRST and r[3] is not None]
    assert ada and sum(r[3] for r in ada) > 0, "the solutions earn points"
    assert regraded["rows"] == out["postgres"]["rows"], "a forced regrade changed the gradebook"
    assert regraded["report"] == out["postgres"]["report"]


# ---- the cluster recipe -----------------------------------------------------------------------

SHARD_SCRIPT = ROOT / "autograder" / "cluster" / "grade-shard.sh"
STUDENTS = [f"s{i:02d}" for i in range(6)]


def recipe_env(home: Path, url: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JOB_COMPLETION", "SHARD_"))}
    env.update({"GRADER_HOME": str(home), "NBGRADER_DB_URL": url, "COURSE_DIR": str(ROOT),
                "PYTHON": sys.executable, "WORKERS": "1",
                "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")})
    env.update(extra)
    return env


def run_shards_at_once(submissions: Path, home: Path, url: str, options: str = "") -> list[str]:
    """Shard 0 as Slurm array task 0 of 2, shard 1 as Kubernetes Indexed Job pod 1: at the same time."""
    common = {"SUBMISSIONS": str(submissions), "GRADE_OPTIONS": options}
    procs = [subprocess.Popen(["bash", str(SHARD_SCRIPT)], env=recipe_env(home, url, **common, **extra),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for extra in ({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2"},
                           {"JOB_COMPLETION_INDEX": "1", "SHARD_COUNT": "2"})]
    logs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=1200)
        assert proc.returncode == 0, out[-4000:]
        logs.append(out)
    return logs


def test_cluster_recipe_shards_at_once_then_merge_then_rerun(pg, tmp_path):
    """grade-shard.sh twice at once on a fresh database (one as Slurm array task 0 of 2, one as
    Kubernetes Indexed Job pod 1), then `report --no-feedback`, then both shards again with --force."""
    submissions = tmp_path / "class"
    for i, sid in enumerate(STUDENTS):        # every other student hands in the solutions
        nb = filled(STEP4, FIRST, lambda cid, pos: True) if i % 2 == 0 else \
            json.loads((RELEASE / STEP / f"{FIRST}.ipynb").read_text())
        write(submissions / sid / f"{FIRST}.ipynb", nb)
    assert {shard_of(s, 2) for s in STUDENTS} == {0, 1}, "both shards get students"
    home, url = tmp_path / "home", pg.create_database("cluster")    # a fresh database: the shards set it up
    logs = run_shards_at_once(submissions, home, url)
    rows = gradebook_rows(url)

    # each shard graded its own students, and no grade is lost
    for index, log in enumerate(logs):
        record = json.loads((home / "work" / "shards" / STEP / f"shard-{index:04d}-of-0002.json").read_text())
        assert record["students"] == sorted(s for s in STUDENTS if shard_of(s, 2) == index), log[-2000:]
        assert f"shard {index} of 2" in log
    assert_one_grade_per_cell(rows, set(STUDENTS))
    for i, sid in enumerate(STUDENTS):
        earned = sum(r[3] or 0 for r in rows if r[0] == sid and r[1] == FIRST)
        assert (earned > 0) == (i % 2 == 0), f"{sid}: {earned} points on {FIRST}"
    for sid in STUDENTS:
        assert (home / "feedback" / sid / STEP / f"{FIRST}.html").exists(), f"no feedback for {sid}"

    # the merge reports the whole class, with the gradebook's scores
    report = subprocess.run([sys.executable, "-m", "autograder", "report", "--no-feedback"], cwd=ROOT,
                            env=recipe_env(home, url), capture_output=True, text=True, timeout=1200)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    merged = report_rows(home)
    assert {(r[0], r[1], r[2]) for r in merged} == {r[:3] for r in rows}
    by_key = {r[:3]: r for r in rows}
    for student, notebook, grade_id, score, _, kind in merged:
        if kind == "auto":
            assert float(score) == pytest.approx(by_key[(student, notebook, grade_id)][3])

    # every shard again, at once, with --force: the gradebook is unchanged
    run_shards_at_once(submissions, home, url, options="--force --no-feedback")
    assert gradebook_rows(url) == rows


def test_shards_setting_up_a_fresh_gradebook_at_once_agree(pg, tmp_path):
    """Four graders that start together on an empty database: one enters the step, the others wait
    for it and find it done (without the lock, nbgrader's table creation and inserts collide)."""
    url = pg.create_database("race")
    # each as the grader's own processes set up a gradebook (autograder/__main__.py): without rfc3987_syntax,
    # which jsonschema's import would build for nothing (about 1.9 s of CPU in each of the four)
    code = ("import sys; sys.modules.setdefault('rfc3987_syntax', None); "
            "from autograder.records.gradebook import ensure_gradebook; from autograder.steps import find_step; "
            "ensure_gradebook(sys.argv[1], find_step(sys.argv[2]))")
    env = recipe_env(tmp_path, url)
    env["PYTHONPATH"] = str(ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", code, url, STEP], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(4)]
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-3000:]
    from nbgrader.api import Assignment, Gradebook
    with Gradebook(url, "dl-course") as gb:
        assert gb.db.query(Assignment).count() == 1
        known = {nb.name: {c.name: float(c.max_score) for c in nb.grade_cells}
                 for nb in gb.find_assignment(STEP).notebooks}
    assert known == release_grade_cells(STEP4)
