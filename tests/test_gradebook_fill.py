"""The grader records a step in the gradebook in its own process (autograder/records/gradebook.py) exactly as
`nbgrader generate_assignment` does: the same assignment, notebooks, kernelspecs, grade, solution,
task and source cells (sources and checksums), row for row; alembic's revision read in process is
the one `alembic heads` prints; a step whose notebooks changed under graded submissions is refused; a new
gradebook copied from the step's template (GRADEBOOK_TEMPLATES) is the one a fill writes, row for row, a
changed step has another template, and a template that is no gradebook is filled anew. The commands
of nbgrader itself, reading the course's nbgrader_config.py, create a gradebook without running `alembic`."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograder.course import COURSE_ID
from conftest import STEP4


def _rows(url: str, step: str) -> dict:
    """Everything the gradebook records of a step, by name (ids are random)."""
    from nbgrader.api import Gradebook
    out = {}
    with Gradebook(url, COURSE_ID) as gb:
        assignment = gb.find_assignment(step)
        out["assignment"] = {k: v for k, v in assignment.to_dict().items() if k not in ("id", "duedate")}
        for nb in sorted(assignment.notebooks, key=lambda n: n.name):
            out[nb.name] = {
                "kernelspec": nb.kernelspec,
                "grade": sorted((c.name, c.max_score, c.cell_type) for c in nb.grade_cells),
                "solution": sorted(c.name for c in nb.solution_cells),
                "task": sorted((c.name, c.max_score, c.cell_type) for c in nb.task_cells),
                "source": sorted((c.name, c.cell_type, c.locked, c.source, c.checksum) for c in nb.source_cells),
            }
        version = gb.db.execute(__import__("sqlalchemy").text("SELECT version_num FROM alembic_version")).scalar()
        out["alembic_version"] = version
    return out


def test_the_gradebook_filled_in_process_is_the_one_generate_assignment_writes(tmp_path):
    from autograder.records.gradebook import fill_gradebook
    from autograder.nbgrader_cmd import run_nbgrader
    theirs, ours = f"sqlite:///{tmp_path / 'theirs.db'}", f"sqlite:///{tmp_path / 'ours.db'}"
    run_nbgrader("generate_assignment", STEP4.name, "--force",
                 f"--CourseDirectory.release_directory={tmp_path / 'release'}", root=STEP4.root, db_url=theirs)
    fill_gradebook(ours, STEP4)
    expected, got = _rows(theirs, STEP4.name), _rows(ours, STEP4.name)
    assert set(got) == set(expected) and len(got) == len(STEP4.notebooks()) + 2
    for key in expected:
        assert got[key] == expected[key], key
    # something to compare: points, locked test cells, solution cells
    assert sum(p for nb in STEP4.notebooks() for _, p, _ in got[nb]["grade"]) > 0
    assert any(locked for nb in STEP4.notebooks() for _, _, locked, _, _ in got[nb]["source"])
    # filled again: nothing changes
    fill_gradebook(ours, STEP4)
    assert _rows(ours, STEP4.name) == got


def test_the_alembic_revision_is_the_one_alembic_heads_prints():
    """`alembic heads` run as nbgrader runs it (nbgrader.api.get_alembic_version, whichever process's
    nbgrader reads the revision in process since: this test's may)."""
    import subprocess
    from nbgrader.api import _temp_alembic_ini
    from autograder.course import use_environment_tools
    from autograder.records.gradebook import alembic_head
    use_environment_tools()
    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as alembic_ini:
        printed = subprocess.check_output(["alembic", "-c", alembic_ini, "heads"], text=True)
    assert alembic_head() == printed.split("\n")[0].split(" ")[0] != ""


def test_nbgrader_s_own_commands_create_a_gradebook_without_running_alembic(tmp_path):
    """An nbgrader command run from the course's folder (it reads nbgrader_config.py) creates a new
    gradebook with the revision read in process: an `alembic` found first on PATH, which would leave a
    mark and fail, is never run."""
    import os
    import subprocess
    import sys
    from autograder.nbgrader_cmd import NBGRADER_MAIN
    from conftest import ROOT
    fake = tmp_path / "bin"
    fake.mkdir()
    mark = tmp_path / "alembic-ran"
    (fake / "alembic").write_text(f"#!/bin/sh\ntouch '{mark}'\nexit 1\n")
    (fake / "alembic").chmod(0o755)
    env = {**os.environ, "PATH": os.pathsep.join([str(fake), str(Path(sys.executable).parent), os.environ["PATH"]])}
    url = f"sqlite:///{tmp_path / 'new.db'}"
    done = subprocess.run([sys.executable, "-c", NBGRADER_MAIN, "db", "student", "add", "ada", f"--db={url}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not mark.exists(), "nbgrader ran `alembic` to create the gradebook"
    from nbgrader.api import Gradebook
    from autograder.records.gradebook import alembic_head
    with Gradebook(url, COURSE_ID) as gb:
        assert [s.id for s in gb.students] == ["ada"]
        version = gb.db.execute(__import__("sqlalchemy").text("SELECT version_num FROM alembic_version")).scalar()
    assert version == alembic_head()


def _course(tmp_path):
    from autograder.steps import Step
    root = tmp_path / "course"
    (root / "source").mkdir(parents=True)
    shutil.copytree(STEP4.source, root / "source" / STEP4.name)
    shutil.copytree(STEP4.release, root / "release" / STEP4.name)
    shutil.copy(STEP4.root / "source" / "header.ipynb", root / "source" / "header.ipynb")
    return Step(STEP4.name, root)


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")    # nbgrader's add_submission, as it is
def test_a_changed_step_with_graded_submissions_is_refused(tmp_path):
    """A notebook dropped from a step whose gradebook has submissions: refused, the gradebook unchanged."""
    from nbgrader.api import Gradebook
    from autograder.records.gradebook import GradebookInUse, fill_gradebook
    from autograder.steps import Step
    step = _course(tmp_path)
    root = step.root
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    fill_gradebook(url, step)
    with Gradebook(url, COURSE_ID) as gb:
        gb.add_student("ada")
        gb.add_submission(step.name, "ada")
    first = step.notebooks()[0]
    (root / "source" / step.name / f"{first}.ipynb").unlink()
    with pytest.raises(GradebookInUse, match=first):
        fill_gradebook(url, Step(STEP4.name, root))
    with Gradebook(url, COURSE_ID) as gb:
        assert first in {nb.name for nb in gb.find_assignment(step.name).notebooks}


def test_a_step_without_its_release_is_named(tmp_path):
    """The gradebook records the released step: without a release, the error says what to run."""
    from autograder.errors import SetupError
    from autograder.records.gradebook import fill_gradebook
    from autograder.steps import Step
    root = tmp_path / "course"
    shutil.copytree(STEP4.source, root / "source" / STEP4.name)
    with pytest.raises(SetupError, match=f"release/{STEP4.name}/.*make release"):
        fill_gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", Step(STEP4.name, root))
    assert not (tmp_path / "gradebook.db").exists()


def test_a_new_gradebook_copied_from_the_template_is_the_one_a_fill_writes(tmp_path, monkeypatch):
    """With GRADEBOOK_TEMPLATES (the suite sets it: tests/conftest.py), the first new gradebook of a step is
    filled and kept as its template, and the next new one is a copy of it, not filled: row for row the
    gradebook a fill writes without templates. A step whose notebooks changed has another template; a
    template that is not a gradebook is filled anew and replaced; without the folder nothing is kept."""
    import json
    from autograder.records import gradebook
    from autograder.steps import Step
    step = _course(tmp_path)
    templates = tmp_path / "templates"
    monkeypatch.delenv("GRADEBOOK_TEMPLATES", raising=False)
    plain = f"sqlite:///{tmp_path / 'plain.db'}"
    gradebook.ensure_gradebook(plain, step)                              # the product's default: no folder
    expected = _rows(plain, step.name)
    monkeypatch.setenv("GRADEBOOK_TEMPLATES", str(templates))
    first, second = f"sqlite:///{tmp_path / 'first.db'}", f"sqlite:///{tmp_path / 'second.db'}"
    gradebook.ensure_gradebook(first, step)
    kept = sorted(p.name for p in templates.iterdir())
    assert kept == [f"{gradebook.template_key(step)}.db"], kept          # written whole, nothing else
    filled = []
    monkeypatch.setattr(gradebook, "fill_gradebook", lambda *a: filled.append(a))
    gradebook.ensure_gradebook(second, step)
    assert filled == [] and _rows(first, step.name) == _rows(second, step.name) == expected
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []   # no scratch copy left
    # another step's notebooks: another key (no template yet), so a fill
    nb, key = step.source / f"{step.notebooks()[0]}.ipynb", gradebook.template_key(step)
    changed = json.loads(nb.read_text())
    changed["cells"][0]["source"] = "".join(changed["cells"][0]["source"]) + "\nOne more line."
    nb.write_text(json.dumps(changed))
    other = Step(step.name, step.root)
    assert gradebook.template_key(other) != key
    gradebook.ensure_gradebook(f"sqlite:///{tmp_path / 'third.db'}", other)
    assert len(filled) == 1
    # a template that is no gradebook: filled anew (the real fill), and the template replaced by one
    monkeypatch.undo()
    monkeypatch.setenv("GRADEBOOK_TEMPLATES", str(templates))
    (templates / f"{gradebook.template_key(other)}.db").write_bytes(b"not a database")
    fourth = f"sqlite:///{tmp_path / 'fourth.db'}"
    gradebook.ensure_gradebook(fourth, other)
    monkeypatch.delenv("GRADEBOOK_TEMPLATES")
    fifth = f"sqlite:///{tmp_path / 'fifth.db'}"
    gradebook.ensure_gradebook(fifth, other)
    assert _rows(fourth, other.name) == _rows(fifth, other.name)
    assert (templates / f"{gradebook.template_key(other)}.db").read_bytes()[:15] == b"SQLite format 3"
