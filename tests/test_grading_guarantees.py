"""What `make grade` promises about a whole batch, each shown on a real class:

  * killed with kill -9 halfway (the grader's whole process group), a rerun finishes the class:
    no grade lost, none recorded twice, the notebooks graded before the kill not graded again;
  * regrading is idempotent: a rerun changes nothing; --force regrades every notebook, to the
    same scores and the same reasons, byte for byte (grading is deterministic);
  * the original submissions are never modified.
The class is small (nine notebooks of the first notebook of the step), graded as `make grade`
runs it: `python -m autograder grade`, two workers, in the bwrap sandbox when it works here.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder import sandbox
from redteam_corpus import PAPER, before

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grading-guarantees")]

ROOT = Path(__file__).resolve().parents[1]
SANDBOX = "bwrap" if sandbox.bwrap_problem() is None else "none"
P = PAPER
CLASS = {
    "ada": {}, "grace": {}, "alan": {}, "edsger": {},                     # every answer correct
    "blank": None,                                                         # the release
    "mistaken": {"dot_variance": P.wrong["dot_variance"]},
    "slipped": {"shapes": P.wrong["shapes"]},
    "crasher": {"shapes": before("import os\nos._exit(1)", P.answer("shapes"))},
    "looper": {"dot_variance": before("while True:\n    pass", P.answer("dot_variance"))},
}
EXPECTED = {
    "ada": P.scores(), "grace": P.scores(), "alan": P.scores(), "edsger": P.scores(), "blank": P.zero(),
    "mistaken": P.scores(dot_variance_hidden=0.8), "slipped": P.scores(shapes_hidden=0.0),
    "crasher": P.scores(shapes_hidden=0.0), "looper": P.scores(dot_variance_hidden=0.0),
}


def _write_class(folder: Path) -> None:
    for student, answers in CLASS.items():
        nb = P.notebook_with(correct=False) if answers is None else P.notebook_with(answers)
        (folder / student).mkdir(parents=True)
        (folder / student / f"{P.notebook}.ipynb").write_text(json.dumps(nb, indent=1), encoding="utf-8")


def _grade_command(submissions: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "autograder", "grade", str(submissions), "--workers", "2",
            "--sandbox", SANDBOX, "--no-feedback", *extra]


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_DB_URL"}
    env.update(GRADER_HOME=str(home), PYTHONPATH=str(ROOT))
    return env


def _results(home: Path) -> dict[str, Path]:
    return {p.parent.name: p for p in (home / "work" / "results").glob(f"*/{P.notebook}.json")}


def _gradebook(home: Path) -> dict:
    """student -> {grade_id: auto_score} read straight from the gradebook's tables, counting rows."""
    import sqlite3
    con = sqlite3.connect(home / "gradebook.db")
    rows = con.execute("""
        SELECT student.id, base_cell.name, grade.auto_score
        FROM grade
        JOIN submitted_notebook ON grade.notebook_id = submitted_notebook.id
        JOIN submitted_assignment ON submitted_notebook.assignment_id = submitted_assignment.id
        JOIN student ON submitted_assignment.student_id = student.id
        JOIN base_cell ON grade.cell_id = base_cell.id
        """).fetchall()
    counts = {
        "students": con.execute("SELECT COUNT(*) FROM student").fetchone()[0],
        "submissions": con.execute("SELECT COUNT(*) FROM submitted_assignment").fetchone()[0],
        "notebooks": con.execute("SELECT COUNT(*) FROM submitted_notebook").fetchone()[0],
        "grades": con.execute("SELECT COUNT(*) FROM grade").fetchone()[0],
    }
    con.close()
    out: dict = {}
    for student, cell, score in rows:
        assert cell not in out.setdefault(student, {}), f"{student}/{cell} recorded twice"
        out[student][cell] = score
    return {"scores": out, "counts": counts}


def _tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _processes_naming(folder: Path) -> list[str]:
    """Command lines of the processes that name `folder` (a kernel names its connection file)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(folder) in cmdline:
                found.append(f"{entry.name}: {cmdline[:200]}")
    return found


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory):
    base = tmp_path_factory.mktemp("guarantees")
    submissions, home = base / "submissions", base / "home"
    _write_class(submissions)
    original = _tree_hash(submissions)
    # the workers' scratch folders (and so every kernel's command line) under a folder of this test
    scratch = Path(tempfile.mkdtemp(prefix="gg-", dir="/tmp"))
    env = {**_env(home), "TMPDIR": str(scratch)}

    # 1. start grading, and kill -9 the grader's whole process group once a few notebooks are recorded
    proc = subprocess.Popen(_grade_command(submissions), cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while len(_results(home)) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    recorded = {s: (p.stat().st_mtime_ns, p.read_bytes()) for s, p in _results(home).items()}
    # the kernels go with the grader (bwrap --die-with-parent; without bwrap, ipykernel watches its parent)
    deadline = time.monotonic() + 15
    while _processes_naming(scratch) and time.monotonic() < deadline:
        time.sleep(0.2)
    orphans = _processes_naming(scratch)

    # 2. run it again: it finishes the class
    rerun = subprocess.run(_grade_command(submissions), cwd=ROOT, env=env, capture_output=True, text=True)
    shutil.rmtree(scratch, ignore_errors=True)      # what the killed grader left there
    return {"submissions": submissions, "home": home, "original": original, "recorded": recorded,
            "orphans": orphans, "rerun": rerun}


def _scores_from_results(home: Path) -> dict:
    out = {}
    for student, path in _results(home).items():
        result = json.loads(path.read_text())
        out[student] = {c["grade_id"]: c["score"] for c in result["cells"] if c["kind"] == "auto"}
    return out


def test_a_killed_batch_resumes_with_no_grade_lost_or_doubled(killed_and_resumed):
    state = killed_and_resumed
    home = state["home"]
    assert 0 < len(state["recorded"]) < len(CLASS), "the grader was not killed halfway"
    assert state["orphans"] == []
    assert state["rerun"].returncode == 0, state["rerun"].stderr[-3000:]
    assert f"({len(state['recorded'])} already recorded)" in state["rerun"].stdout
    # every student graded once, with the expected scores
    assert _scores_from_results(home) == EXPECTED
    book = _gradebook(home)
    assert book["counts"]["students"] == len(CLASS)
    assert book["counts"]["submissions"] == len(CLASS) and book["counts"]["notebooks"] == len(CLASS)
    grade_cells = [c for c in P.source["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert book["counts"]["grades"] == len(CLASS) * len(grade_cells)
    for student, scores in EXPECTED.items():
        assert {k: v for k, v in book["scores"][student].items() if k in scores} == scores
    # the notebooks recorded before the kill were not graded again
    for student, (mtime, data) in state["recorded"].items():
        path = _results(home)[student]
        assert path.stat().st_mtime_ns == mtime and path.read_bytes() == data


def test_regrading_is_idempotent_and_deterministic(killed_and_resumed):
    state = killed_and_resumed
    home, submissions = state["home"], state["submissions"]
    csv_before = (home / "grades.csv").read_bytes()
    book_before = _gradebook(home)
    results_before = {s: p.read_bytes() for s, p in _results(home).items()}

    again = subprocess.run(_grade_command(submissions), cwd=ROOT, env=_env(home), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "notebooks to grade" not in again.stdout          # nothing regraded
    assert (home / "grades.csv").read_bytes() == csv_before
    assert _gradebook(home) == book_before
    assert {s: p.read_bytes() for s, p in _results(home).items()} == results_before

    forced = subprocess.run(_grade_command(submissions, "--force"), cwd=ROOT, env=_env(home),
                            capture_output=True, text=True)
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert f"{len(CLASS)} notebooks to grade" in forced.stdout
    # the same scores and the same reasons, byte for byte; the gradebook holds the same rows
    assert (home / "grades.csv").read_bytes() == csv_before
    assert _gradebook(home) == book_before


def test_original_submissions_are_never_modified(killed_and_resumed):
    assert _tree_hash(killed_and_resumed["submissions"]) == killed_and_resumed["original"]
